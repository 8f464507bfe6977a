"""Limits that hold (#40): the estimate is the default branch's, one claim-then-check per PR for requests made at
once, a /rerun is judged as what it restarts, and deleting the bot's replies resets no limit nor reruns a request.

Each case runs `recipe-bot handle` against the sandbox GitHub as recipe-bot.yml runs it: the default branch
checked out, each handler its own Actions run (in progress while it works), several of them at once where
the attack is a race.
"""
from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from bot.core import markers
from github_sandbox.harness import SandboxProcess, make_seed
from handle_helpers import BOT, ROOT, Harness, bilingual
from test_handle_budget import RECIPE, RUNNERS

# `/sweep --scope lowest` of big.yaml: 8 GPUs × (600 s + 300 s) = 2 GPU-hours; `/sweep`: 4 GPU-hours.
LOWEST = "/sweep --scope lowest"


def _config(extra: str = "") -> str:
    return f"bot_login: {BOT}\ncooldown_seconds: 0\n{extra}"


@pytest.fixture
def harness(tmp_path):
    opened = []

    def make(config: str, head_recipe: str | None = None) -> Harness:
        files_main = {".github/recipe-bot.yaml": config, "recipes/_runners.yaml": RUNNERS,
                      ".github/workflows/gpu.yml": (ROOT / ".github/workflows/gpu.yml").read_text(encoding="utf-8"),
                      "recipes/big.yaml": RECIPE.format(conc="[1, 4]")}
        pulls = [{"number": 7, "head": "feature", "base": "main", "author": "carol", "title": "Wider sweep"},
                 {"number": 9, "head": "feature", "base": "main", "author": "mallory", "fork": True,
                  "title": "From a fork"}]
        head = {"recipes/big.yaml": head_recipe or RECIPE.format(conc="[1, 4, 16, 64]")}
        sb = SandboxProcess(make_seed(tmp_path / "sandbox", files_main, head, {"pulls": pulls})).start()
        opened.append(sb)
        h = Harness(sb, tmp_path)
        h.env.update(RECIPE_BOT_CHECKOUT=str(sb.checkout(tmp_path / "checkout")))
        return h

    yield make
    for sb in opened:
        sb.stop()


def _handle(h: Harness, event: str, action: str, **selectors) -> subprocess.CompletedProcess:
    """One handler as its own Actions run of recipe-bot.yml."""
    return _together(h, [(event, action, selectors)])[0]


def _together(h: Harness, events: list[tuple[str, str, dict]]) -> list[subprocess.CompletedProcess]:
    """Start one handler per event at once (each its own Actions run), and wait for all of them."""
    procs = []
    for event, action, selectors in events:
        path = h.event_file(event, action, **selectors)
        run = h.sb.add_run("recipe-bot.yml", event=event, status="in_progress", conclusion=None)
        args = [sys.executable, "-c", "from bot.cli import main; main(prog_name='recipe-bot')",
                "handle", "--event-name", event, "--event-path", str(path)]
        procs.append((run["id"], subprocess.Popen(
            args, env={**h.env, "GITHUB_RUN_ID": str(run["id"]), "GITHUB_RUN_ATTEMPT": "1"}, cwd=ROOT,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)))
    done = []
    for run_id, proc in procs:
        out, err = proc.communicate(timeout=120)
        h.sb.set_run(run_id, conclusion="success" if proc.returncode == 0 else "failure")
        assert proc.returncode == 0, err
        assert "Traceback" not in err, err
        done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return done


def _comment_now(h: Harness, pr: int, user: str, body: str) -> subprocess.CompletedProcess:
    return _handle(h, "issue_comment", "created", comment_id=h.comment(pr, user, body))


def _delete(h: Harness, comment_id: int, user: str = "alice") -> None:
    h.sb.request("DELETE", f"/repos/acme/bench/issues/comments/{comment_id}", user=user)


def _active(h: Harness) -> list[dict]:
    return [r for r in h.dispatches() if r["conclusion"] != "cancelled"]


# -- 1. the estimate is the default branch's ---------------------------------------------------------------

def test_an_estimate_the_pr_sets_itself_counts_at_the_recipes_time_limit(harness):
    # The PR says every point takes no time, and gives its jobs six hours: 8 GPUs × 6 h = 48 GPU-hours at most.
    claimed = RECIPE.format(conc="[1, 4, 16, 64]").replace("startup_s: 600\n  point_s: 300\n",
                                                    "startup_s: 0\n  point_s: 0\n") + "timeout_s: 21600\n"
    h = harness(_config("budget:\n  gpu_hours_per_command: 10\n"), head_recipe=claimed)
    result = _comment_now(h, 7, "carol", "/sweep")
    assert h.dispatches() == [], result.stderr  # 48 GPU-hours wait for an approval, 0 would not have
    english, chinese = bilingual(h.bot_comments(7)[-1]["body"])
    assert "about **48.00 GPU-hours**" in english and "waiting for a budget approval" in english
    assert "`big` sets its own estimate in this PR" in english and "time limit: 48.00 GPU-hours" in english
    assert "`big` 的估算由本 PR 自己给出" in chinese and "48.00 GPU 小时" in chinese


