"""What one event's handling learns as it goes (`RequestState`) and what it did (`Outcome`), as typed records.

The Handler (bot/control/handler.py) holds one of each; the modules it calls change them only through the
methods below, each named for the step of the exactly-once protocol (bot/control/dispatch_once.py) or of
claim-then-check (bot/control/limits.py) that it records, so the order the state moves in is readable here.
"""
from __future__ import annotations

import dataclasses
import pathlib
from typing import TYPE_CHECKING

from bot.core.markers import Claim, Ledger
from bot.core.github_records import Comment

if TYPE_CHECKING:  # annotations only: these modules import the handler's side themselves
    from bot.control.dispatch_once import Taken
    from bot.control.estimate import Estimate, Unavailable


@dataclasses.dataclass
class Outcome:
    """What one handle did, for the log line and for tests that call handle_event directly."""

    log: list[str] = dataclasses.field(default_factory=list)
    dispatched: list[dict[str, str]] = dataclasses.field(default_factory=list)
    failed: str | None = None

    def fail(self, message: str) -> None:
        """The handle failed (a broken config, a GitHub failure, a payload that is no merge group)."""
        self.failed = message


@dataclasses.dataclass
class RequestState:
    """The state of one request while it is decided: the comments read, the claim, the older claims."""

    comments: list[Comment] = dataclasses.field(default_factory=list)  # the PR's comments, read once
    ledger: Ledger = dataclasses.field(default_factory=Ledger)  # what the bot's own comments recorded
    taken: Taken | None = None  # the claim written before deciding (a comment that may start GPU work)
    request_key: str | None = None  # the request being decided (its own run is no cooldown)
    request_sha: str | None = None  # ...at this head only (a label's key runs once per head)
    claimed: bool = False  # the claim is written: runs listed before it are listed again
    older: list[Claim] = dataclasses.field(default_factory=list)  # older undecided claims, counted by the limits
    estimates: dict[tuple[str, str, tuple[str, ...]], Estimate | Unavailable] = dataclasses.field(default_factory=dict)
    checkout_commit: tuple[tuple[pathlib.Path, str], str] | None = None  # checkout.verified_commit's answer

    def read_comments(self, comments: list[Comment], ledger: Ledger | None = None) -> None:
        """The PR's comments were read (and, when given, the ledger they hold)."""
        self.comments = comments
        if ledger is not None:
            self.ledger = ledger

    def use_ledger(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def take_claim(self, taken: Taken, older: list[Claim]) -> None:
        """The request's claim is written and arbitrated: its read of the comments is the one read."""
        self.comments, self.taken = taken.comments, taken
        self.claimed, self.older = True, older

    def decide_request(self, key: str, sha: str | None = None) -> None:
        """The request about to be decided: its own run, or its own run at `sha`, is no cooldown."""
        self.request_key, self.request_sha = key, sha

    def count_claims(self, older: list[Claim]) -> None:
        """Once the claim is written (dispatch_once.start), the older claims count in every decision."""
        self.older, self.claimed = older, True

    def count_after_claim(self) -> None:
        self.claimed = True

    def remember_checkout(self, where: tuple[pathlib.Path, str], commit: str) -> str:
        self.checkout_commit = (where, commit)
        return commit
