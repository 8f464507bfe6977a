"""What a GPU request is held to: the command it really starts, and what was started or claimed before it.

Claim-then-check: a request's claim (bot/control/dispatch_once.py) records its requester and estimate,
and once it is written the handler counts the runs already started (read from GitHub's runs, never from
comments a writer may delete) and the older claims still undecided (`h.older`) against the cooldown, the
runs one approval allows and the budget (bot/control/budget.py). (h: bot.control.handler.Handler.)
"""
from __future__ import annotations

import datetime as dt
from typing import Any

from bot.core import commands
from bot.control import budget
from bot.core import markers
from bot.core.commands import Command


def command_that_starts(h: Any, command: Command, pull: Any) -> Command | None:
    """What a GPU command starts, whose own checks apply: a `/rerun`'s is the PR's latest command (None:
    there is none), a `/rerun failed`'s the command of the latest run at the head (or itself, when there
    is no run to rerun); any other command is its own."""
    if command.name != "rerun":
        return command
    runs = h.pr_runs(pull.number)
    previous = markers.latest_for_head(runs, pull.head_sha) if command.failed else next(iter(runs), None)
    if previous is None:
        return command if command.failed else None
    try:
        return commands.parse_single(previous.title.command)
    except commands.UsageError:  # a title not written by this bot's grammar restarts nothing
        return None


def claim_hours(h: Any, command_line: str, pull: Any) -> float | None:
    """The estimate a request's claim records (the cached plan that its reply will show)."""
    return budget.Gate(h, None, command_line=command_line, pull=pull, key="", requester="",
                       label=None, approved_hours=None).prepare()


def last_start(h: Any, login: str) -> dt.datetime | None:
    """When `login` last started GPU work, for the cooldown: a run (any PR), or an older undecided claim."""
    last = markers.last_run_by(h.all_runs(), login, exclude_key=h.request_key, exclude_sha=h.request_sha)
    claimed = [c.created_at for c in h.older if c.requester == login and c.created_at is not None]
    return max([t for t in (last, *claimed) if t is not None], default=None)


def started_at_head(h: Any, pull: Any, login: str) -> int:
    """How many times `login` started GPU work at the head (runs_per_approval): each run attempt (a rerun of
    failed jobs starts its run again) and each older undecided claim, once per request."""
    started = {(r.title.key, r.title.sha): max(1, r.run.run_attempt) for r in h.pr_runs(pull.number)
               if r.title.sha == pull.head_sha and r.title.requester == login}
    started.update({(c.key, c.sha): 1 for c in h.older if c.sha == pull.head_sha and c.requester == login
                    and (c.key, c.sha) not in started})
    return sum(started.values())


def runs_after_claim(h: Any) -> list:
    """The GPU workflow's runs, read after the claim (dispatch_once.start asks only once it is written)."""
    h.claimed = True
    return h.all_runs()
