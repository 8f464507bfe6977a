"""The plan job's GitHub outputs: a canary apart, one matrix of the rest, never more than GitHub runs."""
import json

import pytest

from bot.control.dispatch import MAX_MATRIX_JOBS, PlanTooLarge, actions_outputs


def plan_with(n_jobs: int, *, canary: bool = True) -> dict:
    items = [{"job_id": f"j{i}", "runner_label": "h200", "recipe": "r",
              "job": {"job_id": f"j{i}", "recipe": "r"}} for i in range(n_jobs)]
    return {"canary": items[0] if canary else None,
            "matrices": [{"runner_label": "h200", "include": items[i:i + 256]} for i in range(0, n_jobs, 256)]}


def test_canary_is_kept_out_of_the_matrix_and_every_job_file_is_written(tmp_path):
    outputs = actions_outputs(plan_with(5), str(tmp_path))
    matrix = json.loads(outputs["matrix"])["include"]
    assert [e["job_id"] for e in matrix] == ["j1", "j2", "j3", "j4"]
    assert json.loads(outputs["canary"])["include"][0]["job_id"] == "j0"
    assert outputs["jobs"] == "5"
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"j{i}.json" for i in range(5)]


def test_exactly_the_github_limit_fits(tmp_path):
    outputs = actions_outputs(plan_with(MAX_MATRIX_JOBS + 1), str(tmp_path))
    assert len(json.loads(outputs["matrix"])["include"]) == MAX_MATRIX_JOBS


def test_a_label_with_more_than_256_jobs_gets_a_second_matrix(tmp_path):
    outputs = actions_outputs(plan_with(MAX_MATRIX_JOBS + 1, canary=False), str(tmp_path / "jobs"))
    labels = json.loads(outputs["labels"])["include"]
    assert [(m["runner_label"], len(json.loads(m["include"])["include"])) for m in labels] == [
        ("h200", MAX_MATRIX_JOBS), ("h200", 1)]


def test_more_jobs_than_one_matrix_holds_is_refused_not_truncated(tmp_path):
    plan = plan_with(MAX_MATRIX_JOBS + 1, canary=False)
    plan["matrices"] = [{"runner_label": "h200", "include": [i for m in plan["matrices"] for i in m["include"]]}]
    with pytest.raises(PlanTooLarge, match=r"more than the 256 jobs.*narrow the command"):
        actions_outputs(plan, str(tmp_path / "jobs"))
    assert not (tmp_path / "jobs").exists()  # nothing half-written


def test_a_label_whose_jobs_name_a_slurm_cluster_runs_with_the_slurm_backend(tmp_path):
    items = [{"job_id": "b-1", "runner_label": "b200", "recipe": "r",
              "job": {"job_id": "b-1", "slurm": {"partition": "gpu-2", "time_limit": "08:00:00"}}},
             {"job_id": "c-1", "runner_label": "cpu", "recipe": "t", "job": {"job_id": "c-1"}}]
    plan = {"matrices": [{"runner_label": "b200", "include": items[:1]}, {"runner_label": "cpu", "include": items[1:]}]}
    labels = json.loads(actions_outputs(plan, str(tmp_path))["labels"])["include"]
    assert [(m["runner_label"], m["backend"]) for m in labels] == [("b200", "slurm"), ("cpu", "local")]
