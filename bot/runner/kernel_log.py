"""GPU errors the kernel logged during a case (NVRM Xid lines), as evidence for its failure class.

An Xid (a GPU fallen off the bus, a double-bit ECC error, a driver fault) often shows in the
server's log only as an unexplained crash; the kernel ring buffer says what happened. The runner
reads it once per failed GPU case, keeps the NVRM lines logged since the case started, and adds
them to the case's log tail, where bot/core/failure_classes.py finds them. Where the ring buffer is
not readable (kernel.dmesg_restrict, a container), nothing is added and nothing fails.
"""
from __future__ import annotations

import re
import subprocess
import time

_STAMPED = re.compile(r"^\[\s*(?P<seconds>\d+\.\d+)\]\s*(?P<text>.*)$")
_GPU_ERROR = re.compile(r"NVRM: (?:Xid|GPU at PCI:.*has fallen off the bus)|\bXid\b", re.I)
MAX_LINES = 5


def boot_seconds() -> float:
    """Seconds since boot on the clock dmesg stamps its lines with."""
    return time.clock_gettime(time.CLOCK_BOOTTIME)


def gpu_errors(dmesg_text: str, since_s: float, limit: int = MAX_LINES) -> list[str]:
    """The last NVRM Xid lines stamped at or after `since_s` (seconds since boot)."""
    found = []
    for line in dmesg_text.splitlines():
        match = _STAMPED.match(line)
        if match and float(match["seconds"]) >= since_s and _GPU_ERROR.search(match["text"]):
            found.append(f"kernel: {match['text'].strip()}")
    return found[-limit:]


def read_gpu_errors(since_s: float) -> list[str]:
    """`dmesg` read once (bounded to 5 s); [] where it cannot be read."""
    try:
        done = subprocess.run(["dmesg"], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    return gpu_errors(done.stdout, since_s) if done.returncode == 0 else []
