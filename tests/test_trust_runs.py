"""Only runs the bot started and only the bot's own check runs count: the gate, /reuse, the merge queue,
/status, /cancel, the cooldown and the sign-off never move on a run or a check a writer could make."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from bot.core import markers
from tests import synthetic
from bot.cli import main  # the edge that shows a refusal in both languages
from bot.report.cli import report_cmd
from github_sandbox.harness import make_seed
from handle_helpers import BOT, PULLS, Harness, bilingual
from test_checklist_sandbox import hc, signoff  # noqa: F401  (hc is a fixture)
from test_checklist_sandbox import latest_check as signoff_check
from test_gate import pr_world  # noqa: F401  (a fixture: the sample PR with the shipped gpu.yml)
from test_gate_events import CHECK, MAIN, recipe

ACTIONS = "github-actions[bot]"  # any workflow's GITHUB_TOKEN posts check runs as this App


# -- the gate at report time (recipe-bot report --gate against the sandbox) ----------------------------------

def _artifacts(plan_jobs, results) -> list[dict]:
    plan = {"jobs": [job.model_dump(mode="json") for job in plan_jobs]}
    return [{"name": "plan", "files": {"plan.json": json.dumps(plan)}}] + [
        {"name": f"result-{r.job_id}", "files": {f"{r.job_id}/result.json": r.model_dump_json()}}
        for r in results]


def _inputs(head: str, command: str = "/sweep", key: str = "1") -> dict[str, str]:
    return {"pr": "7", "sha": head, "command": command, "requester": "carol", "comment_id": key}


def _gate_report(sb, tmp_path, head, plan, results, required, run_id, name, *extra: str):
    folder = tmp_path / name
    synthetic.write_results(folder / "results", results)
    synthetic.write_plan(folder / "plan.json", plan)
    synthetic.write_plan(folder / "required.json", required)
    result = CliRunner().invoke(report_cmd, [
        "--results", str(folder / "results"), "--jobs", str(folder / "plan.json"), "--sha", head, "--pr", "7",
        "--gate", "--required", str(folder / "required.json"), "--post", "--bot-login", BOT,
        "--out", str(folder / "out"), *extra], env={**sb.env(), "GITHUB_RUN_ID": str(run_id)})
    assert result.exit_code == 0, result.output
    return json.loads((folder / "out" / "summary.json").read_text(encoding="utf-8"))


def _gate_checks(sb, sha: str) -> list[dict]:
    return sorted((c for c in sb.state()["check_runs"] if c["head_sha"] == sha and c["name"] == CHECK),
                  key=lambda c: c["id"])


def test_a_gpu_run_a_writer_dispatched_from_their_branch_never_counts_for_the_gate(pr_world, tmp_path):
    sb, head = pr_world
    full = synthetic.sweep_plan("tiny-cpu", concurrencies=(1, 64), sha=head, command="/sweep")
    failing = sb.add_run("gpu.yml", inputs=_inputs(head), conclusion="failure", artifacts=_artifacts(
        [full], [synthetic.run_sweep(full, failed_points={"tp1-c64": "server crashed"})]))
    # carol (write) dispatches gpu.yml from her own branch with the bot's title and "uploads" a passing sweep
    sb.request("POST", "/repos/acme/bench/actions/workflows/gpu.yml/dispatches",
               {"ref": "feature", "inputs": _inputs(head, key="2")}, user="carol")
    forged = max((r for r in sb.state()["workflow_runs"] if r["actor"] == "carol"), key=lambda r: r["id"])
    assert markers.parse_run_title(forged["display_title"]).sha == head  # a title like the bot's own
    sb.set_run(forged["id"], conclusion="success", artifacts=_artifacts([full], [synthetic.run_sweep(full)]))

    narrow = synthetic.sweep_plan("tiny-cpu", concurrencies=(1,), sha=head, command="/sweep --conc 1")
    summary = _gate_report(sb, tmp_path, head, [narrow], [synthetic.run_sweep(narrow)], [full],
                           forged["id"] + 100, "narrow")
    assert summary["gate"]["conclusion"] == "failure"
    assert [(f["item"], f["run_id"]) for f in summary["gate"]["failing"]] == [("tp1-c64", failing["id"])]
    assert forged["id"] not in summary["gate"]["runs"]
    assert _gate_checks(sb, head)[-1]["conclusion"] == "failure"


def test_a_narrow_run_reporting_while_a_failing_run_is_still_going_keeps_its_failure(pr_world, tmp_path):
    sb, head = pr_world
    full = synthetic.sweep_plan("tiny-cpu", concurrencies=(1, 64), sha=head, command="/sweep", job_id="sweep-a")
    later = synthetic.sweep_plan("tiny-cpu", concurrencies=(8,), sha=head, command="/sweep", job_id="sweep-b")
    # The run's first job is done and uploaded (one point failed); its second job has not reported yet.
    going = sb.add_run("gpu.yml", inputs=_inputs(head), status="in_progress", artifacts=_artifacts(
        [full, later], [synthetic.run_sweep(full, failed_points={"tp1-c64": "server crashed"})]))
    narrow = synthetic.sweep_plan("tiny-cpu", concurrencies=(1,), sha=head, command="/sweep --conc 1")
    summary = _gate_report(sb, tmp_path, head, [narrow], [synthetic.run_sweep(narrow)], [full],
                           going["id"] + 100, "narrow")
    assert summary["gate"]["conclusion"] == "failure"
    # its known failure counts; the job it has not reported yet is not lost (not a failure)
    assert [(f["item"], f["run_id"]) for f in summary["gate"]["failing"]] == [("tp1-c64", going["id"])]
    check = _gate_checks(sb, head)[-1]
    assert (check["status"], check["conclusion"]) == ("completed", "failure")


def test_a_report_without_gate_never_posts_under_the_gate_check_name(pr_world, tmp_path):
    sb, head = pr_world
    sb.request("POST", "/repos/acme/bench/check-runs", {
        "name": CHECK, "head_sha": head, "status": "completed", "conclusion": "failure",
        "output": {"title": "gate", "summary": "a required point failed"}}, user=BOT)
    job = synthetic.sweep_plan("tiny-cpu", concurrencies=(1,), sha=head, command="/sweep --conc 1")
    synthetic.write_results(tmp_path / "results", [synthetic.run_sweep(job)])
    synthetic.write_plan(tmp_path / "plan.json", [job])
    args = ["--results", str(tmp_path / "results"), "--jobs", str(tmp_path / "plan.json"), "--sha", head,
            "--pr", "7", "--post", "--bot-login", BOT]
    posted = CliRunner().invoke(report_cmd, [*args, "--out", str(tmp_path / "out")], env=sb.env())
    assert posted.exit_code == 0, posted.output
    # The run's own passing verdict is its own check; the commit's gate stays failing.
    [gate_check] = _gate_checks(sb, head)
    assert gate_check["conclusion"] == "failure"
    [own] = [c for c in sb.state()["check_runs"] if c["head_sha"] == head and c["name"] == "recipe-bot / report"]
    assert own["conclusion"] == "success"

    refused = CliRunner().invoke(main, ["report", *args, "--out", str(tmp_path / "again"), "--check-name", CHECK],
                                 env=sb.env())
    assert refused.exit_code == 1
    assert "only `report --gate` posts it" in refused.output and "合并门禁" in refused.output
    assert "Traceback" not in refused.output
    assert len(_gate_checks(sb, head)) == 1 and _gate_checks(sb, head)[0]["conclusion"] == "failure"


# -- the control plane (recipe-bot handle against the sandbox) ----------------------------------------------

@pytest.fixture
def world(sandbox, tmp_path):
    seed = make_seed(tmp_path / "sandbox", MAIN, {"recipes/tiny-cpu.yaml": recipe("[1, 4, 8]")},
                     {"pulls": PULLS, "issues": [{"number": 20, "author": "bob", "title": "A bug"}]})
    return Harness(sandbox(seed), tmp_path)


def _foreign_check(h: Harness, sha: str, name: str = CHECK, **fields) -> None:
    """A check run of the bot's name posted by another App (here any workflow's GITHUB_TOKEN)."""
    h.sb.request("POST", "/repos/acme/bench/check-runs", {
        "name": name, "head_sha": sha, "output": {"title": "looks green", "summary": "ok"}, **fields}, user=ACTIONS)


def test_a_foreign_check_in_progress_does_not_keep_the_bot_from_posting_its_own_gate(world):
    h = world
    head = h.head(7)
    _foreign_check(h, head, status="in_progress")
    h.handle("pull_request", "opened", pull=7)
    own = [c for c in h.sb.state()["check_runs"] if c["head_sha"] == head and c["name"] == CHECK and c["app"] == BOT]
    assert len(own) == 1 and own[0]["status"] == "in_progress" and "tiny-cpu" in own[0]["summary"]
    foreign = [c for c in h.sb.state()["check_runs"] if c["app"] == ACTIONS]
    assert [(c["status"], c["title"]) for c in foreign] == [("in_progress", "looks green")]  # left alone


def test_reuse_refuses_a_run_whose_passing_gate_check_another_app_posted(world):
    h = world
    measured_sha = h.head(7)
    run = h.sb.add_run("gpu.yml", inputs=_inputs(measured_sha), conclusion="success")
    h.sb.request("POST", "/repos/acme/bench/check-runs", {
        "name": CHECK, "head_sha": measured_sha, "status": "completed", "conclusion": "failure",
        "output": {"title": "gate", "summary": "gate"}}, user=BOT)
    _foreign_check(h, measured_sha, status="completed", conclusion="success")
    old = h.head(7)
    head = h.sb.push("feature", {"README.md": "# only the docs changed\n"}, author="carol")["after"]
    h.handle("pull_request", "synchronize", pull=7, before=old, after=head, sender="carol")

    h.on_comment(7, "alice", f"/reuse {run['id']}")
    english, chinese = bilingual(h.bot_comments(7)[-1]["body"])
    assert "recipe-bot:reuse" not in h.bot_comments(7)[-1]["body"]
    assert f"`{measured_sha}`, which run [{run['id']}]" in english and "is failure; only a passed gate" in english
    assert "状态为 failure" in chinese
    own = [c for c in _gate_checks(h.sb, head) if c["app"] == BOT]
    assert [c["conclusion"] for c in own] == [None]  # still in progress: nothing was reused


def test_the_signoff_ignores_a_benchmarks_check_another_app_posted(hc):  # noqa: F811
    h = hc()
    head = h.head(7)
    _foreign_check(h, head, status="completed", conclusion="success")
    h.handle("issue_comment", "created", comment_id=h.comment(7, "alice", signoff("alice")))
    check = signoff_check(h, head)
    assert check["conclusion"] == "failure"
    assert "no `recipe-bot / benchmarks` result" in check["summary"]


def test_status_cancel_and_the_cooldown_see_only_the_runs_the_bot_started(sandbox, tmp_path):
    from handle_helpers import seed

    h = Harness(sandbox(seed(tmp_path, config=f"bot_login: {BOT}\ncooldown_seconds: 3600\n")), tmp_path)
    head = h.head(7)
    # carol dispatches gpu.yml herself: a run titled as if the bot had started it for alice's request
    h.sb.request("POST", "/repos/acme/bench/actions/workflows/gpu.yml/dispatches", {"ref": "main", "inputs": {
        "pr": "7", "sha": head, "command": "/sweep", "requester": "alice", "comment_id": "999"}}, user="carol")
    [forged] = h.dispatches()
    h.on_comment(7, "alice", "/status")
    assert f"/actions/runs/{forged['id']}" not in h.bot_comments(7)[-1]["body"]
    h.on_comment(7, "alice", "/cancel")
    assert next(r for r in h.sb.state()["workflow_runs"] if r["id"] == forged["id"])["status"] == "queued"
    h.on_comment(7, "alice", "/sweep")  # the forged run is no run of alice's: no cooldown
    assert [r["actor"] for r in h.dispatches()] == ["carol", BOT]
