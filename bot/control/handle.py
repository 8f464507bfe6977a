"""`recipe-bot handle`: one GitHub event in, decisions made, GPU runs dispatched, one reply out."""
from __future__ import annotations

import dataclasses
import datetime as dt
import json
import sys
from collections.abc import Callable
from typing import Any

import click

from bot import i18n
from bot.cli_guard import HELP_OPTIONS
from bot.control import approvals as approval_sources
from bot.control import budget, commands, dispatch, dispatch_once, gate_events, github_failures, pr_actions, trust
from bot.control import warmup
from bot.checklist import hooks as checklist_hooks
from bot.control.commands import Command, CommandError
from bot.control.reply import Reply
from bot.config import ConfigError, RepoConfig, read_repo_config
from bot.control.events import CommentEvent, EventError, Ignored, Pull, PullRequestEvent, parse_event
from bot.github import GitHubClient, GitHubError
from bot.control.trust import Actor, Approval, Decision, Permission

FALLBACK_BOT_LOGIN = "github-actions[bot]"  # what GITHUB_TOKEN acts as; it may not call GET /user


@dataclasses.dataclass
class Outcome:
    """What one handle did, for the log line and for tests that call handle_event directly."""

    log: list[str] = dataclasses.field(default_factory=list)
    dispatched: list[dict[str, str]] = dataclasses.field(default_factory=list)
    failed: str | None = None


