"""Per-request data from `vllm bench serve --save-detailed`, and repeated runs of one point."""
import json
import pathlib
from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from bot import engines
from bot.core.jobs import Case, Job, LoadPoint, ServerSpec
from bot.recipes.schema import Workload
from bot.core.results import PointMetrics, PointResult
from bot.runner import load, local
from bot.runner.metrics import parse_requests

KEPT = pathlib.Path(__file__).resolve().parents[1] / "docs" / "gpu-runs" / "2026-11-30" / "results"


def detailed(**overrides):
    """What --save-detailed adds to the summary (seconds and token counts), one list per field."""
    raw = {"ttfts": [0.040, 0.050, 0.0, 0.030], "itls": [[0.002] * 3, [0.003] * 3, [], [0.001]],
           "output_lens": [4, 4, 0, 2], "input_lens": [16, 16, 16, 16],
           "errors": ["", "", "connection reset", ""]}
    raw.update(overrides)
    return raw


def test_per_request_figures_come_from_the_detailed_file():
    samples = parse_requests(detailed())
    assert samples.count == 3  # the failed request is left out
    assert samples.ttft_ms == [40.0, 50.0, 30.0]
    assert samples.e2el_ms == pytest.approx([46.0, 59.0, 31.0])
    assert samples.tpot_ms == pytest.approx([2.0, 3.0, 1.0])
    assert samples.output_tokens == [4, 4, 2] and samples.input_tokens == [16, 16, 16]


def test_the_clients_latency_wins_over_the_sum_of_inter_token_latencies():
    samples = parse_requests(detailed(latencies=[0.1, 0.2, 0.0, 0.3]))
    assert samples.e2el_ms == pytest.approx([100.0, 200.0, 300.0])


@pytest.mark.parametrize("raw", [
    {}, detailed(itls=[[0.002]]), detailed(ttfts="x"), detailed(output_lens=[1, 1, 1, 1]),
], ids=["summary-only", "lists-of-different-lengths", "not-a-list", "one-token-each"])
def test_no_usable_per_request_data_is_none_never_an_error(raw):
    assert parse_requests(raw) is None


def test_the_kept_h200_files_have_no_per_request_data():
    raw = json.loads((KEPT / "gpu-smoke-vllm--tp1--c1" / "tp1-c1" / "points" / "tp1-c1.json")
                     .read_text())
    assert parse_requests(raw) is None


def test_the_vllm_client_keeps_per_request_data_with_a_seed_per_repeat(tmp_path):
    point = LoadPoint(point_id="p", concurrency=2, isl=8, osl=8, num_prompts=4)
    target = load.Target("127.0.0.1", 1, "m", "tok", "vllm")
    argv = load.bench_command(load.Client(engines.get("vllm"), "vllm"), point, target,
                              tmp_path / "p.json", seed=2)
    assert "--save-detailed" in argv and argv[argv.index("--seed") + 1] == "2"


def metrics(tput: float) -> PointMetrics:
    return PointMetrics(completed=4, failed=0, duration_s=1, request_throughput=4,
                        output_throughput=tput / 2, total_token_throughput=tput, tput_per_gpu=tput,
                        output_tput_per_gpu=tput / 2, input_tput_per_gpu=tput / 2,
                        interactivity=10.0)


@pytest.mark.parametrize("tputs, failing, expected", [
    ([100.0, 120.0, 90.0], None, ("passed", 100.0, 3)),
    ([100.0], None, ("passed", 100.0, 0)),
    ([100.0, 120.0, 90.0], 1, ("failed", None, 0)),
], ids=["median-of-three", "one-run", "second-repeat-fails"])
def test_repeats_keep_every_run_and_the_median_run_speaks_for_the_point(monkeypatch, tmp_path,
                                                                        tputs, failing, expected):
    seeds = []

    def fake_run_point(point, *, repeat, **_):
        seeds.append(repeat)
        if repeat == failing:
            return PointResult(point_id=point.point_id, concurrency=1, status="failed",
                               reason="client exited with code 1")
        return PointResult(point_id=point.point_id, concurrency=1, status="passed",
                           metrics=metrics(tputs[repeat]), raw_result_file=f"p.r{repeat}.json")

    monkeypatch.setattr(local, "run_point", fake_run_point)
    monkeypatch.setattr(local, "reset_prefix_cache", lambda target: "reset")
    point = LoadPoint(point_id="p", concurrency=1, isl=8, osl=8, num_prompts=4,
                      repeats=len(tputs))
    case = Case(name="c", servers=[ServerSpec(engine="vllm", model="m")], points=[point])
    job = Job(job_id="j", kind="sweep", recipe="r", recipe_fingerprint="f", runner_label="x",
              cases=[case])
    ctx = SimpleNamespace(job=job, out_dir=tmp_path, budget=SimpleNamespace(tick=lambda _: None),
                          progress=SimpleNamespace(say=lambda _: None))
    result = local._measure(point, case, ctx, None, None, [], tmp_path, {})
    status, tput, repeats = expected
    assert result.status == status and len(result.repeats) == repeats
    if tput is not None:
        assert result.metrics.tput_per_gpu == tput
    else:
        assert str(result.reason).startswith("repeat 2 of 3:")
    assert seeds == list(range(len(seeds)))


def test_a_workload_asks_for_repeats_and_a_floor_of_requests():
    workload = Workload(isl=8, osl=8, num_prompts=32, min_prompts=128, repeats=3)
    assert workload.prompts(1) == 128 and workload.repeats == 3


@pytest.mark.parametrize("repeats", [0, 11], ids=["zero", "more-than-ten"])
def test_repeats_out_of_range_are_rejected(repeats):
    with pytest.raises(ValidationError, match="repeats"):
        Workload(isl=8, osl=8, num_prompts=32, repeats=repeats)
