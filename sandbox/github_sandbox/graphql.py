"""The sandbox's GraphQL endpoint (POST /graphql): GitHub's public schema, answering from the sandbox's state.

Queries are parsed, validated and executed by graphql-core against the schema GitHub publishes as the npm
package @octokit/graphql-schema (pinned in npm/package-lock.json, installed into .upstream/), so a field
GitHub does not have is refused as GitHub refuses it: HTTP 200 with `errors` and no `data`. The state is
served where the bot reads it: issue comments and reviews (author, editor, lastEditedAt, the edit history
`userContentEdits`), reached through `node(id:)` / `nodes(ids:)` with the REST `node_id`s, or through
`repository(owner:, name:) { pullRequest(number:) { comments(...) reviews(...) } }` with cursors; a pull
request's head, base, state and labels as REST's pulls/get has them, and a file of a branch or commit as
`repository { object(expression: "<ref>:<path>") { ... on Blob { text } } }`.
A field the sandbox does not model resolves to null (an error, where the schema says non-null).
"""
from __future__ import annotations

import base64
import binascii
import functools
import json
import re
from typing import Any

from graphql import (GraphQLError, GraphQLSchema, build_client_schema, execute, parse, validate)

from . import upstream
from .shapes.base import node_id
from .state import Comment, Review, SandboxState

DOCS = "https://docs.github.com/graphql"
AUTH_DOCS = f"{DOCS}/guides/forming-calls-with-graphql#authenticating-with-graphql"
MAX_PAGE = 100  # GitHub's limit for `first`/`last`, and for `nodes(ids:)`
_UNDEFINED = re.compile(r"^Cannot query field '(\w+)' on type '(\w+)'\.")


class NotFound(GraphQLError):
    """GitHub's NOT_FOUND error: the field is null and `errors` says what could not be resolved."""


@functools.lru_cache(maxsize=1)
def schema() -> GraphQLSchema:
    """GitHub's schema from the package's introspection result (schema.json)."""
    path = upstream.package_dir(upstream.GRAPHQL_SCHEMA) / "schema.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    # assume_valid: GitHub's own schema breaks one of the spec's rules for schemas (a field deprecated
    # on a type but not on its interface); GitHub serves it as it is, and so does the sandbox.
    return build_client_schema(data.get("data", data), assume_valid=True)


def answer(state: SandboxState, login: str | None, raw: bytes, web: str) -> tuple[int, dict[str, Any], list[str]]:
    """(HTTP status, JSON body, problems for the log) for one POST /graphql by `login`."""
    if login is None:
        return 401, {"message": "This endpoint requires you to be authenticated.", "documentation_url": AUTH_DOCS}, []
    if not login or not state.is_known(login):
        return 401, {"message": "Bad credentials", "documentation_url": DOCS}, []
    try:
        request = json.loads(raw or b"null")
    except ValueError:
        return 400, {"message": "Problems parsing JSON", "documentation_url": DOCS}, ["body: Problems parsing JSON"]
    if not isinstance(request, dict) or not isinstance(request.get("query"), str):
        return _refused([{"message": "A query attribute must be specified and must be a string."}])
    variables = request.get("variables") or {}
    if not isinstance(variables, dict):
        return _refused([{"message": "Variables are invalid JSON."}])
    try:
        document, invalid = _checked(request["query"])
    except GraphQLError as exc:
        return _refused([_error(exc)])
    if invalid:
        return _refused([_error(e) for e in invalid])
    with state.lock:
        result = execute(schema(), document, root_value=_World(state, login, web).root(),
                         variable_values=variables, operation_name=request.get("operationName"))
    body: dict[str, Any] = {"data": result.data}
    if result.errors:
        body["errors"] = [_error(e) for e in result.errors]
    return 200, body, []


@functools.lru_cache(maxsize=256)
def _checked(query: str) -> tuple[Any, list[GraphQLError]]:
    """A query's document and the schema's objections to it, once per query text (a client sends the same few
    queries with new variables; validating one against GitHub's schema takes milliseconds)."""
    document = parse(query)
    return document, validate(schema(), document)


def _refused(errors: list[dict[str, Any]]) -> tuple[int, dict[str, Any], list[str]]:
    return 200, {"errors": errors}, [e["message"] for e in errors]


