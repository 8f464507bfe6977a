"""The two workflows: linted clean, least privilege, no PR text in shell, and in step with the bot."""
import json
import pathlib
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from bot.control import dispatch_once
from bot.core import markers

ROOT = pathlib.Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
BIN = pathlib.Path(sys.executable).parent


def load(name):
    doc = yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML 1.1 reads a bare `on` as True
    return doc


def steps(doc):
    return [(job_name, step) for job_name, job in doc["jobs"].items() for step in job.get("steps", [])]


def tool(name):
    path = BIN / name
    if not path.exists():
        path = shutil.which(name)
    assert path, f"{name} is missing: pip install -e '.[test]' installs it"
    return str(path)


def test_actionlint_reports_nothing():
    result = subprocess.run([tool("actionlint"), "-no-color", *sorted(map(str, WORKFLOWS.glob("*.yml")))],
                            capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0 and result.stdout == "", result.stdout + result.stderr


def test_zizmor_reports_nothing():
    result = subprocess.run([tool("zizmor"), "--offline", "--no-progress", "--format", "json", str(WORKFLOWS)],
                            capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout) == []


@pytest.mark.parametrize("name", ["recipe-bot.yml", "gpu.yml"])
def test_no_expression_is_interpolated_into_a_shell_line(name):
    for job_name, step in steps(load(name)):
        assert "${{" not in step.get("run", ""), f"{name}:{job_name}: pass values through env:, not ${{{{ }}}}"


@pytest.mark.parametrize("name", ["recipe-bot.yml", "gpu.yml"])
def test_every_job_has_explicit_least_privilege(name):
    doc = load(name)
    assert doc["permissions"] == {}
    for job_name, job in doc["jobs"].items():
        assert isinstance(job.get("permissions"), dict), f"{name}:{job_name} needs its own permissions:"
        assert "write-all" not in json.dumps(job["permissions"])


@pytest.mark.parametrize("name", ["recipe-bot.yml", "gpu.yml"])
def test_actions_are_pinned_by_full_commit_sha(name):
    for job_name, step in steps(load(name)):
        if "uses" in step:
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", step["uses"]), step["uses"]


def test_control_plane_checks_out_only_the_default_branch():
    text = (WORKFLOWS / "recipe-bot.yml").read_text(encoding="utf-8")
    checkouts = [s for _, s in steps(load("recipe-bot.yml")) if s.get("uses", "").startswith("actions/checkout@")]
    assert checkouts, "the handler installs recipe-bot from a checkout"
    for step in checkouts:
        assert step["with"]["ref"] == "${{ github.event.repository.default_branch }}"
        assert step["with"]["persist-credentials"] is False
    for untrusted in ("head.ref", "head.sha", "refs/pull", "comment.body", "review.body", "pull_request.title"):
        assert untrusted not in text


def test_control_plane_listens_to_the_events_the_bot_parses():
    from bot.core.events import COMMENT_ACTIONS, PULL_ACTIONS, REVIEW_ACTIONS
    on = load("recipe-bot.yml")["on"]
    assert set(on["issue_comment"]["types"]) == COMMENT_ACTIONS
    assert set(on["pull_request_review"]["types"]) == REVIEW_ACTIONS
    assert set(on["pull_request_target"]["types"]) <= PULL_ACTIONS
    assert {"synchronize", "labeled", "closed", "converted_to_draft"} <= set(on["pull_request_target"]["types"])


def test_control_plane_token_can_do_what_the_bot_does_and_no_more():
    [job] = load("recipe-bot.yml")["jobs"].values()
    assert job["permissions"] == {"contents": "read", "issues": "write", "pull-requests": "write",
                                  "actions": "write", "checks": "write"}  # checks: the sign-off and the merge gate


def test_gpu_workflow_inputs_are_what_dispatch_sends():
    inputs = load("gpu.yml")["on"]["workflow_dispatch"]["inputs"]
    planner = markers.PlannerApproval("a" * 40, "dave", 200.0, ("utils/process_changelog.py",))
    sent = dispatch_once.dispatch_inputs(pr=7, sha="a" * 40, command="/sweep", requester="alice", key="101",
                                    gpu_hours=2.5, runner_labels=("cluster:new",), planner=planner)
    assert set(inputs) == set(sent)
    assert len(inputs) <= 10  # within the 10 inputs GitHub has long allowed a workflow_dispatch
    assert sent["planner_sha"] == "a" * 40 and sent["planner_max_gpu_hours"] == "200"
    assert all(spec["type"] == "string" for spec in inputs.values())


def test_the_plan_step_passes_the_planner_approval_on_the_pr_path_only():
    [plan] = [step for job, step in steps(load("gpu.yml")) if job == "plan" and step.get("id") == "plan"]
    assert plan["env"]["PLANNER_SHA"] == "${{ inputs.planner_sha }}"
    assert plan["env"]["PLANNER_MAX_GPU_HOURS"] == "${{ inputs.planner_max_gpu_hours }}"
    baseline, pr_path = plan["run"].split("\nelse\n", 1)
    approval = '--approved-planner "$PLANNER_SHA" --planner-max-gpu-hours "$PLANNER_MAX_GPU_HOURS"'
    assert "PLANNER" not in baseline  # the default branch plans itself with its own planner
    first_plan = pr_path.split("ci required-commands", 1)[0]  # not the merge gate's required plans
    assert approval in " ".join(first_plan.replace("\\\n", " ").split())


def test_gpu_run_name_renders_the_title_the_bot_parses():
    run_name = load("gpu.yml")["run-name"]
    values = {"pr": "7", "sha": "a" * 40, "requester": "alice", "command": "/sweep llama* --conc 4,8",
              "comment_id": "label-gpu", "gpu_hours": "2.50"}
    rendered = re.sub(r"\$\{\{\s*inputs\.(\w+)\s*\}\}", lambda m: values[m.group(1)], run_name)
    assert rendered == markers.run_title(7, "a" * 40, "alice", "/sweep llama* --conc 4,8", "label-gpu", "2.50")
    title = markers.parse_run_title(rendered)
    assert (title.pr, title.sha, title.requester, title.command, title.key, title.gpu_hours) == \
        (7, "a" * 40, "alice", "/sweep llama* --conc 4,8", "label-gpu", 2.5)


def test_plan_job_has_no_secrets_and_a_read_only_token():
    doc = load("gpu.yml")
    plan = doc["jobs"]["plan"]
    assert plan["permissions"] == {"contents": "read"}
    assert "secrets." not in json.dumps(plan) and "github.token" not in json.dumps(plan)
    for job_name in ("plan", "canary", "run"):
        assert "secrets." not in json.dumps(doc["jobs"][job_name])
        assert set(doc["jobs"][job_name]["permissions"]) == {"contents"}


def test_gpu_jobs_check_out_the_authorized_sha_never_a_branch():
    for job_name, step in steps(load("gpu.yml")):
        if step.get("uses", "").startswith("actions/checkout@") and "ref" in step.get("with", {}):
            # A PR run checks out the authorized SHA; baseline mode (push, schedule) its own commit.
            assert step["with"]["ref"] == "${{ inputs.sha || github.sha }}", f"{job_name}: check out by SHA"


def test_the_planners_json_for_a_command_becomes_runnable_job_files(tmp_path):
    """The plan step of gpu.yml, on this repository's own recipes: plan --command with the matrix outputs."""
    github_output = tmp_path / "github-output"
    planned = subprocess.run(
        [sys.executable, "-c", "from bot.cli import main; main(prog_name='recipe-bot')", "plan", "--repo", str(ROOT),
         "--command", "/sweep tiny-* --scope lowest", "--format", "json", "--jobs-dir", str(tmp_path / "jobs"),
         "--actions-outputs", str(github_output)],
        capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert planned.returncode == 0, planned.stderr
    outputs = dict(line.split("=", 1) for line in github_output.read_text(encoding="utf-8").splitlines())
    include = json.loads(outputs["matrix"])["include"] + json.loads(outputs["canary"])["include"]
    assert include and all(entry["recipe"].startswith("tiny-") for entry in include)
    from bot.core.jobs import Job
    for entry in include:
        job = Job.model_validate_json((tmp_path / "jobs" / f"{entry['job_id']}.json").read_text(encoding="utf-8"))
        assert job.runner_label == entry["runner_label"]


def test_the_control_plane_serialises_the_events_of_one_request_without_cancelling():
    doc = load("recipe-bot.yml")
    concurrency = doc["concurrency"]
    assert concurrency["cancel-in-progress"] is False  # a cancelled handler would drop a command
    group = concurrency["group"]
    # per PR, and within it per request: the comment (created and edited), the review, the push, the label
    for part in ("github.event.issue.number", "github.event.pull_request.number", "github.event.comment.id",
                 "github.event.review.id", "github.event.after", "github.event.label.name"):
        assert part in group, part


def _render_group(template, event):
    """A concurrency group as Actions renders it: each `${{ a || b }}` is its first truthy property
    (GitHub's falsy values: null, false, 0, ''), a missing one renders empty."""
    def value(path):
        found = {"github": {"event": event}}
        for part in path.strip().split("."):
            found = found.get(part) if isinstance(found, dict) else None
        return found

    def expression(match):
        for path in match.group(1).split("||"):
            assert re.fullmatch(r"\s*[\w.]+\s*", path), f"not a property path: {path!r}"
            if value(path) not in (None, False, 0, ""):
                return str(value(path))
        return ""

    return re.sub(r"\$\{\{(.*?)\}\}", expression, template)


def test_every_merge_group_gets_its_own_concurrency_group_so_no_gate_event_is_dropped():
    """GitHub keeps one running and one pending run per group and cancels older pending ones: three
    merge-queue events in one group would leave a merge group without its gate check."""
    group = load("recipe-bot.yml")["concurrency"]["group"]
    merge_groups = [{"action": "checks_requested",
                     "merge_group": {"head_sha": sha * 40, "base_sha": "0" * 40, "base_ref": "refs/heads/main",
                                     "head_ref": f"refs/heads/gh-readonly-queue/main/pr-7-{sha * 40}"}}
                    for sha in "abc"]
    rendered = [_render_group(group, event) for event in merge_groups]
    assert len(set(rendered)) == 3, rendered
    # PR events keep their groups as before: per PR and per request (two comments, one push)
    pr_events = [{"action": "created", "issue": {"number": 7}, "comment": {"id": 101}},
                 {"action": "created", "issue": {"number": 7}, "comment": {"id": 102}},
                 {"action": "synchronize", "pull_request": {"number": 7}, "after": "d" * 40}]
    assert [_render_group(group, event) for event in pr_events] == [
        "recipe-bot-pr-7-101-", "recipe-bot-pr-7-102-", f"recipe-bot-pr-7-{'d' * 40}-"]
