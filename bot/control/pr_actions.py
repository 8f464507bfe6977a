"""The commands that start no GPU work: `/rerun failed`, `/cancel`, `/ok-to-test`, `/status`, `/help`.

Each takes the event's Handler and the Reply it builds (bot/control/handler.py, bot/control/reply.py)."""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bot.core import failure_classes
from bot.core import commands
from bot.control import dispatch, queue_view, trust
from bot.core import markers
from bot.core.commands import Command
from bot.core.events import Pull
from bot.control.trust import Actor
from bot.core.markers import Approval
from bot.core.markers import written_by

if TYPE_CHECKING:  # the handler imports this module; these are its annotations only
    from bot.control.handler import Handler
    from bot.control.reply import Reply


def rerun_failed(h: Handler, reply: Reply, line: str, actor: Actor, pull: Pull,
                 over_budget: Callable[[Handler, Reply, str, markers.PrRun, Pull], bool] = lambda *_: False) -> None:
    """`over_budget(h, reply, line, latest, pull)`: whether starting the run's jobs again is over the budget
    (bot/control/budget.py: the reply then says why)."""
    latest = markers.latest_for_head(h.pr_runs(pull.number), pull.head_sha)
    if latest is None:
        reply.refuse("no-run", command=line, head_sha=pull.head_sha)
    elif latest.run.active:
        reply.refuse("run-active", command=line, run_url=latest.run.html_url)
    elif latest.run.conclusion in ("success", "skipped", "neutral"):
        reply.add("nothing-failed", command=line, run_url=latest.run.html_url)
    elif not over_budget(h, reply, line, latest, pull):
        h.client.rerun_failed_jobs(latest.run.id)
        h.log(f"rerun failed jobs of run {latest.run.id}")
        reply.add("rerun", run_url=latest.run.html_url, sha=pull.head_sha, requester=actor.login)


def cancel(h: Handler, reply: Reply, command: Command, actor: Actor, pull: Pull,
           approvals: list[Approval], key: str) -> None:
    cancelled = dispatch.cancel_active(h.client, h.config.gpu_workflow, pull.number,
                                       runs=h.pr_runs(pull.number))
    h.log(f"cancelled {len(cancelled)} run(s)")
    reply.add("cancelled", runs=run_rows(cancelled), reason="cancel")


def ok_to_test(h: Handler, reply: Reply, command: Command, actor: Actor, pull: Pull,
               approvals: list[Approval], key: str) -> None:
    check = trust.check_ok_to_test(command.sha_prefix or "", pull)
    if not check.allowed:
        h.refusal(reply, command.normalized(), check, login=actor.login, pull=pull)
        return
    approvals.append(Approval(pull.head_sha, actor.login))
    reply.markers.append(markers.approval_marker(pull.head_sha, actor.login))
    h.log(f"{actor.login} approved {pull.head_sha}")
    reply.add("approved", sha=pull.head_sha, by=actor.login)


def status(h: Handler, reply: Reply, command: Command, actor: Actor, pull: Pull,
           approvals: list[Approval], key: str) -> None:
    # Infrastructure failures per runner host, as the bot's own report comments recorded them.
    bot = h.bot_login()
    infra = failure_classes.merged_record(c.body for c in h.client.list_issue_comments(pull.number)
                                          if written_by(c, bot))
    runs = h.pr_runs(pull.number)
    reply.add("status", runs=run_rows(runs[:20]), infra=list(infra.items()),
              **queue_view.read(h.client, runs, h.now, h.log))


def help_reply(h: Handler, reply: Reply, command: Command, actor: Actor, pull: Pull,
               approvals: list[Approval], key: str) -> None:
    reply.add("help", rows=commands.help_rows(dict(h.config.permissions)), topic=command.topic,
              labels=sorted(h.config.labels.items()), head_sha=pull.head_sha)


def run_rows(runs: list[markers.PrRun]) -> list[dict[str, Any]]:
    return [{"command": r.title.command, "sha": r.title.sha, "requester": r.title.requester,
             "status": r.run.status, "conclusion": r.run.conclusion, "url": r.run.html_url} for r in runs]