class Handler:
    """The context of one event: the client, the config, the bot's login, the clock."""

    def __init__(self, client: GitHubClient, default_branch: str, now: dt.datetime, checkout: Any = None):
        self.client, self.default_branch, self.now = client, default_branch, now
        self.checkout, self.comments = checkout, []  # the default branch's checkout, if any; the comments read
        self.taken: dispatch_once.Taken | None = None  # the claim written before deciding (comments)
        self.started = dt.datetime.now(dt.timezone.utc)  # the real clock: comments are read back from here
        self.outcome = Outcome()
        self.config: RepoConfig = RepoConfig()
        self._permissions: dict[str, Permission] = {}
        self._author_trusted: dict[str, bool] = {}
        self._runs: list[dispatch.PrRun] | None = None
        self._all_runs: list | None = None
        self._config_read, self._config_error = False, None
        self._review_approvals: list[Approval] | None = None
        self._bot: str | None = None
        self.ledger = dispatch.Ledger()
        self.request_key: str | None = None  # the request being decided (its own run is no cooldown)
        self.warmup: warmup.Warmup | None = None  # a GPU command's imports, made while GitHub answers
        self.checkout_commit: tuple | None = None  # the checkout's verified commit (checkout.verified_commit)

    def log(self, message: str) -> None:
        self.outcome.log.append(message)

    # -- lazy reads: each is asked for only when a decision needs it -------------------------

    def load_config(self) -> ConfigError | None:
        if self._config_read:  # read once per event, whoever asks first
            return self._config_error
        self._config_read, self._config_error = True, None
        try:
            self.config = budget.local_config(self) or read_repo_config(self.client, self.default_branch)
        except ConfigError as exc:
            self.outcome.failed = str(exc)
            self._config_error = exc
            return exc
        return None

    def bot_login(self) -> str:
        if self.config.bot_login:
            return self.config.bot_login
        if self._bot is None:
            try:
                self._bot = self.client.authenticated_login()
            except GitHubError:  # an installation token or GITHUB_TOKEN may not read /user
                self._bot = FALLBACK_BOT_LOGIN
        return self._bot

    def permission(self, login: str) -> Permission:
        if login not in self._permissions:
            self._permissions[login] = Permission.parse(self.client.permission(login))
        return self._permissions[login]

    def actor(self, login: str, *, needed: Permission) -> Actor:
        permission = self.permission(login)
        listed = login in self.config.trusted.users
        if not listed and permission < needed:
            listed = any(self.client.is_team_member(team, login) for team in self.config.trusted.teams)
        return Actor(login, permission, listed)

    def approval_needed(self, pull: Pull, actor: Actor) -> bool:
        """Fork PRs always; same-repo PRs when their author is not trusted (asked only then)."""
        if pull.fork:
            return True
        if pull.author == actor.login:
            return not actor.trusted
        if pull.author not in self._author_trusted:
            self._author_trusted[pull.author] = self.actor(pull.author, needed=Permission.WRITE).trusted
        return not self._author_trusted[pull.author]

    def review_approvals(self, pull: Pull) -> list[Approval]:
        """Maintainers' review "Approve"s on the head commit (read only when an approval is missing)."""
        if self._review_approvals is None:
            needed = self.min_permission("ok-to-test")
            self._review_approvals = approval_sources.from_reviews(
                self.client.list_reviews(pull.number), pull.head_sha,
                lambda login: self.actor(login, needed=needed).has(needed))
        return self._review_approvals

    def all_runs(self) -> list:
        if self._all_runs is None:
            self._all_runs = self.client.list_workflow_runs(self.config.gpu_workflow)
        return self._all_runs

    def pr_runs(self, pr: int) -> list[dispatch.PrRun]:
        return dispatch.pr_runs(self.all_runs(), pr)

    # -- the pieces every path shares --------------------------------------------------------

    def min_permission(self, command: str) -> Permission:
        return Permission.parse(self.config.min_permission(command))

    def decide(self, command: Command, actor: Actor, pull: Pull, approvals: list[Approval]) -> Decision:
        needed = self.min_permission(command.name)
        failed_only = command.name == "rerun" and command.failed
        gpu = command.spec.starts_gpu_work
        author_ok = not self.approval_needed(pull, actor) if gpu and not failed_only else True
        if not author_ok and not approval_sources.covers_head(approvals, pull.head_sha):
            approvals = approvals + self.review_approvals(pull)
        args = dict(actor=actor, pull=pull, author_trusted=author_ok, approvals=approvals,
                    min_permission=needed, failed_only=failed_only)
        decision = trust.decide(command.name, **args)
        if decision.allowed and gpu and not failed_only and not trust.cooldown_exempt(decision) \
                and self.config.cooldown_seconds:
            last = dispatch.last_run_by(self.all_runs(), actor.login, exclude_key=self.request_key)
            decision = trust.decide(command.name, **args, cooldown_s=self.config.cooldown_seconds,
                                    last_run_at=last, now=self.now)
        if decision.allowed and gpu and not failed_only and not actor.trusted and not author_ok:
            limits = self.config.pr_jobs
            runs = sum(1 for r in self.pr_runs(pull.number)
                       if r.title.sha == pull.head_sha and r.title.requester == actor.login)
            decision = approval_sources.limit_refusal(
                command=command.name, scope=command.scope, allowed_scopes=list(limits.scopes),
                runs_per_approval=limits.runs_per_approval, runs_at_head=runs) or decision
        return decision

    def start_run(self, reply: Reply, *, pull: Pull, command_line: str, requester: str, key: str,
                  approval_needed: bool, label: str | None = None, budget_approved: float | None = None) -> None:
        gate = budget.Gate(self, reply, command_line=command_line, pull=pull, key=key, requester=requester,
                           label=label, approved_hours=budget_approved)  # the estimate first (budget.py)

        def claim_body(marker: str) -> str:
            return marker + "\n" + i18n.render_bilingual("control/starting", command=command_line,
                                                          sha=pull.head_sha, requester=requester) + "\n"

        try:
            started = dispatch_once.start(
                self.client, workflow=self.config.gpu_workflow, default_branch=self.default_branch,
                pr=pull.number, sha=pull.head_sha, command=command_line, requester=requester, key=key,
                bot_login=self.bot_login(), ledger=self.ledger, claim_body=claim_body, per_sha=label is not None,
                started_at=self.started, taken=self.taken, before_dispatch=gate)
        except dispatch.HeadMoved as moved:
            if moved.claim_id is not None and moved.claim_id not in reply.claims:
                reply.claims.append(moved.claim_id)
            self.log(f"refused {command_line}: {moved}")
            reply.refuse("head-moved", command=command_line, authorized_sha=moved.authorized_sha,
                         head_sha=moved.head_sha, state=moved.state, approval_needed=approval_needed)
            return
        for line in started.log:
            self.log(line)
        if started.lost:
            reply.silent = True
            return
        if started.claim_id is not None and started.claim_id not in reply.claims:
            reply.claims.append(started.claim_id)
        if started.held:
            return
        run = started.run
        reply.dispatched = True
        reply.markers.append(dispatch.ack_marker(key, pull.head_sha))
        if gate.hours is not None:  # the per-PR-per-day budget sums these
            reply.markers.append(budget.estimates.marker(key, pull.head_sha, gate.hours))
        if not started.dispatched_now:
            self.log(f"request {key} resumed: its run was already started")
        else:
            self.outcome.dispatched.append(dispatch.dispatch_inputs(
                pr=pull.number, sha=pull.head_sha, command=command_line, requester=requester, key=key))
            self.log(f"dispatched {self.config.gpu_workflow} for PR #{pull.number} at {pull.head_sha}: {command_line}")
        reply.add("dispatched", command=command_line, sha=pull.head_sha, requester=requester,
                  run_url=run.html_url, workflow=self.config.gpu_workflow, pr=pull.number, label=label,
                  approval_needed=approval_needed)

    def refusal(self, reply: Reply, command_line: str, decision: Decision, *, login: str, pull: Pull) -> None:
        self.log(f"refused {command_line} for {login}: {decision.reason}")
        context = {"command": command_line, **decision.detail}
        if decision.reason == "permission":
            context.update(login=login, is_author=login == pull.author, head_sha=pull.head_sha)
        elif decision.reason == "cooldown":
            context.update(login=login)
        reply.refuse(decision.reason, **context)

    def post(self, number: int, reply: Reply, comment_id: int | None = None) -> None:
        if reply.silent:
            self.log("another handler of this request replies; this one stays silent")
            return
        if comment_id is not None and not reply.dispatched:  # a started run's reply is its acknowledgement
            self.client.react(comment_id, reply.reaction)
        if not reply.claims:
            for line in dispatch_once.create_reply(self.client, number, reply.render(), self.bot_login(), self.started):
                self.log(line)
            return
        # The reply replaces the claim (an idempotent edit): a delivery after a failure here
        # resumes the claim again, finds the run, and writes the same reply.
        self.client.edit_comment(reply.claims[0], reply.render())
        for extra in reply.claims[1:]:
            self.client.edit_comment(extra, "\n".join(reply.markers) + "\n" + i18n.render_bilingual(
                "control/see-reply", comment_id=reply.claims[0]) + "\n")


