"""A compare: job's arms side by side: mean ± std over repeats, Δ%, the noise rule of docs/fidelity.md, GPU-hours per arm."""
import pytest

from bot.report.arms import judge, section
from bot.core.results import CaseResult, JobResult, PointMetrics, PointResult


def metrics(tput: float, ttft: float, tpot: float) -> PointMetrics:
    return PointMetrics(completed=4, failed=0, duration_s=1.0, request_throughput=1.0, output_throughput=tput,
                        total_token_throughput=tput, tput_per_gpu=tput, output_tput_per_gpu=tput,
                        input_tput_per_gpu=0.0, interactivity=1.0, ttft_ms={"median": ttft}, tpot_ms={"median": tpot})


def arm(name: str, runs: list[tuple[float, float, float]], gpus: int = 8) -> CaseResult:
    ms = [metrics(*r) for r in runs]
    return CaseResult(name=name, status="passed", gpus=gpus, duration_s=1800.0, points=[PointResult(
        point_id=f"{name}-c32", concurrency=32, status="passed", metrics=ms[0], repeats=ms if len(ms) > 1 else [])])


def job(left: CaseResult, right: CaseResult) -> JobResult:
    return JobResult(job_id="q--compare", kind="e2e", recipe="q", recipe_fingerprint="f", runner_label="h200-x8",
                     status="passed", compare_arms=[left.name, right.name], cases=[left, right])


@pytest.mark.parametrize("left, right, verdict", [
    ([100, 102, 98], [101, 103, 99], "noise"),  # +1 % inside a 4 % run-to-run range
    ([100, 101, 99], [110, 111, 109], "differs"),  # +10 % beyond a 2 % range
    ([100], [110], "inconclusive"),  # one run an arm: no interval, no claim
])
def test_a_delta_inside_the_run_to_run_spread_is_noise(left, right, verdict):
    assert judge(left, right)["verdict"] == verdict


def test_the_section_shows_both_arms_mean_and_std_with_gpu_hours_for_every_gpu_they_hold():
    native = arm("native-dp8", [(300, 371, 100), (305, 380, 101), (298, 365, 99.5)])
    afd = arm("afd-4a4f", [(303, 404, 98.9), (306, 400, 98.7), (301, 410, 99)], gpus=8)
    text = section([job(native, afd)])
    assert "`native-dp8` against `afd-4a4f`" in text and "`native-dp8` 对比 `afd-4a4f`" in text
    assert "| 32 | output tok/s | 301.0 ± 3.6 | 303.3 ± 2.5 | +0.8% (±2.3%) | 〰️ within noise (run-to-run range) | 3/3 |" in text
    assert "| 32 | TTFT p50 ms | 372.0 ± 7.5 | 404.7 ± 5.0 | +8.8% (±4.0%) | differs beyond noise (run-to-run range) | 3/3 |" in text
    assert "`native-dp8` 8 GPU(s) × 1800.0 s = 4.0 GPU-h" in text and "`afd-4a4f` 8 GPU(s)" in text


def test_results_without_a_comparison_add_nothing():
    assert section([job(arm("a", [(1, 1, 1)]), arm("b", [(1, 1, 1)])).model_copy(update={"compare_arms": []}),
                    None]) == ""


def samples(ttft: list[float]):
    from bot.core.results import RequestSamples

    n = len(ttft)
    return RequestSamples(ttft_ms=ttft, tpot_ms=[10.0] * n, e2el_ms=[1000.0] * n, input_tokens=[100] * n,
                          output_tokens=[100] * n)


def test_with_per_request_data_on_both_arms_the_noise_rule_is_the_reports_bootstrap():
    import random

    rng = random.Random(7)
    left = samples([rng.gauss(100, 5) for _ in range(400)])
    same = samples([rng.gauss(100, 5) for _ in range(400)])
    slower = samples([rng.gauss(110, 5) for _ in range(400)])
    judged = judge([100.0], [100.4], metric="ttft_p50", higher_is_better=False,
                   left_requests=[left], right_requests=[same])
    assert judged["basis"] == "requests" and judged["verdict"] == "noise"
    judged = judge([100.0], [110.0], metric="ttft_p50", higher_is_better=False,
                   left_requests=[left], right_requests=[slower])
    assert judged["basis"] == "requests" and judged["verdict"] == "differs"
    # one run an arm and no per-request data: no interval, no claim
    assert judge([100.0], [110.0], metric="ttft_p50", higher_is_better=False)["verdict"] == "inconclusive"
