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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from bot.results import RequestSamples

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


_Arrays = dict[str, np.ndarray]


def _arrays(samples: RequestSamples) -> _Arrays:
    e2el = np.asarray(samples.e2el_ms, dtype=float)
    out = np.asarray(samples.output_tokens, dtype=float)
    total = out + np.asarray(samples.input_tokens, dtype=float)
    return {"ttft": np.asarray(samples.ttft_ms, dtype=float),
            "tpot": np.asarray(samples.tpot_ms, dtype=float), "e2el": e2el,
            "out": out, "total": total}


def _statistic(metric: str) -> Callable[[_Arrays], np.ndarray] | None:
    """The metric recomputed from per-request arrays, one value per row of 2-D arrays
    (throughput: tokens per second of request time, which at a fixed concurrency moves with the
    measured throughput)."""
    if metric in ("tput_per_gpu", "output_tput_per_gpu"):
        key = "total" if metric == "tput_per_gpu" else "out"
        return lambda a: a[key].sum(axis=-1) / a["e2el"].sum(axis=-1)
    if metric == "interactivity":
        return lambda a: 1000.0 / np.median(a["tpot"], axis=-1)
    quantile = _QUANTILE.get(metric)
    if quantile is None:
        return None
    key = metric.split("_")[0]
    return lambda a: np.percentile(a[key], quantile * 100, axis=-1)


def _usable(runs: Sequence[RequestSamples | None]) -> list[_Arrays] | None:
    arrays = [_arrays(r) for r in runs if r is not None and r.count > 0]
    if not arrays or len(arrays) != len(runs):
        return None
    if any(len({len(v) for v in a.values()}) != 1 for a in arrays):
        return None  # lists of different lengths: not per-request data we can resample
    return arrays


_CHUNK = 200_000  # resampled values held at once: bounds memory on points of many requests


def _replicates(runs: list[_Arrays], statistic: Callable[[_Arrays], np.ndarray],
                resamples: int, rng: np.random.Generator) -> np.ndarray:
    """The statistic on `resamples` bootstrap replicates: runs with replacement (when there are
    several), then requests within each run. One run: whole blocks of replicates at once."""
    if len(runs) == 1:
        run = runs[0]
        n = len(run["e2el"])
        block = max(1, _CHUNK // max(n, 1))
        values = []
        for start in range(0, resamples, block):
            index = rng.integers(0, n, (min(block, resamples - start), n))
            values.append(statistic({key: column[index] for key, column in run.items()}))
        return np.concatenate(values)
    values = np.empty(resamples)
    for b in range(resamples):
        parts: dict[str, list[np.ndarray]] = {key: [] for key in runs[0]}
        for i in rng.integers(0, len(runs), len(runs)):
            run = runs[i]
            index = rng.integers(0, len(run["e2el"]), len(run["e2el"]))
            for key, column in run.items():
                parts[key].append(column[index])
        values[b] = statistic({key: np.concatenate(v) for key, v in parts.items()})
    return values


def _pooled(runs: list[_Arrays]) -> _Arrays:
    return {key: np.concatenate([run[key] for run in runs]) for key in runs[0]}


def _worse(head: float, base: float, higher_is_better: bool) -> float:
    change = (head - base) / abs(base) * 100
    return -change if higher_is_better else change


def bootstrap(metric: str, higher_is_better: bool, worse_pct: float,
              head_runs: Sequence[RequestSamples | None],
              base_runs: Sequence[RequestSamples | None], *,
              resamples: int = RESAMPLES, seed: int = SEED) -> Interval | None:
    """The worse-% interval from per-request data on both sides; None when either side lacks it."""
    statistic = _statistic(metric)
    head, base = _usable(head_runs), _usable(base_runs)
    if statistic is None or head is None or base is None:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        centre_base = float(statistic(_pooled(base)))
        centre_head = float(statistic(_pooled(head)))
        if not (math.isfinite(centre_base) and math.isfinite(centre_head)) or centre_base == 0:
            return None
        centre = _worse(centre_head, centre_base, higher_is_better)
        rng = np.random.default_rng(seed)
        b = _replicates(base, statistic, resamples, rng)
        h = _replicates(head, statistic, resamples, rng)
        change = (h - b) / np.abs(b) * 100
    draws = (-change if higher_is_better else change)[np.isfinite(change)]
    if len(draws) < resamples // 2:
        return None
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(draws, [tail, 100 - tail])
    # The bootstrap's proxy (e.g. tokens per request-second) gives the width; the measured Δ
    # (e.g. tokens per wall-clock second) is the centre.
    return Interval(worse_pct + float(low) - centre, worse_pct + float(high) - centre,
                    "requests", len(head) + len(base))


def spread_pct(values: Sequence[float]) -> float | None:
    """Range of repeated runs relative to their median, in percent; None with fewer than two."""
    finite = [v for v in values if math.isfinite(v)]
    if len(finite) < 2:
        return None
    middle = float(np.median(finite))
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
