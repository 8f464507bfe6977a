"""`recipe-bot handle`: one GitHub event in, decisions made, GPU runs dispatched, one reply out."""
from __future__ import annotations

import datetime as dt
import json
import sys
from collections.abc import Callable

import click

from bot.core.messages import msg, Refusal
from bot.core.cli_guard import HELP_OPTIONS
from bot.control import approvals as approval_sources
from bot.core import commands
from bot.control import (
    budget, dispatch, dispatch_once, gate_events, github_failures, planner_approval, pr_actions, runner_approval,
)
from bot.core import markers
from bot.checklist import hooks as checklist_hooks
from bot.control.client import ControlClient
from bot.core.commands import Command, CommandError
from bot.control.reply import Reply
from bot.core.config import ConfigError
from bot.core.events import CommentEvent, EventError, Ignored, Pull, PullRequestEvent, parse_event
from bot.core.github import GitHubClient, GitHubError
from bot.core.markers import foreign_edits
from bot.core.settings import setting
from bot.control.trust import Actor, Approval, Permission
from bot.control.handler import FALLBACK_BOT_LOGIN, Handler, Outcome  # noqa: F401  (callers' names)


def handle_comment(h: Handler, event: CommentEvent) -> None:
    checklist_hooks.on_comment(h, event)  # a PR_REVIEW_CHECKLIST sign-off, created or edited
    parsed = commands.parse_comment(event.body)
    if parsed.empty:
        h.log("no command in the comment")
        return
    # the PR's head is needed next (the claim records it): read with the config in one request
    needs_pull = event.on_pull and bool(parsed.commands) and event.pull is None
    if error := h.load_config(pull_number=event.number if needs_pull else None):
        _reply_config_error(h, event.number, event.key, event.body, error)
        return
    bot = h.bot_login()
    if bot in (event.author, event.sender):
        h.log("the bot's own comment")
        return
    if event.edited and not h.config.allow_edits:
        h.log("edited comments are not read (allow_edits: false)")
        return
    body_digest = markers.digest(event.body)
    reply = Reply(markers=[markers.reply_marker(event.key, body_digest)])
    pull = dispatch_once.claim_comment(h, event, parsed, reply)
    if reply.silent:
        return
    taken = h.state.taken
    ledger = taken.ledger if taken is not None else markers.read_ledger(h.state.comments, bot)
    h.state.use_ledger(ledger)
    for line in foreign_edits(h.state.comments, bot):
        h.log(line)
    if ledger.replied(event.key, body_digest):
        h.log(f"comment {event.key} was already handled")
        dispatch_once.drop_claim(h)
        return
    if ledger.acked(event.key):
        # An edit of a comment that started a run: say so once, never start a second run.
        h.log(f"comment {event.key} already started a run; the edit starts nothing")
        reply.add("already-started", sha=sorted(ledger.acks[event.key])[0])
        h.post(event.number, reply)
        return
    if not event.on_pull:
        first = (parsed.commands[0].normalized() if parsed.commands else parsed.errors[0].text)
        reply.refuse("not-a-pull", command=first)
        h.post(event.number, reply, event.comment_id)
        return
    for error in parsed.errors:
        _error_section(reply, error)
    if parsed.commands:
        pull = pull or event.pull or h.pull(event.number)
        _run_commands(h, event, parsed.commands, pull, ledger, reply)
    h.post(event.number, reply, event.comment_id)


