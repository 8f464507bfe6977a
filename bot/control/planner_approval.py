"""`/approve-planner <sha> --max-gpu-hours N`: the code owners of the InferenceX planner files a head changes let that head's planner plan.

A PR that changes InferenceX's own planner (the processor, the generator or a file they import) has its
InferenceX rows held (bot/plan/own_planner.py): the head's tools are PR code, and what they print decides
what runs on whose GPUs. Only someone entitled to change every one of those files may let them plan: for
each file its code owner by the default branch's CODEOWNERS (with write permission), or, for a file
CODEOWNERS names nobody for, an admin or maintain collaborator. The approval names the full head SHA and
the GPU-hours the rows may use; it is recorded in the bot's own ledger (a `planner-approved` marker:
only the bot's unedited comments count) and a push leaves it on the old commit. Runs started at that
commit afterwards pass it to the GPU workflow (`planner_sha`, `planner_max_gpu_hours`, then the plan's
`--approved-planner`, `--planner-max-gpu-hours`), whose plan job runs the head's planner sandboxed.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from bot.control import approvals as approvals_of, checkout
from bot.control.runner_approval import default_codeowners, entitled, owners_of
from bot.core import markers
from bot.core.markers import PlannerApproval
from bot.inferencex.own_tools import changed_tool_files
from bot.recipes.sources import SourceError

if TYPE_CHECKING:  # the handler imports this module; these are its annotations only
    from bot.control.handler import Handler
    from bot.control.reply import Reply
    from bot.control.trust import Actor
    from bot.core.commands import Command
    from bot.core.events import Pull
    from bot.core.markers import Approval


def changed_planner_files(h: Handler, pull: Pull) -> tuple[str, ...]:
    """The planner files the head changes against its merge-base (as the plan reads them)."""
    try:
        head, base = checkout.sources(h, pull)
        return tuple(changed_tool_files(base, head))
    except SourceError as exc:
        h.log(f"InferenceX's planner files cannot be read at {pull.head_sha}: {exc}")
        return ()


def approve(h: Handler, reply: Reply, command: Command, actor: Actor, pull: Pull, approvals: list[Approval],
            key: str) -> None:
    """`/approve-planner <sha> --max-gpu-hours N`: record the approval of the head's own planner, for exactly
    that head, when the actor is entitled for every planner file it changes."""
    if not approvals_of.names_the_head(h, reply, command, pull, "planner-stale"):
        return
    files = changed_planner_files(h, pull)
    if not files:
        reply.add("planner-nothing", sha=pull.head_sha)
        h.log(f"/approve-planner {pull.head_sha}: the head changes no InferenceX planner file")
        return
    rules, location = default_codeowners(h)
    for path in files:
        owners, source = owners_of(rules, location, path)
        decision = entitled(actor, owners, lambda team: h.client.is_team_member(team, actor.login), "planner-owner")
        if not decision.allowed:
            reply.mark_refused()
            reply.add("planner-not-owner", login=actor.login, source=source, file=path, **decision.detail)
            h.log(f"refused /approve-planner for {actor.login}: not a code owner of {path} "
                  f"({', '.join(owners) or 'admin or maintain needed'})")
            return
    hours = float(command.max_gpu_hours)
    h.state.ledger.planner_approvals.append(PlannerApproval(pull.head_sha, actor.login, hours, files))
    reply.markers.append(markers.planner_marker(pull.head_sha, actor.login, hours, files))
    reply.add("planner-approved", by=actor.login, sha=pull.head_sha, files=list(files), max_gpu_hours=f"{hours:g}")
    h.log(f"{actor.login} approved the planner of {pull.head_sha} ({', '.join(files)}) for {hours:g} GPU-hours")
