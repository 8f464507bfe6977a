"""Shared by bench/*.py: the machine a figure was taken on, order statistics, writing results JSON."""
from __future__ import annotations

import datetime as dt
import json
import math
import os
import pathlib
import platform
import statistics
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
# git for the repositories a bench builds: a fixed author, no user or system config.
GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}


def _cpu_model() -> str:
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages: other work on the machine skews every figure."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def machine_info() -> dict[str, Any]:
    """Where and when a figure was taken, and from which commit (dirty when the tree had changes)."""
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": bool(status) if status is not None else None,
        "load_average_at_start": load_average(),
    }


def _memory_gib() -> float | None:
    try:
        for line in pathlib.Path("/proc/meminfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


def percentile(samples: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100), nearest-rank: always one of the samples, never interpolated."""
    if not samples:
        raise ValueError("no samples")
    ordered = sorted(samples)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def summary(samples: Sequence[float]) -> dict[str, float]:
    """Median, p90 (nearest rank), min and max of a list of seconds."""
    return {"median": statistics.median(samples), "p90": percentile(samples, 90),
            "min": min(samples), "max": max(samples), "n": len(samples)}


def command_line() -> str:
    """How this benchmark was started, as a reader would type it from the repository root."""
    script = pathlib.Path(sys.argv[0]).resolve()
    try:
        script_text = str(script.relative_to(ROOT))
    except ValueError:
        script_text = str(script)
    return " ".join([".venv/bin/python", script_text, *sys.argv[1:]])


def write_result(name: str, record: dict[str, Any]) -> pathlib.Path:
    """bench/results/<name>.json, written whole (a temporary file renamed over the old one)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    target = RESULTS / f"{name}.json"
    scratch = target.with_suffix(".json.tmp")
    scratch.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    scratch.replace(target)
    return target