def _run_commands(h: Handler, event: CommentEvent, parsed: tuple[Command, ...], pull: Pull,
                  ledger: markers.Ledger, reply: Reply) -> None:
    approvals = list(ledger.approvals)
    gpu_commands = 0
    for command in commands.ordered(parsed):
        line = command.normalized()
        if command.spec.starts_gpu_work:
            gpu_commands += 1
            if gpu_commands > 1:  # one comment, one run: the idempotency key is the comment
                reply.refuse("one-gpu-command", command=line)
                continue
        # A /rerun is judged as the command it restarts: that command's permission, scope and limits.
        starts = h.command_that_starts(command, pull) if command.spec.starts_gpu_work else command
        if starts is None:
            reply.refuse("no-previous", command=line)
            continue
        failed_only = command.name == "rerun" and command.failed
        needed = max(h.min_permission(command.name), h.min_permission(starts.name))
        actor = h.actor(event.sender, needed=needed) if needed > Permission.NONE or \
            command.spec.starts_gpu_work else Actor(event.sender, Permission.NONE)
        h.state.decide_request(event.key)
        decision = h.decide(command, actor, pull, approvals)
        if decision.allowed and starts is not command:
            decision = h.decide(starts, actor, pull, approvals, failed_only=failed_only)
        if decision.allowed and event.edited and event.author != event.sender:
            author = h.actor(event.author, needed=needed)
            decision = approval_sources.edited_by_other(
                event.author, event.sender, h.decide(starts, author, pull, approvals, failed_only=failed_only)
            ) or decision
        if not decision.allowed:
            h.refusal(reply, line, decision, login=event.sender, pull=pull)
            continue
        ACTIONS[command.name](h, reply, command, actor, pull, approvals, event.key)


def _error_section(reply: Reply, error: CommandError) -> None:
    reply.mark_refused()
    if error.usage is None:
        reply.add("unknown", text=error.text, suggestion=error.suggestion)
    else:
        reply.add("usage", text=error.text, message=error.message, usage=error.usage, verb=error.name)


def _gpu(h: Handler, reply: Reply, command: Command, actor: Actor, pull: Pull,
         approvals: list[Approval], key: str) -> None:
    line = command.normalized()
    if command.name == "rerun" and command.failed:
        pr_actions.rerun_failed(h, reply, line, actor, pull, over_budget=budget.rerun_over_budget)
        return
    starts = h.command_that_starts(command, pull) or command  # _run_commands refused a /rerun of nothing
    if gate_events.refuse_unknown_recipes(h, reply, starts, pull):
        return
    h.start_run(reply, pull=pull, command_line=starts.normalized(), requester=actor.login, key=key,
                approval_needed=h.approval_needed(pull, actor),
                recheck=lambda: h.decide(starts, actor, pull, approvals))


ACTIONS: dict[str, Callable[..., None]] = {
    "sweep": _gpu, "e2e": _gpu, "rerun": _gpu, "cancel": pr_actions.cancel, "ok-to-test": pr_actions.ok_to_test,
    "status": pr_actions.status, "help": pr_actions.help_reply, "accept-regression": gate_events.accept_regression,
    "baseline": gate_events.baseline, "reuse": gate_events.reuse_run, "approve-budget": budget.approve,
    "approve-runners": runner_approval.approve, "approve-planner": planner_approval.approve,
}


def _reply_config_error(h: Handler, number: int, key: str, text: str, error: ConfigError) -> None:
    """Nothing runs on a broken config, and the people asking are told why (once)."""
    bot = h.config.bot_login or h.bot_login()
    ledger = markers.read_ledger(h.client.list_issue_comments(number), bot)
    body_digest = markers.digest(text)
    if ledger.replied(key, body_digest):
        return
    reply = Reply(markers=[markers.reply_marker(key, body_digest)], refused=True)
    reply.refuse("config-invalid", error=error.located)
    h.post(number, reply)


# -- pull request events -------------------------------------------------------------------------

CANCEL_ON = {"synchronize": "push", "closed": "closed", "converted_to_draft": "draft"}
# `opened` is left out: GitHub sends a `labeled` event for each label a new PR starts with.
RUN_LABELS_ON = {"labeled", "synchronize", "reopened", "ready_for_review"}


