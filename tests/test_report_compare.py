"""Comparing with the base branch: Δ%, direction per metric, thresholds and noise."""
import pytest

from bot.core.config import load_config
from bot.report import collect, compare
from tests import synthetic


def sample(scale=1.0, engine="0.32.0", gpus=("NVIDIA H200",), concurrency=16, client_process="case"):
    return compare.BaseSample(synthetic.metrics_for(concurrency, scale=scale, jitter=0),
                              synthetic.BASE_SHA, engine, gpus, client_process)


def head(scale=1.0, concurrency=16):
    return synthetic.metrics_for(concurrency, scale=scale, jitter=0)


def test_defaults_gate_throughput_per_gpu_at_5_and_p99_ttft_at_10_percent():
    assert compare.thresholds_from(None) == {"tput_per_gpu": 5.0, "ttft_p99": 10.0}


@pytest.mark.parametrize("config, expected", [
    ({"tput_per_gpu": 3}, {"tput_per_gpu": 3.0, "ttft_p99": 10.0}),
    ({"thresholds": {"tpot_p50": "8%"}}, {"tput_per_gpu": 5.0, "ttft_p99": 10.0, "tpot_p50": 8.0}),
    ({"ttft_p99": None}, {"tput_per_gpu": 5.0}),
], ids=["override", "nested-percent-string", "null-switches-off"])
def test_thresholds_come_from_a_mapping(config, expected):
    assert compare.thresholds_from(config) == expected


def test_thresholds_come_from_the_repository_config():
    config = load_config("report:\n  thresholds:\n    tput_per_gpu: 2.5\n    e2el_p99: 15%\n")
    assert compare.thresholds_from(config) == {"tput_per_gpu": 2.5, "ttft_p99": 10.0,
                                                "e2el_p99": 15.0}


