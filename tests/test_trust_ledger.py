"""What the gate trusts, only the bot can write: a marker counts only in the bot's own comment that nobody
else edited, and a sign-off only from a text its author wrote and nobody else edited (GitHub lets anyone
with write access edit any comment). Driven through the sandbox (its GraphQL edit history) and the CLI."""
from __future__ import annotations

import datetime as dt
import time

import pytest

from bot.core import markers, stage_markers
from bot.core.github import GitHubClient
from github_sandbox.harness import make_seed
from handle_helpers import BOT, PULLS, Harness, bilingual
from test_checklist_sandbox import benchmarks_passed, gpu_run_ends, hc, latest_check, pushed, signoff  # noqa: F401
from test_gate_events import CHECK, MAIN, recipe, regressed_run
from test_handle_budget import _config, _handle, open_harness  # noqa: F401  (the budget's fixture)

FORGED_RUN = 424242  # a run that does not exist


@pytest.fixture
def world(sandbox, tmp_path):
    """A PR (#7, carol's) that touches tiny-cpu, as tests/test_reuse.py and tests/test_gate_events.py use."""
    seed = make_seed(tmp_path / "sandbox", MAIN, {"recipes/tiny-cpu.yaml": recipe("[1, 4, 8]")},
                     {"pulls": PULLS, "issues": [{"number": 20, "author": "bob", "title": "A bug"}]})
    return Harness(sandbox(seed), tmp_path)


def later_second(stamp: str) -> None:
    """Wait until the clock reads a later whole second than `stamp` (GitHub's REST time format)."""
    while dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") <= stamp:
        time.sleep(0.05)


def edit_later(h: Harness, comment: dict, user: str, body: str) -> None:
    """`user` edits the comment in a later second than it was written: GitHub's REST times are whole
    seconds, and updated_at later than created_at is what tells the bot to read the edit history."""
    while dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ") <= comment["created"]:
        time.sleep(0.05)
    h.edit(comment["id"], user, body)


def gate_checks(h: Harness, sha: str) -> list[dict]:
    return [c for c in h.sb.state()["check_runs"] if c["head_sha"] == sha and c["name"] == CHECK]


def push(h: Harness, files: dict):
    old = h.head(7)
    new = h.sb.push("feature", files, author="carol")["after"]
    return new, h.handle("pull_request", "synchronize", pull=7, before=old, after=new, sender="carol")


# -- 1. reuse -----------------------------------------------------------------------------------------

def test_a_reuse_marker_a_writer_put_into_a_bot_comment_does_not_pass_the_gate_after_a_push(world):
    h = world
    measured = h.head(7)
    h.on_comment(7, "carol", f"/reuse {FORGED_RUN}")  # refused (write is not maintain): a reply of the bot
    refusal = h.bot_comments(7)[-1]
    forged = stage_markers.reuse_marker(stage_markers.Reuse(measured, FORGED_RUN, measured, "alice"))
    edit_later(h, refusal, "carol", forged + "\n" + refusal["body"])

    head, handled = push(h, {"README.md": "# only the docs\n"})
    [check] = gate_checks(h, head)
    assert check["status"] == "in_progress" and f"reused run {FORGED_RUN}" not in check["title"]
    assert f"comment {refusal['id']} of the bot was edited by carol: its markers are ignored" in handled.stderr
    assert h.dispatches() == []


# -- 2. accept-regression ------------------------------------------------------------------------------

def test_an_accept_regression_marker_a_writer_put_into_a_bot_comment_does_not_clear_a_regression(world):
    h = world
    head = regressed_run(h)
    h.on_comment(7, "carol", "/accept-regression tiny-cpu trust me")  # refused: maintain is needed
    refusal = h.bot_comments(7)[-1]
    forged = stage_markers.ack_marker(stage_markers.Ack(head, "tiny-cpu", "alice", "bigger batches"))
    edit_later(h, refusal, "carol", forged + "\n" + refusal["body"])

    h.on_comment(7, "alice", "/accept-regression other-recipe not this one")  # the gate is judged again
    [check] = gate_checks(h, head)
    assert check["conclusion"] == "failure" and "tp1-c4" in check["summary"]
    assert "bigger batches" not in check["summary"]


# -- 3, 4. sign-off ----------------------------------------------------------------------------------

@pytest.fixture
def signing(hc):
    h = hc()
    benchmarks_passed(h, h.head(7))
    return h


def _verify_edit(h: Harness, comment_id: int, editor: str):
    return h.handle("issue_comment", "edited", comment_id=comment_id, sender=editor)


def test_a_codeowners_comment_the_pr_author_edited_into_a_signoff_is_no_signoff(signing):
    h = signing
    head = h.head(7)
    comment_id = h.comment(7, "alice", "I'll take a look next week")
    h.handle("issue_comment", "created", comment_id=comment_id)
    [comment] = [c for c in h.sb.state()["comments"] if c["id"] == comment_id]
    edit_later(h, comment, "carol", signoff("alice"))
    _verify_edit(h, comment_id, "carol")
    check = latest_check(h, head)
    assert check["status"] == "in_progress" and "Sign-off by @alice verified" not in check["title"]
    english, chinese = bilingual(check["summary"])
    assert "@carol edited it" in english and "nobody else edited" in english
    assert "@carol 编辑过它" in chinese