def handle_pull_request(h: Handler, event: PullRequestEvent) -> None:
    if event.action == "synchronize" and _stale_push(h, event):
        return
    checklist_hooks.on_pull_request(h, event)  # every new head SHA gets its sign-off check
    if event.action in gate_events.POST_ON:
        gate_events.on_pull_request(h, event)  # the merge gate's check exists on every head SHA
    if event.action not in CANCEL_ON and event.action not in RUN_LABELS_ON:
        h.log(f"pull_request {event.action}: nothing to do")
        return
    if event.action == "labeled" and event.label is None:
        return
    if error := h.load_config():
        h.log(f"config error: {error}")
        return
    pull = event.pull
    labels = list(pull.labels) if event.action in RUN_LABELS_ON else []
    triggers = commands.label_triggers(h.config, labels, event.label if event.action == "labeled" else None)
    if event.action not in CANCEL_ON and not triggers:
        h.log(f"pull_request {event.action}: no label that starts a run")
        return
    bot = h.bot_login()
    key = markers.request_key(f"{event.action}-{pull.head_sha}")
    body_digest = markers.digest(f"{event.action}@{pull.head_sha}@{event.label or ''}")
    reply = Reply(markers=[markers.reply_marker(key, body_digest)])
    if event.sender == bot:
        triggers = []  # the bot's own label or push never starts a run by itself
    comments = h.client.list_issue_comments(pull.number) if triggers else []
    ledger = markers.read_ledger(comments, bot) if triggers else None
    h.state.read_comments(comments, ledger)
    for line in foreign_edits(comments, bot):
        h.log(line)
    if ledger is not None and ledger.replied(key, body_digest):
        h.log(f"pull_request {event.action} at {pull.head_sha} was already handled")
        triggers = []
    if event.action in CANCEL_ON:
        keep = pull.head_sha if event.action == "synchronize" else None
        cancelled = dispatch.cancel_active(h.client, h.config.gpu_workflow, pull.number, keep_sha=keep,
                                           runs=h.pr_runs(pull.number))
        h.log(f"cancelled {len(cancelled)} superseded run(s)")
        if cancelled:
            reply.add("cancelled", runs=pr_actions.run_rows(cancelled), reason=CANCEL_ON[event.action])
    for label, command in triggers:
        _label_run(h, reply, event, pull, label, command, ledger)
    if reply.sections:
        h.post(pull.number, reply)


def _stale_push(h: Handler, event: PullRequestEvent) -> bool:
    """A synchronize event whose head is no longer the PR's (late, or delivered again): the payload's head
    is not trusted. Only runs for commits other than the live head are cancelled; nothing else moves."""
    live = h.client.get_pull(event.pull.number)
    if live.head_sha == event.pull.head_sha:
        return False
    h.log(f"synchronize for {event.pull.head_sha} is stale: the head is {live.head_sha} now; "
          "only runs for other commits are cancelled")
    if error := h.load_config():
        h.log(f"config error: {error}")
        return True
    cancelled = dispatch.cancel_active(h.client, h.config.gpu_workflow, live.number, keep_sha=live.head_sha,
                                       runs=h.pr_runs(live.number))
    h.log(f"cancelled {len(cancelled)} superseded run(s)")
    return True


def _label_run(h: Handler, reply: Reply, event: PullRequestEvent, pull: Pull, label: str,
               command: Command, ledger: markers.Ledger) -> None:
    key = markers.request_key(f"label-{label}")
    line = command.normalized()
    if ledger.acked(key, pull.head_sha):
        h.log(f"label {label} already ran on {pull.head_sha}")
        return
    actor = h.actor(event.sender, needed=h.min_permission(command.name))
    h.state.decide_request(key, pull.head_sha)
    decision = h.decide(command, actor, pull, ledger.approvals)
    if not decision.allowed:
        h.refusal(reply, line, decision, login=event.sender, pull=pull)
        return
    h.start_run(reply, pull=pull, command_line=line, requester=event.sender, key=key,
                approval_needed=h.approval_needed(pull, actor), label=label,
                recheck=lambda: h.decide(command, actor, pull, ledger.approvals))


# -- entry points --------------------------------------------------------------------------------

