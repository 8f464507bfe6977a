"""`recipe-bot handle` on PR comments, through the command line, against the sandbox GitHub."""
import re

import pytest

from handle_helpers import BOT, Harness, bilingual, seed


def test_authorized_sweep_dispatches_once_with_the_head_sha_and_acknowledges(h):
    head = h.head(7)
    before = h.seq()
    comment_id = h.comment(7, "carol", "Looks good.\n/sweep tiny* --conc 4,8")
    result = h.handle("issue_comment", "created", comment_id=comment_id)
    assert result.returncode == 0, result.stderr

    [run] = h.dispatches()
    assert run["inputs"] == {"pr": "7", "sha": head, "command": "/sweep tiny* --conc 4,8",
                             "requester": "carol", "comment_id": str(comment_id),
                             "gpu_hours": ""}  # no estimate: tiny.yaml is not a whole recipe
    assert run["head_branch"] == "main"  # the workflow runs from the default branch, never the PR's
    assert h.reactions(comment_id) == []  # the reply is the acknowledgement: no reaction request
    [ack] = h.bot_comments(7)
    assert ack["body"].splitlines()[:2] == [
        f"<!-- recipe-bot:reply comment={comment_id} digest={ack['body'].split('digest=')[1][:12]} -->",
        f"<!-- recipe-bot:ack comment={comment_id} sha={head} -->"]
    english, chinese = bilingual(ack["body"])
    assert "Started `/sweep tiny* --conc 4,8`" in english and head[:12] in english
    assert "已为 @carol" in chinese and head[:12] in chinese
    writes = [(w["method"], w["operation"]) for w in h.writes(before)]
    # The claim comment is written before anything else and becomes the reply (dispatch_once).
    assert writes == [("POST", "issues/create-comment"),
                      ("POST", "actions/create-workflow-dispatch"),
                      ("PATCH", "issues/update-comment")]


def test_the_same_event_delivered_twice_starts_one_run(h):
    comment_id = h.comment(7, "alice", "/sweep")
    event = h.event_file("issue_comment", "created", comment_id=comment_id)
    assert h.handle("issue_comment", "created", path=event).returncode == 0
    before = h.seq()
    second = h.handle("issue_comment", "created", path=event)
    assert second.returncode == 0 and "already handled" in second.stderr
    assert len(h.dispatches()) == 1
    # The redelivery's claim is written first (that saves a read on every first delivery) and removed.
    assert [w["operation"] for w in h.writes(before)] == ["issues/create-comment", "issues/delete-comment"]
    assert len(h.bot_comments(7)) == 1


def test_editing_a_command_that_ran_starts_nothing_and_says_so_once(h):
    comment_id = h.comment(7, "alice", "/sweep")
    h.handle("issue_comment", "created", comment_id=comment_id)
    h.edit(comment_id, "alice", "/sweep --scope full")
    edited = h.event_file("issue_comment", "edited", comment_id=comment_id, changes_from="/sweep")
    assert h.handle("issue_comment", "edited", path=edited).returncode == 0
    assert h.handle("issue_comment", "edited", path=edited).returncode == 0  # re-delivered edit
    assert len(h.dispatches()) == 1
    replies = h.bot_comments(7)
    assert len(replies) == 2
    english, _ = bilingual(replies[1]["body"])
    assert "already started a GPU run" in english and "new comment" in english


def test_an_edit_that_fixes_a_typo_is_read_again(h):
    comment_id = h.comment(7, "alice", "/sweep --conc x")
    h.handle("issue_comment", "created", comment_id=comment_id)
    assert h.dispatches() == []
    h.edit(comment_id, "alice", "/sweep --conc 4")
    h.handle("issue_comment", "edited", comment_id=comment_id, changes_from="/sweep --conc x")
    [run] = h.dispatches()
    assert run["inputs"]["command"] == "/sweep --conc 4"


REFUSALS = [
    ("read-permission-commenter", 7, "bob", "/sweep", "has `read` permission", "`write`"),
    ("fork-without-approval", 9, "alice", "/sweep", "comes from a fork", "/ok-to-test"),
    ("draft", 10, "alice", "/sweep", "is a draft", "Ready for review"),
    ("author-without-write", 8, "alice", "/sweep", "does not have write permission", "/ok-to-test"),
    ("stranger-rerun", 7, "mallory", "/rerun failed", "has `none` permission", "ask a maintainer"),
]


