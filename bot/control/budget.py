"""The GPU budget: a command above it waits for a maintainer's `/approve-budget <sha>`, which starts it once.

The limits are `budget:` in `.github/recipe-bot.yaml` (default branch): GPU-hours per command, and per PR
in the last 24 hours: the estimates of the runs started (each run's title carries its estimate, so deleting
the bot's replies resets nothing; its replies' markers count too, for runs started before titles did), and
of the requests claimed before this one and not yet decided (claim-then-check: of requests made at once,
only those that fit start).
A waiting request is recorded in its reply (a `budget-wait` marker with the command, the requester, the
head SHA and the estimate); the approval, pinned to that exact head, starts it under its own request key,
so the exactly-once protocol (bot/control/dispatch_once.py) makes a second approval start nothing.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable
from typing import TYPE_CHECKING

from bot.control import approvals as approvals_of, checkout, estimate as estimates
from bot.core.markers import approved_planner, approved_runner_labels, is_full_sha, written_by
from bot.core.stage_markers import Waiting, marker_lines, parse_wait_marker, read_estimate_markers, wait_marker

if TYPE_CHECKING:  # the handler imports this module; these are its annotations only
    from bot.core.config import Budget, RepoConfig
    from bot.core.commands import Command
    from bot.core.markers import Claim, PrRun
    from bot.core.events import Pull
    from bot.control.handler import Handler
    from bot.control.reply import Reply
    from bot.control.trust import Actor, Approval, Decision

DAY = dt.timedelta(hours=24)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """Above the budget: which limit, its value, and what was already started in the window."""

    reason: str  # "command" | "day"
    limit: float
    spent: float = 0.0
    total: float = 0.0


def check(budget: Budget, gpu_hours: float, spent_today: float) -> Verdict | None:
    """None when the command fits both limits (pure)."""
    if budget.gpu_hours_per_command is not None and gpu_hours > budget.gpu_hours_per_command:
        return Verdict("command", budget.gpu_hours_per_command)
    per_day = budget.gpu_hours_per_pr_per_day
    if per_day is not None and spent_today + gpu_hours > per_day:
        return Verdict("day", per_day, round(spent_today, 2), round(spent_today + gpu_hours, 2))
    return None


def spent_today(comments: list, bot_login: str, now: dt.datetime, *, exclude_key: str | None = None,
                by_request: dict[tuple[str, str], float] | None = None) -> float:
    """GPU-hours of the runs the bot started on this PR in the last 24 hours (its estimate markers);
    `by_request` gets each (key, sha)'s."""
    total = 0.0
    seen: set[tuple[str, str]] = set()
    for comment in comments:
        if not written_by(comment, bot_login) or (comment.created_at is not None and now - comment.created_at > DAY):
            continue
        for key, sha, hours in read_estimate_markers(comment.body):
            if key != exclude_key and (key, sha) not in seen:
                seen.add((key, sha))
                total += hours
                if by_request is not None:
                    by_request[(key, sha)] = hours
    return total


def spent_in_window(markers: dict[tuple[str, str], float], runs: list[PrRun], older: list[Claim], now: dt.datetime,
                    mine: tuple[str, str | None]) -> float:
    """GPU-hours started on the PR in the last 24 hours, one figure per request (key, sha): the highest of
    what its run's title, the bot's reply and its claim say (pure). `runs`: the PR's markers.PrRun;
    `older`: the claims written before this request's, undecided; `mine`: (key, sha or None for any sha)."""
    found = dict(markers)
    for r in runs:
        if r.title.gpu_hours is not None and r.run.created_at is not None and now - r.run.created_at <= DAY:
            request = (r.title.key, r.title.sha)
            # each attempt (a rerun of failed jobs) started the run's jobs again
            found[request] = max(found.get(request, 0.0), r.title.gpu_hours * max(1, r.run.run_attempt))
    for claim in older:
        if claim.gpu_hours is not None and (claim.created_at is None or now - claim.created_at <= DAY):
            request = (claim.key, claim.sha)
            found[request] = max(found.get(request, 0.0), claim.gpu_hours)
    return sum(hours for (key, sha), hours in found.items()
               if not (key == mine[0] and (mine[1] is None or sha == mine[1])))


def waiting(comments: list, bot_login: str, sha: str) -> list[Waiting]:
    """The requests waiting for a budget approval at `sha`, oldest first, from the bot's own comments."""
    found: dict[str, Waiting] = {}
    for comment in sorted(comments, key=lambda c: c.id):
        if not written_by(comment, bot_login):
            continue
        for line in marker_lines(comment.body):
            wait = parse_wait_marker(line)
            if wait is not None and wait.sha == sha:
                found.setdefault(wait.key, wait)
    return list(found.values())