# -- 2. one claim-then-check per PR --------------------------------------------------------------------------

def test_of_six_sweeps_made_at_once_only_those_within_the_day_budget_start(harness):
    h = harness(_config("budget:\n  gpu_hours_per_pr_per_day: 4\n"))  # two of the 2-GPU-hour sweeps fit
    ids = [h.comment(7, "carol", LOWEST) for _ in range(6)]
    results = _together(h, [("issue_comment", "created", {"comment_id": cid}) for cid in ids])
    log = "\n".join(r.stderr for r in results)
    assert len(h.dispatches()) == 2, log
    assert sum(float(markers.parse_run_title(r["display_title"]).gpu_hours) for r in h.dispatches()) == 4.0
    replies = [c["body"] for c in h.bot_comments(7)]
    assert len(replies) == 6 and sum("waiting for a budget approval" in b for b in replies) == 4
    assert not any("recipe-bot:claim" in b for b in replies)  # every claim became its reply


def test_of_six_sweeps_made_at_once_by_a_fork_author_only_the_approved_number_start(harness):
    h = harness(_config("pr_jobs:\n  runs_per_approval: 1\n"))
    _comment_now(h, 9, "alice", f"/ok-to-test {h.head(9)}")
    ids = [h.comment(9, "mallory", LOWEST) for _ in range(6)]
    results = _together(h, [("issue_comment", "created", {"comment_id": cid}) for cid in ids])
    assert len(_active(h)) == 1, "\n".join(r.stderr for r in results)
    refused = [c["body"] for c in h.bot_comments(9) if "already been used for" in c["body"]]
    assert len(refused) == 5


# -- 3. a /rerun is judged as the command it restarts ---------------------------------------------------------

def test_a_rerun_by_a_fork_author_is_held_to_the_scope_of_the_command_it_restarts(harness):
    h = harness(_config("pr_jobs:\n  scopes: [lowest]\n"))
    _comment_now(h, 9, "alice", f"/ok-to-test {h.head(9)}")
    _comment_now(h, 9, "alice", "/sweep")  # a maintainer's full sweep
    assert len(h.dispatches()) == 1
    result = _comment_now(h, 9, "mallory", "/rerun")  # would start `/sweep` (--scope full) again
    assert len(h.dispatches()) == 1, result.stderr
    english, chinese = bilingual(h.bot_comments(9)[-1]["body"])
    assert "`--scope lowest`, not `--scope full`" in english and "`--scope full`" in chinese


def test_a_rerun_of_failed_jobs_counts_the_runs_estimate_against_the_day_budget(harness):
    h = harness(_config("budget:\n  gpu_hours_per_pr_per_day: 6\n"))
    _comment_now(h, 7, "carol", "/sweep")  # 4 GPU-hours started
    [run] = h.dispatches()
    h.sb.set_run(run["id"], conclusion="failure")
    result = _comment_now(h, 7, "carol", "/rerun failed")  # 4 more would be 8, over 6
    assert [r["run_attempt"] for r in h.sb.state()["workflow_runs"] if r["id"] == run["id"]] == [1], result.stderr
    english, chinese = bilingual(h.bot_comments(7)[-1]["body"])
    assert "failed jobs of [run" in english and "budget of 6.00 GPU-hours a day" in english
    assert "8.00 with this one" in english and "每天 6.00 GPU 小时的预算" in chinese


# -- 4. and 5. a deleted reply resets nothing -------------------------------------------------------------

def test_deleting_the_bots_replies_does_not_reset_the_day_budget(harness):
    h = harness(_config("budget:\n  gpu_hours_per_pr_per_day: 6\n"))  # one 4-GPU-hour sweep a day
    for _ in range(3):
        _comment_now(h, 7, "carol", "/sweep")
        for reply in h.bot_comments(7):
            _delete(h, reply["id"])  # a write collaborator removes every trace from the conversation
    assert len(h.dispatches()) == 1


def test_deleting_the_reply_and_editing_the_command_starts_no_second_run(harness):
    h = harness(_config())
    comment_id = h.comment(7, "carol", LOWEST)
    _handle(h, "issue_comment", "created", comment_id=comment_id)
    [reply] = h.bot_comments(7)
    _delete(h, reply["id"])
    h.edit(comment_id, "carol", LOWEST + " --fail-fast")
    result = _handle(h, "issue_comment", "edited", comment_id=comment_id, changes_from=LOWEST)
    assert len(h.dispatches()) == 1, result.stderr
    assert "already has run" in result.stderr
