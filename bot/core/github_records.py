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
    # Who saved the body, from GitHub's edit history (GraphQL, asked only when `edited`): the author
    # and every editor, "" for one GitHub cannot name (a deleted account, an edit past the first page).
    edited: bool = False
    editors: tuple[str, ...] = ()


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
    edited: bool = False  # as Comment's: REST does not say, so the history is asked for every review with a body
    editors: tuple[str, ...] = ()


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
    created, updated = _when(data.get("created_at")), _when(data.get("updated_at"))
    return Comment(data["id"], user.get("login", ""), data.get("body") or "", created, data.get("html_url") or "",
                   user.get("type") or "User", updated,
                   edited=created is not None and updated is not None and updated > created)


def _review(data: dict[str, Any]) -> Review:
    user = data.get("user") or {}
    return Review(data["id"], user.get("login", ""), data.get("body") or "", data.get("state") or "",
                  data.get("commit_id") or "", data.get("html_url") or "", user.get("type") or "User",
                  _when(data.get("submitted_at")), edited=bool(data.get("body")))


# What the bot asks GraphQL about comments or reviews REST shows as edited (REST never says by whom):
# `nodes(ids:)` with their REST node_ids, at most 100 a query (one page of a REST list).
EDITS_QUERY = """query($ids: [ID!]!) {
  nodes(ids: $ids) {
    ... on Comment {
      id
      author { __typename login }
      editor { __typename login }
      lastEditedAt
      userContentEdits(first: 100) { totalCount nodes { editedAt editor { __typename login } } }
    }
  }
}"""


def rest_login(data: Any) -> str:
    """A GraphQL actor's login as REST writes it: GitHub's GraphQL leaves "[bot]" off an app's login."""
    if not isinstance(data, dict) or not data.get("login"):
        return ""  # null: a deleted account (GitHub's ghost), never the bot nor an author
    login = str(data["login"])
    return login + "[bot]" if data.get("__typename") == "Bot" and not login.endswith("[bot]") else login


def edit_history(node: Any) -> tuple[bool, tuple[str, ...]]:
    """(edited, editors) from one EDITS_QUERY node; a node GitHub did not return reads as edited by nobody known."""
    if not isinstance(node, dict):
        return True, ()
    edits = node.get("userContentEdits") or {}
    listed = [e for e in edits.get("nodes") or [] if isinstance(e, dict)]
    total = int(edits.get("totalCount") or 0)
    edited = bool(node.get("lastEditedAt")) or total > 0
    editors = [rest_login(e.get("editor")) for e in listed]
    if edited:
        editors.append(rest_login(node.get("editor")))
    if total > len(listed):
        editors.append("")  # edits beyond the page: their editors are unknown
    return edited, tuple(dict.fromkeys(editors))


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


def _check_body(**fields: Any) -> dict[str, Any]:
    body = {k: v for k, v in fields.items()
            if v is not None and k in ("name", "head_sha", "status", "conclusion", "details_url", "external_id")}
    if fields.get("title") or fields.get("summary"):
        output = {"title": fields.get("title") or fields.get("name") or "recipe-bot",
                  "summary": fields.get("summary") or ""}
        if fields.get("text"):
            output["text"] = fields["text"]
        body["output"] = output
    return body


def _next_link(link: str) -> str | None:
    for part in link.split(","):
        section = part.split(";")
        if len(section) >= 2 and 'rel="next"' in section[1]:
            return section[0].strip().strip("<>")
    return None
