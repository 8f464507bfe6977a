"""GitHub's REST description cut, at load time, to the operations the sandbox serves (pure functions).

The operations below are recipe-bot's choice (what bot/core/github.py and the runner workflows call); the
description itself comes from the pinned `@octokit/openapi` package. Trimming keeps each operation under
its path and method, the transitive closure of the `#/components/...` references they reach (in source
order), and the tags they use, so openapi-core builds its validators in a fraction of the time.
"""
from __future__ import annotations

from typing import Any

# (method, path) pairs served by the sandbox; sandbox/github_sandbox/api has one handler per operation.
OPERATIONS: tuple[tuple[str, str], ...] = (
    ("post", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("patch", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}/comments"),
    ("delete", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    ("post", "/repos/{owner}/{repo}/issues/{issue_number}/labels"),
    ("delete", "/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}"),
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}/labels"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}/files"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews"),
    ("put", "/repos/{owner}/{repo}/pulls/{pull_number}/reviews/{review_id}"),
    ("get", "/repos/{owner}/{repo}/pulls/{pull_number}/commits"),
    ("get", "/repos/{owner}/{repo}/collaborators/{username}/permission"),
    ("get", "/repos/{owner}/{repo}/contents/{path}"),
    ("post", "/repos/{owner}/{repo}/statuses/{sha}"),
    ("get", "/repos/{owner}/{repo}/commits/{ref}/statuses"),
    ("post", "/repos/{owner}/{repo}/check-runs"),
    ("patch", "/repos/{owner}/{repo}/check-runs/{check_run_id}"),
    ("get", "/repos/{owner}/{repo}/commits/{ref}/check-runs"),
    ("post", "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/dispatches"),
    ("get", "/repos/{owner}/{repo}/actions/workflows/{workflow_id}/runs"),
    ("get", "/repos/{owner}/{repo}/actions/runs/{run_id}"),
    ("post", "/repos/{owner}/{repo}/actions/runs/{run_id}/cancel"),
    ("get", "/repos/{owner}/{repo}/actions/runs/{run_id}/jobs"),
    ("get", "/repos/{owner}/{repo}/actions/runs/{run_id}/artifacts"),
    ("get", "/repos/{owner}/{repo}/actions/artifacts/{artifact_id}/{archive_format}"),
    ("post", "/repos/{owner}/{repo}/actions/runs/{run_id}/rerun-failed-jobs"),
    ("post", "/repos/{owner}/{repo}/dispatches"),
    ("post", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions"),
    ("get", "/orgs/{org}/members/{username}"),
    ("get", "/orgs/{org}/teams/{team_slug}/memberships/{username}"),
    ("get", "/repos/{owner}/{repo}/compare/{basehead}"),
    ("get", "/repos/{owner}/{repo}/git/ref/{ref}"),
    ("get", "/repos/{owner}/{repo}"),
    ("get", "/repos/{owner}/{repo}/issues/{issue_number}"),
    ("get", "/repos/{owner}/{repo}/issues/comments/{comment_id}"),
    ("get", "/repos/{owner}/{repo}/actions/workflows/{workflow_id}"),
    ("get", "/repos/{owner}/{repo}/actions/workflows"),
    ("get", "/repos/{owner}/{repo}/actions/runs"),
    ("get", "/repos/{owner}/{repo}/actions/artifacts/{artifact_id}"),
    ("get", "/repos/{owner}/{repo}/actions/artifacts"),
    ("get", "/repos/{owner}/{repo}/pulls"),
    ("get", "/repos/{owner}/{repo}/branches/{branch}"),
    ("get", "/repos/{owner}/{repo}/commits/{ref}"),
    ("get", "/repos/{owner}/{repo}/commits/{ref}/status"),
    ("get", "/user"),
    ("get", "/users/{username}"),
    ("get", "/repos/{owner}/{repo}/issues/comments/{comment_id}/reactions"),
    ("post", "/repos/{owner}/{repo}/issues/{issue_number}/reactions"),
    ("get", "/repos/{owner}/{repo}/check-runs/{check_run_id}"),
    ("get", "/orgs/{org}/teams/{team_slug}/members"),
    ("get", "/repos/{owner}/{repo}/collaborators"),
    ("get", "/repos/{owner}/{repo}/commits"),
)
# octokit/openapi renames GitHub's `repos/compare-commits` (it gives that name to a legacy `{base}...{head}`
# path it adds); the sandbox names operations as GitHub does.
GITHUB_NAMES = {"repos/compare-commits-with-basehead": "repos/compare-commits"}


class TrimError(ValueError):
    """The description lacks an operation the sandbox serves (a package version that dropped it)."""


def trim(spec: dict[str, Any], operations: tuple[tuple[str, str], ...] = OPERATIONS) -> dict[str, Any]:
    """A new description with only `operations`, the components they reach, and the tags they use."""
    paths: dict[str, dict[str, Any]] = {}
    missing = []
    wanted = set(operations)
    for path, item in spec["paths"].items():
        for method, op in item.items():
            if (method, path) in wanted:
                op = {k: v for k, v in op.items() if k != "x-octokit"}
                op["operationId"] = GITHUB_NAMES.get(op["operationId"], op["operationId"])
                paths.setdefault(path, {})[method] = op
        shared = item.get("parameters")
        if path in paths and shared is not None:
            paths[path]["parameters"] = shared
    for method, path in operations:
        if method not in paths.get(path, {}):
            missing.append(f"{method.upper()} {path}")
    if missing:
        raise TrimError("the description has no operation for: " + ", ".join(missing))
    refs = _closure(spec, paths)
    components = {section: {name: body for name, body in entries.items() if (section, name) in refs}
                  for section, entries in spec.get("components", {}).items()}
    used_tags = {t for item in paths.values() for op in item.values() if isinstance(op, dict)
                 for t in op.get("tags", ())}
    out: dict[str, Any] = {k: spec[k] for k in ("openapi", "info") if k in spec}
    out["x-trimmed-from"] = [op["operationId"] for item in paths.values() for m, op in item.items()
                             if m != "parameters"]
    out["tags"] = [t for t in spec.get("tags", []) if t.get("name") in used_tags]
    for key in ("servers", "externalDocs"):
        if key in spec:
            out[key] = spec[key]
    out["paths"] = paths
    out["components"] = {s: e for s, e in components.items() if e}
    return out


def _closure(spec: dict[str, Any], start: Any) -> set[tuple[str, str]]:
    """Every (section, name) under #/components reachable from `start` through `$ref`s."""
    seen: set[tuple[str, str]] = set()
    todo = [start]
    while todo:
        node = todo.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/components/"):
                section, name = ref.removeprefix("#/components/").split("/", 1)
                if (section, name) not in seen:
                    seen.add((section, name))
                    todo.append(spec["components"][section][name])
            todo.extend(node.values())
        elif isinstance(node, list):
            todo.extend(node)
    return seen
