"""Pause the cyclic garbage collector around bulk work that allocates many acyclic objects."""
from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Parsing and planning thousands of recipes creates ~10^6 small objects and no cycles; the
    collector's generation scans then cost more than the work itself (bench/bench_planner.py)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
