"""Two handlers of one request: the one whose claim comment comes second says nothing, runs nothing,
and deletes its extra claim (dispatch_once's claim race, without timing)."""
from __future__ import annotations

import datetime as dt
import itertools

import pytest

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


def _start(client: RacingComments, key: str, *, per_sha: bool, **extra):
    """One handler's dispatch_once.start, its full read of the comments having found nothing."""
    return dispatch_once.start(
        client, workflow="gpu.yml", default_branch="main", pr=7, sha=SHA, command="/sweep", requester="carol",
        key=key, bot_login=BOT, ledger=markers.Ledger(), claim_body=lambda marker: marker + "\nclaimed",
        per_sha=per_sha, started_at=NOW, holder="8.1", **extra)


# name: (what the rival wrote first, the request key, once per head, the line the loser logs)
SECOND = {
    "the rival's claim of a comment came first": (markers.claim_marker("c-42", SHA, "rivalnonce00", "7.1", by="alice"),
                                                  "c-42", False, "another handler claimed request c-42 first"),
    # The rival claimed, dispatched and turned its claim into the acknowledgement, all between this
    # handler's full read of the comments (empty) and its own claim: no claim of the key comes before
    # this one's any more, but the request is answered, and a second acknowledgement must not appear.
    "the rival already answered the label at this head": (markers.ack_marker("label-sweep-enabled", SHA) + "\ndispatched",
                                                          "label-sweep-enabled", True,
                                                          "another handler answered request label-sweep-enabled first"),
}


@pytest.mark.parametrize("case", list(SECOND))
def test_the_second_handler_of_a_request_stays_silent_and_deletes_its_claim(case):
    rival, key, per_sha, line = SECOND[case]
    client = RacingComments(rival)
    out = _start(client, key, per_sha=per_sha)
    assert out.lost and out.run is None and not out.dispatched_now
    assert any(line in entry for entry in out.log)
    assert [c.body for c in client.comments] == [rival]  # only the rival's comment is left
    assert client.dispatched == []


def test_an_answer_for_another_head_does_not_stop_a_label_claim_at_this_head():
    # a label runs once per head: the acknowledgement of an earlier head leaves this head's claim standing
    client = RacingComments(markers.ack_marker("label-sweep-enabled", "f" * 40) + "\ndispatched")
    client.dispatch_workflow = lambda *a, **k: (_ for _ in ()).throw(RuntimeError("reached dispatch"))
    with pytest.raises(RuntimeError, match="reached dispatch"):
        _start(client, "label-sweep-enabled", per_sha=True, runs=lambda: [], recheck_head=False)