# -- comments ------------------------------------------------------------------------------------

def handle_comment(h: Handler, event: CommentEvent) -> None:
    checklist_hooks.on_comment(h, event)  # a PR_REVIEW_CHECKLIST sign-off, created or edited
    parsed = commands.parse_comment(event.body)
    if parsed.empty:
        h.log("no command in the comment")
        return
    if error := h.load_config():
        _reply_config_error(h, event.number, event.key, event.body, error)
        return
    h.warmup = warmup.start_for(parsed.commands, event)  # joined in handle_event
    bot = h.bot_login()
    if bot in (event.author, event.sender):
        h.log("the bot's own comment")
        return
    if event.edited and not h.config.allow_edits:
        h.log("edited comments are not read (allow_edits: false)")
        return
    body_digest = dispatch.digest(event.body)
    reply = Reply(markers=[dispatch.reply_marker(event.key, body_digest)])
    pull = dispatch_once.claim_comment(h, event, parsed, reply)
    if reply.silent:
        return
    ledger = h.ledger = h.taken.ledger if h.taken is not None else dispatch.read_ledger(h.comments, bot)
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
        pull = pull or event.pull or h.client.get_pull(event.number)
        _run_commands(h, event, parsed.commands, pull, ledger, reply)
    h.post(event.number, reply, event.comment_id)


