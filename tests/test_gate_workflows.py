"""The workflows carry the merge gate: report artifacts, baseline mode, the gate's inputs, merge queues."""
from test_workflows import load, steps


def test_the_report_keeps_everything_its_comment_refers_to():
    [upload] = [step for job, step in steps(load("gpu.yml"))
                if job == "report" and step.get("uses", "").startswith("actions/upload-artifact@")]
    kept = upload["with"]["path"].split()
    for name in ("comment.md", "chart.png", "full-results.json"):
        assert f"report-out/{name}" in kept
    assert upload["if"] == "always()"


def test_baseline_mode_runs_on_the_default_branch_only():
    doc = load("gpu.yml")
    assert "push" in doc["on"] and "schedule" in doc["on"]
    guard = doc["jobs"]["plan"]["if"]
    assert guard == "github.event_name != 'push' || github.ref_name == github.event.repository.default_branch"
    plan = next(step for job, step in steps(doc) if job == "plan" and step.get("id") == "plan")
    assert plan["env"]["COMMAND"] == "${{ inputs.command || '/baseline' }}"


def test_pr_reports_post_the_gate_and_baseline_reports_post_nothing():
    report = next(step for job, step in steps(load("gpu.yml")) if job == "report" and step.get("name") == "Report")
    pr_branch, baseline_branch = report["run"].split("else", 1)[1], report["run"].split("else", 1)[0]
    assert "--gate --required plan/required" in pr_branch and "--post" in pr_branch
    assert "--post" not in baseline_branch and "--baseline-from-github" not in baseline_branch


def test_the_control_plane_answers_merge_queues():
    doc = load("recipe-bot.yml")
    assert doc["on"]["merge_group"] == {"types": ["checks_requested"]}
    assert {"opened", "synchronize", "reopened"} <= set(doc["on"]["pull_request_target"]["types"])


def test_a_failed_pr_plan_fails_the_gate_and_baseline_runs_do_not_post():
    job = load("gpu.yml")["jobs"]["plan-failed"]
    assert job["needs"] == "plan" and job["if"] == "failure() && inputs.pr != '' && inputs.pr != '0'"
    assert job["permissions"] == {"contents": "read", "checks": "write", "actions": "read"}
    assert "recipe-bot\" ci plan-failed" in job["steps"][-1]["run"]
