"""Two handlers of one request: the one whose claim comment comes second says nothing, runs nothing,
and deletes its extra claim (dispatch_once's claim race, without timing)."""
from __future__ import annotations

import datetime as dt
import itertools

from bot.control import dispatch_once
from bot.core import markers
from bot.core.github_records import Comment

BOT = "recipe-bot[bot]"
SHA = "0123456789abcdef0123456789abcdef01234567"
NOW = dt.datetime(2026, 12, 2, 3, 0, tzinfo=dt.timezone.utc)


class RacingComments:
    """A PR's comments where another handler's claim of the same request lands just before ours."""

    dry_run = False

    def __init__(self, rival_claim: str):
        self.ids = itertools.count(100)
        self.comments: list[Comment] = []
        self.rival_claim = rival_claim
        self.dispatched: list[dict] = []

    def _add(self, body: str) -> int:
        comment = Comment(id=next(self.ids), user=BOT, body=body, created_at=NOW, user_type="Bot")
        self.comments.append(comment)
        return comment.id

    def create_comment(self, number: int, body: str) -> int:
        if self.rival_claim:  # the rival's write reaches GitHub first
            self._add(self.rival_claim)
            self.rival_claim = ""
        return self._add(body)

    def list_issue_comments(self, number: int, since: dt.datetime | None = None) -> list[Comment]:
        return list(self.comments)

    def delete_comment(self, comment_id: int) -> None:
        self.comments = [c for c in self.comments if c.id != comment_id]

    def dispatch_workflow(self, *args, **kwargs):  # the handler that lost must never get here
        self.dispatched.append(kwargs)
        raise AssertionError("the handler that lost the claim dispatched")


def test_the_handler_whose_claim_comes_second_stays_silent_and_deletes_its_claim():
    key = "c-42"
    rival = markers.claim_marker(key, SHA, "rivalnonce00", "7.1", by="alice")
    client = RacingComments(rival)
    out = dispatch_once.start(
        client, workflow="gpu.yml", default_branch="main", pr=7, sha=SHA, command="/sweep", requester="alice",
        key=key, bot_login=BOT, ledger=markers.Ledger(), claim_body=lambda marker: marker + "\nclaimed",
        per_sha=False, started_at=NOW, holder="8.1")
    assert out.lost and out.run is None and not out.dispatched_now
    assert any("another handler claimed request c-42 first" in line for line in out.log)
    assert [c.body for c in client.comments] == [rival]  # only the first claim is left
    assert client.dispatched == []


def test_a_handler_whose_rival_already_answered_the_label_stays_silent_and_deletes_its_claim():
    # The rival claimed, dispatched and turned its claim into the acknowledgement, all between this
    # handler's full read of the comments (empty) and its own claim: no claim of the key comes before
    # this one's any more, but the request is answered, and a second acknowledgement must not appear.
    key = "label-sweep-enabled"
    rival_ack = markers.ack_marker(key, SHA) + "\ndispatched"
    client = RacingComments(rival_ack)
    out = dispatch_once.start(
        client, workflow="gpu.yml", default_branch="main", pr=7, sha=SHA, command="/sweep", requester="carol",
        key=key, bot_login=BOT, ledger=markers.Ledger(), claim_body=lambda marker: marker + "\nclaimed",
        per_sha=True, started_at=NOW, holder="8.1")
    assert out.lost and out.run is None and not out.dispatched_now
    assert any("another handler answered request label-sweep-enabled first" in line for line in out.log)
    assert [c.body for c in client.comments] == [rival_ack]
    assert client.dispatched == []


def test_an_answer_for_another_head_does_not_stop_a_label_claim_at_this_head():
    # a label runs once per head: the acknowledgement of an earlier head leaves this head's claim standing
    key = "label-sweep-enabled"
    older = markers.ack_marker(key, "f" * 40) + "\ndispatched"
    client = RacingComments(older)
    client.dispatch_workflow = lambda *a, **k: (_ for _ in ()).throw(RuntimeError("reached dispatch"))
    client.list_workflow_runs = lambda *a, **k: []
    try:
        dispatch_once.start(
            client, workflow="gpu.yml", default_branch="main", pr=7, sha=SHA, command="/sweep", requester="carol",
            key=key, bot_login=BOT, ledger=markers.Ledger(), claim_body=lambda marker: marker + "\nclaimed",
            per_sha=True, started_at=NOW, holder="8.1", runs=lambda: [], recheck_head=False)
    except RuntimeError as exc:
        assert str(exc) == "reached dispatch"
    else:
        raise AssertionError("the claim at this head did not go on to dispatch")
