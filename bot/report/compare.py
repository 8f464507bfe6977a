"""Compare each point with the base branch's results for the same recipe fingerprint and point id.

The baseline directory holds result.json files downloaded from the base branch's latest
successful GPU runs (one run or several, each possibly with repeats). The base value of a metric
is the median over those runs. A point regresses on a metric only when an interval around its Δ
(bootstrap over per-request data and runs, else the spread of repeated runs: bot/report/noise.py)
lies wholly beyond the repository's threshold; a percentile is judged only when both sides have
enough requests for it. One run a side without per-request data gives no interval, hence no
claim: the row says so ("inconclusive"), and never fails the check on its own.
"""
from __future__ import annotations

import functools
import math
import pathlib
import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

import pydantic

from bot.report import noise
from bot.report.collect import RESULT_FILE, InputError
from bot.core.results import JobResult, PointMetrics, PointResult
from bot.core.messages import msg


@dataclass(frozen=True)
class Metric:
    key: str
    higher_is_better: bool
    extract: Callable[[PointMetrics], float | None]

    def value(self, metrics: PointMetrics) -> float | None:
        value = self.extract(metrics)
        return None if value is None or not math.isfinite(value) else float(value)


METRICS: dict[str, Metric] = {metric.key: metric for metric in (
    Metric("tput_per_gpu", True, lambda m: m.tput_per_gpu),
    Metric("output_tput_per_gpu", True, lambda m: m.output_tput_per_gpu),
    Metric("interactivity", True, lambda m: m.interactivity),
    Metric("ttft_p50", False, lambda m: m.ttft_ms.get("median")),
    Metric("ttft_p99", False, lambda m: m.ttft_ms.get("p99")),
    Metric("tpot_p50", False, lambda m: m.tpot_ms.get("median")),
    Metric("tpot_p99", False, lambda m: m.tpot_ms.get("p99")),
    Metric("e2el_p99", False, lambda m: m.e2el_ms.get("p99")),
)}

# Percent worse than the base that fails the check (issue 5 defaults).
DEFAULT_THRESHOLDS: dict[str, float] = {"tput_per_gpu": 5.0, "ttft_p99": 10.0}

# inconclusive: worse than the threshold, but no interval (one run a side, no per-request data).
# unsupported: a percentile from fewer requests than it needs (p99: 100); shown, never judged.
DeltaVerdict = Literal["regression", "improvement", "within-threshold", "within-noise",
                       "ungated", "inconclusive", "unsupported"]


def _percent(value: object, key: str) -> float:
    text = str(value).strip().removesuffix("%").strip() if isinstance(value, str) else value
    try:
        number = float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number) or number < 0:
        raise InputError(msg('report.thresholds.%(key)s: %(value)s is not a percentage; write a non-negative number '
                             'such as 5 or "5%%"', key=key, value=repr(value)))
    return number


def thresholds_from(config: object | None) -> dict[str, float]:
    """Per-metric thresholds in percent: the defaults, overridden by the repository config.

    `config` is a RepoConfig (its `.report.thresholds`), a plain mapping, or None."""
    raw: object = config
    for attribute in ("report", "thresholds"):
        if raw is not None and not isinstance(raw, Mapping) and hasattr(raw, attribute):
            raw = getattr(raw, attribute)
    if raw is not None and not isinstance(raw, Mapping) and hasattr(raw, "model_dump"):
        raw = raw.model_dump()
    if isinstance(raw, Mapping) and "thresholds" in raw and isinstance(raw["thresholds"], Mapping):
        raw = raw["thresholds"]
    thresholds = dict(DEFAULT_THRESHOLDS)
    if raw is None:
        return thresholds
    if not isinstance(raw, Mapping):
        raise InputError(msg("report.thresholds: expected a mapping of metric to percent, e.g. {tput_per_gpu: 5, "
                             "ttft_p99: 10}; got %(got)s", got=type(raw).__name__))
    for key, value in raw.items():
        if key not in METRICS:
            raise InputError(msg("report.thresholds.%(key)s: unknown metric; accepted: %(accepted)s", key=key,
                                 accepted=", ".join(METRICS)))
        if value is None:  # an explicit null switches the gate off for that metric
            thresholds.pop(key, None)
        else:
            thresholds[key] = _percent(value, key)
    return thresholds


def runs_of(point: PointResult) -> list[PointMetrics]:
    """The measured runs behind a point: its repeats, or its one result."""
    if point.repeats:
        return list(point.repeats)
    return [point.metrics] if point.metrics is not None else []


