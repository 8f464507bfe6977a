"""The sandbox's REST operations: one handler per OpenAPI operationId, with GitHub's errors and pagination."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable
from urllib.parse import urlencode

from ..shapes import Shapes
from ..state import Issue, SandboxState

MAX_PER_PAGE = 100
DEFAULT_PER_PAGE = 30


@dataclass
class Call:
    """One REST request after routing: decoded path params, query, JSON body and the acting user."""

    operation: str
    params: dict[str, str]
    query: dict[str, str]
    body: Any
    user: str | None
    accept: str
    shapes: Shapes
    url: str  # the URL the client used, without the query (for Link headers)
    raw_query: list[tuple[str, str]] = field(default_factory=list)

    @property
    def state(self) -> SandboxState:
        return self.shapes.state


@dataclass
class Reply:
    status: int
    body: Any = None  # JSON-able; a str for text media types; None for no body
    headers: dict[str, str] = field(default_factory=dict)
    media_type: str = "application/json"


class ApiError(Exception):
    """A GitHub error response: {"message", "documentation_url", "status"[, "errors"]}."""

    def __init__(self, status: int, message: str, errors: list[dict[str, Any]] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.errors = errors


Handler = Callable[[Call], Reply]
HANDLERS: dict[str, Handler] = {}


def operation(operation_id: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        HANDLERS[operation_id] = fn
        return fn

    return register


def not_found(message: str = "Not Found") -> ApiError:
    return ApiError(404, message)


def validation_failed(resource: str, field_name: str, message: str, code: str = "custom") -> ApiError:
    return ApiError(422, "Validation Failed",
                    [{"resource": resource, "code": code, "field": field_name, "message": message}])


def check_repo(call: Call) -> None:
    owner, repo = call.params.get("owner"), call.params.get("repo")
    if owner is not None and f"{owner}/{repo}".lower() != call.state.full_name.lower():
        raise not_found()


def require_user(call: Call) -> str:
    if call.user is None:
        raise ApiError(401, "Requires authentication")
    return call.user


def require_push(call: Call) -> str:
    """Writes that need push (write) permission on the repository: labels, statuses, checks, dispatch, runs."""
    user = require_user(call)
    if not call.state.can(user, "write"):
        raise ApiError(403, "Must have push access to repository")
    return user


def int_param(call: Call, name: str) -> int:
    try:
        return int(call.params[name])
    except (KeyError, ValueError):
        raise not_found() from None


def find_issue(call: Call, *, pull: bool = False) -> Issue:
    number = int_param(call, "pull_number" if pull else "issue_number")
    issue = call.state.issues.get(number)
    if issue is None or (pull and not issue.is_pull):
        raise not_found()
    return issue


def resolve_commit(call: Call, ref: str) -> str:
    sha = call.state.git.ref_sha(ref)
    if sha is None:
        raise ApiError(422, f"No commit found for SHA: {ref}")
    return sha


def paginate(call: Call, items: list[Any], wrap: str | None = None, extra: dict[str, Any] | None = None) -> Reply:
    """Slice by page/per_page (GitHub caps per_page at 100) and add the Link header GitHub sends."""
    try:
        per_page = max(1, min(MAX_PER_PAGE, int(call.query.get("per_page") or DEFAULT_PER_PAGE)))
        page = max(1, int(call.query.get("page") or 1))
    except ValueError:
        per_page, page = DEFAULT_PER_PAGE, 1
    last = max(1, -(-len(items) // per_page))
    chunk = items[(page - 1) * per_page: page * per_page]
    links = []

    def link(n: int, rel: str) -> str:
        query = [(k, v) for k, v in call.raw_query if k != "page"] + [("page", str(n))]
        return f'<{call.url}?{urlencode(query)}>; rel="{rel}"'

    if page > 1:
        links += [link(page - 1, "prev"), link(1, "first")]
    if page < last:
        links += [link(page + 1, "next"), link(last, "last")]
    headers = {"Link": ", ".join(links)} if links else {}
    body: Any = chunk if wrap is None else {"total_count": len(items), wrap: chunk, **(extra or {})}
    return Reply(200, body, headers)


def _register_all() -> None:
    from . import actions, checks, issues, pulls, repos  # noqa: F401  (modules register their handlers)


_register_all()
