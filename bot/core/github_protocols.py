"""The GitHub client's methods in narrow groups, as Protocols (bot.core.github.GitHubClient has them all).

A module that takes a client names the groups it calls (Prow-style): what a decision may ask of GitHub is
written where it is made, and a test's fake needs only those methods. The control plane's compositions are
in bot/control/client.py, the sign-off's in bot/checklist/verify.py.
"""
from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Protocol

from bot.core.events import Pull
from bot.core.github_records import Artifact, CheckRun, Comment, DispatchedRun, PullFile, Review, Run, RunJob


class CommentsClient(Protocol):
    """A PR's conversation: the ledger, claims and replies live in its comments."""

    dry_run: bool

    def list_issue_comments(self, number: int, since: dt.datetime | None = None) -> list[Comment]: ...

    def create_comment(self, number: int, body: str) -> int | None: ...

    def edit_comment(self, comment_id: int, body: str) -> None: ...

    def delete_comment(self, comment_id: int) -> None: ...

    def react(self, comment_id: int, content: str) -> None: ...


class RunsClient(Protocol):
    """The GPU workflow's runs: listed, dispatched, cancelled, rerun."""

    def list_workflow_runs(self, workflow: str, *, event: str | None = "workflow_dispatch",
                           pages: int | None = None, since: dt.datetime | None = None) -> list[Run]: ...

    def iter_workflow_runs(self, workflow: str, *, event: str | None = "workflow_dispatch",
                           pages: int | None = None, since: dt.datetime | None = None) -> Iterator[Run]: ...

    def get_run(self, run_id: int) -> Run: ...

    def dispatch_workflow(self, workflow: str, *, ref: str, inputs: dict[str, str]) -> DispatchedRun: ...

    def cancel_run(self, run_id: int) -> None: ...

    def rerun_failed_jobs(self, run_id: int) -> None: ...


class JobsClient(Protocol):
    """What `/status` reads about the runners' queue."""

    def list_run_jobs(self, run_id: int, *, pages: int | None = None) -> list[RunJob]: ...

    def list_repo_runs(self, status: str, *, pages: int = 1) -> list[Run]: ...


class ArtifactsClient(Protocol):
    """A finished run's results (the merge gate judged again, `/reuse`)."""

    def list_run_artifacts(self, run_id: int) -> list[Artifact]: ...

    def download_artifact(self, artifact_id: int) -> bytes: ...


class ChecksClient(Protocol):
    """The merge gate's and the sign-off's check runs on a commit."""

    def list_check_runs(self, ref: str, name: str | None = None) -> list[CheckRun]: ...

    def create_check_run(self, *, name: str, head_sha: str, status: str = "completed",
                         conclusion: str | None = None, title: str = "", summary: str = "",
                         text: str | None = None, details_url: str | None = None,
                         external_id: str | None = None) -> int | None: ...

    def update_check_run(self, check_run_id: int, *, status: str | None = None,
                         conclusion: str | None = None, title: str = "", summary: str = "",
                         text: str | None = None, details_url: str | None = None,
                         external_id: str | None = None) -> None: ...


class RepositoryClient(Protocol):
    """The repository read as data: pull requests, reviews, files at a commit (never checked out)."""

    repository: str

    def get_pull(self, number: int) -> Pull: ...

    def get_pull_and_text(self, number: int, path: str, ref: str) -> tuple[Pull, str | None]: ...

    def list_reviews(self, number: int) -> list[Review]: ...

    def list_pull_paths(self, number: int) -> list[str]: ...

    def list_pull_files(self, number: int) -> list[PullFile]: ...

    def branch_sha(self, branch: str) -> str: ...

    def default_branch(self) -> str: ...

    def get_text(self, path: str, ref: str) -> str | None: ...

    def get_bytes(self, path: str, ref: str) -> bytes | None: ...

    def list_dir(self, path: str, ref: str) -> list[tuple[str, str]]: ...

    def compare_status(self, base: str, head: str) -> str: ...


class PeopleClient(Protocol):
    """Who someone is to the repository: the bot's own login, a role, a team."""

    def authenticated_login(self) -> str: ...

    def permission(self, login: str) -> str: ...

    def is_team_member(self, team: str, login: str) -> bool: ...

    def team_membership(self, team: str, login: str) -> str: ...


NARROW = (CommentsClient, RunsClient, JobsClient, ArtifactsClient, ChecksClient, RepositoryClient, PeopleClient)