@pytest.mark.parametrize("config, expected", [
    ({"throughput": 5}, "report.thresholds.throughput: unknown metric; accepted: tput_per_gpu"),
    ({"ttft_p99": "fast"}, "report.thresholds.ttft_p99: 'fast' is not a percentage"),
    ({"ttft_p99": -1}, "is not a percentage"),
    (["tput_per_gpu"], "expected a mapping of metric to percent"),
], ids=["unknown-metric", "not-a-number", "negative", "not-a-mapping"])
def test_bad_thresholds_are_one_clear_error(config, expected):
    with pytest.raises(collect.InputError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        compare.thresholds_from(config)


THRESHOLDS = {"tput_per_gpu": 5.0, "ttft_p99": 10.0}


@pytest.mark.parametrize("head_scale, base_scales, metric, verdict", [
    (0.90, [1.0, 1.0, 1.0], "tput_per_gpu", "regression"),
    (0.90, [1.0], "tput_per_gpu", "inconclusive"),  # one run a side, no per-request data
    (0.97, [1.0], "tput_per_gpu", "within-threshold"),
    (1.10, [1.0, 1.0], "tput_per_gpu", "improvement"),
    (0.85, [1.0, 0.86, 0.93], "tput_per_gpu", "within-noise"),
    (0.85, [1.0, 1.0, 1.0], "tput_per_gpu", "regression"),
    (0.85, [1.0, 1.0], "ttft_p99", "regression"),  # slower TTFT is worse: higher is worse
    (1.20, [1.0, 1.0], "ttft_p99", "improvement"),
    (0.85, [1.0], "tpot_p50", "ungated"),          # shown, never gated without a threshold
], ids=["tput-drop", "one-run-no-interval", "tput-small-drop", "tput-gain", "within-noise",
        "noise-zero", "ttft-slower", "ttft-faster", "ungated"])
def test_each_metric_is_judged_in_its_own_direction(head_scale, base_scales, metric, verdict):
    comparison = compare.compare_point(head(head_scale), tuple(sample(s) for s in base_scales),
                                       THRESHOLDS)
    assert comparison.delta(metric).verdict == verdict


def test_p99_from_too_few_requests_is_never_judged():
    """Concurrency 4 in the synthetic curve is 40 requests: p99 needs 100."""
    comparison = compare.compare_point(head(0.5, concurrency=4),
                                       (sample(1.0, concurrency=4), sample(1.0, concurrency=4)),
                                       THRESHOLDS)
    assert comparison.delta("ttft_p99").verdict == "unsupported"
    assert comparison.delta("tput_per_gpu").verdict == "regression"


def test_the_base_is_the_median_and_the_noise_the_spread_of_the_base_runs():
    comparison = compare.compare_point(head(1.0), (sample(1.0), sample(0.9), sample(1.1)),
                                       THRESHOLDS)
    delta = comparison.delta("tput_per_gpu")
    assert delta.base == pytest.approx(sample(1.0).metrics.tput_per_gpu)
    assert delta.change_pct == pytest.approx(0.0)
    assert delta.noise_pct == pytest.approx(20.0, rel=1e-3)
    assert comparison.base_runs == 3


def test_no_base_sample_means_no_comparison():
    assert compare.compare_point(head(), (), THRESHOLDS) is None


@pytest.mark.parametrize("engine, gpus, client, expected", [
    ("0.32.0", ("NVIDIA H200",), "case", ()),
    ("0.32.0", ("NVIDIA H200",), None, ()),  # a result from before the field: nothing to compare
    ("0.33.0", ("NVIDIA H200",), "case", ("engine 0.32.0 → 0.33.0",)),
    ("0.32.0", ("NVIDIA B200",), "case", ("GPUs NVIDIA H200 → NVIDIA B200",)),
    ("0.32.0", ("NVIDIA H200",), "point", ("benchmark client process one a case → one a point",)),
], ids=["same", "client-unknown", "engine-changed", "gpu-changed", "client-process-changed"])
def test_an_environment_change_from_the_base_is_flagged(engine, gpus, client, expected):
    comparison = compare.compare_point(head(), (sample(),), THRESHOLDS, engine_version=engine,
                                       gpus=gpus, client_process=client)
    assert comparison.env_changes == expected


def test_the_baseline_keeps_passed_points_by_fingerprint_and_point_id(tmp_path):
    job = synthetic.sweep_plan("tiny-cpu", concurrencies=(1, 2), sha=synthetic.BASE_SHA)
    result = synthetic.run_sweep(job, failed_points={"tp1-c2": "crashed"})
    synthetic.write_results(tmp_path, [result])
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "result.json").write_text("{", encoding="utf-8")
    baseline = compare.load_baseline(tmp_path)
    assert len(baseline.lookup(job.recipe_fingerprint, "tp1-c1")) == 1
    assert baseline.lookup(job.recipe_fingerprint, "tp1-c2") == ()
    assert baseline.lookup("another-fingerprint", "tp1-c1") == ()
    assert baseline.shas == (synthetic.BASE_SHA,)
    [skipped] = baseline.unreadable
    assert skipped.startswith("broken/result.json: ") and "JSON" in skipped  # the file and why


def test_a_missing_baseline_directory_is_an_empty_baseline(tmp_path):
    assert compare.load_baseline(tmp_path / "none").samples == {}
    assert compare.load_baseline(None).samples == {}


@pytest.mark.parametrize("metric, worse_interval, change_interval", [
    ("tput_per_gpu", (2.0, 8.0), (-8.0, -2.0)),
    ("ttft_p99", (2.0, 8.0), (2.0, 8.0)),
    ("ttft_p99", (-1.0, 1.0), (-1.0, 1.0)),
], ids=["higher-is-better-flips", "lower-is-better-keeps", "zero-change-keeps-direction"])
def test_the_interval_is_shown_in_the_sign_of_the_change(metric, worse_interval, change_interval):
    from bot.report import noise
    delta = compare.Delta(metric, 1.0, 1.0, 0.0, 0.0, None, 5.0, "within-threshold",
                          noise.Interval(*worse_interval, "requests", 2))
    assert delta.change_interval == change_interval
