"""Where approvals come from besides `/ok-to-test`, and whose rights an edited comment runs with."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from bot.core.markers import Approval
from bot.control import trust
from bot.control.trust import Decision
from bot.core.github import Review

if TYPE_CHECKING:  # the handler imports this module; these are its annotations only
    from bot.control.handler import Handler
    from bot.control.reply import Reply
    from bot.core.commands import Command
    from bot.core.events import Pull


def from_reviews(reviews: Iterable[Review], head_sha: str, may_approve: Callable[[str], bool]) -> list[Approval]:
    """A review "Approve" on the head commit counts as `/ok-to-test <head>` by its reviewer.

    GitHub binds a review to the commit that was the head when it was submitted (commit_id), so an
    approval of an older commit never carries over to a push; only reviewers who may approve count.
    """
    out = []
    for review in reviews:
        if review.state == "APPROVED" and review.commit_id == head_sha and may_approve(review.user):
            out.append(Approval(head_sha, review.user))
    return out


def covers_head(approvals: Iterable[Approval], head_sha: str) -> bool:
    return any(a.sha == head_sha for a in approvals)


def edited_by_other(author: str, editor: str, by_author: Decision) -> Decision | None:
    """An edit runs a command only if the comment's author may run it too (the editor was checked).

    Otherwise a moderator's edit of someone's refused command would run it with the moderator's
    rights. None: the author may, so the editor's decision stands.
    """
    if by_author.allowed:
        return None
    return Decision.refuse("edited-by-other", author=author, editor=editor, author_reason=by_author.reason)


def limit_refusal(*, command: str, scope: str | None, allowed_scopes: list[str], runs_per_approval: int,
                  runs_at_head: int) -> Decision | None:
    """What one approval allows someone who needs it: the scopes and the number of runs in the config.

    Asked only for GPU work by someone below the trusted level on a PR that needs an approval; None
    when the command stays within the limits.
    """
    wanted = scope or "full"  # `/sweep` without --scope plans every point
    if command == "sweep" and wanted not in allowed_scopes:
        return Decision.refuse("approval-limit", limit="scope", scope=wanted, allowed=", ".join(allowed_scopes))
    if runs_per_approval and runs_at_head >= runs_per_approval:
        return Decision.refuse("approval-limit", limit="runs", runs=runs_at_head, allowed=str(runs_per_approval))
    return None


def names_the_head(h: Handler, reply: Reply, command: Command, pull: Pull, stale: str) -> bool:
    """An approval command (`/approve-runners`, `/approve-planner`, `/approve-budget`) holds for exactly the
    head it names by its full SHA; any other value is refused with the reply section `stale`, and nothing is
    recorded."""
    given = command.sha_prefix or ""
    if trust.check_ok_to_test(given, pull).allowed:
        return True
    reply.mark_refused()
    reply.add(stale, given=given, head_sha=pull.head_sha)
    h.log(f"refused /{command.name} {given}: the head is {pull.head_sha}")
    return False
