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


def test_more_jobs_than_one_matrix_holds_is_refused_not_truncated(tmp_path):
    with pytest.raises(PlanTooLarge, match=r"257 jobs.*narrow the command"):
        actions_outputs(plan_with(MAX_MATRIX_JOBS + 1, canary=False), str(tmp_path / "jobs"))
    assert not (tmp_path / "jobs").exists()  # nothing half-written