def _error(exc: GraphQLError) -> dict[str, Any]:
    """One error as GitHub writes it (its wording for an unknown field, `type` for what was not found)."""
    out: dict[str, Any] = {}
    if exc.path is not None:
        out["path"] = list(exc.path)
    message = exc.message
    if match := _UNDEFINED.match(message):
        message = f"Field '{match.group(1)}' doesn't exist on type '{match.group(2)}'"
        out["extensions"] = {"code": "undefinedField", "typeName": match.group(2), "fieldName": match.group(1)}
    if isinstance(exc.original_error, NotFound) or isinstance(exc, NotFound):
        out["type"] = "NOT_FOUND"
    if exc.locations:
        out["locations"] = [{"line": loc.line, "column": loc.column} for loc in exc.locations]
    out["message"] = message
    return out


def _cursor(index: int) -> str:
    return base64.b64encode(f"cursor:v2:{index}".encode()).decode()


def _offset(cursor: str, name: str) -> int:
    try:
        text = base64.b64decode(cursor, validate=True).decode()
        return int(text.removeprefix("cursor:v2:"))
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise GraphQLError(f"`{name}` does not appear to be a valid cursor.") from None


def connection(info: Any, items: list[Any], first: int | None = None, last: int | None = None,
               after: str | None = None, before: str | None = None, **_: Any) -> dict[str, Any]:
    """A connection page as GitHub pages one: `first` or `last` (at most 100), cursors after/before."""
    field = info.field_name
    if first is None and last is None:
        raise GraphQLError(f"You must provide a `first` or `last` value to properly paginate the `{field}` connection.")
    for name, value in (("first", first), ("last", last)):
        if value is not None and not 0 <= value <= MAX_PAGE:
            raise GraphQLError(f"Requesting {value} records on the `{field}` connection exceeds the `{name}` "
                               f"limit of {MAX_PAGE} records.")
    low = _offset(after, "after") + 1 if after else 0
    high = _offset(before, "before") if before else len(items)
    window = list(range(low, max(low, min(high, len(items)))))
    page = window[:first] if first is not None else window
    if last is not None:
        page = page[len(page) - last:] if last else []
    return {
        "totalCount": len(items),
        "nodes": [items[i] for i in page],
        "edges": [{"cursor": _cursor(i), "node": items[i]} for i in page],
        "pageInfo": {"hasNextPage": (page[-1] if page else low - 1) < len(items) - 1,
                     "hasPreviousPage": (page[0] if page else low) > 0,
                     "startCursor": _cursor(page[0]) if page else None,
                     "endCursor": _cursor(page[-1]) if page else None},
    }


def decode_node_id(value: str) -> tuple[str, str] | None:
    """(type, id) of a node id the sandbox wrote (sandbox/github_sandbox/shapes/base.py node_id), else None."""
    try:
        text = base64.b64decode(value, validate=True).decode()
        size, rest = text.split(":", 1)
        return rest[:int(size)], rest[int(size):]
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None