# How PointResult.client_process reads in an environment change.
CLIENT_PROCESS = {"case": "one a case", "point": "one a point", "mixed": "mixed"}


@dataclass(frozen=True)
class BaseSample:
    metrics: PointMetrics
    sha: str | None
    engine_version: str | None
    gpus: tuple[str, ...]
    client_process: str | None = None  # PointResult.client_process of the run it came from


@dataclass(frozen=True)
class Baseline:
    samples: Mapping[tuple[str, str], tuple[BaseSample, ...]] = field(default_factory=dict)
    shas: tuple[str, ...] = ()
    unreadable: tuple[str, ...] = ()  # files that did not parse; reported, never fatal

    def lookup(self, fingerprint: str, point_id: str) -> tuple[BaseSample, ...]:
        return tuple(self.samples.get((fingerprint, point_id), ()))


def load_baseline(directory: pathlib.Path | None) -> Baseline:
    """Every passed point with metrics in the base results, keyed by (fingerprint, point id)."""
    if directory is None or not directory.is_dir():
        return Baseline()
    samples: dict[tuple[str, str], list[BaseSample]] = {}
    shas: list[str] = []
    unreadable: list[str] = []
    for file in sorted(directory.rglob(RESULT_FILE)):
        try:
            result = JobResult.model_validate_json(file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, pydantic.ValidationError) as exc:
            why = (f"{exc.errors()[0]['msg']} at {'.'.join(map(str, exc.errors()[0]['loc']))}"
                   if isinstance(exc, pydantic.ValidationError) else type(exc).__name__)
            unreadable.append(f"{file.relative_to(directory).as_posix()}: {why}")
            continue
        if result.sha and result.sha not in shas:
            shas.append(result.sha)
        gpus = tuple(result.hardware.gpus) if result.hardware else ()
        for case in result.cases:
            for point in case.points:
                if point.status == "passed" and point.metrics is not None:
                    # Each repeat is a run of its own: its spread is the base's noise.
                    samples.setdefault((result.recipe_fingerprint, point.point_id), []).extend(
                        BaseSample(metrics, result.sha, result.engine_version, gpus, point.client_process)
                        for metrics in runs_of(point))
    return Baseline({key: tuple(value) for key, value in samples.items()}, tuple(shas),
                    tuple(unreadable))


@dataclass(frozen=True)
class Delta:
    metric: str
    head: float
    base: float
    change_pct: float  # (head - base) / base, in percent
    worse_pct: float  # the same change, positive when it is worse for this metric
    noise_pct: float | None  # spread between repeated base runs; None with one run
    threshold_pct: float | None  # None: shown, never gated
    verdict: DeltaVerdict
    interval: noise.Interval | None = None  # worse-% interval; None: none could be formed
    head_samples: int | None = None  # requests in each head run (the fewest, with repeats)
    base_samples: int | None = None  # requests behind the base figure, fewest of the base runs

    @property
    def change_interval(self) -> tuple[float, float] | None:
        """The interval in Δ% (the sign of change_pct), low to high."""
        if self.interval is None:
            return None
        if METRICS[self.metric].higher_is_better:  # worse is the negated change
            return (-self.interval.high, -self.interval.low)
        return (self.interval.low, self.interval.high)


@dataclass(frozen=True)
class Comparison:
    base_runs: int
    deltas: tuple[Delta, ...]
    env_changes: tuple[str, ...] = ()  # what differs between the base runs and this one
    head_runs: int = 1

    @property
    def basis(self) -> noise.Basis:
        """How the gated deltas' intervals were formed: the weakest basis among them."""
        bases = {d.interval.basis if d.interval else "none" for d in self.deltas
                 if d.threshold_pct is not None and d.verdict != "unsupported"}
        for weakest in ("none", "runs", "requests"):
            if weakest in bases:
                return weakest  # type: ignore[return-value]
        return "none"

    def delta(self, metric: str) -> Delta | None:
        return next((d for d in self.deltas if d.metric == metric), None)

    @property
    def regressions(self) -> list[Delta]:
        return [d for d in self.deltas if d.verdict == "regression"]

    @property
    def improvements(self) -> list[Delta]:
        return [d for d in self.deltas if d.verdict == "improvement"]


def _judge(worse: float, interval: noise.Interval | None, threshold: float | None,
           supported: bool) -> DeltaVerdict:
    if threshold is None:
        return "ungated"
    if not supported:
        return "unsupported"
    if interval is not None and interval.low > threshold:
        return "regression"
    if interval is not None and interval.high < -threshold:
        return "improvement"
    if abs(worse) <= threshold:
        return "within-threshold"
    return "within-noise" if interval is not None else "inconclusive"


