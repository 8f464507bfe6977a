"""The request key in run titles and the claim markers: how a dispatch is found again and who may make it."""
from __future__ import annotations

import datetime as dt

import pytest

from bot.control import dispatch
from bot.core import markers
from bot.core.github import Comment, Run

SHA = "c" * 40
BOT = "recipe-bot[bot]"
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


@pytest.mark.parametrize(("title", "key"), [
    pytest.param(markers.run_title(7, SHA, "alice", "/sweep --conc 4", "1234"), "1234", id="comment-key"),
    pytest.param(markers.run_title(7, SHA, "alice", "/sweep", "label-sweep-enabled"), "label-sweep-enabled",
                 id="label-key"),
    pytest.param(markers.run_title(7, SHA, "alice", "/sweep", ""), "", id="empty-key"),
    pytest.param(f"recipe-bot pr-7 {SHA} by alice: /sweep", "", id="title-from-before-keys"),
])
def test_the_run_title_carries_the_request_key(title, key):
    parsed = markers.parse_run_title(title)
    assert parsed is not None and parsed.key == key
    assert (parsed.pr, parsed.sha, parsed.requester) == (7, SHA, "alice")


def test_a_command_that_looks_like_a_key_stays_the_command():
    parsed = markers.parse_run_title(markers.run_title(7, SHA, "alice", "/sweep [x]: y", "9"))
    assert (parsed.key, parsed.command) == ("9", "/sweep [x]: y")


def comment(cid: int, body: str, user: str = BOT) -> Comment:
    return Comment(cid, user, body, T0 + dt.timedelta(seconds=cid))


def test_the_first_claim_of_a_request_is_the_one_that_counts_and_only_the_bots():
    comments = [
        comment(5, markers.claim_marker("101", SHA, "forged") + "\nhi", user="mallory"),
        comment(9, markers.claim_marker("101", SHA, "late") + "\n⏳"),
        comment(7, markers.claim_marker("101", SHA, "early") + "\n⏳"),
        comment(8, markers.claim_marker("label-x", "d" * 40, "other-head") + "\n⏳"),
        comment(6, "text first\n" + markers.claim_marker("101", SHA, "not-a-header")),
    ]
    ledger = markers.read_ledger(comments, BOT)
    assert [c.nonce for c in ledger.claims["101"]] == ["early", "late"]
    assert ledger.claim("101").comment_id == 7
    assert ledger.claim("label-x", SHA) is None and ledger.claim("label-x", "d" * 40).nonce == "other-head"
    assert not ledger.acked("101")  # a claim is no acknowledgement: the request may still be resumed


def run(rid: int, key: str, minutes: int) -> Run:
    return Run(rid, markers.run_title(7, SHA, "alice", "/sweep", key), "completed", "success",
               T0 + dt.timedelta(minutes=minutes), "", SHA)


def test_the_resumed_requests_own_run_is_no_cooldown():
    runs = [run(1, "100", 1), run(2, "200", 5)]
    assert markers.last_run_by(runs, "alice") == T0 + dt.timedelta(minutes=5)
    assert markers.last_run_by(runs, "alice", exclude_key="200") == T0 + dt.timedelta(minutes=1)
    assert markers.last_run_by(runs, "bob") is None
