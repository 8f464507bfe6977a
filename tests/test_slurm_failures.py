"""Failure classes on a real Slurm cluster (scripts/slurm-up.sh), and the one automatic retry.

A server that exits on a bad flag is a recipe failure and is not retried. A port taken before
the start, a time limit reached before the server was ready and a node set down mid-job are
infrastructure failures: run_job_slurm(retry=True) (what `recipe-bot run --backend slurm` does)
runs each exactly once more with `--exclude` naming the node that failed. The CI cluster has one
node, so the retry cannot be placed and fails too (sbatch refuses it, or it pends past its
deadline): the test pins that it was tried once, without that node, and never a third time.
The first attempt's files are kept in DIR/attempt-1/.
"""
from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from bot.core.results import JobResult
from bot.runner.slurm import backend as slurm
from test_slurm import (  # noqa: F401 - cluster and cancel_after are fixtures used here
    POLL_S,
    REQUIRED,
    Submitted,
    _resume,
    cancel_after,
    cluster,
    standin_job,
    standin_repo,
    wait_for,
)

pytestmark = pytest.mark.slurm
RETRY_PENDING_S = 20.0  # the retry pends (its only node excluded) at most this long


def _run(job, job_file: Path, out: Path) -> JobResult:
    return slurm.run_job_slurm(job, job_file, out, None, repo=standin_repo(), poll_s=POLL_S,
                               retry=True, pending_timeout_s=RETRY_PENDING_S)


def _first_attempt(out: Path) -> JobResult:
    return JobResult.model_validate_json((out / "attempt-1" / "result.json").read_text())


def _retried_once_without(result: JobResult, out: Path, node: str) -> None:
    assert result.attempt == 2 and result.excluded_nodes == [node]
    assert result.status == "failed" and result.failure.kind == "infrastructure"
    assert sorted(p.name for p in out.iterdir() if p.name.startswith("attempt-")) == ["attempt-1"]


def test_a_server_that_exits_on_a_bad_flag_is_recipe_and_not_retried(cluster, tmp_path,
                                                                      cancel_after):
    cancel_after.append(9701)
    job, job_file, out = standin_job(tmp_path, "bad-flag", pr=9701, mode="bad-flag")
    result = _run(job, job_file, out)
    assert result.status == "failed" and result.attempt == 1
    assert (result.failure.kind, result.failure.rule) == ("recipe", "bad-arguments")
    assert any("unrecognized arguments: --tp-szie" in str(line) for line in result.failure.evidence)
    assert not (out / "attempt-1").exists()


def test_a_port_taken_before_the_start_is_infrastructure_and_retried_once(cluster, tmp_path,
                                                                          cancel_after):
    cancel_after.append(9702)
    job, job_file, out = standin_job(tmp_path, "port-taken", pr=9702, mode="ready")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        case = job.cases[0]
        server = case.servers[0].model_copy(update={"port": held.getsockname()[1]})
        job = job.model_copy(update={"cases": [case.model_copy(update={"servers": [server]})]})
        job_file.write_text(job.model_dump_json())
        result = _run(job, job_file, out)
    first = _first_attempt(out)
    assert (first.failure.kind, first.failure.rule) == ("infrastructure", "port-busy")
    assert first.slurm.node == cluster
    _retried_once_without(result, out, cluster)


def test_a_time_limit_before_the_server_is_ready_is_infrastructure_and_retried_once(
        cluster, tmp_path, cancel_after):
    cancel_after.append(9703)
    job, job_file, out = standin_job(tmp_path, "time-limit-retry", pr=9703, time_limit="1")
    result = _run(job, job_file, out)
    first = _first_attempt(out)
    assert first.slurm.state == "TIMEOUT"
    assert (first.failure.kind, first.failure.rule) == ("infrastructure", "timeout-before-start")
    _retried_once_without(result, out, cluster)


def test_a_node_set_down_mid_job_is_infrastructure_and_retried_once_without_it(
        cluster, tmp_path, cancel_after):
    if os.geteuid() != 0:
        message = "setting a node down takes Slurm's operator rights (root or SlurmUser)"
        if REQUIRED:
            pytest.fail(message)
        pytest.skip(message)
    cancel_after.append(9704)
    job, job_file, out = standin_job(tmp_path, "node-down-retry", pr=9704, gpus=1)
    run = Submitted(job, job_file, out, retry=True, pending_timeout_s=RETRY_PENDING_S)
    run.slurm_id("RUNNING")
    try:
        subprocess.run(["scontrol", "update", f"nodename={cluster}", "state=down",
                        "reason=recipe-bot failure-class test"], check=True)
        result = run.join(RETRY_PENDING_S + 60)
    finally:
        _resume(cluster)
    first = _first_attempt(out)
    assert first.slurm.state == "NODE_FAIL"
    assert (first.failure.kind, first.failure.rule) == ("infrastructure", "slurm-node-failure")
    assert any("failed or was set down" in str(line) for line in first.failure.evidence)
    _retried_once_without(result, out, cluster)
