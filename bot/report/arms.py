"""A `compare:` job's two arms side by side: mean ± std over repeats, Δ%, the noise rule, GPU-hours per arm."""
from __future__ import annotations

import statistics

from bot import i18n
from bot.results import JobResult, PointMetrics

# (key, label, how to read it from a run's metrics, higher is better)
METRICS = (
    ("tput", "output tok/s", lambda m: m.output_throughput, True),
    ("ttft", "TTFT p50 ms", lambda m: m.ttft_ms.get("median"), False),
    ("tpot", "TPOT p50 ms", lambda m: m.tpot_ms.get("median"), False),
)
METRIC_ZH = {"output tok/s": "输出吞吐（tok/s）", "TTFT p50 ms": "TTFT p50（毫秒）", "TPOT p50 ms": "TPOT p50（毫秒）"}


def _runs(point) -> list[PointMetrics]:
    return list(point.repeats) or ([point.metrics] if point.metrics is not None else [])


def _spread_pct(values: list[float]) -> float | None:
    """The range between runs relative to their median (docs/fidelity.md: the spread of runs)."""
    if len(values) < 2:
        return None
    middle = statistics.median(values)
    return None if middle == 0 else 100.0 * (max(values) - min(values)) / middle


def judge(left: list[float], right: list[float]) -> dict:
    """Δ% of the right arm against the left, and what the noise rule lets it say: with repeats, the
    interval is Δ ± the widest run-to-run range of either arm; a Δ inside it is noise, not a difference;
    one run an arm: no interval and no claim (inconclusive)."""
    a, b = statistics.fmean(left), statistics.fmean(right)
    delta = None if a == 0 else 100.0 * (b - a) / a
    spreads = [s for s in (_spread_pct(left), _spread_pct(right)) if s is not None]
    noise = max(spreads) if len(spreads) == 2 else None
    if delta is None or noise is None:
        verdict = "inconclusive"
    else:
        verdict = "noise" if abs(delta) <= noise else "differs"
    return {"delta": delta, "noise": noise, "verdict": verdict}


def _cell(values: list[float]) -> str:
    mean = statistics.fmean(values)
    std = statistics.stdev(values) if len(values) > 1 else 0.0
    return f"{mean:,.1f} ± {std:,.1f}"


def arm_rows(result: JobResult) -> list[dict]:
    """One row per concurrency and metric, each arm's repeats summarised and the Δ judged."""
    cases = {c.name: c for c in result.cases}
    left, right = (cases.get(name) for name in result.compare_arms[:2])
    if left is None or right is None:
        return []
    by_conc = {p.concurrency: p for p in right.points}
    rows = []
    for point in left.points:
        other = by_conc.get(point.concurrency)
        runs_a, runs_b = _runs(point), _runs(other) if other is not None else []
        for key, label, read, higher in METRICS:
            a = [v for v in (read(m) for m in runs_a) if v is not None]
            b = [v for v in (read(m) for m in runs_b) if v is not None]
            if not a or not b:
                rows.append({"conc": point.concurrency, "metric": label, "metric_zh": METRIC_ZH[label],
                         "left": "—", "right": "—",
                             "delta": "—", "verdict": "missing", "runs": f"{len(a)}/{len(b)}"})
                continue
            judged = judge(a, b)
            rows.append({"conc": point.concurrency, "metric": label, "metric_zh": METRIC_ZH[label],
                         "left": _cell(a), "right": _cell(b),
                         "delta": "—" if judged["delta"] is None else f"{judged['delta']:+.1f}%",
                         "noise": None if judged["noise"] is None else f"±{judged['noise']:.1f}%",
                         "verdict": judged["verdict"], "better": key == "tput" and higher,
                         "runs": f"{len(a)}/{len(b)}"})
    return rows


def gpu_hours(result: JobResult) -> list[dict]:
    """Every GPU each arm holds, for as long as it ran (its start-up and teardown included)."""
    out = []
    for name in result.compare_arms:
        case = next((c for c in result.cases if c.name == name), None)
        if case is None:
            continue
        gpus, seconds = case.gpus or 0, case.duration_s or 0.0
        out.append({"arm": name, "gpus": gpus, "seconds": round(seconds, 1),
                    "gpu_hours": round(gpus * seconds / 3600.0, 4), "status": case.status})
    return out


def section(results: list[JobResult]) -> str:
    """The bilingual sections for compare jobs and manual suites among the results; empty when none."""
    parts = []
    manual = sorted({(r.recipe, r.manual) for r in results if r is not None and r.manual})
    if manual:
        parts.append(i18n.render_bilingual("report/manual", suites=[{"recipe": n, "reason": why} for n, why in manual]))
    for result in results:
        if result is None or len(result.compare_arms) != 2:
            continue
        parts.append(i18n.render_bilingual(
            "report/arms", recipe=result.recipe, left=result.compare_arms[0], right=result.compare_arms[1],
            rows=arm_rows(result), hours=gpu_hours(result), status=result.status))
    return "\n\n".join(parts)
