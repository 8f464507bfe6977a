"""Fault runs on the CPU side: each failure lands in result.json with the class that fits it, and
exactly the infrastructure ones get their one automatic retry (bot/runner/retry.py, gpu.yml).

`recipe-bot run` drives tests/fake_servers/fake_vllm.py in place of vLLM, as the lifecycle tests
do: a port taken before the start, a job that times out before its server is up (both
infrastructure), a server that exits on a bad flag and one that never becomes ready (both recipe).
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from click.testing import CliRunner

from bot.core.jobs import Job
from bot.report.cli import report_cmd
from bot.core.results import JobResult
from bot.runner import retry
from fake_servers import FAKE_VLLM, REPO, fake_job, recipe_bot

ENV = {"RECIPE_BOT_VLLM": str(FAKE_VLLM), "RECIPE_BOT_SHUTDOWN_GRACE_S": "2"}


def _with_server(job: Job, **update) -> Job:
    case = job.cases[0]
    server = case.servers[0].model_copy(update=update)
    return job.model_copy(update={"cases": [case.model_copy(update={"servers": [server]})]})


def run(job: Job, plan_dir: Path, out: Path, attempt: int = 1) -> JobResult:
    plan_dir.mkdir(parents=True, exist_ok=True)
    job_file = plan_dir / f"{job.job_id}.json"
    job_file.write_text(job.model_dump_json(indent=1))
    subprocess.run([recipe_bot(), "run", "--job", str(job_file), "--out", str(out),
                    "--attempt", str(attempt)], env={**os.environ, **ENV}, cwd=REPO,
                   capture_output=True, text=True, timeout=300, check=False)
    return JobResult.model_validate_json((out / "result.json").read_text())


@pytest.fixture()
def held_port():
    """A listening socket, as a leftover server from an earlier job would hold it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    yield sock
    sock.close()


def _port_taken(held: socket.socket) -> Job:
    return _with_server(fake_job("ok", points=1), port=held.getsockname()[1]).model_copy(
        update={"job_id": "port-taken"})


def _bad_flag(_held: socket.socket) -> Job:
    return _with_server(fake_job("strict_args", points=1),
                        args=["--max-modle-len", "4096"]).model_copy(update={"job_id": "bad-flag"})


def _never_ready(_held: socket.socket) -> Job:
    return fake_job("never_ready", points=1, startup_timeout_s=2.0).model_copy(
        update={"job_id": "never-ready"})


def _timeout_before_start(_held: socket.socket) -> Job:
    return fake_job("ok", points=1, timeout_s=2.0, extra_env={"FAKE_STARTUP_S": "30"}).model_copy(
        update={"job_id": "timeout-before-start"})


FAULTS = [
    pytest.param(_port_taken, "infrastructure", "port-busy", "already in use", id="port-taken"),
    pytest.param(_timeout_before_start, "infrastructure", "timeout-before-start",
                 "job timeout of 2 s reached", id="job-timeout-before-the-server-started"),
    pytest.param(_bad_flag, "recipe", "bad-arguments", "unrecognized arguments: --max-modle-len",
                 id="server-exits-on-a-bad-flag"),
    pytest.param(_never_ready, "recipe", "not-ready", "was not ready after 2 s",
                 id="server-never-ready-after-a-clean-start"),
]


@pytest.mark.parametrize(("make", "kind", "rule", "evidence"), FAULTS)
def test_fault_run_is_classified_and_only_infrastructure_is_retried_once(
        tmp_path: Path, held_port: socket.socket, make, kind: str, rule: str,
        evidence: str) -> None:
    job = make(held_port)
    plan, results = tmp_path / "plan", tmp_path / "results"
    first = run(job, plan, results / job.job_id)
    assert first.status == "failed" and first.attempt == 1
    assert (first.failure.kind, first.failure.rule) == (kind, rule), first.reason
    assert any(evidence in str(line) for line in first.failure.evidence), first.failure.evidence
    assert first.cases[0].failure is not None
    on_disk = json.loads((results / job.job_id / "result.json").read_text())
    assert on_disk["failure"]["rule"] == rule

    picked = retry.decide([job], retry.load_results(results))
    assert [d.retry for d in picked] == [kind == "infrastructure"]
    if kind != "infrastructure":
        return
    held_port.close()  # the platform's retry lands where the port is free
    if rule == "timeout-before-start":
        job = job.model_copy(update={"timeout_s": 60.0})
        job = _with_server(job, env={**job.cases[0].servers[0].env, "FAKE_STARTUP_S": "0.3"})
    second = run(job, plan, results / job.job_id / "attempt-2", attempt=2)
    assert (second.status, second.attempt, second.failure) == ("passed", 2, None)
    again = retry.decide([job], retry.load_results(results))
    assert [(d.retry, d.why) for d in again] == [(False, "already retried")]
    _report_shows_both_attempts(tmp_path, job, results, rule)


def _report_shows_both_attempts(tmp_path: Path, job: Job, results: Path, rule: str) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"jobs": [job.model_dump(mode="json")]}))
    out = tmp_path / "report"
    cwd = os.getcwd()
    os.chdir(tmp_path)  # the report reads .github/recipe-bot.yaml from the working folder
    try:
        done = CliRunner().invoke(report_cmd, ["--results", str(results), "--jobs", str(plan),
                                               "--out", str(out)], catch_exceptions=False)
    finally:
        os.chdir(cwd)
    assert done.exit_code == 0, done.output
    comment = (out / "comment.md").read_text(encoding="utf-8")
    english, _, chinese = comment.partition("\n\n---\n\n## ")
    assert english.startswith("<!-- recipe-bot:report") and "## ✅ success" in english
    assert f"`{rule}`" in english and "passed on attempt 2" in english
    assert "第 2 次尝试 ✅ 通过" in chinese
    summary = json.loads((out / "summary.json").read_text())
    assert summary["failure_classes"] == [{"kind": "infrastructure", "retried": True, "count": 1}]


def test_retry_outputs_name_lost_and_infrastructure_jobs_for_the_matrix(tmp_path: Path) -> None:
    lost, ok = fake_job("ok").model_copy(update={"job_id": "lost"}), fake_job("ok")
    decisions = retry.decide([lost, ok], {})
    text = retry.outputs(decisions)
    assert "has_retry=true" in text
    matrix = json.loads(text.split("\n")[0].removeprefix("matrix="))
    assert [row["job_id"] for row in matrix["include"]] == ["lost", "fake-ok"]
    assert {row["why"] for row in matrix["include"]} == {"runner-lost"}


def test_fail_fast_jobs_cancelled_after_a_recipe_failure_are_not_retried() -> None:
    failed = JobResult(job_id="a", kind="sweep", recipe="r", recipe_fingerprint="f",
                       runner_label="cpu", status="failed",
                       reason="server 'x' exited with code 2 before it was ready")
    decisions = retry.decide([fake_job("ok").model_copy(update={"job_id": "a"}), fake_job("ok")],
                             {"a": [failed]}, fail_fast=True)
    assert [(d.retry, d.why) for d in decisions] == [(False, "server-exited-at-start"),
                                                     (False, "fail-fast")]


def test_retry_cli_rejects_a_missing_plan_in_both_languages(tmp_path: Path) -> None:
    from click.testing import CliRunner

    done = CliRunner().invoke(retry.retry_matrix_cmd, [str(tmp_path), str(tmp_path / "nope.json")])
    assert done.exit_code == 2
    err = done.stderr
    assert "not a readable plan" in err and "无法读取计划" in err