# -- the handler's side --------------------------------------------------------------------------

def local_config(h: Handler) -> RepoConfig | None:
    """The config from the default branch's checkout (None without one, or when it cannot be used)."""
    if h.checkout is None:
        return None

    try:
        return checkout.read_config(h.checkout, h.default_branch,
                                    checkout.verified_commit(h.checkout, h.default_branch, h.state))
    except checkout.CheckoutError as exc:
        h.log(f"the checkout cannot serve the config ({exc}); reading it through the API")
        return None


class Gate:
    """Asked by dispatch_once.start() once the request is the handler's and has no run yet, with the older
    undecided claims: the command's own checks are made again counting them (`recheck`: the trust decision
    of the command that starts; a refusal holds it), the estimate goes into the reply, then the budget decides
    (False: the run waits). `hours`: the estimate, made before the claim (prepare()) so that it records it."""

    def __init__(self, h: Handler, reply: Reply | None, *, command_line: str, pull: Pull, key: str, requester: str,
                 label: str | None, approved_hours: float | None,
                 recheck: Callable[[], Decision] | None = None) -> None:
        self.h, self.reply, self.hours, self.approved = h, reply, approved_hours, approved_hours is not None
        self.command_line, self.pull, self.key = command_line, pull, key
        self.requester, self.label = requester, label
        self.recheck = recheck

    def prepare(self) -> float | None:
        if not self.approved:
            found = cached_estimate(self.h, self.command_line, self.pull)
            self.hours = None if isinstance(found, estimates.Unavailable) else found.gpu_hours
        return self.hours

    def __call__(self, older: list[Claim]) -> bool:
        self.h.state.count_claims(older)  # what h.decide() and the budget count from here on
        if self.approved:  # approved with the estimate its waiting reply recorded
            return True
        assert self.reply is not None, "a Gate without a reply only prepares the claim's estimate"
        if self.recheck is not None:
            decision = self.recheck()
            if not decision.allowed:
                self.h.refusal(self.reply, self.command_line, decision, login=self.requester, pull=self.pull)
                return False
        found = estimate_for(self.h, self.reply, command_line=self.command_line, pull=self.pull, key=self.key)
        self.hours = found.gpu_hours if found is not None else None
        return not over_budget(self.h, self.reply, found, command_line=self.command_line, pull=self.pull,
                               key=self.key, requester=self.requester, label=self.label)


def cached_estimate(h: Handler, command_line: str, pull: Pull) -> estimates.Estimate | estimates.Unavailable:
    """The command's estimate at the head, planned once per handler (the claim records it, the reply shows it)."""
    cache = h.state.estimates
    # an `/approve-runners` or `/approve-planner` earlier in the same comment changes which rows are held and
    # what they count (bot/plan/held.py, bot/control/estimate.py)
    key = (command_line, pull.head_sha, _approved(h, pull))
    if key not in cache:
        try:
            cache[key] = _planned(h, command_line, pull)
        except estimates.Unavailable as exc:
            cache[key] = exc
    return cache[key]


def _planned(h: Handler, command_line: str, pull: Pull) -> estimates.Estimate:
    """The estimate, planned from the files at the head and base SHAs only: a long-running serve keeps it
    for later deliveries of the same command on the same commits (a refusal to plan is not kept)."""
    reads = getattr(h.client, "commit_reads", None)
    if reads is None or h.checkout is not None or not (is_full_sha(pull.head_sha) and is_full_sha(pull.base_sha)):
        return estimates.plan_command(h, command_line, pull)
    # the runner labels and the planner approved for the head change which rows are held and what they count
    approved = _approved(h, pull)
    key = ("estimate", h.client.repository.lower(), command_line, pull.head_sha, pull.base_sha, approved)
    return reads.derived(key, lambda: estimates.plan_command(h, command_line, pull))


def _approved(h: Handler, pull: Pull) -> tuple[tuple[str, ...], float | None]:
    """What the approvals for the head change in its estimate: the runner labels, the planner's GPU-hours."""
    planner = approved_planner(h.state.ledger.planner_approvals, pull.head_sha)
    return (approved_runner_labels(h.state.ledger.runner_approvals, pull.head_sha),
            planner.max_gpu_hours if planner is not None else None)


