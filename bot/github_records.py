"""What recipe-bot reads from GitHub, as plain frozen records, and the parsers from GitHub's JSON."""
from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

ACTIVE_RUN_STATES = frozenset({"queued", "in_progress", "waiting", "requested", "pending"})


@dataclasses.dataclass(frozen=True)
class Comment:
    id: int
    user: str
    body: str
    created_at: dt.datetime | None
    html_url: str = ""
    user_type: str = "User"  # "Bot" for apps and GitHub's own accounts
    updated_at: dt.datetime | None = None


@dataclasses.dataclass(frozen=True)
class Run:
    id: int
    display_title: str
    status: str
    conclusion: str | None
    created_at: dt.datetime | None
    html_url: str
    head_sha: str
    event: str = ""
    run_attempt: int = 1
    head_branch: str = ""  # the branch the workflow file and code came from
    actor: str = ""  # who started the run (for workflow_dispatch: whoever dispatched it)
    path: str = ""  # the workflow file, e.g. .github/workflows/gpu.yml

    @property
    def active(self) -> bool:
        return self.status in ACTIVE_RUN_STATES


@dataclasses.dataclass(frozen=True)
class RunJob:
    id: int
    name: str
    status: str
    conclusion: str | None
    html_url: str
    labels: tuple[str, ...] = ()  # the job's `runs-on` labels: which runners may take it
    created_at: dt.datetime | None = None
    started_at: dt.datetime | None = None  # a queued job repeats created_at here (GitHub's shape)


@dataclasses.dataclass(frozen=True)
class Artifact:
    id: int
    name: str
    size_in_bytes: int
    expired: bool


@dataclasses.dataclass(frozen=True)
class CheckRun:
    id: int
    name: str
    head_sha: str
    status: str
    conclusion: str | None
    html_url: str
    title: str = ""  # output.title
    details_url: str = ""
    external_id: str = ""
    app: str | None = None  # the slug of the GitHub App that created it (a check run's author)


@dataclasses.dataclass(frozen=True)
class Review:
    id: int
    user: str
    body: str
    state: str
    commit_id: str
    html_url: str = ""
    user_type: str = "User"
    submitted_at: dt.datetime | None = None


@dataclasses.dataclass(frozen=True)
class PullFile:
    filename: str
    status: str
    patch: str | None  # GitHub leaves it out for binary and very large files


@dataclasses.dataclass(frozen=True)
class DispatchedRun:
    """What workflow_dispatch returns when GitHub reports the run it created (else all None)."""

    run_id: int | None = None
    html_url: str | None = None


def _when(value: Any) -> dt.datetime | None:
    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
    if isinstance(value, str) and value:
        return dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    return None


def _comment(data: dict[str, Any]) -> Comment:
    user = data.get("user") or {}
    return Comment(data["id"], user.get("login", ""), data.get("body") or "",
                   _when(data.get("created_at")), data.get("html_url") or "", user.get("type") or "User",
                   _when(data.get("updated_at")))


def _run(data: dict[str, Any]) -> Run:
    return Run(id=data["id"], display_title=data.get("display_title") or "", status=data.get("status") or "",
               conclusion=data.get("conclusion"), created_at=_when(data.get("created_at")),
               html_url=data.get("html_url") or "", head_sha=data.get("head_sha") or "",
               event=data.get("event") or "", run_attempt=data.get("run_attempt") or 1,
               head_branch=data.get("head_branch") or "", actor=(data.get("actor") or {}).get("login") or "",
               path=data.get("path") or "")


def _job(data: dict[str, Any]) -> RunJob:
    return RunJob(data["id"], data["name"], data["status"], data.get("conclusion"), data.get("html_url") or "",
                  tuple(data.get("labels") or ()), _when(data.get("created_at")), _when(data.get("started_at")))


def _check(data: dict[str, Any]) -> CheckRun:
    return CheckRun(data["id"], data["name"], data["head_sha"], data["status"], data.get("conclusion"),
                    data.get("html_url") or "", (data.get("output") or {}).get("title") or "",
                    data.get("details_url") or "", data.get("external_id") or "",
                    (data.get("app") or {}).get("slug"))