@functools.lru_cache(maxsize=256)
def _gpu_label(gpus: tuple[str, ...]) -> str:
    """The GPU models of a host, once each and sorted: what an environment change names."""
    return ", ".join(sorted(set(gpus)))


def _requests(metrics: PointMetrics) -> int:
    return metrics.requests.count if metrics.requests is not None else metrics.completed


@dataclass(frozen=True, slots=True)
class _Measured:
    """One metric of a point with a base to compare with, before its interval is formed."""
    metric: Metric
    head: float
    base_values: tuple[float, ...]  # the base runs' finite values
    base: float  # their median
    change: float
    worse: float
    threshold: float | None
    supported: bool  # enough requests on both sides to judge it


def _measure(metric: Metric, metrics: PointMetrics, base_metrics: list[PointMetrics],
             thresholds: Mapping[str, float], head_n: int, base_n: int) -> _Measured | None:
    head = metric.value(metrics)
    if head is None:
        return None
    values = tuple(v for m in base_metrics if (v := metric.value(m)) is not None)
    if not values:
        return None
    base = statistics.median(values)
    if base == 0:
        return None
    change = (head - base) / abs(base) * 100
    return _Measured(metric, head, values, base, change, -change if metric.higher_is_better else change,
                     thresholds.get(metric.key),
                     noise.supported(metric.key, head_n) and noise.supported(metric.key, base_n))


def compare_point(metrics: PointMetrics, samples: tuple[BaseSample, ...],
                  thresholds: Mapping[str, float], *, engine_version: str | None = None,
                  gpus: tuple[str, ...] = (),
                  head_repeats: tuple[PointMetrics, ...] = (),
                  client_process: str | None = None) -> Comparison | None:
    """Δ% of every metric against the median of the base runs, each with its interval and
    verdict; None without a baseline. `head_repeats`: every head run when the point repeated."""
    if not samples:
        return None
    head_runs = list(head_repeats) or [metrics]
    # A percentile is read from one run: it needs the requests in each run, not all together.
    head_n = min(_requests(m) for m in head_runs)
    base_metrics = [s.metrics for s in samples]
    base_n = min(_requests(m) for m in base_metrics)
    measured = [m for metric in METRICS.values()
                if (m := _measure(metric, metrics, base_metrics, thresholds, head_n, base_n)) is not None]
    # One bootstrap for every gated metric of the point: the same replicates serve them all
    # (none without per-request data on both sides, which noise.bootstrap would also answer).
    intervals: dict[str, noise.Interval] = {}
    if all(m.requests is not None for m in head_runs) and all(m.requests is not None for m in base_metrics):
        intervals = noise.bootstrap(
            [noise.Wanted(m.metric.key, m.metric.higher_is_better, m.worse)
             for m in measured if m.threshold is not None and m.supported],
            [m.requests for m in head_runs], [m.requests for m in base_metrics])
    deltas = []
    for m in measured:
        interval = intervals.get(m.metric.key)
        if interval is None and m.threshold is not None and m.supported:
            head_values = [v for run in head_runs if (v := m.metric.value(run)) is not None] if head_repeats \
                else [m.head]
            interval = noise.from_runs(m.worse, head_values, m.base_values)
        deltas.append(Delta(m.metric.key, m.head, m.base, m.change, m.worse, noise.spread_pct(m.base_values),
                            m.threshold, _judge(m.worse, interval, m.threshold, m.supported), interval,
                            head_n, base_n))
    env = []
    base_engines = sorted({s.engine_version for s in samples if s.engine_version})
    if engine_version and base_engines and base_engines != [engine_version]:
        env.append(f"engine {'/'.join(base_engines)} → {engine_version}")
    base_gpus = sorted({_gpu_label(tuple(s.gpus)) for s in samples if s.gpus})
    head_gpus = _gpu_label(tuple(gpus))
    if head_gpus and base_gpus and base_gpus != [head_gpus]:
        env.append(f"GPUs {' / '.join(base_gpus)} → {head_gpus}")
    base_clients = sorted({s.client_process for s in samples if s.client_process})
    if client_process and base_clients and base_clients != [client_process]:
        env.append(f"benchmark client process {'/'.join(CLIENT_PROCESS[c] for c in base_clients)} → "
                   f"{CLIENT_PROCESS[client_process]}")
    return Comparison(len(samples), tuple(deltas), tuple(env), len(head_runs))
