"""The GPU budget: a command above it waits for a maintainer's `/approve-budget <sha>`, which starts it once.

The limits are `budget:` in `.github/recipe-bot.yaml` (default branch): GPU-hours per command, and per PR
in the last 24 hours (the estimates of the runs the bot started, read from its own comments' markers).
A waiting request is recorded in its reply (a `budget-wait` marker with the command, the requester, the
head SHA and the estimate); the approval, pinned to that exact head, starts it under its own request key,
so the exactly-once protocol (bot/control/dispatch_once.py) makes a second approval start nothing.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import re
import urllib.parse
from typing import Any

from bot.control import estimate as estimates
from bot.control import trust
from bot.markers import written_by

WAIT_MARKER = "<!-- recipe-bot:budget-wait comment={key} sha={sha} by={by} gpu_hours={hours} cmd={cmd}{label} -->"
_WAIT = re.compile(r"^<!-- recipe-bot:budget-wait comment=(\S+) sha=([0-9a-f]{40}) by=(\S+) gpu_hours=([0-9.]+) "
                   r"cmd=(\S+)(?: label=(\S+))? -->$")
DAY = dt.timedelta(hours=24)


@dataclasses.dataclass(frozen=True)
class Verdict:
    """Above the budget: which limit, its value, and what was already started in the window."""

    reason: str  # "command" | "day"
    limit: float
    spent: float = 0.0
    total: float = 0.0


@dataclasses.dataclass(frozen=True)
class Waiting:
    key: str
    sha: str
    requester: str
    gpu_hours: float
    command: str
    label: str | None


def check(budget: Any, gpu_hours: float, spent_today: float) -> Verdict | None:
    """None when the command fits both limits (pure)."""
    if budget.gpu_hours_per_command is not None and gpu_hours > budget.gpu_hours_per_command:
        return Verdict("command", budget.gpu_hours_per_command)
    per_day = budget.gpu_hours_per_pr_per_day
    if per_day is not None and spent_today + gpu_hours > per_day:
        return Verdict("day", per_day, round(spent_today, 2), round(spent_today + gpu_hours, 2))
    return None


def spent_today(comments: list, bot_login: str, now: dt.datetime, *, exclude_key: str | None = None) -> float:
    """GPU-hours of the runs the bot started on this PR in the last 24 hours (its estimate markers)."""
    total = 0.0
    seen: set[tuple[str, str]] = set()
    for comment in comments:
        if not written_by(comment, bot_login) or (comment.created_at is not None and now - comment.created_at > DAY):
            continue
        for key, sha, hours in estimates.read_markers(comment.body):
            if key != exclude_key and (key, sha) not in seen:
                seen.add((key, sha))
                total += hours
    return total


def wait_marker(w: Waiting) -> str:
    label = f" label={urllib.parse.quote(w.label, safe='')}" if w.label else ""
    return WAIT_MARKER.format(key=w.key, sha=w.sha, by=w.requester, hours=f"{w.gpu_hours:.2f}",
                              cmd=urllib.parse.quote(w.command, safe=""), label=label)


def waiting(comments: list, bot_login: str, sha: str) -> list[Waiting]:
    """The requests waiting for a budget approval at `sha`, oldest first, from the bot's own comments."""
    found: dict[str, Waiting] = {}
    for comment in sorted(comments, key=lambda c: c.id):
        if not written_by(comment, bot_login):
            continue
        for line in comment.body.replace("\r\n", "\n").split("\n"):
            line = line.strip()
            if not line.startswith("<!-- recipe-bot:"):
                break
            match = _WAIT.match(line)
            if match and match.group(2) == sha:
                label = urllib.parse.unquote(match.group(6)) if match.group(6) else None
                found.setdefault(match.group(1), Waiting(match.group(1), sha, match.group(3), float(match.group(4)),
                                                         urllib.parse.unquote(match.group(5)), label))
    return list(found.values())


