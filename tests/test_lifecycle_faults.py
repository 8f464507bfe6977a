"""A broken server fails its job with the reason in result.json, and nothing is left running.

Each case drives `recipe-bot run --job F --out DIR` against tests/fake_servers/fake_vllm.py (put in
place of vLLM through RECIPE_BOT_VLLM) with one scripted fault, and pins: exit code 1, status
failed, the reason, the teardown proof, no live process carrying the test's marker, and a run that
ends within the SIGTERM grace plus 10 s.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.core.jobs import AccuracySpec
from bot.runner import gsm8k
from bot.runner.procs import pick_free_port
from message_text import english
from fake_servers import FAKE_VLLM, MARKER_VAR, fake_job, live_marked_processes, recipe_bot, run_cli

GRACE_S = 2.0
# The runner reads recipe-bot's own sample problems here, also in CI where RECIPE_BOT_GSM8K_DIR names GSM8K.
ENV = {"RECIPE_BOT_VLLM": str(FAKE_VLLM), "RECIPE_BOT_SHUTDOWN_GRACE_S": str(GRACE_S),
       gsm8k.DATA_ENV: str(gsm8k.SAMPLE_DIR)}

def _quotes_the_startup_traceback(result: dict) -> None:
    case = result["cases"][0]
    assert "fake engine failed to allocate its KV cache" in case["log_tail"]
    assert [p["status"] for p in case["points"]] == ["skipped", "skipped"]
    assert case["startup_s"] is None


def _never_started_a_point(result: dict) -> None:
    assert [p["status"] for p in result["cases"][0]["points"]] == ["skipped", "skipped"]


def _fails_the_running_point_and_skips_the_rest(result: dict) -> None:
    points = result["cases"][0]["points"]
    assert [p["status"] for p in points] == ["failed", "skipped"]
    assert "exited with code 7" in english(points[0]["reason"])


def _fails_the_gsm8k_gate_on_the_crash_not_on_its_requests(result: dict) -> None:
    case = result["cases"][0]
    assert case["points"] == [] and case["accuracy"] is None
    assert "request" not in english(case["reason"])


def _fails_although_the_benchmark_passed(result: dict) -> None:
    case = result["cases"][0]
    assert [p["status"] for p in case["points"]] == ["passed", "passed"]
    assert case["cleanup"]["sigkill_escalated"] is True
    assert case["cleanup"]["groups_gone"] is True


def _names_the_escaped_child(result: dict) -> None:
    proof = result["cases"][0]["cleanup"]
    assert proof["leftover_pids"], "the escaped child is named in the proof"
    assert proof["groups_gone"] is False and proof["sigkill_escalated"] is False


FAULTS = [
    pytest.param("exit_during_startup", {}, ["exited with code 3", "before it was ready"],
                 _quotes_the_startup_traceback, id="exits-during-startup"),
    pytest.param("never_ready", {"startup_timeout_s": 3.0}, ["not ready after 3 s"],
                 _never_started_a_point, id="never-ready"),
    pytest.param("die_mid_benchmark", {}, ["exited with code 7", "during point 'c1'"],
                 _fails_the_running_point_and_skips_the_rest, id="dies-mid-benchmark"),
    # A crashed engine stops answering at once, but its process may take a while to go.
    pytest.param("die_mid_benchmark", {"extra_env": {"FAKE_DIE_SLOWLY_S": "1.5"}},
                 ["exited with code 7", "during point 'c1'"],
                 _fails_the_running_point_and_skips_the_rest, id="dies-slowly-mid-benchmark"),
    # GSM8K retries a failed request for 3 s (accuracy.ATTEMPTS): silent longer than that.
    pytest.param("die_mid_benchmark", {"points": 0, "extra_env": {"FAKE_DIE_SLOWLY_S": "4"},
                                       "accuracy": AccuracySpec(num_samples=20, num_shots=0, threshold=0.5)},
                 ["exited with code 7", "during the GSM8K evaluation"],
                 _fails_the_gsm8k_gate_on_the_crash_not_on_its_requests, id="dies-slowly-during-gsm8k"),
    pytest.param("ignore_sigterm", {}, ["forced SIGKILL", f"after {GRACE_S:g} s SIGTERM grace"],
                 _fails_although_the_benchmark_passed, id="ignores-sigterm"),
    pytest.param("child_holds_port", {}, ["left the server's process group", "holding port"],
                 _names_the_escaped_child, id="child-holds-port"),
]


@pytest.mark.parametrize(("mode", "job_args", "reason_parts", "check"), FAULTS)
def test_fault_fails_the_job_and_leaves_nothing_running(tmp_path: Path, mode: str,
                                                        job_args: dict, reason_parts: list[str],
                                                        check: Callable[[dict], None]) -> None:
    run = run_cli(fake_job(mode, **job_args), tmp_path, ENV)

    assert run.returncode == 1, run.output
    assert run.result is not None, run.output
    assert run.result["status"] == "failed"
    case = run.result["cases"][0]
    assert case["status"] == "failed"
    for part in reason_parts:
        assert part in english(case["reason"]), case["reason"]
        assert part in english(run.result["reason"])
    assert case["log_tail"], "a failed case quotes the server log"
    proof = case["cleanup"]
    assert proof["ports_free"] and proof["busy_ports"] == []
    assert live_marked_processes(run.marker) == []
    assert run.elapsed_s < GRACE_S + 10, f"took {run.elapsed_s:.1f} s"
    check(run.result)


def test_healthy_server_passes_with_figures_raw_files_and_gsm8k(tmp_path: Path) -> None:
    test_rows = [json.loads(line) for line in
                 (gsm8k.SAMPLE_DIR / "test.jsonl").read_text()
                 .splitlines()[:4]]
    gold = [row["answer"].rsplit("#### ", 1)[1] for row in test_rows]
    answers = {  # two strict hits, one only flexible-extract finds, one wrong
        test_rows[0]["question"]: f" She makes it.\n#### {gold[0]}",
        test_rows[1]["question"]: f" It takes {gold[1]} bolts.\n#### {gold[1]}",
        test_rows[2]["question"]: f" So the profit is ${gold[2]}.",
        test_rows[3]["question"]: " He runs 1 meter.\n#### 1",
    }
    answers_file = tmp_path / "answers.json"
    answers_file.write_text(json.dumps(answers))
    job = fake_job("ok", points=3, extra_env={"FAKE_GSM8K_ANSWERS": str(answers_file)},
                   accuracy=AccuracySpec(num_samples=4, num_shots=3, threshold=0.5))

    run = run_cli(job, tmp_path, ENV)

    assert run.returncode == 0, run.output
    result = run.result
    assert result["status"] == "passed" and result["engine_version"] == "0.0.0+fake"
    case = result["cases"][0]
    out = tmp_path / "out"
    for point in case["points"]:
        assert point["status"] == "passed"
        raw = json.loads((out / point["raw_result_file"]).read_text())
        assert point["metrics"]["completed"] == raw["completed"] == 12
        assert point["metrics"]["total_token_throughput"] == raw["total_token_throughput"]
    assert [p["concurrency"] for p in case["points"]] == [1, 2, 4]
    assert (out / case["server_logs"][0]).read_text().count("starting in mode ok") == 1
    accuracy = case["accuracy"]
    assert (accuracy["strict_match"], accuracy["flexible_extract"]) == (0.5, 0.75)
    assert accuracy["passed"] is True and accuracy["num_samples"] == 4
    samples = json.loads((out / accuracy["samples_file"]).read_text())
    assert samples["first_prompt"].count("Question: ") == 4  # three shots and the question
    assert case["cleanup"]["groups_gone"] and case["cleanup"]["ports_free"]
    assert case["cleanup"]["gpu"] == "no GPU" and case["log_tail"] is None
    assert live_marked_processes(run.marker) == []


def test_missing_opt_in_variable_fails_without_starting_a_server(tmp_path: Path) -> None:
    job = fake_job("ok")
    job.cases[0].required_env = ["RECIPE_BOT_TEST_NEVER_SET_OPT_IN"]

    run = run_cli(job, tmp_path, ENV)

    case = run.result["cases"][0]
    assert run.returncode == 1 and case["status"] == "failed"
    assert "RECIPE_BOT_TEST_NEVER_SET_OPT_IN" in english(case["reason"])
    assert "fails rather than skips" in english(case["reason"])
    assert case["cleanup"] is None and case["server_logs"] == []


def test_unset_variable_in_model_names_the_field(tmp_path: Path) -> None:
    job = fake_job("ok")
    job.cases[0].servers[0].model = "${RECIPE_BOT_TEST_NEVER_SET_MODEL}"

    run = run_cli(job, tmp_path, ENV)

    reason = english(run.result["cases"][0]["reason"])
    assert "model refers to ${RECIPE_BOT_TEST_NEVER_SET_MODEL}" in reason


def test_job_timeout_stops_a_slow_start_and_skips_later_cases(tmp_path: Path) -> None:
    job = fake_job("never_ready", startup_timeout_s=60.0, timeout_s=2.0)
    job.cases.append(job.cases[0].model_copy(update={"name": "second"}))

    run = run_cli(job, tmp_path, ENV)

    first, second = run.result["cases"]
    assert "job timeout of 2 s reached" in english(first["reason"])
    assert second["status"] == "skipped" and "job timeout" in english(second["reason"])
    assert run.result["status"] == "failed"
    assert run.elapsed_s < 2 + GRACE_S + 10


def test_sigterm_to_the_runner_cancels_and_still_tears_down(tmp_path: Path) -> None:
    job = fake_job("ok", points=3, num_prompts=400)
    job_file = tmp_path / "job.json"
    job_file.write_text(job.model_dump_json())
    out = tmp_path / "out"
    marker = "cancel-" + os.urandom(6).hex()
    runner = subprocess.Popen([recipe_bot(), "run", "--job", str(job_file), "--out", str(out)],
                              env={**os.environ, **ENV, MARKER_VAR: marker},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not list(out.glob("*/points/c1.log")):
        assert time.monotonic() < deadline, "the first point never started"
        time.sleep(0.1)
    runner.send_signal(signal.SIGTERM)
    assert runner.wait(timeout=GRACE_S + 10) == 1

    result = json.loads((out / "result.json").read_text())
    assert result["status"] == "cancelled"
    assert "cancelled by SIGTERM" in english(result["cases"][0]["reason"])
    assert result["cases"][0]["cleanup"]["ports_free"] is True
    assert live_marked_processes(marker) == []


@pytest.mark.parametrize(("peer_mode", "passes"), [
    pytest.param("never_ready", True, id="unpolled-peer-need-not-answer-http"),
    pytest.param("exit_during_startup", False, id="unpolled-peer-death-still-fails-fast"),
])
def test_server_without_ready_check_is_watched_but_not_polled(tmp_path: Path, peer_mode: str,
                                                              passes: bool) -> None:
    job = fake_job("ok", points=1, extra_env={"FAKE_STARTUP_S": "1.0"})
    front = job.cases[0].servers[0]
    peer = front.model_copy(update={"name": "ffn", "ready_check": False,
                                    "env": {"FAKE_SERVER_MODE": peer_mode, "FAKE_STARTUP_S": "0"}})
    job.cases[0].servers = [peer, front]  # started first, like afd-plugin's FFN role

    run = run_cli(job, tmp_path, ENV)

    case = run.result["cases"][0]
    assert (case["status"] == "passed") is passes, case["reason"]
    if passes:
        raw = json.loads((tmp_path / "out" / case["points"][0]["raw_result_file"]).read_text())
        assert raw["completed"] == 12, "the client talked to the polled server"
    else:
        assert "server 'ffn' exited with code 3 before it was ready" in english(case["reason"])
    assert len(case["cleanup"]["process_groups"]) == 2
    assert live_marked_processes(run.marker) == []


def test_server_outlives_no_runner_killed_without_teardown(tmp_path: Path) -> None:
    job = fake_job("ok", points=1, num_prompts=2000)
    job_file = tmp_path / "job.json"
    job_file.write_text(job.model_dump_json())
    marker = "sigkill-" + os.urandom(6).hex()
    runner = subprocess.Popen([recipe_bot(), "run", "--job", str(job_file), "--out",
                               str(tmp_path / "out")],
                              env={**os.environ, **ENV, MARKER_VAR: marker},
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not list((tmp_path / "out").glob("*/points/c1.log")):
        assert time.monotonic() < deadline, "the point never started"
        time.sleep(0.1)
    runner.kill()  # no teardown runs: the kernel's parent-death signal must stop the server
    runner.wait()

    deadline = time.monotonic() + 10
    while any("serve" in p for p in live_marked_processes(marker)):
        assert time.monotonic() < deadline, live_marked_processes(marker)
        time.sleep(0.1)


def test_failed_requests_fail_each_point_but_later_points_still_run(tmp_path: Path) -> None:
    run = run_cli(fake_job("fail_requests", points=2), tmp_path, ENV)

    case = run.result["cases"][0]
    assert [p["status"] for p in case["points"]] == ["failed", "failed"]
    assert [english(p["reason"]) for p in case["points"]] == ["no request completed"] * 2
    assert "point c1: no request completed; point c2: no request completed" in english(case["reason"])
    assert case["cleanup"]["groups_gone"] and not case["cleanup"]["sigkill_escalated"]


def test_cases_sharing_a_port_run_one_after_another(tmp_path: Path) -> None:
    job = fake_job("ok", points=1)
    job.cases[0].servers[0].port = pick_free_port()
    job.cases.append(job.cases[0].model_copy(update={"name": "second"}))

    run = run_cli(job, tmp_path, ENV)

    first, second = run.result["cases"]
    assert (first["status"], second["status"]) == ("passed", "passed"), second["reason"]
    assert first["cleanup"]["ports"] == second["cleanup"]["ports"]
    assert run.result["server_launches"] == 2


def test_port_taken_by_someone_else_fails_before_any_server_starts(tmp_path: Path) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        job = fake_job("ok", points=1)
        job.cases[0].servers[0].port = squatter.getsockname()[1]

        run = run_cli(job, tmp_path, ENV)

    case = run.result["cases"][0]
    assert f"port {job.cases[0].servers[0].port} is already in use" in english(case["reason"])
    assert "held by pid" in english(case["reason"])
    assert case["server_logs"] == [] and case["cleanup"] is None


def test_two_servers_of_one_name_keep_separate_logs_and_groups(tmp_path: Path) -> None:
    job = fake_job("ok", points=1)
    job.cases[0].servers.append(job.cases[0].servers[0].model_copy())

    run = run_cli(job, tmp_path, ENV)

    case = run.result["cases"][0]
    assert case["status"] == "passed", case["reason"]
    assert case["server_logs"] == ["ok/server-server0.log", "ok/server-server1.log"]
    assert len(set(case["cleanup"]["process_groups"])) == 2
    assert len(set(case["cleanup"]["ports"])) == 2
