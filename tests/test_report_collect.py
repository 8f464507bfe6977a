"""Collecting results: every planned job appears once, whatever came back (or did not)."""
import json

import pytest

from bot.report import collect
from tests import synthetic
from bot.core.results import JobResult


def plan_and_results():
    first = synthetic.sweep_plan("tiny-cpu", concurrencies=(1, 2), job_id="job-a")
    second = synthetic.sweep_plan("tiny-cpu-long", concurrencies=(4,), job_id="job-b")
    return [first, second], [synthetic.run_sweep(first)]


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_a_planned_job_without_a_result_is_lost_not_dropped(tmp_path):
    plan, results = plan_and_results()
    synthetic.write_results(tmp_path, results)
    collection = collect.collect(tmp_path, plan, synthetic.HEAD_SHA)
    statuses = {job.result.job_id: job.result.status for job in collection.jobs}
    assert statuses == {"job-a": "passed", "job-b": "lost"}
    lost = collection.by_status("lost")[0]
    assert lost.source is None and lost.plan is plan[1] and lost.attempts == 0
    assert "no result.json came back" in lost.result.reason


def test_results_nobody_planned_are_kept(tmp_path):
    plan, results = plan_and_results()
    stray = synthetic.run_sweep(synthetic.sweep_plan("other", job_id="job-z"))
    synthetic.write_results(tmp_path, [*results, stray])
    ids = [job.result.job_id for job in collect.collect(tmp_path, plan).jobs]
    assert ids == ["job-a", "job-b", "job-z"]


def test_without_a_plan_every_result_is_collected(tmp_path):
    _, results = plan_and_results()
    synthetic.write_results(tmp_path / "deep" / "er", results)
    collection = collect.collect(tmp_path)
    assert [job.result.job_id for job in collection.jobs] == ["job-a"]
    assert not collection.plan_given


def test_the_latest_attempt_of_a_rerun_counts(tmp_path):
    plan, _ = plan_and_results()
    failed = synthetic.run_sweep(plan[0], failed_points={"tp1-c1": "client crashed"},
                                 finished_at="2025-11-30T05:00:00Z")
    rerun = synthetic.run_sweep(plan[0], finished_at="2025-11-30T06:00:00Z")
    synthetic.write_results(tmp_path, [rerun, failed])  # the rerun's folder sorts first
    job = collect.collect(tmp_path, plan[:1]).jobs[0]
    assert job.result.status == "passed" and job.attempts == 2


@pytest.mark.parametrize("text, expected", [
    ("{not json", "is not a valid result"),
    (json.dumps({"job_id": "job-a", "kind": "sweep"}), "field recipe: Field required"),
    (json.dumps({"job_id": "job-a", "kind": "sweep", "recipe": "r", "recipe_fingerprint": "f",
                 "runner_label": "x", "status": "great"}), "field status"),
    (json.dumps([1, 2]), "is not a valid result"),
], ids=["not-json", "missing-field", "unknown-status", "not-an-object"])
def test_an_unreadable_result_fails_its_job_and_names_the_file(tmp_path, text, expected):
    plan, _ = plan_and_results()
    write(tmp_path / "artifact-a" / "result.json", text)
    collection = collect.collect(tmp_path, plan[:1])
    job = collection.jobs[-1]
    assert job.result.status == "failed" and job.problem == "invalid result.json"
    assert "artifact-a/result.json" in job.result.reason and expected in job.result.reason


def test_a_result_for_another_commit_fails_and_shows_no_numbers(tmp_path):
    plan, _ = plan_and_results()
    stale = synthetic.run_sweep(plan[0], sha="0" * 40)
    synthetic.write_results(tmp_path, [stale])
    job = collect.collect(tmp_path, plan[:1], synthetic.HEAD_SHA).jobs[0]
    assert job.result.status == "failed" and job.problem == "stale result"
    assert job.result.cases == []
    assert "000000000000" in job.result.reason and synthetic.HEAD_SHA[:12] in job.result.reason