def _run_commands(h: Handler, event: CommentEvent, parsed: tuple[Command, ...], pull: Pull,
                  ledger: dispatch.Ledger, reply: Reply) -> None:
    approvals = list(ledger.approvals)
    gpu_commands = 0
    for command in commands.ordered(parsed):
        line = command.normalized()
        if command.spec.starts_gpu_work:
            gpu_commands += 1
            if gpu_commands > 1:  # one comment, one run: the idempotency key is the comment
                reply.refuse("one-gpu-command", command=line)
                continue
        needed = h.min_permission(command.name)
        actor = h.actor(event.sender, needed=needed) if needed > Permission.NONE or \
            command.spec.starts_gpu_work else Actor(event.sender, Permission.NONE)
        h.request_key = event.key
        decision = h.decide(command, actor, pull, approvals)
        if decision.allowed and event.edited and event.author != event.sender:
            author = h.actor(event.author, needed=needed)
            decision = approval_sources.edited_by_other(
                event.author, event.sender, h.decide(command, author, pull, approvals)) or decision
        if not decision.allowed:
            h.refusal(reply, line, decision, login=event.sender, pull=pull)
            continue
        ACTIONS[command.name](h, reply, command, actor, pull, approvals, event.key)


def _error_section(reply: Reply, error: CommandError) -> None:
    reply.refused = True
    if error.usage is None:
        reply.add("unknown", text=error.text, suggestion=error.suggestion)
    else:
        reply.add("usage", text=error.text, message=error.message, usage=error.usage, verb=error.name)


def _gpu(h: Handler, reply: Reply, command: Command, actor: Actor, pull: Pull,
         approvals: list[Approval], key: str) -> None:
    line = command.normalized()
    if command.name == "rerun" and command.failed:
        pr_actions.rerun_failed(h, reply, line, actor, pull)
        return
    if command.name == "rerun":
        previous = next(iter(h.pr_runs(pull.number)), None)
        if previous is None:
            reply.refuse("no-previous", command=line)
            return
        line = previous.title.command
    if gate_events.refuse_unknown_recipes(h, reply, command, pull):
        return
    h.start_run(reply, pull=pull, command_line=line, requester=actor.login, key=key,
                approval_needed=h.approval_needed(pull, actor))


ACTIONS: dict[str, Callable[..., None]] = {
    "sweep": _gpu, "e2e": _gpu, "rerun": _gpu, "cancel": pr_actions.cancel, "ok-to-test": pr_actions.ok_to_test,
    "status": pr_actions.status, "help": pr_actions.help_reply, "accept-regression": gate_events.accept_regression,
    "baseline": gate_events.baseline, "reuse": gate_events.reuse_run, "approve-budget": budget.approve,
}


def _reply_config_error(h: Handler, number: int, key: str, text: str, error: ConfigError) -> None:
    """Nothing runs on a broken config, and the people asking are told why (once)."""
    bot = h.config.bot_login or h.bot_login()
    ledger = dispatch.read_ledger(h.client.list_issue_comments(number), bot)
    body_digest = dispatch.digest(text)
    if ledger.replied(key, body_digest):
        return
    reply = Reply(markers=[dispatch.reply_marker(key, body_digest)], refused=True)
    reply.refuse("config-invalid", error=str(error))
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
    key = dispatch.request_key(f"{event.action}-{pull.head_sha}")
    body_digest = dispatch.digest(f"{event.action}@{pull.head_sha}@{event.label or ''}")
    reply = Reply(markers=[dispatch.reply_marker(key, body_digest)])
    if event.sender == bot:
        triggers = []  # the bot's own label or push never starts a run by itself
    h.comments = h.client.list_issue_comments(pull.number) if triggers else []
    ledger = dispatch.read_ledger(h.comments, bot) if triggers else None
    h.ledger = ledger or h.ledger
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
               command: Command, ledger: dispatch.Ledger) -> None:
    key = dispatch.request_key(f"label-{label}")
    line = command.normalized()
    if ledger.acked(key, pull.head_sha):
        h.log(f"label {label} already ran on {pull.head_sha}")
        return
    actor = h.actor(event.sender, needed=h.min_permission(command.name))
    h.request_key = key
    decision = h.decide(command, actor, pull, ledger.approvals)
    if not decision.allowed:
        h.refusal(reply, line, decision, login=event.sender, pull=pull)
        return
    h.start_run(reply, pull=pull, command_line=line, requester=event.sender, key=key,
                approval_needed=h.approval_needed(pull, actor), label=label)


