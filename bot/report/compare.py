"""Compare each point with the base branch's results for the same recipe fingerprint and point id.

The baseline directory holds result.json files downloaded from the base branch's latest
successful GPU runs (one run or several). The base value of a metric is the median over those
runs, and the spread between them (max - min, relative to the median) is the noise. A point
regresses on a metric when it is worse than the base by more than the repository's threshold
AND by more than that noise: a difference the base branch shows between its own repeated runs
is not blamed on the PR.
"""
from __future__ import annotations

import math
import pathlib
import statistics
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

import pydantic

from bot.report.collect import RESULT_FILE, InputError
from bot.results import JobResult, PointMetrics


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

DeltaVerdict = Literal["regression", "improvement", "within-threshold", "within-noise",
                       "ungated"]


def _percent(value: object, key: str) -> float:
    text = str(value).strip().removesuffix("%").strip() if isinstance(value, str) else value
    try:
        number = float(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        number = math.nan
    if not math.isfinite(number) or number < 0:
        raise InputError(f"report.thresholds.{key}: {value!r} is not a percentage; "
                         "write a non-negative number such as 5 or \"5%\"")
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
        raise InputError("report.thresholds: expected a mapping of metric to percent, "
                         f"e.g. {{tput_per_gpu: 5, ttft_p99: 10}}; got {type(raw).__name__}")
    for key, value in raw.items():
        if key not in METRICS:
            raise InputError(f"report.thresholds.{key}: unknown metric; accepted: "
                             + ", ".join(METRICS))
        if value is None:  # an explicit null switches the gate off for that metric
            thresholds.pop(key, None)
        else:
            thresholds[key] = _percent(value, key)
    return thresholds


@dataclass(frozen=True)
class BaseSample:
    metrics: PointMetrics
    sha: str | None
    engine_version: str | None
    gpus: tuple[str, ...]


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
                    samples.setdefault((result.recipe_fingerprint, point.point_id), []).append(
                        BaseSample(point.metrics, result.sha, result.engine_version, gpus))
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


@dataclass(frozen=True)
class Comparison:
    base_runs: int
    deltas: tuple[Delta, ...]
    env_changes: tuple[str, ...] = ()  # what differs between the base runs and this one

    def delta(self, metric: str) -> Delta | None:
        return next((d for d in self.deltas if d.metric == metric), None)

    @property
    def regressions(self) -> list[Delta]:
        return [d for d in self.deltas if d.verdict == "regression"]

    @property
    def improvements(self) -> list[Delta]:
        return [d for d in self.deltas if d.verdict == "improvement"]


def _judge(worse: float, noise: float | None, threshold: float | None) -> DeltaVerdict:
    if threshold is None:
        return "ungated"
    if worse > threshold:
        return "within-noise" if noise is not None and worse <= noise else "regression"
    if -worse > threshold:
        return "improvement"
    return "within-threshold"


def compare_point(metrics: PointMetrics, samples: tuple[BaseSample, ...],
                  thresholds: Mapping[str, float], *, engine_version: str | None = None,
                  gpus: tuple[str, ...] = ()) -> Comparison | None:
    """Δ% of every metric against the median of the base samples; None without a baseline."""
    if not samples:
        return None
    deltas = []
    for metric in METRICS.values():
        head = metric.value(metrics)
        values = [v for v in (metric.value(s.metrics) for s in samples) if v is not None]
        if head is None or not values:
            continue
        base = statistics.median(values)
        if base == 0:
            continue
        change = (head - base) / abs(base) * 100
        worse = -change if metric.higher_is_better else change
        noise = (max(values) - min(values)) / abs(base) * 100 if len(values) > 1 else None
        threshold = thresholds.get(metric.key)
        deltas.append(Delta(metric.key, head, base, change, worse, noise, threshold,
                            _judge(worse, noise, threshold)))
    env = []
    base_engines = sorted({s.engine_version for s in samples if s.engine_version})
    if engine_version and base_engines and base_engines != [engine_version]:
        env.append(f"engine {'/'.join(base_engines)} → {engine_version}")
    base_gpus = sorted({", ".join(sorted(set(s.gpus))) for s in samples if s.gpus})
    head_gpus = ", ".join(sorted(set(gpus)))
    if head_gpus and base_gpus and base_gpus != [head_gpus]:
        env.append(f"GPUs {' / '.join(base_gpus)} → {head_gpus}")
    return Comparison(len(samples), tuple(deltas), tuple(env))
