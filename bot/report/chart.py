"""Throughput per GPU against interactivity, one line per arm: a Mermaid xychart and a PNG.

Mermaid's xychart-beta cannot plot (x, y) pairs: a `line [...]` series is a list of y values
spread evenly over the x-axis, and every series spans the whole axis (there is no null, and
the grammar accepts plain decimals only). So the comment's chart puts every measured
interactivity on a categorical x-axis (`x-axis "..." ["12.3", "40.1", ...]`, the same for every
line) and plots, for each arm, its measured throughput at its own points and, at the other arms'
points, the throughput it achieves while serving every user at least that fast: the InferenceX
frontier reading of the sweep. The categories are evenly spaced, not to scale.

  * between measured points the value is linearly interpolated;
  * to the left of an arm's lowest measured interactivity the line holds the best throughput it
    measured (serving users more slowly is possible at that throughput);
  * the axis ends at the lowest of the lines' highest measured interactivities, so no line
    runs past its last measured point into an invented 0; points further right are counted
    under the chart and are in the tables and chart.png.

The chart has no legend of its own (xychart draws none on GitHub), so the palette is fixed
through the init directive and the legend is written under the chart with matching coloured
squares. At most MAX_LINES lines are drawn (arms with regressions first, each with its base
branch twin when there is one); chart.png has every measured point of every arm, unresampled.
"""
from __future__ import annotations

import json
import math
import pathlib
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from bot.report import plausible

if TYPE_CHECKING:  # only annotations: the chart child imports this module without the report's models
    from bot.report.model import Report

# (legend swatch, line colour): the colours are close to how the emoji squares render.
PALETTE: tuple[tuple[str, str], ...] = (
    ("🟦", "#3b82f6"), ("🟧", "#f97316"), ("🟩", "#22c55e"), ("🟥", "#ef4444"),
    ("🟪", "#a855f7"), ("🟫", "#92400e"), ("⬛", "#1f2937"), ("🟨", "#eab308"),
)
MAX_LINES = len(PALETTE)


@dataclass(frozen=True)
class Series:
    label: str  # "recipe / arm"
    base: bool  # the base branch's values of the same points
    points: tuple[tuple[float, float], ...]  # (interactivity, tput/GPU), by interactivity
    regressed: bool = False


@dataclass(frozen=True)
class MermaidLine:
    swatch: str
    label: str
    base: bool
    values: str  # "12.5, 40.0, ..." ready for `line [...]`


@dataclass(frozen=True)
class MermaidChart:
    init: str  # the %%{init: ...}%% line that fixes the palette
    x_min: str
    x_max: str
    y_max: str
    lines: tuple[MermaidLine, ...]
    omitted: int  # series only in chart.png
    beyond: int = 0  # measured points right of the axis end (in the tables and chart.png)
    x_labels: str = ""  # the x-axis categories ("12.3", "40.1", ...): every measured interactivity


def series_from(report: Report) -> list[Series]:
    """One series per arm with measured points, followed by its base twin when compared."""
    series: list[Series] = []
    for section in report.recipes:
        arms: dict[str, list] = {}
        for row in section.rows:
            arms.setdefault(row.arm, []).append(row)
        for arm, rows in arms.items():
            label = section.recipe if arm == section.recipe else f"{section.recipe} / {arm}"
            head = sorted((r.interactivity, r.tput_per_gpu) for r in rows
                          if r.status == "passed" and r.interactivity and r.tput_per_gpu)
            base = []
            for row in rows:
                if row.comparison is None:
                    continue
                x = y = None  # comparison.delta("interactivity") and ("tput_per_gpu"), in one pass
                for delta in row.comparison.deltas:
                    if delta.metric == "interactivity" and x is None:
                        x = delta
                    elif delta.metric == "tput_per_gpu" and y is None:
                        y = delta
                if x and y:
                    base.append((x.base, y.base))
            regressed = any(r.regressed for r in rows)
            if head:
                series.append(Series(label, False, tuple(head), regressed))
            if base:
                series.append(Series(label, True, tuple(sorted(base)), regressed))
    return series


_plotted: tuple[weakref.ref, list[Series]] | None = None


def plotted(report: Report) -> list[Series]:
    """series_from the report's plausible rows (an absurd point would flatten the rest): what both
    charts are drawn from, worked out once a report (the last report's, kept without keeping it)."""
    global _plotted
    if _plotted is None or _plotted[0]() is not report:
        _plotted = (weakref.ref(report), series_from(plausible.without_implausible(report)))
    return list(_plotted[1])


def frontier(points: tuple[tuple[float, float], ...], x: float) -> float:
    """Throughput per GPU achievable while every user gets at least `x` tokens/s (see above)."""
    best = max((y for px, y in points if px >= x), default=0.0)
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if x0 <= x <= x1 and x1 > x0:
            best = max(best, y0 + (y1 - y0) * (x - x0) / (x1 - x0))
    return best