def test_a_missing_results_directory_is_one_clear_error(tmp_path):
    with pytest.raises(collect.InputError, match="nowhere: the results directory does not exist"):
        collect.collect(tmp_path / "nowhere")


@pytest.mark.parametrize("layout", ["object-with-jobs", "list", "single-job", "directory"])
def test_plans_load_from_every_accepted_layout(tmp_path, layout):
    plan, _ = plan_and_results()
    dumped = [job.model_dump(mode="json") for job in plan]
    if layout == "object-with-jobs":
        write(tmp_path / "plan.json", json.dumps({"jobs": dumped}))
    elif layout == "list":
        write(tmp_path / "plan.json", json.dumps(dumped))
    elif layout == "single-job":
        write(tmp_path / "plan.json", json.dumps(dumped[0]))
        plan = plan[:1]
    else:
        for job in dumped:
            write(tmp_path / "plan.json" / f"{job['job_id']}.json", json.dumps(job))
    assert collect.load_plan(tmp_path / "plan.json") == plan


@pytest.mark.parametrize("content, expected", [
    ("{oops", "not a readable JSON plan"),
    (json.dumps({"jobs": [{"job_id": "x"}]}), "job 0 is not a recipe-bot Job: field kind"),
    (json.dumps({"job_id": "x", "kind": "sweep", "recipe": "r", "recipe_fingerprint": "f",
                 "runner_label": "l", "cases": [], "colour": "red"}), "field cases"),
], ids=["not-json", "missing-field", "bad-field"])
def test_a_bad_plan_is_one_error_naming_the_file_and_field(tmp_path, content, expected):
    write(tmp_path / "plan.json", content)
    with pytest.raises(collect.InputError) as error:
        collect.load_plan(tmp_path / "plan.json")
    assert str(error.value).startswith(str(tmp_path / "plan.json"))
    assert expected in str(error.value)


def test_a_job_planned_twice_differently_is_refused(tmp_path):
    plan, _ = plan_and_results()
    other = plan[0].model_copy(update={"gpus": 8})
    write(tmp_path / "plan.json", json.dumps([plan[0].model_dump(mode="json"),
                                              other.model_dump(mode="json")]))
    with pytest.raises(collect.InputError, match="'job-a' is planned twice, differently"):
        collect.load_plan(tmp_path / "plan.json")


def test_a_plan_folder_with_the_plan_and_its_job_files_reads_each_job_once(tmp_path):
    plan, _ = plan_and_results()
    (tmp_path / "plan").mkdir()
    synthetic.write_plan(tmp_path / "plan" / "plan.json", plan)
    for job in plan:
        write(tmp_path / "plan" / "jobs" / f"{job.job_id}.json", job.model_dump_json())
    assert collect.load_plan(tmp_path / "plan") == plan


def test_lost_result_round_trips_through_the_result_schema():
    plan, _ = plan_and_results()
    lost = collect.lost_result(plan[1])
    assert JobResult.model_validate_json(lost.model_dump_json()) == lost


@pytest.mark.parametrize("given, planned, expected", [
    ("c" * 40, True, "c" * 40),
    (None, True, synthetic.HEAD_SHA),
    (None, False, synthetic.HEAD_SHA),
], ids=["explicit", "from-the-plan", "from-most-results"])
def test_the_head_sha_is_given_else_planned_else_what_most_results_name(
        tmp_path, given, planned, expected):
    plan, results = plan_and_results()
    odd = synthetic.run_sweep(synthetic.sweep_plan("x", job_id="job-x"), sha="d" * 40)
    synthetic.write_results(tmp_path, [*results, results[0].model_copy(
        update={"job_id": "job-c"}), odd])
    collection = collect.collect(tmp_path, plan if planned else None, given)
    assert collection.head_sha == expected
    stale = [job.result.job_id for job in collection.jobs if job.problem == "stale result"]
    assert "job-x" in stale