# -- entry points --------------------------------------------------------------------------------

def handle_event(event_name: str, payload: Any, client: GitHubClient,
                 now: dt.datetime | None = None, checkout: Any = None) -> Outcome:
    """Act on one event; raises EventError for a payload that is not GitHub's shape."""
    if event_name == "workflow_run":  # a GPU run ended: judge the sign-off on its SHA again
        return checklist_hooks.on_workflow_run(Handler, client, payload, now).outcome
    if event_name == "merge_group":  # the merge gate on a merge-queue commit (bot/control/gate_events.py)
        return gate_events.on_merge_group(Handler, payload, client, now)
    event = parse_event(event_name, payload)
    if isinstance(event, Ignored):
        return Outcome(log=[event.reason])
    if event.repository.lower() != client.repository.lower():
        raise EventError(f"the event is for {event.repository}, but GITHUB_REPOSITORY is {client.repository}")
    h = Handler(client, event.default_branch, now or dt.datetime.now(dt.timezone.utc), checkout)
    try:
        if isinstance(event, CommentEvent):
            handle_comment(h, event)
        else:
            handle_pull_request(h, event)
    except GitHubError as exc:
        github_failures.report(h, event, exc)
    finally:
        if h.warmup is not None:
            h.warmup.join()
    return h.outcome


@click.command("handle", context_settings=HELP_OPTIONS)
@click.option("--event-name", required=True, help="GITHUB_EVENT_NAME: issue_comment, pull_request, ...")
@click.option("--event-path", required=True, type=click.Path(dir_okay=False),
              help="GITHUB_EVENT_PATH: the webhook payload as JSON.")
@click.option("--dry-run", is_flag=True,
              help="Make no write to GitHub; print each intended write as one JSON object a line.")
@click.option("--checkout", type=click.Path(file_okay=False, exists=True), envvar="RECIPE_BOT_CHECKOUT",
              help="A checkout of the default branch (never a PR's): the config and the estimate's recipes come from it.")
def handle_cmd(event_name: str, event_path: str, dry_run: bool, checkout: str | None) -> None:
    """Act on one GitHub event (the Actions entry point).

    Reads GITHUB_API_URL, GITHUB_TOKEN and GITHUB_REPOSITORY like any Actions step.
    """
    try:
        with open(event_path, encoding="utf-8") as handle:
            payload = json.load(handle)
    except OSError as exc:
        raise click.ClickException(f"{event_path}: cannot read the event: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise click.ClickException(f"{event_path}:{exc.lineno}: the event is not JSON: {exc.msg}") from None
    except UnicodeDecodeError as exc:
        raise click.ClickException(f"{event_path}: the event is not UTF-8 text (byte {exc.start}); GitHub writes "
                                   f"UTF-8 JSON\n错误：{event_path}：事件文件不是 UTF-8 文本（第 {exc.start} 字节）；"
                                   "GitHub 写出的事件是 UTF-8 编码的 JSON") from None
    try:
        client = GitHubClient.from_env(dry_run=dry_run)
        outcome = handle_event(event_name, payload, client, checkout=checkout)
    except EventError as exc:
        raise click.ClickException(f"{event_path}: {exc}") from None
    except GitHubError as exc:
        raise click.ClickException(str(exc)) from None
    for line in outcome.log:
        click.echo(f"recipe-bot: {line}", err=True)
    click.echo(f"recipe-bot: {client.request_count} GitHub request(s)", err=True)
    if outcome.failed:
        click.echo(f"recipe-bot: {outcome.failed}", err=True)
        sys.exit(1)