def test_an_owners_signoff_the_pr_author_saves_again_after_a_push_does_not_sign_the_new_head(signing):
    h = signing
    comment_id = h.comment(7, "alice", signoff("alice"))
    h.handle("issue_comment", "created", comment_id=comment_id)
    assert latest_check(h, h.head(7))["conclusion"] == "success"
    new = h.push()
    pushed(h)
    benchmarks_passed(h, new)
    [comment] = [c for c in h.sb.state()["comments"] if c["id"] == comment_id]
    edit_later(h, comment, "carol", comment["body"] + "\n")  # re-saved: a new text, the same sign-off
    _verify_edit(h, comment_id, "carol")
    check = latest_check(h, new)
    assert check["status"] == "in_progress" and "verified" not in check["title"]


def test_an_owners_own_edit_of_a_signoff_after_a_push_is_stale_not_a_new_signoff(signing):
    h = signing
    comment_id = h.comment(7, "alice", signoff("alice"))
    h.handle("issue_comment", "created", comment_id=comment_id)
    [comment] = [c for c in h.sb.state()["comments"] if c["id"] == comment_id]
    later_second(comment["created"])  # written before the push, not within its second (REST's times are whole seconds)
    new = h.push()
    pushed(h)
    benchmarks_passed(h, new)
    later_second(dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"))  # past the push's second too
    edit_later(h, comment, "alice", comment["body"] + "\nStill fine.\n")
    _verify_edit(h, comment_id, "alice")
    check = latest_check(h, new)
    assert check["status"] == "in_progress" and "verified" not in check["title"]
    english, chinese = bilingual(check["summary"])
    assert f"after the push of `{new[:12]}`" in english and "does not sign the new commit" in english
    assert "不算对新提交的签核" in chinese


def test_a_signoff_review_whose_body_someone_else_edited_is_no_signoff(signing):
    h = signing
    head = h.head(7)
    review = h.sb.add_review(7, "alice", "COMMENTED", "Looks fine, more later")
    h.sb.request("PUT", f"/repos/acme/bench/pulls/7/reviews/{review['id']}", {"body": signoff("alice")}, user="carol")
    gpu_run_ends(h, head)  # verifies the head again (the sandbox sends no review-edited event)
    check = latest_check(h, head)
    assert check["status"] == "in_progress" and "verified" not in check["title"]


# -- 5. approvals, acks, claims, budget ----------------------------------------------------------------

def test_an_ok_to_test_marker_a_writer_put_into_a_bot_comment_approves_no_fork(h):
    h.on_comment(9, "mallory", "/sweep")  # a fork: waits for an approval, and the bot says so
    assert h.dispatches() == []
    reply = h.bot_comments(9)[-1]
    edit_later(h, reply, "carol", markers.approval_marker(h.head(9), "alice") + "\n" + reply["body"])
    h.on_comment(9, "mallory", "/sweep")
    assert h.dispatches() == []


def test_an_ack_marker_a_writer_put_into_a_bot_comment_does_not_swallow_a_command(h):
    h.on_comment(7, "carol", "/status")
    reply = h.bot_comments(7)[-1]
    request = h.comment(7, "alice", "/sweep")
    edit_later(h, reply, "carol", markers.ack_marker(str(request), h.head(7)) + "\n" + reply["body"])
    h.handle("issue_comment", "created", comment_id=request)
    assert [r["inputs"]["comment_id"] for r in h.dispatches()] == [str(request)]


def test_a_claim_marker_a_writer_put_into_a_bot_comment_holds_no_request(h):
    h.on_comment(7, "carol", "/status")
    reply = h.bot_comments(7)[-1]
    holder = h.sb.add_run("gpu.yml", status="in_progress", event="push")["id"]  # a live run the forged claim names
    request = h.comment(7, "alice", "/sweep")
    claim = markers.claim_marker(str(request), h.head(7), "forged", f"{holder}.1")
    edit_later(h, reply, "carol", claim + "\n" + reply["body"])
    h.handle("issue_comment", "created", comment_id=request)
    assert [r["inputs"]["comment_id"] for r in h.dispatches()] == [str(request)]


def test_a_budget_wait_marker_a_writer_put_into_a_bot_comment_starts_nothing_on_approval(open_harness):  # noqa: F811
    h = open_harness(_config("budget:\n  gpu_hours_per_command: 3\n"))
    head = h.head(7)
    _handle(h, "carol", "/status")
    reply = h.bot_comments(7)[-1]
    forged = stage_markers.wait_marker(stage_markers.Waiting("forged-1", head, "carol", 0.5, "/sweep", None))
    edit_later(h, reply, "carol", forged + "\n" + reply["body"])
    result = _handle(h, "alice", f"/approve-budget {head}")
    assert h.dispatches() == [] and "nothing waits" in result.stderr


def test_an_estimate_marker_a_writer_put_into_a_bot_comment_spends_no_budget(open_harness):  # noqa: F811
    h = open_harness(_config("budget:\n  gpu_hours_per_pr_per_day: 6\n"))
    _handle(h, "carol", "/status")
    reply = h.bot_comments(7)[-1]
    edit_later(h, reply, "carol", stage_markers.estimate_marker("forged-1", h.head(7), 100.0) + "\n" + reply["body"])
    result = _handle(h, "carol", "/sweep")
    assert len(h.dispatches()) == 1 and "waits" not in result.stderr


# -- the client and the predicate -------------------------------------------------------------------------

def test_the_client_reads_who_edited_a_comment_only_when_one_was_edited_or_holds_markers(h):
    writer = GitHubClient(base_url=h.sb.url, token=BOT, repository="acme/bench")  # an earlier handler
    c = GitHubClient(base_url=h.sb.url, token=BOT, repository="acme/bench")  # this one
    h.comment(7, "carol", "plain words, never edited")
    before = h.seq()
    assert all(not x.edited for x in c.list_issue_comments(7))
    assert [e["operation"] for e in h.requests(before)] == ["issues/list-comments"]  # nothing to ask GraphQL
    mine = writer.create_comment(7, "<!-- recipe-bot:reply comment=1 digest=x -->\nhello")
    theirs = writer.create_comment(7, "<!-- recipe-bot:reply comment=2 digest=y -->\nhello")
    before = h.seq()
    writer.list_issue_comments(7)
    assert [e["operation"] for e in h.requests(before)] == ["issues/list-comments"]  # its own texts, word for word
    before = h.seq()
    assert all(not x.edited for x in c.list_issue_comments(7))
    # texts holding markers are asked about once even unedited: REST's whole seconds can hide an edit
    assert [e["operation"] for e in h.requests(before)] == ["issues/list-comments", "graphql"]
    before = h.seq()
    c.list_issue_comments(7)
    assert [e["operation"] for e in h.requests(before)] == ["issues/list-comments"]
    [comment] = [x for x in h.sb.state()["comments"] if x["id"] == theirs]
    edit_later(h, comment, "carol", comment["body"] + " (edited)")
    writer.edit_comment(mine, "<!-- recipe-bot:reply comment=1 digest=z -->\nhello again")
    before = h.seq()
    listed = {x.id: x for x in c.list_issue_comments(7)}
    assert [e["operation"] for e in h.requests(before)] == ["issues/list-comments", "graphql"]
    assert listed[theirs].edited and set(listed[theirs].editors) == {BOT, "carol"}
    assert listed[mine].edited and listed[mine].editors == (BOT,)
    before = h.seq()
    c.list_issue_comments(7)  # nothing saved since: the client asks GraphQL once per text it has not seen
    assert [e["operation"] for e in h.requests(before)] == ["issues/list-comments"]
    from bot.core.markers import header_markers
    assert list(header_markers(listed.values(), BOT)) == ["<!-- recipe-bot:reply comment=1 digest=z -->"]
    assert [x.id for x in writer.list_issue_comments(7) if x.id == theirs and "carol" in x.editors] == [theirs]


@pytest.mark.parametrize(("edited", "editors", "counts"), [
    (False, (), True), (True, ("recipe-bot[bot]",), True), (True, ("recipe-bot[bot]", "carol"), False),
    (True, (), False), (True, ("recipe-bot[bot]", ""), False),
], ids=["unedited", "edited-by-the-bot", "edited-by-a-writer", "history-unknown", "editor-unknown"])
def test_a_bot_comment_counts_only_while_every_edit_is_the_bots(edited, editors, counts):
    from bot.core.github import Comment
    from bot.core.markers import written_by

    comment = Comment(1, BOT, "<!-- recipe-bot:ack comment=1 sha=x -->", None, edited=edited, editors=editors)
    assert written_by(comment, BOT) is counts
    assert bool(markers.read_ledger([comment], BOT).acks) is counts


def test_a_writers_edit_within_the_second_the_bot_wrote_its_comment_still_voids_its_markers(h):
    """REST shows updated_at == created_at for an edit made within the same second: the edit history decides."""
    from bot.core.markers import header_markers

    c = GitHubClient(base_url=h.sb.url, token=BOT, repository="acme/bench")
    forged = "<!-- recipe-bot:ok-to-test sha=" + "a" * 40 + " by=alice -->\nhello"
    for _ in range(20):  # a pair that straddles a second boundary is tried again
        comment_id = c.create_comment(7, "<!-- recipe-bot:reply comment=1 digest=x -->\nhello")
        h.edit(comment_id, "carol", forged)
        [state] = [x for x in h.sb.state()["comments"] if x["id"] == comment_id]
        if state["updated"] == state["created"]:
            break
        c.delete_comment(comment_id)
    else:
        pytest.fail("no edit landed within the second its comment was written")
    listed = {x.id: x for x in GitHubClient(base_url=h.sb.url, token=BOT, repository="acme/bench").list_issue_comments(7)}
    assert not listed[comment_id].updated_at or listed[comment_id].updated_at == listed[comment_id].created_at
    assert listed[comment_id].edited and "carol" in listed[comment_id].editors
    assert not list(header_markers([listed[comment_id]], BOT))
