"""A claim left by another handler: waited for while its Actions run works, resumed once the run is over."""
from __future__ import annotations

from bot.core import markers
from handle_helpers import BOT


def test_a_claim_is_resumed_only_after_the_run_that_wrote_it_is_over(h):
    head = h.head(7)
    comment_id = h.comment(7, "carol", "/sweep")
    holder = h.sb.add_run("recipe-bot.yml", event="issue_comment", status="in_progress", conclusion=None)
    claim = markers.claim_marker(str(comment_id), head, "n1", f"{holder['id']}.1")
    claim_id = h.comment(7, BOT, claim + "\n⏳ starting")
    event = h.event_file("issue_comment", "created", comment_id=comment_id)

    waiting = h.handle("issue_comment", "created", path=event)  # a redelivery while the holder works
    assert h.dispatches() == []
    assert f"being handled by run {holder['id']}.1" in waiting.stderr
    assert [c["id"] for c in h.bot_comments(7)] == [claim_id]  # and it says nothing: the holder replies

    h.sb.set_run(holder["id"], conclusion="failure")  # the holder's job died before dispatching
    h.handle("issue_comment", "created", path=event)
    [run] = h.dispatches()
    assert markers.parse_run_title(run["display_title"]).key == str(comment_id)
    [reply] = h.bot_comments(7)
    assert reply["id"] == claim_id and f"<!-- recipe-bot:ack comment={comment_id} sha={head} -->" in reply["body"]
    assert "recipe-bot:claim" not in reply["body"]

    h.handle("issue_comment", "created", path=event)  # and any later delivery starts nothing
    assert len(h.dispatches()) == 1 and len(h.bot_comments(7)) == 1
