"""The adaptive search finds the dense grid's knee with a third of the points, deterministically."""
from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from bot.core.jobs import SearchBound, SearchSpec
from bot.runner import search
from bot.runner.search import (STOP_BOUND, STOP_BUDGET, STOP_RESOLVED, Measurement, answer_of,
                               cliff_of, dense_grid, fitted_knee, knee_of, log_spaced, next_point, run_search,
                               smoothed, suggested_concurrency)
from tests.search_surfaces import cpu_engine, kv_cliff, noisy_plateau, plateau, rough_plateau, smooth

TOL = 0.15
RANGES = [(1, 256), (2, 512), (4, 128)]


def _dense_reference(surface, target: str, lo: int, hi: int) -> tuple[int, int]:
    grid = dense_grid(lo, hi, TOL)
    measured = {c: surface(c) for c in grid}
    return (knee_of(measured, lo, hi) if target == "knee" else cliff_of(measured)), len(grid)


@pytest.mark.parametrize("lo,hi", RANGES)
@pytest.mark.parametrize("name,surface,target", [
    ("smooth knee", smooth, "knee"),
    ("smooth cliff", smooth, "cliff"),
    ("sharp KV-cache cliff, knee", kv_cliff, "knee"),
    ("sharp KV-cache cliff, cliff", kv_cliff, "cliff"),
    ("noisy plateau knee", noisy_plateau, "knee"),
])
def test_search_finds_the_dense_grids_answer_with_a_third_of_the_points(name, surface, target, lo, hi):
    reference, dense_points = _dense_reference(surface, target, lo, hi)
    spec = SearchSpec(range=(lo, hi), target=target, budget=dense_points // 3, tolerance=TOL)
    results, choices, decision = run_search(spec, surface)
    assert len(results) <= dense_points // 3
    assert len(choices) == len(results) == len(set(c for c, _ in choices))
    assert all(lo <= c <= hi for c in results)
    assert abs(math.log(decision.answer / reference)) <= math.log(1 + TOL), (decision, reference)


@pytest.mark.parametrize("surface", [smooth, kv_cliff, noisy_plateau])
def test_search_is_deterministic_for_the_same_measurements(surface):
    spec = SearchSpec(range=(1, 256), target="knee", budget=10, tolerance=TOL)
    first = run_search(spec, surface)
    second = run_search(spec, surface)
    assert first[1] == second[1] and first[2] == second[2]
    # Insertion order of the measurements does not matter either.
    shuffled = dict(list(reversed(list(first[0].items())))[:5])
    assert next_point(spec, shuffled) == next_point(spec, dict(sorted(shuffled.items())))


def _within(a: int, b: int) -> bool:
    return abs(math.log(a / b)) <= math.log(1 + TOL) + 1e-9


@pytest.mark.parametrize("lo,hi", RANGES)
def test_a_jittery_plateau_keeps_the_knee_of_its_clean_curve(lo, hi):
    grid = dense_grid(lo, hi, TOL)
    clean = knee_of({c: plateau(c) for c in grid}, lo, hi)
    assert _within(knee_of({c: rough_plateau(c) for c in grid}, lo, hi), clean)


def test_without_smoothing_the_jitter_moves_the_knee(monkeypatch):
    # The negative case of the test above, where the knee falls back to the smoothed points.
    monkeypatch.setattr(search, "FIT_RMS", -1.0)
    monkeypatch.setattr(search, "SMOOTH_WIDTH", 1e-3)
    grid = dense_grid(4, 128, TOL)
    clean = knee_of({c: plateau(c) for c in grid}, 4, 128)
    assert not _within(knee_of({c: rough_plateau(c) for c in grid}, 4, 128), clean)


def _sparse_and_dense_knees(surface, lo: int, hi: int) -> tuple[int, int]:
    grid = dense_grid(lo, hi, TOL)
    sparse = log_spaced(lo, hi, len(grid) // 3)
    return knee_of({c: surface(c) for c in sparse}, lo, hi), knee_of({c: surface(c) for c in grid}, lo, hi)


def test_a_third_of_the_points_of_a_noisy_slow_curve_give_the_dense_grids_knee():
    # The CPU engine's case (#25): the fitted curves make a 9- and a 28-point sample agree.
    assert _within(*_sparse_and_dense_knees(cpu_engine, 1, 128))


def test_on_the_measured_points_alone_the_sparse_and_dense_knees_differ(monkeypatch):
    # The negative case: normalised by their own smoothed extremes, the two samples disagree.
    monkeypatch.setattr(search, "FIT_RMS", -1.0)
    assert not _within(*_sparse_and_dense_knees(cpu_engine, 1, 128))


def test_a_sharp_kv_cache_cliff_is_not_fitted_as_a_saturating_curve():
    assert fitted_knee({c: kv_cliff(c) for c in dense_grid(1, 256, TOL)}, 1, 256) is None
    assert fitted_knee({c: smooth(c) for c in dense_grid(1, 256, TOL)}, 1, 256) is not None


def test_the_search_measures_the_fitted_knee_once_it_has_the_bracket():
    _, choices, _ = run_search(SearchSpec(range=(1, 128), target="knee", budget=9, tolerance=TOL), cpu_engine)
    assert choices[4][1] == "the fitted curves' knee"


@pytest.mark.parametrize("points", [[1, 2, 4, 8, 16, 32, 64], [1, 3, 40, 41, 64], [5, 6]])
def test_smoothing_leaves_a_straight_curve_as_it_is_however_sparse(points):
    # Straight in ln(c): throughput and ln(interactivity); a local-linear fit adds no bias.
    line = {c: Measurement(tput_per_gpu=10 + 3 * math.log(c), interactivity=50 * c ** -0.5) for c in points}
    for c, m in smoothed(line).items():
        assert m.tput_per_gpu == pytest.approx(line[c].tput_per_gpu)
        assert m.interactivity == pytest.approx(line[c].interactivity)


def test_search_stops_at_the_budget_and_says_so():
    spec = SearchSpec(range=(1, 256), target="knee", budget=5, tolerance=0.01)
    results, _, decision = run_search(spec, smooth)
    assert len(results) == 5 and decision.stop == STOP_BUDGET and decision.next is None


def test_search_stops_when_resolved_before_the_budget():
    spec = SearchSpec(range=(1, 256), target="knee", budget=30, tolerance=0.5)
    results, _, decision = run_search(spec, smooth)
    assert decision.stop == STOP_RESOLVED and len(results) < 30
    below = max(c for c in results if c < decision.answer)
    above = min(c for c in results if c > decision.answer)
    assert decision.answer / below <= 1.5 and above / decision.answer <= 1.5


def test_search_starts_with_a_log_spaced_bracket():
    spec = SearchSpec(range=(1, 256), target="knee", budget=8)
    _, choices, _ = run_search(spec, smooth)
    assert [c for c, _ in choices[:4]] == log_spaced(1, 256, 4) == [1, 6, 40, 256]


@pytest.mark.parametrize("metric,value,surface", [
    ("interactivity", 25.0, smooth),
    ("ttft_ms", 100.0, smooth),
    ("ttft_ms", 150.0, kv_cliff),
])
def test_max_concurrency_under_a_bound_matches_the_dense_grid(metric, value, surface):
    spec = SearchSpec(range=(1, 256), target="max-conc-under", budget=11, tolerance=TOL,
                      bound=SearchBound(metric=metric, value=value))
    results, _, decision = run_search(spec, surface)

    def ok(m: Measurement) -> bool:
        return m.interactivity >= value if metric == "interactivity" else m.ttft_ms <= value
    reference = max(c for c in dense_grid(1, 256, TOL) if ok(surface(c)))
    assert ok(results[decision.answer])
    assert abs(math.log(decision.answer / reference)) <= math.log(1 + TOL)
    assert len(results) <= len(dense_grid(1, 256, TOL)) // 3


def test_bound_crossed_at_the_lowest_concurrency_stops_at_once():
    spec = SearchSpec(range=(4, 256), target="max-conc-under", budget=8,
                      bound=SearchBound(metric="interactivity", value=1000.0))
    results, _, decision = run_search(spec, smooth)
    assert list(results) == [4] and decision.stop == STOP_BOUND and decision.answer is None


def test_a_failed_point_is_never_retried_and_carries_no_figures():
    spec = SearchSpec(range=(1, 256), target="knee", budget=8)
    results, choices, decision = run_search(spec, lambda c: None if c == 40 else smooth(c))
    assert [c for c, _ in choices].count(40) == 1 and results[40] is None
    assert 40 not in suggested_concurrency(spec, results)
    assert decision.answer == answer_of(spec, results)


@pytest.mark.parametrize("bad,why", [
    ({"range": (8, 8)}, "range"),
    ({"range": (0, 8)}, "range"),
    ({"range": (1, 8), "budget": 1}, "budget"),
    ({"range": (1, 8), "tolerance": 0}, "tolerance"),
    ({"range": (1, 8), "target": "max-conc-under"}, "bound"),
    ({"range": (1, 8), "bound": {"metric": "ttft_ms", "value": 5}}, "bound"),
    ({"range": (1, 8), "target": "pareto"}, "target"),
])
def test_a_bad_search_spec_is_refused(bad, why):
    with pytest.raises(ValidationError, match=why):
        SearchSpec(**bad)
