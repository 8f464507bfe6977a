"""Frozen dataclasses made from their field dict at once, for the report's loops over every point.

A frozen dataclass's __init__ sets each field through object.__setattr__ (its own __setattr__
refuses); with 40,000 Deltas and 5,000 rows in a 5,000-point report that is most of their cost. The
dict's keys must be the class's fields in order (tests/test_report_compare.py compares them with
dataclasses.fields), so the object equals what __init__ would make.
"""
from __future__ import annotations

from typing import Any, TypeVar

T = TypeVar("T")


def made(cls: type[T], fields: dict[str, Any]) -> T:
    """`cls(**fields)` without running its __init__ (no defaults, no __post_init__: give every field)."""
    instance = object.__new__(cls)
    object.__setattr__(instance, "__dict__", fields)
    return instance
