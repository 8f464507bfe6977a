"""What a GPU request is held to: the command it really starts, and what was started or claimed before it.

Claim-then-check: a request's claim (bot/control/dispatch_once.py) records its requester and estimate,
and once it is written the handler counts the runs already started (read from GitHub's runs, never from
comments a writer may delete) and the older claims still undecided (`RequestState.older`) against the
cooldown, the runs one approval allows and the budget (bot/control/budget.py). Pure: the handler passes
the runs and the request's state (bot/control/context.py).
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence

from bot.core import commands
from bot.core import markers
from bot.core.commands import Command
from bot.control.context import RequestState
from bot.core.events import Pull
from bot.core.github_records import Run


def command_that_starts(command: Command, pr_runs: Callable[[], list[markers.PrRun]],
                        head_sha: str) -> Command | None:
    """What a GPU command starts, whose own checks apply: a `/rerun`'s is the PR's latest command (None:
    there is none), a `/rerun failed`'s the command of the latest run at the head (or itself, when there
    is no run to rerun); any other command is its own. `pr_runs` is asked only for a `/rerun`."""
    if command.name != "rerun":
        return command
    runs = pr_runs()
    previous = markers.latest_for_head(runs, head_sha) if command.failed else next(iter(runs), None)
    if previous is None:
        return command if command.failed else None
    try:
        return commands.parse_single(previous.title.command)
    except commands.UsageError:  # a title not written by this bot's grammar restarts nothing
        return None


def last_start(runs: list[Run], state: RequestState, login: str) -> dt.datetime | None:
    """When `login` last started GPU work, for the cooldown: a run (any PR, but not the request's own),
    or an older undecided claim."""
    last = markers.last_run_by(runs, login, exclude_key=state.request_key, exclude_sha=state.request_sha)
    claimed = [c.created_at for c in state.older if c.requester == login and c.created_at is not None]
    return max([t for t in (last, *claimed) if t is not None], default=None)


def started_at_head(pr_runs: Sequence[markers.PrRun], older: Sequence[markers.Claim], pull: Pull,
                    login: str) -> int:
    """How many times `login` started GPU work at the head (runs_per_approval): each run attempt (a rerun of
    failed jobs starts its run again) and each older undecided claim, once per request."""
    started = {(r.title.key, r.title.sha): max(1, r.run.run_attempt) for r in pr_runs
               if r.title.sha == pull.head_sha and r.title.requester == login}
    started.update({(c.key, c.sha): 1 for c in older if c.sha == pull.head_sha and c.requester == login
                    and (c.key, c.sha) not in started})
    return sum(started.values())