# -- the handler's side (h: bot.control.handle.Handler, reply: its Reply) --------------------------

def local_config(h: Any) -> Any:
    """The config from the default branch's checkout (None without one, or when it cannot be used)."""
    if h.checkout is None:
        return None
    from bot.control import checkout

    try:
        return checkout.read_config(h.checkout, h.default_branch, checkout.verified_commit(h))
    except checkout.CheckoutError as exc:
        h.log(f"the checkout cannot serve the config ({exc}); reading it through the API")
        return None


class Gate:
    """Asked by dispatch_once.start() once the request is the handler's and has no run yet: the estimate
    goes into the reply, then the budget decides (False: the run waits). `hours`: what to record."""

    def __init__(self, h: Any, reply: Any, *, command_line: str, pull: Any, key: str, requester: str,
                 label: str | None, approved_hours: float | None) -> None:
        self.h, self.reply, self.hours, self.approved = h, reply, approved_hours, approved_hours is not None
        self.args = dict(command_line=command_line, pull=pull, key=key)
        self.wait_args = dict(requester=requester, label=label)

    def __call__(self) -> bool:
        if self.approved:  # approved with the estimate its waiting reply recorded
            return True
        found = estimate_for(self.h, self.reply, **self.args)
        self.hours = found.gpu_hours if found is not None else None
        return not over_budget(self.h, self.reply, found, **self.args, **self.wait_args)


def estimate_for(h: Any, reply: Any, *, command_line: str, pull: Any, key: str) -> estimates.Estimate | None:
    """Plan the command at the head and add the estimate to the reply (or say why there is none)."""
    try:
        found = estimates.plan_command(h, command_line, pull)
    except estimates.Unavailable as exc:
        h.log(f"no estimate for {command_line}: {exc}")
        reply.add("estimate-unavailable", command=command_line, sha=pull.head_sha, reason=str(exc))
        return None
    h.log(f"estimate for {command_line} at {pull.head_sha}: {found.gpu_hours} GPU-hours, {found.jobs} job(s)")
    reply.add("estimate", command=command_line, sha=pull.head_sha, **found.context())
    return found


def over_budget(h: Any, reply: Any, found: estimates.Estimate | None, *, command_line: str, pull: Any,
                key: str, requester: str, label: str | None) -> bool:
    """True when the command must wait: the reply then says so and records the waiting request."""
    if found is None:
        return False
    budget = h.config.budget
    if budget.gpu_hours_per_command is None and budget.gpu_hours_per_pr_per_day is None:
        return False
    spent = spent_today(h.comments, h.bot_login(), h.now, exclude_key=key) \
        if budget.gpu_hours_per_pr_per_day is not None else 0.0
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


def approve(h: Any, reply: Any, command: Any, actor: Any, pull: Any, approvals: list, key: str) -> None:
    """`/approve-budget <sha>`: start every request waiting at exactly that head commit, once."""
    given = command.sha_prefix or ""
    if not trust.check_ok_to_test(given, pull).allowed:
        reply.refused = True
        reply.add("budget-stale", given=given, head_sha=pull.head_sha)
        h.log(f"refused /approve-budget {given}: the head is {pull.head_sha}")
        return
    pending = waiting(h.comments, h.bot_login(), pull.head_sha)
    todo = [w for w in pending if not h.ledger.acked(w.key, pull.head_sha)]
    if not todo:
        reply.add("budget-nothing-waiting", sha=pull.head_sha, started=[w.command for w in pending])
        h.log(f"/approve-budget {pull.head_sha}: nothing waits")
        return
    reply.add("budget-approved", by=actor.login, sha=pull.head_sha, commands=[w.command for w in todo])
    for w in todo:
        h.start_run(reply, pull=pull, command_line=w.command, requester=w.requester, key=w.key,
                    approval_needed=h.approval_needed(pull, actor), label=w.label, budget_approved=w.gpu_hours)
