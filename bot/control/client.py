"""The GitHub client as the control plane uses it: compositions of bot/core/github_protocols.py's narrow groups.

Each control module names the narrowest it needs (dispatch: runs and the PR's head; dispatch_once: comments
too; queue_view: jobs; reuse: its own, in bot/control/reuse.py). `ControlClient` is all of them: what one
event's Handler holds.
"""
from __future__ import annotations

from typing import Protocol

from bot.core.events import Pull
from bot.core.github_protocols import (ArtifactsClient, ChecksClient, CommentsClient, JobsClient, PeopleClient,
                                  RepositoryClient, RunsClient)

__all__ = ["ArtifactsClient", "ChecksClient", "ClaimClient", "CommentsClient", "ControlClient", "DispatchClient",
           "JobsClient", "PeopleClient", "RepositoryClient", "RunsClient"]


class DispatchClient(RunsClient, Protocol):
    """Dispatching re-reads the PR's head right before it (bot/control/dispatch.py)."""

    def get_pull(self, number: int) -> Pull: ...


class ClaimClient(CommentsClient, DispatchClient, Protocol):
    """The exactly-once protocol (bot/control/dispatch_once.py): claims in comments, runs by title."""


class ControlClient(CommentsClient, RunsClient, JobsClient, ArtifactsClient, ChecksClient, RepositoryClient,
                    PeopleClient, Protocol):
    """Everything one event's handling may ask of GitHub."""

    request_count: int
