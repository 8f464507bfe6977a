"""Noise-aware verdicts: identical code never fails against itself, a real 10 % drop is caught."""
import pathlib
import shutil

import numpy as np
import pytest

from bot.report import build, compare, noise
from bot.report.collect import collect
from bot.report.model import Meta
from bot.core.results import PointMetrics, RequestSamples

SMOKE = pathlib.Path(__file__).resolve().parents[1] / "docs" / "gpu-runs" / "2026-11-30"
PACKED = ("gpu-smoke-vllm--tp1",)
UNPACKED = ("gpu-smoke-vllm--tp1--c1", "gpu-smoke-vllm--tp1--c16", "gpu-smoke-vllm--tp1--c64")
THRESHOLDS = compare.DEFAULT_THRESHOLDS


def _copy(jobs: tuple[str, ...], dest: pathlib.Path) -> pathlib.Path:
    for job in jobs:
        shutil.copytree(SMOKE / "results" / job, dest / job)
    return dest


def _report(head: pathlib.Path, base: pathlib.Path):
    return build.build_report(collect(head), compare.load_baseline(base), THRESHOLDS, Meta())


@pytest.mark.parametrize("head_jobs, base_jobs", [
    (UNPACKED, PACKED), (PACKED, UNPACKED), (PACKED, PACKED), (UNPACKED, UNPACKED),
], ids=["unpacked-vs-packed", "packed-vs-unpacked", "packed-vs-itself", "unpacked-vs-itself"])
def test_the_kept_h200_runs_never_regress_against_each_other(tmp_path, head_jobs, base_jobs):
    report = _report(_copy(head_jobs, tmp_path / "head"), _copy(base_jobs, tmp_path / "base"))
    rows = [row for section in report.recipes for row in section.rows]
    assert len(rows) == 3 and all(row.comparison is not None for row in rows)
    assert report.counts.regressions == 0
    assert report.verdict.conclusion == "success"


def test_the_kept_h200_p99_at_32_requests_is_marked_not_judged(tmp_path):
    report = _report(_copy(UNPACKED, tmp_path / "head"), _copy(PACKED, tmp_path / "base"))
    by_conc = {row.concurrency: row for s in report.recipes for row in s.rows}
    assert by_conc[1].comparison.delta("ttft_p99").verdict == "unsupported"  # 32 requests
    assert by_conc[64].comparison.delta("ttft_p99").verdict != "unsupported"  # 256 requests


def test_the_kept_c1_throughput_drop_without_per_request_data_is_inconclusive(tmp_path):
    """-6.5 % at c1 between two single runs of identical code: beyond 5 %, but no interval."""
    report = _report(_copy(UNPACKED, tmp_path / "head"), _copy(PACKED, tmp_path / "base"))
    c1 = next(row for s in report.recipes for row in s.rows if row.concurrency == 1)
    delta = c1.comparison.delta("tput_per_gpu")
    assert delta.worse_pct > 5 and delta.interval is None
    assert delta.verdict == "inconclusive"


# ---- synthetic per-request data -------------------------------------------------------------

def requests(n: int, seed: int, slowdown: float = 1.0) -> RequestSamples:
    """n requests of 1024 in / 128 out whose latency is lognormal; `slowdown` stretches it."""
    rng = np.random.default_rng(seed)
    ttft = rng.lognormal(np.log(40.0), 0.25, n) * slowdown
    tpot = rng.lognormal(np.log(2.4), 0.05, n) * slowdown
    e2el = ttft + 127 * tpot
    return RequestSamples(ttft_ms=ttft.tolist(), tpot_ms=tpot.tolist(), e2el_ms=e2el.tolist(),
                          input_tokens=[1024] * n, output_tokens=[128] * n)