def handle_event(event_name: str, payload: object, client: ControlClient,
                 now: dt.datetime | None = None, checkout: str | None = None) -> Outcome:
    """Act on one event; raises EventError for a payload that is not GitHub's shape."""
    clock = now or dt.datetime.now(dt.timezone.utc)

    def for_branch(default_branch: str) -> Handler:  # the events whose default branch is read on the way
        return Handler(client, default_branch, clock)

    if event_name == "workflow_run":  # a GPU run ended: judge the sign-off on its SHA again
        return checklist_hooks.on_workflow_run(for_branch, client.repository, payload).outcome
    if event_name == "merge_group":  # the merge gate on a merge-queue commit (bot/control/gate_events.py)
        return gate_events.on_merge_group(for_branch, payload, client.repository).outcome
    event = parse_event(event_name, payload)
    if isinstance(event, Ignored):
        return Outcome(log=[event.reason])
    if event.repository.lower() != client.repository.lower():
        raise EventError(msg("the event is for %(event_repo)s, but GITHUB_REPOSITORY is %(repo)s",
                             event_repo=event.repository, repo=client.repository))
    h = Handler(client, event.default_branch, clock, checkout)
    try:
        if isinstance(event, CommentEvent):
            handle_comment(h, event)
        else:
            handle_pull_request(h, event)
    except GitHubError as exc:
        github_failures.report(h, event, exc)
    return h.outcome


def _checkout_setting() -> str | None:
    # this IS the edge: the default of handle's --checkout option, read when click parses the command line
    # (click then checks the folder exists, as for the flag)
    folder = setting("CHECKOUT")
    return None if folder is None else str(folder)


@click.command("handle", context_settings=HELP_OPTIONS)
@click.option("--event-name", required=True, help="GITHUB_EVENT_NAME: issue_comment, pull_request, ...")
@click.option("--event-path", required=True, type=click.Path(dir_okay=False),
              help="GITHUB_EVENT_PATH: the webhook payload as JSON.")
@click.option("--dry-run", is_flag=True,
              help="Make no write to GitHub; print each intended write as one JSON object a line.")
@click.option("--checkout", type=click.Path(file_okay=False, exists=True), default=_checkout_setting,
              help="A checkout of the default branch (never a PR's): the config and the estimate's recipes come from "
                   "it (default: RECIPE_BOT_CHECKOUT).")
def handle_cmd(event_name: str, event_path: str, dry_run: bool, checkout: str | None) -> None:
    """Act on one GitHub event (the Actions entry point).

    Reads GITHUB_API_URL, GITHUB_TOKEN and GITHUB_REPOSITORY like any Actions step.
    """
    try:
        with open(event_path, encoding="utf-8") as handle:
            payload = json.load(handle)
    except OSError as exc:
        raise Refusal(msg("%(path)s: cannot read the event: %(reason)s",
                                       path=event_path, reason=exc.strerror)) from None
    except json.JSONDecodeError as exc:
        raise Refusal(msg("%(path)s:%(line)s: the event is not JSON: %(reason)s",
                                       path=event_path, line=exc.lineno, reason=exc.msg)) from None
    except UnicodeDecodeError as exc:
        raise Refusal(msg("%(path)s: the event is not UTF-8 text (byte %(byte)s); GitHub writes UTF-8 JSON",
                                       path=event_path, byte=exc.start)) from None
    try:
        client = GitHubClient.from_env(dry_run=dry_run)
        outcome = handle_event(event_name, payload, client, checkout=checkout)
    except EventError as exc:
        raise Refusal(msg("%(path)s: %(problem)s", path=event_path, problem=exc.args[0])) from None
    except GitHubError as exc:
        raise click.ClickException(str(exc)) from None
    for line in outcome.log:
        click.echo(f"recipe-bot: {line}", err=True)
    click.echo(f"recipe-bot: {client.request_count} GitHub request(s)", err=True)
    if outcome.failed:
        click.echo(f"recipe-bot: {outcome.failed}", err=True)
        sys.exit(1)
