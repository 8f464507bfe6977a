"""The context of one event (`Handler`): the client, the config, the bot's login, the clock, and the
decisions every event handler asks of it (permissions, approvals, runs, starting a GPU run, the reply)."""
from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from bot.core import i18n
from bot.control import approvals as approval_sources
from bot.control import budget, dispatch_once, trust
from bot.core import markers
from bot.core.stage_markers import estimate_marker
from bot.control import limits
from bot.control.client import ControlClient
from bot.core.commands import Command
from bot.control.context import Outcome, RequestState
from bot.control.reply import Reply
from bot.core.config import CONFIG_PATH, ConfigError, RepoConfig, config_from_text, read_repo_config
from bot.core.events import Pull
from bot.core.github import GitHubError, Run
from bot.control.trust import Actor, Approval, Decision, Permission

FALLBACK_BOT_LOGIN = "github-actions[bot]"  # what GITHUB_TOKEN acts as; it may not call GET /user


class Handler:
    """The context of one event: the client, the config, the bot's login, the clock, and `state`, what
    deciding the request has learnt so far (bot/control/context.py)."""

    def __init__(self, client: ControlClient, default_branch: str, now: dt.datetime,
                 checkout: str | None = None, state: RequestState | None = None):
        self.client, self.default_branch, self.now = client, default_branch, now
        self.checkout = checkout  # the default branch's checkout, if any (never a PR's)
        self.state = state if state is not None else RequestState()
        self.started = dt.datetime.now(dt.timezone.utc)  # the real clock: comments are read back from here
        self.outcome = Outcome()
        self.config: RepoConfig = RepoConfig()
        self._permissions: dict[str, Permission] = {}
        self._author_trusted: dict[str, bool] = {}
        self._all_runs: list[Run] | None = None
        self._config_read = False
        self._config_error: ConfigError | None = None
        self._review_approvals: list[Approval] | None = None
        self._pulls: dict[int, Pull] = {}
        self._bot: str | None = None
        # Claim-then-check (bot/control/limits.py): runs listed before the claim are listed again after it.
        self._runs_after_claim = False

    def log(self, message: str) -> None:
        self.outcome.log.append(message)

    # -- lazy reads: each is asked for only when a decision needs it -------------------------

    def load_config(self, pull_number: int | None = None) -> ConfigError | None:
        """The default branch's config, read once per event; `pull_number`: the PR the event needs next, read in
        the same request when the config comes through the API (see pull())."""
        if self._config_read:  # read once per event, whoever asks first
            return self._config_error
        self._config_read, self._config_error = True, None
        try:
            self.config = budget.local_config(self) or self._config_through_api(pull_number)
        except ConfigError as exc:
            self.outcome.fail(str(exc))
            self._config_error = exc
            return exc
        return None

    def _config_through_api(self, pull_number: int | None) -> RepoConfig:
        if pull_number is None:
            return read_repo_config(self.client, self.default_branch)
        pull, text = self.client.get_pull_and_text(pull_number, CONFIG_PATH, self.default_branch)
        self._pulls[pull_number] = pull
        return config_from_text(text, self.default_branch)

    def pull(self, number: int) -> Pull:
        """The PR as this event read it (with the config, or now): one live read per event, as the head SHA
        that is authorized and dispatched is this read's."""
        if number not in self._pulls:
            self._pulls[number] = self.client.get_pull(number)
        return self._pulls[number]

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

    def all_runs(self) -> list[Run]:
        """The GPU workflow's runs that the bot started, listed once, and once more if the first listing
        came before the claim: every decision (the cooldown, the limits, /status, /cancel, /rerun, the merge
        queue) reads these, never a run a writer dispatched by hand."""
        runs = self._all_runs
        if runs is None or (self.state.claimed and not self._runs_after_claim):
            runs = self._all_runs = markers.bot_runs(
                self.client.list_workflow_runs(self.config.gpu_workflow), bot_login=self.bot_login(),
                default_branch=self.default_branch, workflow=self.config.gpu_workflow)
            self._runs_after_claim = self.state.claimed
        return runs

    def pr_runs(self, pr: int) -> list[markers.PrRun]:
        return markers.pr_runs(self.all_runs(), pr)

    def runs_after_claim(self) -> list[Run]:
        """The GPU workflow's runs, read after the claim (dispatch_once.start asks only once it is written)."""
        self.state.count_after_claim()
        return self.all_runs()

    def command_that_starts(self, command: Command, pull: Pull) -> Command | None:
        """What a GPU command starts, whose own checks apply (bot/control/limits.py)."""
        return limits.command_that_starts(command, lambda: self.pr_runs(pull.number), pull.head_sha)

    def claim_hours(self, command_line: str, pull: Pull) -> float | None:
        """The estimate a request's claim records (the cached plan that its reply will show)."""
        return budget.Gate(self, None, command_line=command_line, pull=pull, key="", requester="",
                           label=None, approved_hours=None).prepare()

    # -- the pieces every path shares --------------------------------------------------------

    def min_permission(self, command: str) -> Permission:
        return Permission.parse(self.config.min_permission(command))

    def decide(self, command: Command, actor: Actor, pull: Pull, approvals: list[Approval], *,
               failed_only: bool = False) -> Decision:
        """May `actor` start `command` (a /rerun's: the one it restarts; `failed_only`: a rerun of failed jobs)?"""
        needed = self.min_permission(command.name)
        failed_only = failed_only or (command.name == "rerun" and command.failed)
        gpu = command.spec.starts_gpu_work
        author_ok = not self.approval_needed(pull, actor) if gpu and not failed_only else True
        if not author_ok and not approval_sources.covers_head(approvals, pull.head_sha):
            approvals = approvals + self.review_approvals(pull)
        args = dict(actor=actor, pull=pull, author_trusted=author_ok, approvals=approvals,
                    min_permission=needed, failed_only=failed_only)
        decision = trust.decide(command.name, **args)
        if decision.allowed and gpu and not trust.cooldown_exempt(decision) and self.config.cooldown_seconds:
            decision = trust.decide(command.name, **args, cooldown_s=self.config.cooldown_seconds,
                                    last_run_at=limits.last_start(self.all_runs(), self.state, actor.login), now=self.now)
        if decision.allowed and gpu and not actor.trusted and self.approval_needed(pull, actor):
            pr_jobs = self.config.pr_jobs
            decision = approval_sources.limit_refusal(
                command=command.name, scope=command.scope, allowed_scopes=list(pr_jobs.scopes),
                runs_per_approval=pr_jobs.runs_per_approval,
                runs_at_head=limits.started_at_head(self.pr_runs(pull.number), self.state.older, pull,
                                                     actor.login)) or decision
        return decision

    def start_run(self, reply: Reply, *, pull: Pull, command_line: str, requester: str, key: str,
                  approval_needed: bool, label: str | None = None, budget_approved: float | None = None,
                  recheck: Callable[[], Decision] | None = None) -> None:
        """Estimate, claim, `recheck()` (the trust decision again, counting older claims), dispatch once."""
        gate = budget.Gate(self, reply, command_line=command_line, pull=pull, key=key, requester=requester,
                           label=label, approved_hours=budget_approved, recheck=recheck)  # budget.py
        hours = gate.prepare()
        # the runner labels this head adds that their code owner approved (bot/control/runner_approval.py)
        labels = markers.approved_runner_labels(self.state.ledger.runner_approvals, pull.head_sha)
        # and the head's own InferenceX planner, when its code owners approved it (bot/control/planner_approval.py)
        planner = markers.approved_planner(self.state.ledger.planner_approvals, pull.head_sha)

        def claim_body(marker: str) -> str:
            return marker + "\n" + i18n.render_bilingual("control/starting", command=command_line,
                                                          sha=pull.head_sha, requester=requester) + "\n"

        try:
            started = dispatch_once.start(
                self.client, workflow=self.config.gpu_workflow, default_branch=self.default_branch,
                pr=pull.number, sha=pull.head_sha, command=command_line, requester=requester, key=key,
                bot_login=self.bot_login(), ledger=self.state.ledger, claim_body=claim_body, per_sha=label is not None,
                started_at=self.started, taken=self.state.taken, before_dispatch=gate, gpu_hours=hours,
                runs=self.runs_after_claim, runner_labels=labels, planner=planner)
        except dispatch_once.HeadMoved as moved:
            if moved.claim_id is not None and moved.claim_id not in reply.claims:
                reply.claims.append(moved.claim_id)
            self.log(f"refused {command_line}: {moved}")
            reply.refuse("head-moved", command=command_line, authorized_sha=moved.authorized_sha,
                         head_sha=moved.head_sha, state=moved.state, approval_needed=approval_needed)
            return
        for line in started.log:
            self.log(line)
        if started.lost:
            reply.stay_silent()
            return
        if started.claim_id is not None and started.claim_id not in reply.claims:
            reply.claims.append(started.claim_id)
        if started.held:
            return
        run = started.run
        reply.mark_dispatched()
        reply.markers.append(markers.ack_marker(key, pull.head_sha))
        if gate.hours is not None:  # the per-PR-per-day budget sums these
            reply.markers.append(estimate_marker(key, pull.head_sha, gate.hours))
        if not started.dispatched_now:
            self.log(f"request {key} resumed: its run was already started")
        else:
            self.outcome.dispatched.append(dispatch_once.dispatch_inputs(
                pr=pull.number, sha=pull.head_sha, command=command_line, requester=requester, key=key,
                gpu_hours=hours, runner_labels=labels, planner=planner))
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