def _nice_ceiling(value: float) -> float:
    if value <= 0:
        return 1.0
    magnitude = 10 ** math.floor(math.log10(value))
    return math.ceil(value / magnitude * 2) / 2 * magnitude


def _pick(series: list[Series]) -> list[Series]:
    """Up to MAX_LINES series, arms with a regression first, an arm and its base kept together."""
    groups: dict[str, list[Series]] = {}
    for s in series:
        groups.setdefault(s.label, []).append(s)
    ordered = sorted(groups.values(), key=lambda g: not any(s.regressed for s in g))
    picked: list[Series] = []
    for group in ordered:
        if len(picked) + len(group) <= MAX_LINES:
            picked += group
    return picked


def mermaid_chart(series: list[Series]) -> MermaidChart | None:
    picked = _pick(series)
    if not picked:
        return None
    xs = [x for s in picked for x, _ in s.points]
    # The axis ends where the first line's measurements end (rounded down to the printed 0.1),
    # never past it: a tick beyond a line's last measured point would plot an invented 0 there.
    # Points further right are in the tables and chart.png.
    last = min(max(x for x, _ in s.points) for s in picked)
    x_min, x_max = math.ceil(min(xs) * 10) / 10, math.floor(last * 10) / 10
    if x_max - x_min < 0.2:
        x_min = max(0.0, math.floor(min(xs) * 10) / 10 - 1)
    cut = sum(1 for s in picked for x, _ in s.points if x > last)
    # The x-axis is every measured interactivity (printed to 0.1), so each line passes through each
    # of its measured points exactly; a line's value at another line's point is interpolated. An
    # even grid would plot resampled values and miss the measured ones.
    ticks = sorted({round(x, 1) for s in picked for x, _ in s.points if x <= last}) or [x_min, x_max]
    lines, peak = [], 0.0
    for index, s in enumerate(picked):
        values = [_at(s.points, x) for x in ticks]
        peak = max(peak, *values)
        lines.append(MermaidLine(PALETTE[index][0], s.label, s.base,
                                 ", ".join(f"{v:.1f}" for v in values)))
    palette = ", ".join(colour for _, colour in PALETTE[:len(picked)])
    init = "%%{init: " + json.dumps({"themeVariables": {"xyChart": {
        "plotColorPalette": palette}}}) + "}%%"
    return MermaidChart(init, f"{x_min:.1f}", f"{x_max:.1f}", f"{_nice_ceiling(peak * 1.05):.1f}",
                        tuple(lines), len(series) - len(picked), cut,
                        ", ".join(f'"{x:.1f}"' for x in ticks))


def _at(points: tuple[tuple[float, float], ...], x: float) -> float:
    """The measured throughput at interactivity `x` (to 0.1) when the series has a point there, else
    the frontier (interpolated, or held to the left of its first point)."""
    measured = [y for px, y in points if round(px, 1) == x]
    return max(measured) if measured else frontier(points, x)


def y_label(title: str) -> str:
    """chart.png's y-axis: the quantity its title names ("Throughput per GPU", "Throughput (CPU)")."""
    return f"{title.split(' vs ', 1)[0]} (tok/s)"


PNG_MAX_ARMS = 40  # past this a chart is a tangle; the title says how many are left out


def write_png(series: list[Series], path: pathlib.Path, title: str) -> None:
    """Measured points, one line per arm (base dashed in the same colour); no resampling.

    Up to PNG_MAX_ARMS arms (regressed first, in report order), each with its base twin."""
    labels = list(dict.fromkeys(s.label for s in sorted(series, key=lambda s: not s.regressed)))
    kept = set(labels[:PNG_MAX_ARMS])
    if len(labels) > len(kept):
        title = f"{title} · {len(kept)} of {len(labels)} arms, regressed first"
    series = [s for s in series if s.label in kept]

    figure = Figure(figsize=(10, 6.5), dpi=110)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    colours: dict[str, str] = {}
    extra = [f"C{i}" for i in range(10)]
    for s in series:
        if s.label not in colours:
            index = len(colours)
            colours[s.label] = (PALETTE[index][1] if index < len(PALETTE)
                                else extra[(index - len(PALETTE)) % len(extra)])
        xs, ys = zip(*s.points)
        axes.plot(xs, ys, marker="o", markersize=3.5, linewidth=1.6,
                  linestyle="--" if s.base else "-", color=colours[s.label],
                  label=f"{s.label} (base)" if s.base else s.label)
    if not series:
        axes.text(0.5, 0.5, "no measured points", ha="center", va="center",
                  transform=axes.transAxes)
    axes.set_xlabel("Interactivity (tok/s/user)")
    axes.set_ylabel(y_label(title))
    axes.set_title(title)
    axes.grid(True, alpha=0.3)
    if series and len(series) <= 24:
        axes.legend(fontsize=7, loc="best")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, format="png", metadata={"Software": None})