def metrics(samples: RequestSamples, concurrency: int = 8) -> PointMetrics:
    """Summary figures computed from the samples the way the client computes them."""
    e2el = np.asarray(samples.e2el_ms)
    duration = e2el.sum() / 1000 / concurrency
    total = sum(samples.input_tokens) + sum(samples.output_tokens)
    out = sum(samples.output_tokens)

    def dist(values):
        v = np.asarray(values)
        return {"mean": float(v.mean()), "median": float(np.median(v)),
                "p90": float(np.percentile(v, 90)), "p99": float(np.percentile(v, 99))}
    tpot = dist(samples.tpot_ms)
    return PointMetrics(completed=samples.count, failed=0, duration_s=duration,
                        request_throughput=samples.count / duration,
                        output_throughput=out / duration, total_token_throughput=total / duration,
                        tput_per_gpu=total / duration, output_tput_per_gpu=out / duration,
                        input_tput_per_gpu=(total - out) / duration,
                        interactivity=1000 / tpot["median"], ttft_ms=dist(samples.ttft_ms),
                        tpot_ms=tpot, e2el_ms=dist(samples.e2el_ms), requests=samples)


def base_of(*seeds: int, n: int = 400) -> tuple[compare.BaseSample, ...]:
    return tuple(compare.BaseSample(metrics(requests(n, seed)), "b" * 40, "0.26.0", ())
                 for seed in seeds)


def test_a_real_ten_percent_throughput_drop_across_enough_requests_is_a_regression():
    head = metrics(requests(400, seed=99, slowdown=1 / 0.9))  # 10 % fewer tokens per second
    comparison = compare.compare_point(head, base_of(1), THRESHOLDS)
    delta = comparison.delta("tput_per_gpu")
    assert delta.change_pct == pytest.approx(-10, abs=2.5)
    assert delta.interval.basis == "requests"
    assert delta.interval.low > THRESHOLDS["tput_per_gpu"]
    assert delta.verdict == "regression"


@pytest.mark.parametrize("head_seed, base_seeds", [
    (7, (1,)), (8, (1, 2, 3)), (9, (4,)),
], ids=["one-base-run", "three-base-runs", "other-seeds"])
def test_identical_code_with_per_request_data_never_regresses(head_seed, base_seeds):
    head = metrics(requests(400, seed=head_seed))
    comparison = compare.compare_point(head, base_of(*base_seeds), THRESHOLDS)
    assert comparison.regressions == []
    assert all(d.interval is not None for d in comparison.deltas if d.threshold_pct is not None)


def test_a_drop_inside_the_bootstrap_interval_is_within_noise_not_a_regression():
    """7 % slower on 40 requests: beyond the 5 % threshold, but the interval reaches below it."""
    head = metrics(requests(40, seed=5, slowdown=1.07))
    comparison = compare.compare_point(head, base_of(6, n=40), {"tput_per_gpu": 5.0})
    delta = comparison.delta("tput_per_gpu")
    assert delta.interval.low < 5 < delta.worse_pct
    assert delta.verdict == "within-noise"


def test_the_bootstrap_is_deterministic():
    head = metrics(requests(200, seed=3, slowdown=1.05))
    first = compare.compare_point(head, base_of(1, n=200), THRESHOLDS).delta("ttft_p99")
    again = compare.compare_point(head, base_of(1, n=200), THRESHOLDS).delta("ttft_p99")
    assert first.interval == again.interval


@pytest.mark.parametrize("metric, samples, ok", [
    ("ttft_p99", 99, False), ("ttft_p99", 100, True), ("tpot_p50", 1, False),
    ("tpot_p50", 2, True), ("tput_per_gpu", 1, True), ("ttft_p99", None, True),
], ids=["p99-99", "p99-100", "p50-1", "p50-2", "throughput-1", "unknown-count"])
def test_a_percentile_needs_enough_requests(metric, samples, ok):
    assert noise.supported(metric, samples) is ok


def test_p99_on_too_few_requests_is_shown_but_never_judged():
    head = metrics(requests(50, seed=3, slowdown=1.5))
    delta = compare.compare_point(head, base_of(1, n=50), THRESHOLDS).delta("ttft_p99")
    assert delta.worse_pct > 10 and delta.verdict == "unsupported"