@pytest.mark.parametrize("pr, user, body, why, what_works", [r[1:] for r in REFUSALS], ids=[r[0] for r in REFUSALS])
def test_refusals_dispatch_nothing_and_say_why_and_what_works(h, pr, user, body, why, what_works):
    comment_id = h.comment(pr, user, body)
    result = h.handle("issue_comment", "created", comment_id=comment_id)
    assert result.returncode == 0, result.stderr
    assert h.dispatches() == []
    [reply] = h.bot_comments(pr)
    english, chinese = bilingual(reply["body"])
    assert why in english and what_works in english
    assert "未执行" in chinese
    assert h.reactions(comment_id) == ["confused"]


SILENT = [
    ("quoted", "> /sweep"),
    ("code-fence", "```\n/sweep\n```"),
    ("inline-code", "run `/sweep` later"),
    ("prose", "please /sweep"),
    ("plain-text", "Nice work!"),
]


@pytest.mark.parametrize("body", [s[1] for s in SILENT], ids=[s[0] for s in SILENT])
def test_no_command_means_no_request_at_all(h, body):
    before = h.seq()
    result = h.on_comment(7, "alice", body)
    assert result.returncode == 0 and "no command" in result.stderr
    assert h.requests(before) == [] and h.dispatches() == []


def test_a_near_miss_verb_gets_a_hint_and_no_run(h):
    h.on_comment(7, "alice", "/sweepall")
    assert h.dispatches() == []
    [reply] = h.bot_comments(7)
    english, chinese = bilingual(reply["body"])
    assert "Did you mean `/sweep`" in english and "`/sweep`" in chinese


def test_malformed_arguments_get_a_usage_reply_in_both_languages(h):
    h.on_comment(7, "alice", "/sweep --scope widest")
    assert h.dispatches() == []
    [reply] = h.bot_comments(7)
    english, chinese = bilingual(reply["body"])
    assert "was not understood" in english and "invalid choice" in english
    assert "Usage: `/sweep [recipe-glob ...]" in english
    assert "用法：`/sweep [recipe-glob ...]" in chinese
    assert "参数 --scope：无效的选项 'widest'（可选：'lowest', 'full'）" in chinese and "invalid choice" not in chinese


def test_ok_to_test_for_an_old_sha_approves_nothing(h):
    old = h.head(9)
    h.push()
    h.on_comment(9, "alice", f"/ok-to-test {old}")
    [reply] = h.bot_comments(9)
    assert "recipe-bot:ok-to-test" not in reply["body"]
    english, _ = bilingual(reply["body"])
    assert f"`/ok-to-test {h.head(9)}`" in english
    h.on_comment(9, "alice", "/sweep")
    assert h.dispatches() == []


def test_ok_to_test_then_sweep_in_one_comment_runs_the_fork_at_that_sha(h):
    head = h.head(9)
    h.on_comment(9, "alice", f"/sweep\n/ok-to-test {head}")
    [run] = h.dispatches()
    assert run["inputs"]["sha"] == head
    [reply] = h.bot_comments(9)
    assert f"<!-- recipe-bot:ok-to-test sha={head} by=alice -->" in reply["body"].splitlines()


def test_approval_lets_the_author_run_and_a_push_revokes_it(h):
    h.on_comment(8, "alice", f"/ok-to-test {h.head(8)}")
    h.on_comment(8, "bob", "/sweep")  # the PR's author, read permission, on the approved commit
    assert [r["inputs"]["requester"] for r in h.dispatches()] == ["bob"]
    new_head = h.push()
    h.on_comment(8, "bob", "/sweep")
    assert len(h.dispatches()) == 1
    english, _ = bilingual(h.bot_comments(8)[-1]["body"])
    assert "the head is now" in english and new_head[:12] in english


def test_approval_by_someone_without_write_counts_for_nothing(h):
    h.on_comment(8, "bob", f"/ok-to-test {h.head(8)}")  # the author approving himself
    h.on_comment(8, "bob", "/sweep")
    assert h.dispatches() == []


def test_forged_markers_in_user_comments_and_echoed_text_do_not_count(h):
    head = h.head(9)
    h.comment(9, "mallory", f"<!-- recipe-bot:ok-to-test sha={head} by=alice -->\nplease")
    # The bot echoes the bad argument inside its usage reply; that text must not become a marker.
    h.on_comment(9, "mallory", f"/sweep <!--\n<!-- recipe-bot:ok-to-test sha={head} by=alice -->")
    h.on_comment(9, "alice", "/sweep")
    assert h.dispatches() == []


def test_the_bots_own_comment_is_ignored(h):
    comment_id = h.comment(7, BOT, "/sweep")
    before = h.seq()
    result = h.handle("issue_comment", "created", comment_id=comment_id)
    assert result.returncode == 0 and "own comment" in result.stderr
    assert h.writes(before) == [] and h.dispatches() == []


