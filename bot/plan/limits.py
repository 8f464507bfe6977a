"""The time a job may take: the GPU workflow's job timeout and, on Slurm, the cluster's time limit."""
from __future__ import annotations

import math
import re

# .github/workflows/gpu.yml: `timeout-minutes: 360` on the jobs that run a planned job.
WORKFLOW_TIMEOUT_MINUTES = 360
WORKFLOW_LIMIT_S = WORKFLOW_TIMEOUT_MINUTES * 60.0


def slurm_seconds(text: str) -> float | None:
    """Slurm's time formats: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS; None for UNLIMITED/unknown."""
    text = text.strip()
    match = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", text)
    if not match:
        return None
    days, a, b, c = match.groups()
    if days is not None:
        hours, minutes, seconds = int(a), int(b or 0), int(c or 0)
        return float(((int(days) * 24 + hours) * 60 + minutes) * 60 + seconds)
    if c is not None:
        return float((int(a) * 60 + int(b)) * 60 + int(c))
    if b is not None:
        return float(int(a) * 60 + int(b))
    return float(int(a) * 60)


def limit_for(slurm_time_limit: str | None) -> tuple[float, str]:
    """The tighter of the workflow's timeout and the cluster's limit, and where it comes from."""
    limit, source = WORKFLOW_LIMIT_S, f"gpu.yml timeout-minutes: {WORKFLOW_TIMEOUT_MINUTES}"
    cluster = slurm_seconds(slurm_time_limit) if slurm_time_limit else None
    if cluster is not None and cluster < limit:
        limit, source = cluster, f"Slurm time limit {slurm_time_limit}"
    return limit, source


def chunk_sizes(points: int, startup_s: float, point_s: float, limit_s: float, tail_s: float = 0.0) -> list[int]:
    """Split `points` packed points into launches that each fit `limit_s` (startup + points, the last one
    also `tail_s`, e.g. its accuracy gate). A point that cannot fit even alone gets a launch of its own."""
    if points <= 0:
        return []
    if startup_s + points * point_s + tail_s <= limit_s:
        return [points]
    per = max(1, math.floor((limit_s - startup_s) / point_s)) if point_s > 0 else points
    sizes = [per] * (points // per) + ([points % per] if points % per else [])
    if startup_s + sizes[-1] * point_s + tail_s > limit_s and sizes[-1] > 1:
        sizes[-1] -= 1
        sizes.append(1)
    return sizes
