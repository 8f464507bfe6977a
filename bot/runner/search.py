"""Adaptive concurrency search: pure functions that choose the next concurrency from the results so far.

No I/O and no randomness: the same spec and the same measurements give the same choice, so a
search can be replayed on a recorded response surface (tests/, bench/bench_search.py).

Every search starts with a log-spaced bracket (BRACKET_POINTS points from lo to hi, ascending,
rounded to integers), then refines on the log scale by bisecting (geometric mean) one gap at a time:

- `knee` (throughput per GPU vs interactivity). The knee is where a curve stops paying: on
  axes normalised from lo to hi,
  v(c) = (T(c) - T(lo)) / (T(hi) - T(lo))                                  (throughput gained, 0..1)
  u(c) = (ln I(lo) - ln I(c)) / (ln I(lo) - ln I(hi))                     (interactivity given up, 0..1)
  where T is throughput per GPU and I interactivity (tokens/s per user), the knee is argmax v - u:
  the point farthest above the chord (Kneedle's difference curve). T and I are a global fit to
  every measured point (`fitted_knee`): T(c) = Tmax·c/(c + h) (saturating), ln I(c) = a - b·ln(1 + c/k),
  least squares in ln T and ln I, h and k on a fixed log grid; the knee is taken on the fitted
  curves, continuously, and the answer is the measured concurrency nearest it (the lower on a tie).
  Fitted curves, not measured extremes, so a 9-point and a 28-point sample of the same curve give
  the same knee, and one noisy point (±10-50 % on a shared CPU) cannot pull it to itself. Where the
  saturating model does not describe the points (RMS residual of ln T above FIT_RMS, e.g. a sharp
  KV-cache cliff, or fewer than FIT_MIN_POINTS or no interactivity) the knee falls back to the
  measured points, both curves first smoothed (`smoothed`: a local-linear fit in ln(c) with a
  Gaussian kernel of width SMOOTH_WIDTH), normalised by their min and max (u is ln(c) normalised
  over [lo, hi] without interactivity), ties to the lower concurrency.
  Refinement measures the fitted knee itself (rounded) while no measured point lies within a
  factor sqrt(1 + tol) of it, then bisects the wider of the two gaps next to the current knee.
- `cliff` (where throughput stops rising): the smallest measured concurrency whose throughput per
  GPU reaches PLATEAU (95 %) of the highest measured. Refinement bisects the gap below it and the
  gap above the highest point (a sharp KV-cache cliff can hide a higher peak there), wider first.
- `max-conc-under` a bound (interactivity >= value, or TTFT median <= value ms): the highest
  measured concurrency that meets it, assuming the metric worsens with concurrency; plain
  bisection between the highest passing and the lowest failing point. If lo already breaks the
  bound the search stops ("bound crossed"); if hi meets it, hi is the answer.

The answer is "resolved to ±tol" when each neighbour of it that still matters is within a factor
(1 + tol) of it, or no integer lies between them. A failed point (None) counts as measured (never
retried) but carries no figures.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from bot.core.jobs import SearchSpec

BRACKET_POINTS = 4  # lo, hi and two between them, log-spaced: enough to see where the curve bends
PLATEAU = 0.95  # `cliff`: throughput counts as stopped rising within 5 % of the best measured
# The knee's smoothing kernel, in ln(concurrency): points within about x1.4 of each other weigh
# in. Wider blurs a sharp KV-cache cliff; narrower lets one noisy point pick the knee
# (bench/bench_search.py, tests/test_search.py's noisy surfaces).
SMOOTH_WIDTH = 0.35
# The saturating fit speaks for the knee when its RMS residual in ln(throughput) is at most this:
# the CPU engine's curves under load fit within 0.05-0.15, a KV-cache cliff at 0.3
# (bench/results/search.json, tests/search_surfaces.py).
FIT_RMS = 0.2
FIT_MIN_POINTS = 4  # a two-parameter curve through the bracket's four points at least
FIT_STEPS = 240  # the fixed log grid of h and k, from lo/10 to hi*10: deterministic, no optimiser
KNEE_STEPS = 400  # where on the fitted curves the knee is looked for, log-spaced over [lo, hi]

STOP_BUDGET = "budget"
STOP_RESOLVED = "resolved"
STOP_BOUND = "bound crossed"
STOP_NO_DATA = "no data"


@dataclass(frozen=True)
class Measurement:
    """What the search reads from one measured point."""

    tput_per_gpu: float
    interactivity: float | None = None
    ttft_ms: float | None = None


Measurements = dict[int, "Measurement | None"]  # None: the point failed


@dataclass(frozen=True)
class Decision:
    """The next concurrency to measure, or why the search stops; `answer` is the current estimate."""

    next: int | None
    stop: str | None
    answer: int | None
    why: str


def log_spaced(lo: int, hi: int, count: int) -> list[int]:
    """`count` integers from lo to hi, evenly spaced on the log scale (fewer where they round together)."""
    if count <= 1 or lo == hi:
        return [lo]
    ratio = math.log(hi / lo)
    points = {round(lo * math.exp(ratio * i / (count - 1))) for i in range(count)}
    return sorted(min(hi, max(lo, p)) for p in points)


def dense_grid(lo: int, hi: int, tolerance: float) -> list[int]:
    """The grid a search replaces: every step a factor (1 + tolerance), integers, lo and hi included."""
    points, value = {lo, hi}, float(lo)
    while value < hi:
        points.add(min(hi, round(value)))
        value *= 1 + tolerance
    return sorted(points)


def _mid(a: int, b: int, tried: set[int]) -> int | None:
    """The geometric middle of (a, b) not yet tried, or None when no integer is left between them."""
    if b - a < 2:
        return None
    middle = min(b - 1, max(a + 1, round(math.sqrt(a * b))))
    return None if middle in tried else middle


def _gap(a: int | None, b: int | None, tolerance: float, tried: set[int]) -> tuple[float, int] | None:
    """An unresolved gap as (log width, its middle), or None when resolved or absent."""
    if a is None or b is None or b / a <= 1 + tolerance + 1e-9:
        return None
    middle = _mid(a, b, tried)
    return None if middle is None else (math.log(b / a), middle)


def _local_linear(xs: list[float], ys: list[float], at: float) -> float:
    """The value at `at` of a straight line fitted to (xs, ys) with Gaussian weights around `at`."""
    weights = [math.exp(-0.5 * ((x - at) / SMOOTH_WIDTH) ** 2) for x in xs]
    total = sum(weights)
    mean_x = sum(w * x for w, x in zip(weights, xs)) / total
    mean_y = sum(w * y for w, y in zip(weights, ys)) / total
    spread = sum(w * (x - mean_x) ** 2 for w, x in zip(weights, xs))
    if spread <= 1e-12:  # one point carries all the weight: nothing to fit a slope to
        return mean_y
    slope = sum(w * (x - mean_x) * (y - mean_y) for w, x, y in zip(weights, xs, ys)) / spread
    return mean_y + slope * (at - mean_x)


def smoothed(measured: dict[int, Measurement]) -> dict[int, Measurement]:
    """Throughput and ln(interactivity) fitted locally in ln(concurrency) (see SMOOTH_WIDTH); the
    same measurements give the same curve whatever their order."""
    order = sorted(measured)
    xs = [math.log(c) for c in order]
    tputs = [measured[c].tput_per_gpu for c in order]
    inter = [measured[c].interactivity for c in order]
    logs = [math.log(i) for i in inter] if all(i is not None and i > 0 for i in inter) else None
    return {c: Measurement(tput_per_gpu=_local_linear(xs, tputs, x),
                           interactivity=math.exp(_local_linear(xs, logs, x)) if logs else measured[c].interactivity,
                           ttft_ms=measured[c].ttft_ms)
            for c, x in zip(order, xs)}


def knee_scores(measured: dict[int, Measurement], lo: int, hi: int) -> dict[int, float]:
    """v(c) - u(c) for every measured point, on the smoothed curves (see the module docstring)."""
    measured = smoothed(measured)
    tputs = [m.tput_per_gpu for m in measured.values()]
    t_min, t_max = min(tputs), max(tputs)
    inter = {c: m.interactivity for c, m in measured.items()}
    use_inter = all(i is not None and i > 0 for i in inter.values())
    if use_inter:
        logs = {c: math.log(i) for c, i in inter.items()}
        top, bottom = max(logs.values()), min(logs.values())
        use_inter = top > bottom
    scores = {}
    for c, m in measured.items():
        v = (m.tput_per_gpu - t_min) / (t_max - t_min) if t_max > t_min else 0.0
        if use_inter:
            u = (top - logs[c]) / (top - bottom)
        else:
            u = math.log(c / lo) / math.log(hi / lo) if hi > lo else 0.0
        scores[c] = v - u
    return scores


def _best_shape(cs: list[int], ys: list[float], shape, scales: list[float],
                free_slope: bool) -> tuple[float, float, float, float]:
    """Least squares of ys = a + b·shape(c, s) over the grid of s: (residual, s, a, b); without
    `free_slope` b is 1 (the throughput fit's only free factor is Tmax)."""
    best = None
    n = len(cs)
    for s in scales:
        g = [shape(c, s) for c in cs]
        mean_g, mean_y = sum(g) / n, sum(ys) / n
        spread = sum((x - mean_g) ** 2 for x in g)
        b = 1.0
        if free_slope:
            b = sum((x - mean_g) * (y - mean_y) for x, y in zip(g, ys)) / spread if spread > 1e-12 else 0.0
        a = mean_y - b * mean_g
        residual = sum((y - a - b * x) ** 2 for x, y in zip(g, ys))
        if best is None or residual < best[0] - 1e-12:
            best = (residual, s, a, b)
    return best


def _saturation(c: float, h: float) -> float:
    return math.log(c / (c + h))  # ln of c/(c + h): ln T = ln Tmax + this


def _falloff(c: float, k: float) -> float:
    return math.log(1 + c / k)


def fitted_knee(measured: dict[int, Measurement], lo: int, hi: int) -> float | None:
    """The knee on the globally fitted curves (module docstring), or None where the fit cannot speak."""
    cs = sorted(measured)
    if len(cs) < FIT_MIN_POINTS or any(measured[c].tput_per_gpu <= 0 or not measured[c].interactivity
                                       or measured[c].interactivity <= 0 for c in cs):
        return None
    scales = [lo / 10 * (hi * 100 / lo) ** (i / FIT_STEPS) for i in range(FIT_STEPS + 1)]
    t_res, h, ln_tmax, _ = _best_shape(cs, [math.log(measured[c].tput_per_gpu) for c in cs], _saturation, scales, False)
    if math.sqrt(t_res / len(cs)) > FIT_RMS:
        return None
    _, k, a, b = _best_shape(cs, [math.log(measured[c].interactivity) for c in cs], _falloff, scales, True)
    xs = [lo * (hi / lo) ** (i / KNEE_STEPS) for i in range(KNEE_STEPS + 1)]
    tput = [math.exp(ln_tmax) * x / (x + h) for x in xs]
    ln_i = [a + b * _falloff(x, k) for x in xs]
    if tput[-1] <= tput[0] or ln_i[-1] >= ln_i[0]:
        return None  # no throughput gained or no interactivity given up: no knee to speak of
    scores = [(t - tput[0]) / (tput[-1] - tput[0]) - (ln_i[0] - li) / (ln_i[0] - ln_i[-1])
              for t, li in zip(tput, ln_i)]
    return xs[max(range(len(xs)), key=lambda i: (scores[i], -i))]


def knee_of(measured: dict[int, Measurement], lo: int, hi: int) -> int | None:
    """The knee among the measured points: the one nearest the fitted knee, or the best smoothed
    score where the fit cannot speak (lowest concurrency on a tie)."""
    if not measured:
        return None
    fitted = fitted_knee(measured, lo, hi)
    if fitted is not None:
        return min(sorted(measured), key=lambda c: abs(math.log(c / fitted)))
    scores = knee_scores(measured, lo, hi)
    return max(sorted(scores), key=lambda c: scores[c])


def cliff_of(measured: dict[int, Measurement]) -> int | None:
    """The smallest concurrency whose throughput per GPU is within PLATEAU of the best measured."""
    if not measured:
        return None
    best = max(m.tput_per_gpu for m in measured.values())
    return min(c for c, m in measured.items() if m.tput_per_gpu >= PLATEAU * best)


def meets_bound(spec: SearchSpec, m: Measurement) -> bool | None:
    """Whether a point meets the spec's bound; None when the point lacks the metric."""
    assert spec.bound is not None
    if spec.bound.metric == "interactivity":
        return None if m.interactivity is None else m.interactivity >= spec.bound.value
    return None if m.ttft_ms is None else m.ttft_ms <= spec.bound.value


def _neighbours(point: int, tried: list[int]) -> tuple[int | None, int | None]:
    below = [c for c in tried if c < point]
    above = [c for c in tried if c > point]
    return (below[-1] if below else None), (above[0] if above else None)


def answer_of(spec: SearchSpec, results: Measurements) -> int | None:
    """The search's current answer on these measurements (what the report suggests around)."""
    measured = {c: m for c, m in results.items() if m is not None}
    lo, hi = spec.range
    if spec.target == "knee":
        return knee_of(measured, lo, hi)
    if spec.target == "cliff":
        return cliff_of(measured)
    passing = [c for c, m in measured.items() if meets_bound(spec, m)]
    return max(passing) if passing else None


def next_point(spec: SearchSpec, results: Measurements) -> Decision:
    """The next concurrency to measure given `results` (concurrency -> measurement, None = failed)."""
    lo, hi = spec.range
    tried = sorted(results)
    tried_set = set(tried)
    measured = {c: m for c, m in results.items() if m is not None}
    answer = answer_of(spec, results)
    if len(tried) >= spec.budget:
        return Decision(None, STOP_BUDGET, answer, f"used the budget of {spec.budget} points")
    if spec.target == "max-conc-under":
        return _next_bound(spec, results, tried, answer)
    for c in log_spaced(lo, hi, min(BRACKET_POINTS, spec.budget)):
        if c not in tried_set:
            return Decision(c, None, answer, "log-spaced bracket")
    if answer is None:
        return Decision(None, STOP_NO_DATA, None, "no point of the bracket gave figures")
    healthy = sorted(measured)
    if spec.target == "knee":
        fitted = fitted_knee(measured, lo, hi)
        if fitted is not None:
            point = min(hi, max(lo, round(fitted)))
            if point not in tried_set and min(abs(math.log(c / fitted)) for c in tried) \
                    > math.log(1 + spec.tolerance) / 2:
                return Decision(point, None, answer, "the fitted curves' knee")
        below, above = _neighbours(answer, healthy)
        gaps = [(_gap(below, answer, spec.tolerance, tried_set), "below the knee"),
                (_gap(answer, above, spec.tolerance, tried_set), "above the knee")]
    else:
        peak = max(sorted(measured), key=lambda c: measured[c].tput_per_gpu)
        below, _ = _neighbours(answer, healthy)
        _, above = _neighbours(peak, healthy)
        gaps = [(_gap(below, answer, spec.tolerance, tried_set), "below where throughput stops rising"),
                (_gap(peak, above, spec.tolerance, tried_set), "above the highest throughput")]
    open_gaps = [(g, why) for g, why in gaps if g is not None]
    if not open_gaps:
        return Decision(None, STOP_RESOLVED, answer, f"resolved to ±{spec.tolerance:g}")
    (_, middle), why = max(open_gaps, key=lambda item: (item[0][0], -item[0][1]))
    return Decision(middle, None, answer, f"bisect {why}")


def _next_bound(spec: SearchSpec, results: Measurements, tried: list[int],
                answer: int | None) -> Decision:
    lo, hi = spec.range
    if lo not in results:
        return Decision(lo, None, answer, "the lowest concurrency first")
    first = results[lo]
    if first is None or not meets_bound(spec, first):
        return Decision(None, STOP_BOUND, None, f"the bound is crossed already at {lo}")
    if hi not in results:
        return Decision(hi, None, answer, "the highest concurrency")
    passing = [c for c in tried if results[c] is not None and meets_bound(spec, results[c])]
    failing = [c for c in tried if c not in passing]
    best = max(passing)
    if not any(c > best for c in failing):
        return Decision(None, STOP_RESOLVED, best, f"the bound holds up to {hi}")
    above = min(c for c in failing if c > best)
    gap = _gap(best, above, spec.tolerance, set(tried))
    if gap is None:
        return Decision(None, STOP_RESOLVED, best, f"resolved to ±{spec.tolerance:g}")
    return Decision(gap[1], None, best, "bisect the bound")


def run_search(spec: SearchSpec, measure) -> tuple[Measurements, list[tuple[int, str]], Decision]:
    """Drive a whole search with `measure(concurrency) -> Measurement | None` (a recorded surface
    or the runner). Returns the results, each choice with its reason, and the final decision."""
    results: Measurements = {}
    choices: list[tuple[int, str]] = []
    while True:
        decision = next_point(spec, results)
        if decision.next is None:
            return results, choices, decision
        choices.append((decision.next, decision.why))
        results[decision.next] = measure(decision.next)


def suggested_concurrency(spec: SearchSpec, results: Measurements) -> list[int]:
    """The concurrency list to commit to the recipe: every point the search measured with figures."""
    return sorted(c for c, m in results.items() if m is not None)