def test_help_replies_from_the_registry(h):
    comment_id = h.comment(7, "mallory", "/help")
    h.handle("issue_comment", "created", comment_id=comment_id)
    [reply] = h.bot_comments(7)
    english, chinese = bilingual(reply["body"])
    for verb in ("/sweep", "/e2e", "/rerun", "/cancel", "/ok-to-test", "/status", "/help"):
        assert verb in english and verb in chinese
    assert h.reactions(comment_id) == ["+1"]


def test_one_comment_starts_at_most_one_run(h):
    h.on_comment(7, "alice", "/sweep\n/e2e")
    assert len(h.dispatches()) == 1
    english, _ = bilingual(h.bot_comments(7)[0]["body"])
    assert "at most one GPU run" in english


def test_commands_on_a_plain_issue_are_answered(h):
    h.on_comment(20, "alice", "/sweep")
    assert h.dispatches() == []
    english, _ = bilingual(h.bot_comments(20)[0]["body"])
    assert "work on pull requests" in english


def test_review_bodies_carry_commands_too(h):
    review = h.sb.add_review(7, "alice", "APPROVED", "LGTM\n/sweep")
    result = h.handle("pull_request_review", "submitted", review_id=review["id"])
    assert result.returncode == 0, result.stderr
    [run] = h.dispatches()
    assert run["inputs"]["comment_id"] == f"review-{review['id']}"


def test_members_of_a_trusted_team_run_like_write_collaborators(sandbox, tmp_path):
    config = f"bot_login: {BOT}\ntrusted:\n  teams: [acme/core]\n"
    h = Harness(sandbox(seed(tmp_path, config=config, extra={"teams": {"acme/core": ["bob"]}})), tmp_path)
    h.on_comment(7, "bob", "/sweep")  # read permission, but in acme/core
    h.on_comment(7, "mallory", "/sweep")  # neither
    assert [r["inputs"]["requester"] for r in h.dispatches()] == ["bob"]


def test_the_config_can_raise_the_bar_for_a_command(sandbox, tmp_path):
    config = f"bot_login: {BOT}\npermissions:\n  sweep: maintain\n"
    h = Harness(sandbox(seed(tmp_path, config=config)), tmp_path)
    h.on_comment(7, "carol", "/sweep")  # write < maintain
    h.on_comment(7, "alice", "/sweep")  # admin
    assert [r["inputs"]["requester"] for r in h.dispatches()] == ["alice"]
    english, _ = bilingual(h.bot_comments(7)[0]["body"])
    assert re.search(r"has `write` permission on this repository and it needs `maintain`", english)


def test_invalid_config_on_the_default_branch_stops_everything_and_says_why(sandbox, tmp_path):
    h = Harness(sandbox(seed(tmp_path, config=f"bot_login: {BOT}\ncooldown: 5\n")), tmp_path)
    result = h.on_comment(7, "alice", "/sweep", expect=1)
    assert ".github/recipe-bot.yaml@main:2: cooldown: unknown key" in result.stderr
    assert h.dispatches() == []
    english, chinese = bilingual(h.bot_comments(7)[0]["body"])
    assert "cooldown: unknown key" in english and "默认分支" in chinese
    assert ".github/recipe-bot.yaml@main:2：cooldown：未知的键；可用的有：" in chinese  # the error in Chinese too
    assert "unknown key" not in chinese


def test_edits_are_ignored_when_the_config_says_so(sandbox, tmp_path):
    h = Harness(sandbox(seed(tmp_path, config=f"bot_login: {BOT}\nallow_edits: false\n")), tmp_path)
    comment_id = h.comment(7, "alice", "/sweep --conc x")
    h.handle("issue_comment", "created", comment_id=comment_id)
    h.edit(comment_id, "alice", "/sweep")
    before = h.seq()
    result = h.handle("issue_comment", "edited", comment_id=comment_id, changes_from="/sweep --conc x")
    assert "allow_edits: false" in result.stderr
    assert h.dispatches() == [] and h.writes(before) == []


def test_without_bot_login_in_the_config_the_bot_asks_who_it_is(sandbox, tmp_path):
    h = Harness(sandbox(seed(tmp_path, config="cooldown_seconds: 0\n")), tmp_path)
    event = h.event_file("issue_comment", "created", comment_id=h.comment(7, "carol", "/sweep"))
    before = h.seq()
    h.handle("issue_comment", "created", path=event)
    assert "users/get-authenticated" in [r["operation"] for r in h.requests(before)]
    h.handle("issue_comment", "created", path=event)  # its own ack is recognised: no second run
    assert len(h.dispatches()) == 1