def estimate_for(h: Handler, reply: Reply, *, command_line: str, pull: Pull, key: str) -> estimates.Estimate | None:
    """Plan the command at the head and add the estimate to the reply (or say why there is none)."""
    found = cached_estimate(h, command_line, pull)
    if isinstance(found, estimates.Unavailable):
        h.log(f"no estimate for {command_line}: {found}")
        reply.add("estimate-unavailable", command=command_line, sha=pull.head_sha, reason=str(found))
        return None
    h.log(f"estimate for {command_line} at {pull.head_sha}: {found.gpu_hours} GPU-hours, {found.jobs} job(s)")
    reply.add("estimate", command=command_line, sha=pull.head_sha, **found.context())
    return found


def over_budget(h: Handler, reply: Reply, found: estimates.Estimate | None, *, command_line: str, pull: Pull,
                key: str, requester: str, label: str | None) -> bool:
    """True when the command must wait: the reply then says so and records the waiting request."""
    if found is None:
        return False
    budget = h.config.budget
    if budget.gpu_hours_per_command is None and budget.gpu_hours_per_pr_per_day is None:
        return False
    spent = 0.0
    if budget.gpu_hours_per_pr_per_day is not None:
        markers: dict[tuple[str, str], float] = {}
        spent_today(h.state.comments, h.bot_login(), h.now, by_request=markers)
        mine = (key, pull.head_sha if label else None)  # a label's key runs once per head commit
        spent = spent_in_window(markers, h.pr_runs(pull.number), h.state.older, h.now, mine)
    verdict = check(budget, found.gpu_hours, spent)
    if verdict is None:
        return False
    w = Waiting(key, pull.head_sha, requester, found.gpu_hours, command_line, label)
    reply.markers.append(wait_marker(w))
    reply.add("budget-waiting", command=command_line, sha=pull.head_sha, requester=requester,
              gpu_hours=f"{found.gpu_hours:,.2f}", reason=verdict.reason, limit=f"{verdict.limit:,.2f}",
              spent=f"{verdict.spent:,.2f}", total=f"{verdict.total:,.2f}",
              approver=h.config.min_permission("approve-budget"))
    h.log(f"{command_line} at {pull.head_sha} waits for /approve-budget: {found.gpu_hours} GPU-hours over the "
          f"{verdict.reason} budget of {verdict.limit}")
    return True


def rerun_over_budget(h: Handler, reply: Reply, line: str, latest: PrRun, pull: Pull) -> bool:
    """`/rerun failed` starts a run's jobs again: its estimate (its title's) counts again against the budget.
    True when it must not: the reply then says so (a rerun of jobs cannot wait for an approval)."""
    budget = h.config.budget
    if latest.title.gpu_hours is None or (budget.gpu_hours_per_command is None
                                          and budget.gpu_hours_per_pr_per_day is None):
        return False
    markers: dict[tuple[str, str], float] = {}
    spent_today(h.state.comments, h.bot_login(), h.now, by_request=markers)
    spent = spent_in_window(markers, h.pr_runs(pull.number), h.state.older, h.now, ("", "")) \
        if budget.gpu_hours_per_pr_per_day is not None else 0.0
    verdict = check(budget, latest.title.gpu_hours, spent)
    if verdict is None:
        return False
    h.log(f"refused {line}: run {latest.run.id} again ({latest.title.gpu_hours} GPU-hours) is over the "
          f"{verdict.reason} budget of {verdict.limit}")
    reply.refuse("budget", command=line, run_id=latest.run.id, run_url=latest.run.html_url,
                 gpu_hours=f"{latest.title.gpu_hours:,.2f}", reason=verdict.reason, limit=f"{verdict.limit:,.2f}",
                 spent=f"{verdict.spent:,.2f}", total=f"{verdict.total:,.2f}",
                 approver=h.config.min_permission("approve-budget"))
    return True


def approve(h: Handler, reply: Reply, command: Command, actor: Actor, pull: Pull, approvals: list[Approval],
            key: str) -> None:
    """`/approve-budget <sha>`: start every request waiting at exactly that head commit, once."""
    if not approvals_of.names_the_head(h, reply, command, pull, "budget-stale"):
        return
    pending = waiting(h.state.comments, h.bot_login(), pull.head_sha)
    todo = [w for w in pending if not h.state.ledger.acked(w.key, pull.head_sha)]
    if not todo:
        reply.add("budget-nothing-waiting", sha=pull.head_sha, started=[w.command for w in pending])
        h.log(f"/approve-budget {pull.head_sha}: nothing waits")
        return
    reply.add("budget-approved", by=actor.login, sha=pull.head_sha, commands=[w.command for w in todo])
    for w in todo:
        h.start_run(reply, pull=pull, command_line=w.command, requester=w.requester, key=w.key,
                    approval_needed=h.approval_needed(pull, actor), label=w.label, budget_approved=w.gpu_hours)