@pytest.mark.parametrize("head_values, base_values, expected", [
    ([], [100.0], None),
    ([], [100.0, 90.0], (-10.0 + 5.0, 10.0 + 5.0)),
    ([95.0, 105.0], [100.0], (5.0 - 10.0, 5.0 + 10.0)),
], ids=["one-run-no-interval", "base-spread", "head-repeats-spread"])
def test_without_per_request_data_the_interval_comes_from_the_runs(head_values, base_values,
                                                                   expected):
    interval = noise.from_runs(5.0, head_values, base_values)
    if expected is None:
        assert interval is None
    else:
        assert (interval.low, interval.high) == pytest.approx(expected, abs=0.6)
        assert interval.basis == "runs"


def test_the_report_command_on_the_kept_h200_runs_is_a_success(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from bot.report.cli import report_cmd
    monkeypatch.chdir(tmp_path)  # no repository config: the default thresholds
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    head, base = _copy(UNPACKED, tmp_path / "head"), _copy(PACKED, tmp_path / "base")
    outcome = CliRunner().invoke(report_cmd, [
        "--results", str(head), "--jobs", str(SMOKE / "jobs" / "unpacked"), "--baseline", str(base),
        "--out", str(tmp_path / "out"), "--fail-on-failure"], catch_exceptions=False)
    assert outcome.exit_code == 0, outcome.output
    assert "verdict: success" in outcome.output and "regressions 0" in outcome.output


def test_each_repeat_of_a_base_point_is_a_base_run_of_its_own(tmp_path):
    from tests import synthetic
    job = synthetic.sweep_plan("r", concurrencies=(16,), sha=synthetic.BASE_SHA)
    result = synthetic.run_sweep(job)
    point = result.cases[0].points[0]
    runs = [synthetic.metrics_for(16, scale=s, jitter=0) for s in (1.0, 0.9, 1.1)]
    result.cases[0].points[0] = point.model_copy(update={"repeats": runs})
    synthetic.write_results(tmp_path, [result])
    samples = compare.load_baseline(tmp_path).lookup(job.recipe_fingerprint, point.point_id)
    assert [s.metrics.tput_per_gpu for s in samples] == [m.tput_per_gpu for m in runs]
    delta = compare.compare_point(runs[0], samples, THRESHOLDS).delta("tput_per_gpu")
    assert delta.interval.basis == "runs" and delta.noise_pct == pytest.approx(20, rel=1e-3)


def test_head_repeats_without_per_request_data_give_an_interval_from_their_spread():
    base = (compare.BaseSample(metrics(requests(200, 1)).model_copy(update={"requests": None}),
                               None, None, ()),)
    runs = tuple(metrics(requests(200, seed)).model_copy(update={"requests": None})
                 for seed in (2, 3, 4))
    comparison = compare.compare_point(runs[1], base, THRESHOLDS, head_repeats=runs)
    assert comparison.head_runs == 3
    assert comparison.delta("tput_per_gpu").interval.basis == "runs"


def test_per_request_lists_of_different_lengths_give_no_bootstrap():
    broken = requests(200, 1).model_copy(update={"tpot_ms": [1.0] * 199})
    head = metrics(requests(200, 2)).model_copy(update={"requests": broken})
    delta = compare.compare_point(head, base_of(3, n=200), THRESHOLDS).delta("tput_per_gpu")
    assert delta.interval is None or delta.interval.basis != "requests"


def test_a_run_past_the_request_cap_is_subsampled_and_still_judged(monkeypatch):
    monkeypatch.setattr(noise, "MAX_REQUESTS", 300)
    head = metrics(requests(1000, seed=99, slowdown=1 / 0.8))
    delta = compare.compare_point(head, base_of(1, n=1000), THRESHOLDS).delta("tput_per_gpu")
    assert delta.interval.basis == "requests" and delta.verdict == "regression"
