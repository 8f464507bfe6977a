"""A PR's GPU runs, found by their run title: /cancel, cancel on push, /status, /rerun, cooldown.

The GPU workflow's `run-name:` puts `pr-<N> <sha> by <login>: <command>` into each run's
display_title (the REST API does not return a run's inputs); the sandbox renders it the same way.
"""
import pytest

from bot.core import markers
from handle_helpers import BOT, Harness, bilingual, seed


def runs(h):
    return {r["id"]: r for r in h.dispatches()}


def sweep(h, pr=7, user="alice", body="/sweep"):
    h.on_comment(pr, user, body)
    return max(runs(h))


def test_dispatched_runs_carry_the_title_the_bot_matches(h):
    h.on_comment(7, "alice", "/sweep --scope full")
    run_id = max(runs(h))
    comment_id = max(c["id"] for c in h.sb.state()["comments"] if c["user"] == "alice")
    listed = h.sb.request("GET", "/repos/acme/bench/actions/workflows/gpu.yml/runs", user="alice")
    [run] = [r for r in listed["workflow_runs"] if r["id"] == run_id]
    title = markers.parse_run_title(run["display_title"])
    assert title == markers.RunTitle(7, h.head(7), "alice", "/sweep --scope full", str(comment_id))


def test_cancel_stops_the_prs_active_runs_and_lists_them(h):
    first = sweep(h)
    h.sb.set_run(first, status="in_progress")
    other_pr = sweep(h, pr=8, body=f"/ok-to-test {h.head(8)}\n/sweep")
    h.on_comment(7, "carol", "/cancel")  # the PR's author may cancel
    state = runs(h)
    assert state[first]["status"] == "completed" and state[first]["conclusion"] == "cancelled"
    assert state[other_pr]["status"] != "completed"  # another PR's run is not touched
    english, chinese = bilingual(h.bot_comments(7)[-1]["body"])
    assert "cancelled 1 GPU run(s)" in english and "`/sweep`" in english and "取消了 1 个" in chinese


def test_cancel_with_nothing_running_says_so(h):
    h.on_comment(7, "alice", "/cancel")
    english, _ = bilingual(h.bot_comments(7)[-1]["body"])
    assert "no queued or running GPU run" in english


def test_a_push_cancels_runs_of_the_old_head_and_reports_them(h):
    old_run = sweep(h)
    old, new = h.head(7), h.push()
    before = h.seq()
    h.handle("pull_request", "synchronize", pull=7, before=old, after=new, sender="carol")
    assert runs(h)[old_run]["conclusion"] == "cancelled"
    gate = ["checks/create", "issues/create-comment"]  # the new head's merge gate: this seed's recipe fails to plan
    assert [w["operation"] for w in h.writes(before)] == [*gate, "actions/cancel-workflow-run", "issues/create-comment"]
    english, _ = bilingual(h.bot_comments(7)[-1]["body"])
    assert "New commits arrived" in english and old[:12] in english


def test_closing_the_pr_cancels_its_runs(h):
    run_id = sweep(h)
    h.sb.update_pull(7, state="closed")
    h.handle("pull_request", "closed", pull=7, sender="carol")
    assert runs(h)[run_id]["conclusion"] == "cancelled"


def test_status_lists_the_prs_runs(h):
    run_id = sweep(h, body="/sweep --conc 4")
    h.sb.set_run(run_id, status="completed", conclusion="failure")
    h.on_comment(7, "mallory", "/status")  # anyone may ask
    english, chinese = bilingual(h.bot_comments(7)[-1]["body"])
    assert "| `/sweep --conc 4` |" in english and "completed / failure" in english and "@alice" in english
    assert "本 PR 的 GPU 运行" in chinese


def test_the_author_reruns_failed_jobs_of_the_latest_run_on_the_current_head(h):
    run_id = sweep(h)
    h.sb.set_run(run_id, status="completed", conclusion="failure",
                 jobs=[{"name": "run tiny-c4", "conclusion": "failure"}, {"name": "run tiny-c8", "conclusion": "success"}])
    before = h.seq()
    h.on_comment(7, "carol", "/rerun failed")
    assert [w["operation"] for w in h.writes(before)] == [
        "actions/re-run-workflow-failed-jobs", "reactions/create-for-issue-comment", "issues/create-comment"]
    assert f"/actions/runs/{run_id}/rerun-failed-jobs" in h.writes(before)[0]["path"]
    english, _ = bilingual(h.bot_comments(7)[-1]["body"])
    assert "Rerunning the failed jobs" in english


RERUN_REFUSALS = [
    ("nothing-ran-on-this-head", "push", "no GPU run for the current head"),
    ("still-running", "in_progress", "still going"),
    ("nothing-failed", "success", "no failed jobs"),
]


@pytest.mark.parametrize("setup, why", [r[1:] for r in RERUN_REFUSALS], ids=[r[0] for r in RERUN_REFUSALS])
def test_rerun_failed_explains_when_there_is_nothing_to_rerun(h, setup, why):
    run_id = sweep(h)
    if setup == "push":
        h.sb.set_run(run_id, status="completed", conclusion="failure")
        h.push()
    elif setup == "in_progress":
        h.sb.set_run(run_id, status="in_progress")
    else:
        h.sb.set_run(run_id, status="completed", conclusion="success")
    before = h.seq()
    h.on_comment(7, "carol", "/rerun failed")
    assert "actions/re-run-workflow-failed-jobs" not in [w["operation"] for w in h.writes(before)]
    english, _ = bilingual(h.bot_comments(7)[-1]["body"])
    assert why in english


def test_rerun_repeats_the_latest_command_on_the_new_head(h):
    sweep(h, body="/sweep tiny --conc 8")
    h.push()
    h.on_comment(7, "alice", "/rerun")
    latest = runs(h)[max(runs(h))]
    assert latest["inputs"]["command"] == "/sweep tiny --conc 8" and latest["inputs"]["sha"] == h.head(7)


def test_cooldown_holds_back_a_delegated_author_but_not_a_maintainer(sandbox, tmp_path):
    h = Harness(sandbox(seed(tmp_path, config=f"bot_login: {BOT}\ncooldown_seconds: 3600\n")), tmp_path)
    h.on_comment(8, "alice", f"/ok-to-test {h.head(8)}")
    h.on_comment(8, "bob", "/sweep")
    h.on_comment(8, "bob", "/sweep --scope full")
    assert [r["inputs"]["requester"] for r in h.dispatches()] == ["bob"]
    english, _ = bilingual(h.bot_comments(8)[-1]["body"])
    assert "cooldown" in english
    h.on_comment(8, "alice", "/sweep --scope full")
    assert [r["inputs"]["requester"] for r in h.dispatches()] == ["bob", "alice"]
