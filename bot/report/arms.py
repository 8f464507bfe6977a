"""A `compare:` job's two arms side by side: mean ± std over repeats, Δ%, the noise rule, GPU-hours per arm."""
from __future__ import annotations

import statistics
from collections.abc import Sequence

from bot.core import i18n
from bot.core.messages import msg
from bot.core.results import JobResult, PointMetrics, RequestSamples
from bot.report import noise

# (key, label, how to read it from a run's metrics, higher is better, the metric bot.report.noise
# recomputes from per-request data: output tokens per request-second, TTFT and TPOT medians)
METRICS = (
    ("tput", msg("output tok/s"), lambda m: m.output_throughput, True, "output_tput_per_gpu"),
    ("ttft", msg("TTFT p50 ms"), lambda m: m.ttft_ms.get("median"), False, "ttft_p50"),
    ("tpot", msg("TPOT p50 ms"), lambda m: m.tpot_ms.get("median"), False, "tpot_p50"),
)


def _runs(point) -> list[PointMetrics]:
    return list(point.repeats) or ([point.metrics] if point.metrics is not None else [])


def judge(left: list[float], right: list[float], *, metric: str | None = None, higher_is_better: bool = True,
          left_requests: Sequence[RequestSamples | None] = (),
          right_requests: Sequence[RequestSamples | None] = ()) -> dict:
    """Δ% of the right arm against the left, and what the noise rule of docs/fidelity.md lets it say:
    with per-request data on both arms, the bootstrap's 95 % interval (bot.report.noise.bootstrap);
    else, with repeats, Δ ± the widest run-to-run range (noise.from_runs); else no interval and no
    claim (inconclusive). The Δ is a difference only when its interval leaves out zero."""
    a, b = statistics.fmean(left), statistics.fmean(right)
    if a == 0:
        return {"delta": None, "noise": None, "verdict": "inconclusive", "basis": "none"}
    delta = 100.0 * (b - a) / a
    worse = -delta if higher_is_better else delta  # noise's intervals are of the worse-%
    interval = None
    if metric and any(left_requests) and any(right_requests):
        wanted = [noise.Wanted(metric, higher_is_better, worse)]
        interval = noise.bootstrap(wanted, right_requests, left_requests).get(metric)
    if interval is None:
        interval = noise.from_runs(worse, right, left)
    if interval is None:
        return {"delta": delta, "noise": None, "verdict": "inconclusive", "basis": "none"}
    verdict = "noise" if interval.low <= 0 <= interval.high else "differs"
    return {"delta": delta, "noise": (interval.high - interval.low) / 2, "verdict": verdict, "basis": interval.basis}


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
        for key, label, read, higher, recomputed in METRICS:
            a = [v for v in (read(m) for m in runs_a) if v is not None]
            b = [v for v in (read(m) for m in runs_b) if v is not None]
            if not a or not b:
                rows.append({"conc": point.concurrency, "metric": label,
                         "left": "—", "right": "—",
                             "delta": "—", "verdict": "missing", "runs": f"{len(a)}/{len(b)}"})
                continue
            judged = judge(a, b, metric=recomputed, higher_is_better=higher,
                           left_requests=[m.requests for m in runs_a], right_requests=[m.requests for m in runs_b])
            rows.append({"conc": point.concurrency, "metric": label,
                         "left": _cell(a), "right": _cell(b),
                         "delta": "—" if judged["delta"] is None else f"{judged['delta']:+.1f}%",
                         "noise": None if judged["noise"] is None else f"±{judged['noise']:.1f}%",
                         "verdict": judged["verdict"], "basis": judged["basis"], "better": key == "tput" and higher,
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
