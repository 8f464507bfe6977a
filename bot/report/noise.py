"""How sure a Δ is: sample support for percentiles, and a bootstrap or run-spread interval.

A p99 from 32 requests is the second-largest of them: it moves by tens of percent between two
runs of identical code. So a percentile is only judged when each side has enough requests
(n · (1 − q) ≥ 1: p99 needs 100, p90 needs 10), and a regression is only claimed when an
interval around the Δ excludes the threshold:

  * with per-request data on both sides (`vllm bench serve --save-detailed`), a bootstrap:
    resample the runs (when there are several), then the requests within each, recompute the
    metric on both sides and take the central CONFIDENCE share of the relative change. The
    interval is centred on the measured Δ; the bootstrap gives its width.
  * without it, the spread of repeated runs (base runs and head repeats): Δ ± the largest
    range between runs of one side, relative to its median ("interval from N runs only");
  * with one run a side and no per-request data there is no interval, and no claim.

Every random draw comes from one fixed seed: the same inputs give the same interval.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from bot.core.results import RequestSamples


CONFIDENCE = 0.95
RESAMPLES = 1000
SEED = 20_261_130

Basis = Literal["requests", "runs", "none"]

# Which statistic of the per-request distribution a metric is; throughput metrics are ratios.
_QUANTILE = {"ttft_p50": 0.5, "ttft_p99": 0.99, "tpot_p50": 0.5, "tpot_p99": 0.99,
             "e2el_p99": 0.99, "interactivity": 0.5}


def min_samples(quantile: float) -> int:
    """Requests a quantile needs before it is more than the extreme of a handful: n·(1−q) ≥ 1."""
    if quantile <= 0.5:
        return 2
    return math.ceil(1 / (1 - quantile) - 1e-9)


def required_samples(metric: str) -> int:
    """Requests that `metric` needs on each side to be judged (1 for means and throughput)."""
    quantile = _QUANTILE.get(metric)
    return 1 if quantile is None else min_samples(quantile)


def supported(metric: str, samples: int | None) -> bool:
    """Whether `samples` requests support `metric`; unknown counts never block a metric."""
    return samples is None or samples >= required_samples(metric)


@dataclass(frozen=True)
class Interval:
    low: float  # worse-%, CONFIDENCE interval
    high: float
    basis: Basis
    runs: int  # runs behind the interval: base runs + head runs


_Arrays = dict[str, "np.ndarray"]


def _arrays(samples: RequestSamples) -> _Arrays:
    e2el = np.asarray(samples.e2el_ms, dtype=float)
    out = np.asarray(samples.output_tokens, dtype=float)
    total = out + np.asarray(samples.input_tokens, dtype=float)
    return {"ttft": np.asarray(samples.ttft_ms, dtype=float),
            "tpot": np.asarray(samples.tpot_ms, dtype=float), "e2el": e2el,
            "out": out, "total": total}


def _statistic(metric: str) -> tuple[tuple[str, ...], Callable[[_Arrays], np.ndarray]] | None:
    """The columns a metric reads and the metric recomputed from them, one value per row of 2-D
    arrays (throughput: tokens per second of request time, which at a fixed concurrency moves
    with the measured throughput)."""
    if metric in ("tput_per_gpu", "output_tput_per_gpu"):
        key = "total" if metric == "tput_per_gpu" else "out"
        return (key, "e2el"), lambda a: a[key].sum(axis=-1) / a["e2el"].sum(axis=-1)
    if metric == "interactivity":
        return ("tpot",), lambda a: 1000.0 / _quantile(a["tpot"], 0.5)
    quantile = _QUANTILE.get(metric)
    if quantile is None:
        return None
    key = metric.split("_")[0]
    return (key,), lambda a: _quantile(a[key], quantile)


def _quantile(values: np.ndarray, q: float) -> np.ndarray:
    """np.percentile's default (linear) along the last axis, by partitioning at the two ranks
    around it: the same figures, without sorting each replicate (tens of times faster)."""
    n = values.shape[-1]
    h = (n - 1) * q
    lo, hi = int(math.floor(h)), int(math.ceil(h))
    parted = np.partition(values, (lo, hi) if hi != lo else lo, axis=-1)
    low, high = parted[..., lo], parted[..., hi]
    return low + (high - low) * (h - lo)


# Per run: beyond it an evenly spaced subset (a wider interval, never a false one).
MAX_REQUESTS = 20_000


def _capped(arrays: _Arrays) -> _Arrays:
    n = len(arrays["e2el"])
    if n <= MAX_REQUESTS:
        return arrays
    keep = np.linspace(0, n - 1, MAX_REQUESTS).astype(np.int64)
    return {key: values[keep] for key, values in arrays.items()}


def _usable(runs: Sequence[RequestSamples | None]) -> list[_Arrays] | None:
    """Each run's per-request arrays, or None unless every run has them, aligned. A run with
    more than MAX_REQUESTS requests keeps an evenly spaced subset: the report's time stays
    bounded whatever a result file holds."""
    if any(r is None or r.count == 0 for r in runs):
        return None
    if any(len({len(r.ttft_ms), len(r.tpot_ms), len(r.e2el_ms), len(r.input_tokens),
                len(r.output_tokens)}) != 1 for r in runs):  # type: ignore[union-attr]
        return None  # lists of different lengths: not per-request data we can resample
    arrays = [_capped(_arrays(r)) for r in runs]  # type: ignore[arg-type]
    return arrays or None


_CHUNK = 200_000  # resampled values held at once: bounds memory on points of many requests


_Recompute = tuple[tuple[str, ...], Callable[[_Arrays], "np.ndarray"]]


def _replicates(runs: list[_Arrays], wanted: dict[str, _Recompute], resamples: int,
                rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Each wanted statistic on the same `resamples` bootstrap replicates: runs with replacement
    (when there are several), then requests within each run. Runs of one length (one run, or
    repeats of one point) draw whole blocks of replicates at once; others one at a time."""
    columns = sorted({key for keys, _ in wanted.values() for key in keys})
    lengths = {len(run["e2el"]) for run in runs}
    values: dict[str, list[np.ndarray]] = {metric: [] for metric in wanted}
    if len(lengths) == 1:
        n, k = lengths.pop(), len(runs)
        flat = {key: np.concatenate([run[key] for run in runs]) for key in columns}  # k·n
        block = max(1, _CHUNK // (k * n))
        for start in range(0, resamples, block):
            size = min(block, resamples - start)
            index = rng.integers(0, n, (size, k, n), dtype=np.int64)
            if k > 1:  # which run each of the k draws resamples: an offset into `flat`
                index += rng.integers(0, k, (size, k, 1), dtype=np.int64) * n
            index = index.reshape(size, k * n)
            drawn = {key: np.take(column, index) for key, column in flat.items()}
            for metric, (_, statistic) in wanted.items():
                values[metric].append(statistic(drawn))
        return {metric: np.concatenate(parts) for metric, parts in values.items()}
    for _ in range(resamples):
        parts: dict[str, list[np.ndarray]] = {key: [] for key in columns}
        for i in rng.integers(0, len(runs), len(runs)):
            run = runs[i]
            index = rng.integers(0, len(run["e2el"]), len(run["e2el"]))
            for key in columns:
                parts[key].append(run[key][index])
        drawn = {key: np.concatenate(v)[None, :] for key, v in parts.items()}
        for metric, (_, statistic) in wanted.items():
            values[metric].append(statistic(drawn))
    return {metric: np.concatenate(parts) for metric, parts in values.items()}


def _pooled(runs: list[_Arrays]) -> _Arrays:
    return {key: np.concatenate([run[key] for run in runs]) for key in runs[0]}


def _worse(head: float, base: float, higher_is_better: bool) -> float:
    change = (head - base) / abs(base) * 100
    return -change if higher_is_better else change


@dataclass(frozen=True)
class Wanted:
    """A metric whose Δ needs an interval: its direction and its measured worse-%."""

    metric: str
    higher_is_better: bool
    worse_pct: float


def bootstrap(wanted: Sequence[Wanted], head_runs: Sequence[RequestSamples | None],
              base_runs: Sequence[RequestSamples | None], *, resamples: int = RESAMPLES,
              seed: int = SEED) -> dict[str, Interval]:
    """Worse-% intervals from per-request data on both sides, every metric from the same
    replicates; a metric is missing from the answer when either side lacks usable data."""
    head, base = _usable(head_runs), _usable(base_runs)
    recomputes = {w.metric: _statistic(w.metric) for w in wanted}
    recomputes = {metric: r for metric, r in recomputes.items() if r is not None}
    if head is None or base is None or not recomputes:
        return {}

    rng = np.random.default_rng(seed)
    with np.errstate(divide="ignore", invalid="ignore"):
        b = _replicates(base, recomputes, resamples, rng)
        h = _replicates(head, recomputes, resamples, rng)
        pooled_base, pooled_head = _pooled(base), _pooled(head)
        intervals = {}
        for w in wanted:
            if w.metric not in recomputes:
                continue
            statistic = recomputes[w.metric][1]
            centre_base = float(statistic({k: v[None, :] for k, v in pooled_base.items()})[0])
            centre_head = float(statistic({k: v[None, :] for k, v in pooled_head.items()})[0])
            if not (math.isfinite(centre_base) and math.isfinite(centre_head)) \
                    or centre_base == 0:
                continue
            centre = _worse(centre_head, centre_base, w.higher_is_better)
            change = (h[w.metric] - b[w.metric]) / np.abs(b[w.metric]) * 100
            draws = (-change if w.higher_is_better else change)[np.isfinite(change)]
            if len(draws) < resamples // 2:
                continue
            tail = (1 - CONFIDENCE) / 2 * 100
            low, high = np.percentile(draws, [tail, 100 - tail])
            # The bootstrap's proxy (e.g. tokens per request-second) gives the width; the
            # measured Δ (e.g. tokens per wall-clock second) is the centre.
            intervals[w.metric] = Interval(w.worse_pct + float(low) - centre,
                                           w.worse_pct + float(high) - centre,
                                           "requests", len(head) + len(base))
    return intervals


def spread_pct(values: Sequence[float]) -> float | None:
    """Range of repeated runs relative to their median, in percent; None with fewer than two."""
    finite = [v for v in values if math.isfinite(v)]
    if len(finite) < 2:
        return None
    # statistics.median is np.median's figure (the mean of the two middle values when even),
    # without numpy's per-call overhead: the report calls this for every metric of every point.
    middle = float(statistics.median(finite))
    if middle == 0:
        return None
    return (max(finite) - min(finite)) / abs(middle) * 100


def from_runs(worse_pct: float, head_values: Sequence[float],
              base_values: Sequence[float]) -> Interval | None:
    """Δ ± the widest run-to-run range seen on either side; None with one run a side."""
    spreads = [s for s in (spread_pct(base_values), spread_pct(head_values)) if s is not None]
    if not spreads:
        return None
    width = max(spreads)
    return Interval(worse_pct - width, worse_pct + width, "runs",
                    len(head_values) + len(base_values))
