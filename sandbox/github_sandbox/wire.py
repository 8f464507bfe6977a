"""The raw HTTP request and response the sandbox's handlers exchange (shared by server and control)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class RawRequest:
    method: str
    target: str
    headers: dict[str, str]  # lower-case names
    body: bytes
    host: str


@dataclass
class RawResponse:
    status: int
    headers: dict[str, str]
    body: bytes
