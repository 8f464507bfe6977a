"""The plan job's GitHub outputs, from the typed plan: a canary apart, one matrix per label, never more than GitHub runs."""
import json

import pytest
from click.testing import CliRunner

from bot.core.jobs import SlurmSpec
from bot.plan.model import MAX_MATRIX_JOBS, Matrix, MatrixEntry, Plan, PlanFilters
from bot.plan.outputs import PlanTooLarge, actions_outputs
from tests import synthetic


def entry(job_id: str, label: str = "h200", **job_fields) -> MatrixEntry:
    job = synthetic.sweep_plan("r", concurrencies=(1,), runner_label=label, job_id=job_id)
    return MatrixEntry(job_id=job_id, recipe="r", runner_label=label, job=job.model_copy(update=job_fields))


def plan_of(matrices: list[Matrix], canary: MatrixEntry | None = None, **filters) -> Plan:
    jobs = ([canary.job] if canary else []) + [e.job for m in matrices for e in m.include]
    return Plan(base=None, head="h", filters=PlanFilters(**filters), jobs=jobs, canary=canary, matrices=matrices)


def plan_with(n_jobs: int, *, canary: bool = True, size: int = 256) -> Plan:
    items = [entry(f"j{i}") for i in range(n_jobs)]
    matrices = [Matrix(runner_label="h200", index=i // size, fail_fast=False, include=items[i:i + size])
                for i in range(0, n_jobs, size)]
    return plan_of(matrices, items[0] if canary else None)


def test_the_canary_is_kept_out_of_the_matrix():
    outputs = actions_outputs(plan_with(5)).outputs
    assert [e["job_id"] for e in json.loads(outputs["matrix"])["include"]] == ["j1", "j2", "j3", "j4"]
    assert json.loads(outputs["canary"])["include"] == [{"job_id": "j0", "runner_label": "h200", "recipe": "r"}]
    assert (outputs["jobs"], outputs["has_canary"], outputs["fail_fast"]) == ("5", "true", "false")


def test_exactly_the_github_limit_fits():
    outputs = actions_outputs(plan_with(MAX_MATRIX_JOBS + 1)).outputs
    assert len(json.loads(outputs["matrix"])["include"]) == MAX_MATRIX_JOBS


def test_a_label_with_more_than_256_jobs_gets_a_second_matrix():
    labels = json.loads(actions_outputs(plan_with(MAX_MATRIX_JOBS + 1, canary=False)).outputs["labels"])["include"]
    assert [(m["runner_label"], m["index"], len(json.loads(m["include"])["include"])) for m in labels] == [
        ("h200", 0, MAX_MATRIX_JOBS), ("h200", 1, 1)]


def test_more_jobs_than_one_matrix_holds_is_refused_not_truncated():
    with pytest.raises(PlanTooLarge, match=r"more than the 256 jobs.*narrow the command"):
        actions_outputs(plan_with(MAX_MATRIX_JOBS + 1, canary=False, size=MAX_MATRIX_JOBS + 1))


def test_a_label_whose_jobs_name_a_slurm_cluster_runs_with_the_slurm_backend():
    slurm = entry("b-1", "b200", slurm=SlurmSpec(partition="gpu-2", time_limit="08:00:00"))
    plan = plan_of([Matrix(runner_label="b200", index=0, fail_fast=False, include=[slurm]),
                    Matrix(runner_label="cpu", index=0, fail_fast=True, include=[entry("c-1", "cpu")])])
    outputs = actions_outputs(plan).outputs
    labels = json.loads(outputs["labels"])["include"]
    assert [(m["runner_label"], m["backend"], m["fail_fast"]) for m in labels] == [("b200", "slurm", False),
                                                                                   ("cpu", "local", True)]
    assert outputs["fail_fast"] == "true"


def test_the_plan_command_writes_every_job_file_and_appends_the_outputs(tmp_path):
    from bot.cli import main

    root = __import__("pathlib").Path(__file__).resolve().parents[1]
    github_output = tmp_path / "github-output"
    github_output.write_text("earlier=kept\n", encoding="utf-8")
    done = CliRunner().invoke(main, ["plan", "--repo", str(root), "--command", "/sweep tiny-* --scope lowest",
                                     "--format", "json", "--jobs-dir", str(tmp_path / "jobs"),
                                     "--actions-outputs", str(github_output)], prog_name="recipe-bot")
    assert done.exit_code == 0, done.output
    lines = github_output.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "earlier=kept" and [line.split("=", 1)[0] for line in lines[1:]] == [
        "canary", "has_canary", "matrix", "labels", "jobs", "fail_fast"]
    outputs = dict(line.split("=", 1) for line in lines[1:])
    listed = json.loads(outputs["matrix"])["include"] + json.loads(outputs["canary"])["include"]
    assert listed and sorted(p.stem for p in (tmp_path / "jobs").iterdir()) == sorted(e["job_id"] for e in listed)


def test_actions_outputs_without_a_jobs_folder_is_refused_in_both_languages(tmp_path):
    from bot.cli import main

    done = CliRunner().invoke(main, ["plan", "--actions-outputs", str(tmp_path / "out")], prog_name="recipe-bot")
    assert done.exit_code == 2 and "needs --jobs-dir" in done.output and "需要 --jobs-dir" in done.output
