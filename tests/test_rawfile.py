"""A client's raw file carries what InferenceX's process_result.py and aggregate_power.py read, for both engines:
`sglang.bench_serving` leaves out model_id and total_token_throughput, neither client writes the window."""
from __future__ import annotations

import json
import os

import pytest

from bot.inferencex.aggregate import aggregate
from bot.runner.metrics import load_raw
from bot.runner.power_rule import benchmark_window
from bot.runner.rawfile import ADDED_KEY, complete_raw_file, completed_raw

# The shapes each client writes (keys and kinds of value as recorded on the H200 runs in docs/gpu-runs/).
SGLANG = {"backend": "sglang-oai", "dataset_name": "random-ids", "request_rate": float("inf"), "max_concurrency": 4,
          "duration": 8.0, "completed": 32, "total_input_tokens": 32768, "total_output_tokens": 4096,
          "request_throughput": 4.0, "input_throughput": 4096.0, "output_throughput": 512.0,
          "total_throughput": 4608.0, "mean_e2e_latency_ms": 250.0, "median_ttft_ms": 15.9, "mean_tpot_ms": 1.84,
          "median_tpot_ms": 1.83, "p99_itl_ms": 3.8, "accept_length": None}
VLLM = {"date": "20261130-101010", "backend": "openai", "model_id": "tiny", "tokenizer_id": "/m", "num_prompts": 32,
        "max_concurrency": 4, "duration": 8.0, "completed": 32, "failed": 0, "total_input_tokens": 32768,
        "total_output_tokens": 4096, "request_throughput": 4.0, "output_throughput": 512.0,
        "total_token_throughput": 4608.0, "mean_ttft_ms": 16.0, "median_tpot_ms": 1.83, "ttfts": [0.01]}
# What process_result.py reads from the raw file (utils/process_result.py: bmk_result[...]).
PROCESS_RESULT_KEYS = ("max_concurrency", "model_id", "total_token_throughput", "output_throughput")
ENV = {"RUNNER_TYPE": "h200", "FRAMEWORK": "sglang", "PRECISION": "fp8", "SPEC_DECODING": "none", "DISAGG": "false",
       "MODEL_PREFIX": "tiny", "IMAGE": "img", "ISL": "1024", "OSL": "128", "TP": "1", "EP_SIZE": "1",
       "DP_ATTENTION": "false"}


@pytest.mark.parametrize(("raw", "added"), [
    pytest.param(SGLANG, ["model_id", "total_token_throughput", "benchmark_start_time_unix",
                          "benchmark_end_time_unix"], id="sglang-lacks-model-total-and-window"),
    pytest.param(VLLM, ["benchmark_start_time_unix", "benchmark_end_time_unix"], id="vllm-lacks-the-window"),
])
def test_both_clients_raw_files_carry_what_process_result_and_aggregate_power_read(raw, added):
    done = completed_raw(raw, model_id="tiny", end_unix=2000.0)
    assert all(key in done for key in PROCESS_RESULT_KEYS)
    assert done[ADDED_KEY] == added
    window, reasons = benchmark_window(done)
    assert reasons == [] and (window.start, window.end) == (1992.0, 2000.0)  # the client's duration, ending at the write
    agg = aggregate(ENV, done)  # process_result.py's figures, restated (bot/inferencex/aggregate.py)
    assert agg["model"] == done["model_id"] and agg["tput_per_gpu"] == 4608.0 and agg["conc"] == 4


def test_the_clients_own_keys_are_never_changed():
    done = completed_raw({**SGLANG, "model_id": "served-name", "total_token_throughput": 1.0}, model_id="other",
                         end_unix=2000.0)
    assert done["model_id"] == "served-name" and done["total_token_throughput"] == 1.0
    assert all(done[k] == v or (k == "request_rate") for k, v in SGLANG.items())


def test_sglang_without_a_total_adds_input_and_output():
    raw = {k: v for k, v in SGLANG.items() if k != "total_throughput"}
    assert completed_raw(raw, model_id="m", end_unix=1.0e9)["total_token_throughput"] == 4608.0


def test_a_window_the_client_wrote_is_kept():
    raw = {**VLLM, "benchmark_start_time_unix": 10.0, "benchmark_end_time_unix": 18.0}
    assert ADDED_KEY not in completed_raw(raw, model_id="m", end_unix=99.0)


def test_the_added_names_do_not_become_process_result_figures():
    # process_result.py turns every key ending in "ms" into seconds and every "tpot" key into interactivity
    done = completed_raw(SGLANG, model_id="m", end_unix=2000.0)
    assert not any(key.endswith("ms") or "tpot" in key for key in done[ADDED_KEY] + [ADDED_KEY])


def test_an_sglang_json_lines_file_is_rewritten_as_one_object_its_end_from_the_write(tmp_path):
    path = tmp_path / "c4.json"
    path.write_text(json.dumps(SGLANG) + "\n")
    os.utime(path, (3000.0, 3000.0))
    complete_raw_file(path, load_raw(path), model_id="tiny")
    written = json.loads(path.read_text())  # json.load, as process_result.py reads it
    assert written["model_id"] == "tiny" and written["benchmark_end_time_unix"] == 3000.0
    assert written["benchmark_start_time_unix"] == 2992.0