class _World:
    """The sandbox's state as GraphQL objects (dicts; a callable value resolves a field with arguments)."""

    def __init__(self, state: SandboxState, login: str, web: str):
        self.state, self.login, self.web = state, login, web.rstrip("/")

    def root(self) -> dict[str, Any]:
        return {"repository": self.repository, "viewer": self.actor(self.login),
                "node": lambda info, id: self.node(id),  # noqa: A002 (the schema's argument name)
                "nodes": self.nodes}

    def nodes(self, info: Any, ids: list[str]) -> list[Any]:
        if len(ids) > MAX_PAGE:
            raise GraphQLError(f"You may not request more than {MAX_PAGE} nodes at once.")
        return [self.node(value) for value in ids]

    def node(self, value: str) -> Any:
        kind, ident = decode_node_id(value) or ("", "")
        found: Any = None
        if kind == "IssueComment" and ident.isdigit() and int(ident) in self.state.comments:
            found = self.comment(self.state.comments[int(ident)])
        elif kind == "PullRequestReview" and ident.isdigit() and int(ident) in self.state.reviews:
            found = self.review(self.state.reviews[int(ident)])
        if found is None:
            return NotFound(f"Could not resolve to a node with the global id of '{value}'")
        return found

    def actor(self, login: str | None) -> dict[str, Any] | None:
        if not login:
            return None  # a deleted account: GitHub answers null (the "ghost" user)
        kind = "Bot" if self.state.user_type(login) == "Bot" else "User"
        # GitHub's GraphQL names an app's bot without the "[bot]" that REST adds to its login.
        name = login.removesuffix("[bot]") if kind == "Bot" else login
        return {"__typename": kind, "login": name, "url": f"{self.web}/{login}", "id": node_id(kind, login)}

    def repository(self, info: Any, owner: str, name: str, **_: Any) -> dict[str, Any]:
        st = self.state
        if (owner.lower(), name.lower()) != (st.owner.lower(), st.name.lower()):
            raise NotFound(f"Could not resolve to a Repository with the name '{owner}/{name}'.")
        return {"__typename": "Repository", "id": node_id("Repository", st.full_name), "name": st.name,
                "nameWithOwner": st.full_name, "pullRequest": self.pull_request,
                "object": lambda info, expression=None, oid=None: self.git_object(expression)}

    def git_object(self, expression: str | None) -> dict[str, Any] | None:
        """A file as `<branch, tag or SHA>:<path>` (null when either names nothing, as GitHub answers)."""
        ref, colon, path = (expression or "").partition(":")
        git = self.state.git
        sha = git.ref_sha(ref) if colon and path else None
        if sha is None or git.object_type(sha, path) != "blob":
            return None
        data = git.read_file(sha, path) or b""
        try:
            text: str | None = data.decode("utf-8")
        except UnicodeDecodeError:
            text = None
        oid = git.blob_sha(sha, path)
        return {"__typename": "Blob", "id": node_id("Blob", oid), "oid": oid, "abbreviatedOid": oid[:7],
                "byteSize": len(data), "isBinary": text is None, "isTruncated": False, "text": text}

    def repo_ref(self, full_name: str) -> dict[str, Any]:
        owner, name = full_name.split("/", 1)
        return {"__typename": "Repository", "id": node_id("Repository", full_name), "name": name,
                "nameWithOwner": full_name, "owner": {"__typename": "User", "login": owner}}

    def pull_request(self, info: Any, number: int) -> dict[str, Any]:
        issue = self.state.issues.get(number)
        if issue is None or not issue.is_pull:
            raise NotFound(f"Could not resolve to a PullRequest with the number of {number}.")
        comments = sorted((c for c in self.state.comments.values() if c.issue == number), key=lambda c: c.id)
        reviews = sorted((r for r in self.state.reviews.values() if r.pull == number), key=lambda r: r.id)
        st = self.state
        merged = issue.merged or bool(issue.merged_at)
        head_repo = st.head_repo_full_name(issue)
        return {"__typename": "PullRequest", "id": node_id("PullRequest", number), "number": number,
                "title": issue.title, "author": self.actor(issue.author),
                "state": "MERGED" if merged else issue.state.upper(), "isDraft": issue.draft, "merged": merged,
                "headRefName": issue.head, "headRefOid": st.head_sha(issue), "baseRefName": issue.base,
                "baseRefOid": st.base_sha(issue), "updatedAt": issue.updated,
                "headRepository": self.repo_ref(head_repo), "baseRepository": self.repo_ref(st.full_name),
                "labels": lambda info, **args: connection(info, [{"__typename": "Label", "name": name}
                                                                 for name in issue.labels], **args),
                "comments": lambda info, **args: connection(info, [self.comment(c) for c in comments], **args),
                "reviews": lambda info, **args: connection(info, [self.review(r) for r in reviews], **args)}

    def _edited(self, item: Comment | Review, kind: str) -> dict[str, Any]:
        """The fields of GraphQL's `Comment` interface that tell who wrote and who edited the body."""
        last = item.edits[-1] if item.edits else None
        history = [{"__typename": "UserContentEdit", "id": node_id("UserContentEdit", f"{kind}{item.id}-{n}"),
                    "createdAt": e["edited_at"], "updatedAt": e["edited_at"], "editedAt": e["edited_at"],
                    "editor": self.actor(e["editor"]), "deletedAt": None, "deletedBy": None}
                   for n, e in enumerate(item.edits)][::-1]  # newest first, as GitHub lists them
        return {"__typename": kind, "id": node_id(kind, item.id), "databaseId": item.id,
                "fullDatabaseId": str(item.id), "body": item.body, "author": self.actor(item.user),
                "editor": self.actor(last["editor"]) if last else None,
                "lastEditedAt": last["edited_at"] if last else None, "includesCreatedEdit": bool(item.edits),
                "userContentEdits": lambda info, **args: connection(info, history, **args)}

    def comment(self, c: Comment) -> dict[str, Any]:
        return {**self._edited(c, "IssueComment"), "createdAt": c.created, "updatedAt": c.updated,
                "url": f"{self.web}/{self.state.full_name}/pull/{c.issue}#issuecomment-{c.id}"}

    def review(self, r: Review) -> dict[str, Any]:
        return {**self._edited(r, "PullRequestReview"), "createdAt": r.submitted, "submittedAt": r.submitted,
                "updatedAt": r.edits[-1]["edited_at"] if r.edits else r.submitted, "state": r.state,
                "commit": {"__typename": "Commit", "oid": r.commit_id},
                "url": f"{self.web}/{self.state.full_name}/pull/{r.pull}#pullrequestreview-{r.id}"}
