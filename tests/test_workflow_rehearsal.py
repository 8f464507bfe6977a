"""The shipped workflows run under act against the sandbox, offline (tests/rehearsal, docs/workflows.md).

Each case is one `scripts/rehearse-workflows` case; the rehearsal itself asserts what the sandbox recorded
(dispatches, the plan's jobs, report comments, the gate check on the head SHA) and these tests read its verdict.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
ENGINE_FREE = ["nothing-touched", "plan-fails", "empty-plan", "matrix-job-fails", "ix-row"]
WITH_ENGINE = ["sweep", "cancelled"]


def _can_isolate() -> str | None:
    """Why this machine cannot run the rehearsal (it needs root for a loopback-only network namespace)."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return "unshare or ip is not installed (util-linux, iproute2)"
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, text=True)
    return None if probe.returncode == 0 else f"unshare -n: {probe.stderr.strip() or probe.returncode}"


def rehearse(tmp: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    why = _can_isolate()
    if why is not None:
        if os.environ.get("RECIPE_BOT_CI") == "1":
            pytest.fail(f"CI must rehearse the workflows in a network namespace: {why}")
        pytest.skip(f"the rehearsal needs a network namespace (root): {why}")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "tests")])}
    proc = subprocess.run([sys.executable, "-m", "rehearsal", *args, "--out", str(tmp / "out"),
                           "--work", str(tmp)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    results_file = tmp / "out" / "results.json"
    assert results_file.is_file(), f"the rehearsal did not finish (exit {proc.returncode}):\n{proc.stdout[-4000:]}" \
                                   f"\n{proc.stderr[-4000:]}"
    return proc, json.loads(results_file.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def engine_free(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The cases that need no CPU engine, rehearsed once for this module (one act per event, as GitHub)."""
    return rehearse(tmp_path_factory.mktemp("rehearsal"), *ENGINE_FREE)[1]


@pytest.fixture(scope="module")
def with_engine(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from bot.core.settings import load_settings
    from bot.engines import engine_dir
    from bot.engines.vllm import ENGINE as VLLM

    settings = load_settings()
    if VLLM.locate(ROOT, os.environ, settings) is None or not (engine_dir(ROOT, settings) / "tiny-model" / "config.json").is_file():
        if os.environ.get("RECIPE_BOT_CI") == "1":
            pytest.fail("CI rehearses the sweep on the CPU engine: scripts/setup-cpu-engine.sh did not install it")
        pytest.skip("the CPU engine is not installed (scripts/setup-cpu-engine.sh)")
    return rehearse(tmp_path_factory.mktemp("rehearsal-engine"), *WITH_ENGINE)[1]


def passed(results: dict[str, Any], name: str) -> dict[str, Any]:
    case = results[name]
    assert case["passed"], f"rehearsal case {name} failed:\n  " + "\n  ".join(case["problems"])
    return case["facts"]


@pytest.mark.engine
def test_a_sweep_comment_runs_dispatch_plan_matrix_and_report_to_a_passing_gate(with_engine):
    facts = passed(with_engine, "sweep")
    assert len(facts["dispatches"]) == 1 and facts["dispatches"][0]["command"].startswith("/sweep tiny-cpu")
    assert any(job.startswith("gpu.yml: ") and "/run tiny-cpu" in job for job in facts["jobs"])
    assert facts["report_comments"] == 1
    assert facts["gate"][-1]["conclusion"] == "success"


def test_a_pr_that_touches_nothing_passes_the_gate_without_a_gpu_run(engine_free):
    facts = passed(engine_free, "nothing-touched")
    assert facts["dispatches"] == [] and facts["report_comments"] == 0
    assert facts["gate"][-1]["conclusion"] == "success"
    assert not any(job.startswith("gpu.yml") for job in facts["jobs"])


def test_a_plan_that_fails_fails_the_gate_naming_the_line_and_runs_no_matrix(engine_free):
    facts = passed(engine_free, "plan-fails")
    assert facts["gate"][-1]["conclusion"] == "failure"
    assert not any("/run " in job or "canary" in job for job in facts["jobs"])


def test_an_empty_plan_runs_no_matrix_and_still_reports(engine_free):
    facts = passed(engine_free, "empty-plan")
    assert facts["jobs"].get("gpu.yml: gpu/report") == "success"


def test_a_failed_matrix_job_fails_the_run_keeps_its_result_and_never_passes_the_gate(engine_free):
    facts = passed(engine_free, "matrix-job-fails")
    assert "failure" in facts["fail_fast"]["ran"].values()
    assert all(g["conclusion"] != "success" for g in facts["gate"])
    # act 0.2.89 starts no job after a called workflow's failure (nektos/act#1793), GitHub runs the report:
    # the case names that gap rather than passing over it, and checks the report once act runs it.
    if "not_rehearsed" in facts:
        assert "nektos/act#1793" in facts["not_rehearsed"] and facts["report_comments"] == 0
    else:
        assert facts["report_comments"] == 1 and facts["gate"][-1]["conclusion"] == "failure"


def test_an_inferencex_row_runs_through_the_repositorys_own_template_and_is_reported(engine_free):
    # The fixture InferenceX repository's row: gpu.yml → gpu-run.yml (InferenceX's) → its benchmark template,
    # which uploads bmk_<RESULT_FILENAME>; the report job reads it back and posts the comment and the gate.
    facts = passed(engine_free, "ix-row")
    assert len(facts["dispatches"]) == 1 and facts["dispatches"][0]["command"] == "/sweep tinyq-bf16-cpu-vllm --conc 1"
    assert list(facts["rows"].values()) == ["success"]
    (bmk,) = facts["bmk"]
    assert bmk.startswith("bmk_tinyq_1k1k_bf16_vllm_tp1-") and "_conc1_" in bmk
    assert facts["limit"] == [500 * 60.0]  # the template's timeout-minutes, not gpu.yml's 360
    assert facts["report_comments"] == 1 and facts["report_lines"]
    assert facts["gate"] and facts["gate"][-1]["status"] == "completed"


@pytest.mark.engine
def test_a_cancelled_run_stops_and_reports_no_success(with_engine):
    facts = passed(with_engine, "cancelled")
    assert facts["report_comments"] == 0
    assert all(g["conclusion"] != "success" for g in facts["gate"])


def test_a_renamed_job_output_in_gpu_yml_fails_the_rehearsal_naming_the_job(tmp_path):
    # The deliberate mistake, on the rehearsal's copy of the default branch only: the plan job's output
    # `labels` renamed, so the `run` job's matrix reads an output that no longer exists.
    proc, results = rehearse(tmp_path, "empty-plan", "--replace", ".github/workflows/gpu.yml",
                             "      labels: ${{ steps.plan.outputs.labels }}",
                             "      runner_labels: ${{ steps.plan.outputs.labels }}")
    assert proc.returncode == 1
    case = results["empty-plan"]
    assert not case["passed"]
    problems = "\n".join(case["problems"])
    # named as the Actions page shows it: the called workflow's job and its failed step
    assert "step failed: run []/gpu-run/run › Run the job" in problems, problems
