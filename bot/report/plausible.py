"""Figures no engine can produce (TPOT 0.0 ms → 179,904 tok/s/user): flagged in the report, kept out of the chart.

A reader trusts a table row marked passed. A point whose median TPOT rounds to zero (one-token
outputs; a starved API server sending a whole streamed answer in one write, as the CPU engine did
when the runner gave each server a scheduler autogroup of its own; a client timing bug) makes an
interactivity no GPU reaches, and stretches the chart's x-axis until every other line is flat.
Such a row is shown with what is implausible, never as a plain pass, and the chart is drawn
without it. The limits are far beyond any engine measured.
"""
from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

from bot.report.model import PointRow, Report

MIN_TPOT_MS = 0.1  # 10,000 tok/s for one user: no decode step is that short
MAX_INTERACTIVITY = 10_000.0  # tok/s/user, the same bound seen from the other side
MAX_TPUT_PER_GPU = 1_000_000.0  # tok/s on one GPU


@dataclass(frozen=True)
class Implausible:
    """The first implausible figure of a row: which metric, its value and the bound it breaks."""

    metric: str  # a METRIC key of the templates: tpot_p50, interactivity, tput_per_gpu, ttft_p50
    value: str
    bound: str


def _bad(value: float | None) -> bool:
    return value is not None and (not math.isfinite(value) or value < 0)


def implausible(row: PointRow) -> Implausible | None:
    """Why a measured row cannot be right, or None when its figures are believable."""
    if row.status != "passed":
        return None
    tput, interactivity, ttft, tpot = row.tput_per_gpu, row.interactivity, row.ttft_p50, row.tpot_p50
    # Nearly every row: all four present and within every bound below (NaN and inf fail these
    # comparisons and go on to the checks that name them).
    if (tput is not None and interactivity is not None and ttft is not None and tpot is not None
            and 0 <= tput <= MAX_TPUT_PER_GPU and 0 <= interactivity <= MAX_INTERACTIVITY
            and 0 <= ttft < math.inf and MIN_TPOT_MS <= tpot < math.inf):
        return None
    for metric in ("tput_per_gpu", "interactivity", "ttft_p50", "tpot_p50"):
        value = getattr(row, metric)
        if _bad(value):
            return Implausible(metric, str(value), "a finite value ≥ 0")
    if row.tpot_p50 is not None and row.tpot_p50 < MIN_TPOT_MS:
        return Implausible("tpot_p50", f"{row.tpot_p50:.2f} ms", f"≥ {MIN_TPOT_MS} ms")
    if row.interactivity is not None and row.interactivity > MAX_INTERACTIVITY:
        return Implausible("interactivity", f"{row.interactivity:,.0f} tok/s/user", f"≤ {MAX_INTERACTIVITY:,.0f}")
    if row.tput_per_gpu is not None and row.tput_per_gpu > MAX_TPUT_PER_GPU:
        return Implausible("tput_per_gpu", f"{row.tput_per_gpu:,.0f} tok/s", f"≤ {MAX_TPUT_PER_GPU:,.0f}")
    return None


def count(report: Report) -> int:
    return sum(1 for section in report.recipes for row in section.rows if implausible(row) is not None)


def without_implausible(report: Report) -> Report:
    """The same report with implausible rows left out: what the chart is drawn from."""
    if not count(report):
        return report
    sections = tuple(
        dataclasses.replace(section, rows=tuple(r for r in section.rows if implausible(r) is None))
        for section in report.recipes)
    return dataclasses.replace(report, recipes=sections)
