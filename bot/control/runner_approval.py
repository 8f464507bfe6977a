"""`/approve-runners <sha>`: the code owner of configs/runners.yaml lets the rows on the labels a head adds run.

A PR's own files never choose where its code runs, so the plan holds the rows on a runner label the PR
adds to `configs/runners.yaml` (bot/plan/held.py). Only someone entitled to change that file may let them
run: its code owner by the default branch's CODEOWNERS (with write permission, as GitHub requires of an
owner), or, where CODEOWNERS names nobody for it, an admin or maintain collaborator by live permission.
The approval names the full head SHA and is recorded in the bot's own ledger (a `runners-approved`
marker: only the bot's unedited comments count); a push leaves it on the old commit. Runs started at that
commit afterwards pass the approved labels to the GPU workflow (`runner_labels`, then the plan's
`--approved-runner-labels`).
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from bot.control import approvals as approvals_of, checkout
from bot.control.trust import Actor, Decision, Permission
from bot.core import codeowners, markers
from bot.core.markers import RunnerApproval
from bot.plan.held import RUNNERS_YAML, runner_labels
from bot.recipes.sources import SourceError

if TYPE_CHECKING:  # the handler imports this module; these are its annotations only
    from bot.control.handler import Handler
    from bot.control.reply import Reply
    from bot.core.commands import Command
    from bot.core.events import Pull
    from bot.core.markers import Approval

# What a label may be to travel in a marker and a workflow input; any other stays held.
_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/+-]{0,99}$")


def entitled(actor: Actor, owners: tuple[str, ...], member_of: Callable[[str], bool],
             refusal: str = "runners-owner") -> Decision:
    """May `actor` approve what a file's code owners approve (pure but for `member_of(team)`, asked only when
    needed)? Shared by `/approve-runners` and `/approve-planner` (bot/control/planner_approval.py).

    `owners`: the code owners of the file on the default branch (as written); none: an admin or maintainer
    may. A code owner needs write permission too; the trusted list never stands in for it."""
    if owners:
        named = actor.login.lower() in codeowners.users_in(owners) or any(
            member_of(team) for team in codeowners.teams_in(owners))
        if named and actor.permission >= Permission.WRITE:
            return Decision.allow("code-owner")
        return Decision.refuse(refusal, owners=", ".join(owners), have=str(actor.permission))
    if actor.permission >= Permission.MAINTAIN:
        return Decision.allow("maintainer")
    return Decision.refuse(refusal, owners="", have=str(actor.permission))


def default_codeowners(h: Handler) -> tuple[codeowners.Owners | None, str]:
    """The default branch's CODEOWNERS (the first of GitHub's locations that exists) and its path; None
    where there is none, or where it cannot be read (then only an admin or maintainer may approve)."""
    for location in codeowners.LOCATIONS:
        text = h.client.get_text(location, ref=h.default_branch)
        if text is None:
            continue
        try:
            return codeowners.parse_codeowners(text, location), location
        except codeowners.CodeownersError as exc:
            h.log(f"{location} on {h.default_branch} cannot be read ({exc}); only an admin or maintainer may approve")
            return None, ""
    return None, ""


def owners_of(rules: codeowners.Owners | None, location: str, path: str) -> tuple[tuple[str, ...], str]:
    """The owners of `path` by those rules, and the line that names them ("" where none does)."""
    if rules is None:
        return (), ""
    owners, line = rules.of(path)
    return owners, f"{location}:{line}" if owners else ""


def owners_on_default_branch(h: Handler, path: str = RUNNERS_YAML) -> tuple[tuple[str, ...], str]:
    """The owners of `path` by the default branch's CODEOWNERS and where that was decided."""
    return owners_of(*default_codeowners(h), path)


def added_labels(h: Handler, pull: Pull) -> tuple[str, ...]:
    """The labels the head's configs/runners.yaml lists and its merge-base's does not (as the plan reads them)."""
    try:
        head, base = checkout.sources(h, pull)
        labels = runner_labels(head) - runner_labels(base)
    except SourceError as exc:
        h.log(f"configs/runners.yaml cannot be read at {pull.head_sha}: {exc}")
        return ()
    return tuple(sorted(label for label in labels if _LABEL.match(label)))


def approve(h: Handler, reply: Reply, command: Command, actor: Actor, pull: Pull, approvals: list[Approval],
            key: str) -> None:
    """`/approve-runners <sha>`: record the approval of the labels the head adds, for exactly that head."""
    if not approvals_of.names_the_head(h, reply, command, pull, "runners-stale"):
        return
    owners, source = owners_on_default_branch(h)
    decision = entitled(actor, owners, lambda team: h.client.is_team_member(team, actor.login))
    if not decision.allowed:
        reply.mark_refused()
        reply.add("runners-not-owner", login=actor.login, source=source, file=RUNNERS_YAML, **decision.detail)
        h.log(f"refused /approve-runners for {actor.login}: not a code owner of {RUNNERS_YAML} "
              f"({', '.join(owners) or 'admin or maintain needed'})")
        return
    labels = added_labels(h, pull)
    if not labels:
        reply.add("runners-nothing", sha=pull.head_sha, file=RUNNERS_YAML)
        h.log(f"/approve-runners {pull.head_sha}: the head adds no runner label")
        return
    h.state.ledger.runner_approvals.append(RunnerApproval(pull.head_sha, actor.login, labels))
    reply.markers.append(markers.runners_marker(pull.head_sha, actor.login, labels))
    reply.add("runners-approved", by=actor.login, sha=pull.head_sha, labels=list(labels), file=RUNNERS_YAML)
    h.log(f"{actor.login} approved runner label(s) {', '.join(labels)} for {pull.head_sha}")
