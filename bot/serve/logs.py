"""Structured log lines: one JSON object a line on stderr, with a UTC timestamp and a message name."""
from __future__ import annotations

import datetime as dt
import json
import sys
import threading
from typing import Any, TextIO

_lock = threading.Lock()


class JsonLog:
    def __init__(self, out: TextIO | None = None):
        self.out = out
        self.lines: list[dict[str, Any]] = []  # kept for tests and /metrics-less debugging
        self.keep = False

    def __call__(self, msg: str, level: str = "info", **fields: Any) -> None:
        line = {"ts": dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds"),
                "level": level, "msg": msg, **fields}
        with _lock:
            if self.keep:
                self.lines.append(line)
            out = self.out if self.out is not None else sys.stderr
            out.write(json.dumps(line, default=str) + "\n")
            out.flush()
