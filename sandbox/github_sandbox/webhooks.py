"""Webhook payloads for sandbox actions, cut from octokit's example payloads so they keep GitHub's exact shape.

Each payload starts from an example of the pinned `@octokit/webhooks-examples` package (sandbox/github_sandbox/upstream.py)
and keeps exactly the example's keys; the values come from the sandbox state through the same builders the
REST API uses. Supported:

    issue_comment        created, edited                       (comment_id; edited also changes_from)
    pull_request         opened, synchronize, labeled, unlabeled, closed, reopened,
                         ready_for_review, converted_to_draft  (pull; label; before/after for synchronize)
    pull_request_review  submitted                             (review_id)
    workflow_run         completed, requested, in_progress     (run_id)

ready_for_review/converted_to_draft reuse the opened example's shape, which is also what GitHub sends for
them (the pull request object, number, repository, sender); workflow_run's other actions reuse completed.
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from . import upstream
from .shapes import Shapes
from .shapes.base import node_id


@dataclass(frozen=True)
class Example:
    """Which octokit example a payload starts from: the fullest one of `event`/`action` (with an organization)."""

    event: str
    action: str
    organization: bool = True


_PR = {a: Example("pull_request", a) for a in ("opened", "closed", "labeled", "unlabeled", "reopened")}
TEMPLATES: dict[tuple[str, str], Example] = {
    ("issue_comment", "created"): Example("issue_comment", "created"),
    ("issue_comment", "edited"): Example("issue_comment", "edited"),
    **{("pull_request", a): ex for a, ex in _PR.items()},
    ("pull_request", "synchronize"): Example("pull_request", "synchronize", organization=False),
    ("pull_request", "ready_for_review"): _PR["opened"],
    ("pull_request", "converted_to_draft"): _PR["opened"],
    ("pull_request_review", "submitted"): Example("pull_request_review", "submitted"),
    ("workflow_run", "completed"): Example("workflow_run", "completed"),
    ("workflow_run", "requested"): Example("workflow_run", "completed"),
    ("workflow_run", "in_progress"): Example("workflow_run", "completed"),
}
_USER_KEYS = {"user", "owner", "sender", "actor", "triggering_actor", "merged_by", "assignee", "creator"}
_APP_KEYS = ("id", "slug", "node_id", "owner", "name", "description", "external_url", "html_url",
             "created_at", "updated_at", "permissions", "events")


class WebhookError(ValueError):
    """The event cannot be built: unknown event/action, or it names something the sandbox does not have."""


@lru_cache(maxsize=1)
def examples() -> dict[str, list[dict[str, Any]]]:
    """The package's api.github.com examples by event name, in the package's order."""
    index = upstream.package_dir(upstream.WEBHOOK_EXAMPLES) / "api.github.com" / "index.json"
    return {e["name"]: e["examples"] for e in json.loads(index.read_text(encoding="utf-8"))}


def _key_paths(value: Any, prefix: str = "") -> set[str]:
    """Every key path of a JSON value (list items through their first item), ignoring `installation`."""
    out: set[str] = set()
    if isinstance(value, dict):
        for k, v in value.items():
            if k != "installation":
                out.add(f"{prefix}/{k}")
                out |= _key_paths(v, f"{prefix}/{k}")
    elif isinstance(value, list) and value:
        out |= _key_paths(value[0], prefix + "[]")
    return out


@lru_cache(maxsize=None)
def _chosen(example: Example) -> str:
    """The fullest matching example (most key paths: `fit` keeps every key it can fill); on a tie one
    without an `installation` (the sandbox has no app installation), then the first."""
    found = [(len(_key_paths(x)), "installation" not in x, -i, x)
             for i, x in enumerate(examples().get(example.event, []))
             if x.get("action") == example.action and (not example.organization or "organization" in x)]
    if not found:
        raise WebhookError(f"{upstream.WEBHOOK_EXAMPLES} has no example for {example}")
    return json.dumps(max(found, key=lambda t: t[:3])[3])


def example_payload(example: Example) -> dict[str, Any]:
    """A fresh copy of the example `example` selects."""
    return json.loads(_chosen(example))


def template(event: str, action: str) -> dict[str, Any]:
    example = TEMPLATES.get((event, action))
    if example is None:
        known = ", ".join(f"{e}/{a}" for e, a in TEMPLATES)
        raise WebhookError(f"no webhook template for {event}/{action}; supported: {known}")
    return example_payload(example)


def _prototypes() -> dict[str, Any]:
    """Item shapes for values an example leaves null or empty (a user, a label)."""
    labeled = example_payload(_PR["labeled"])
    return {"user": labeled["sender"], "label": labeled["label"]}


def fit(tmpl: Any, ours: Any, key: str = "") -> Any:
    """`ours` (a REST shape) cut to the keys of `tmpl` (an example value), recursively.

    Keys only the example has keep the example's value; keys only ours has are dropped (octokit's schemas
    forbid unknown keys). A null or empty example value takes its shape from a prototype.
    """
    if ours is None:
        return None
    if tmpl is None or (isinstance(tmpl, list) and not tmpl):
        proto = _prototypes()
        if key in _USER_KEYS:
            tmpl = proto["user"]
        elif key == "labels":
            tmpl = [proto["label"]]
        elif key in ("assignees", "requested_reviewers"):
            tmpl = [proto["user"]]
        else:
            return ours
    if isinstance(tmpl, dict) and isinstance(ours, dict):
        return {k: fit(v, ours[k], k) if k in ours else v for k, v in tmpl.items()}
    if isinstance(tmpl, list) and isinstance(ours, list):
        return [fit(tmpl[0], item, key) for item in ours]
    return ours


def _rewrite(value: Any, old_new: list[tuple[str, str]]) -> Any:
    """Point example values the state does not supply (installation, custom properties) at the sandbox."""
    if isinstance(value, str):
        for old, new in old_new:
            value = value.replace(old, new)
        return value
    if isinstance(value, dict):
        return {k: _rewrite(v, old_new) for k, v in value.items()}
    if isinstance(value, list):
        return [_rewrite(v, old_new) for v in value]
    return value


def _organization(shapes: Shapes) -> dict[str, Any]:
    org = shapes.state.owner
    url = f"{shapes.api}/orgs/{org}"
    return {"login": org, "id": shapes.user_id(org), "node_id": node_id("Organization", shapes.user_id(org)),
            "url": url, "repos_url": f"{url}/repos", "events_url": f"{url}/events", "hooks_url": f"{url}/hooks",
            "issues_url": f"{url}/issues", "members_url": f"{url}/members{{/member}}",
            "public_members_url": f"{url}/public_members{{/member}}",
            "avatar_url": f"{shapes.web}/avatars/{org}", "description": ""}


def _app(shapes: Shapes, proto_user: dict[str, Any]) -> dict[str, Any]:
    app = shapes.app()
    out = {k: app[k] for k in _APP_KEYS}
    out["owner"] = fit(proto_user, app["owner"])
    return out


def build_event(shapes: Shapes, event: str, action: str, *, sender: str | None = None,
                comment_id: int | None = None, pull: int | None = None, label: str | None = None,
                before: str | None = None, after: str | None = None, review_id: int | None = None,
                run_id: int | None = None, changes_from: str | None = None) -> dict[str, Any]:
    """One webhook payload, consistent with the sandbox state right now (the caller holds state.lock)."""
    tmpl = template(event, action)
    st = shapes.state
    payload = copy.deepcopy(tmpl)
    payload["action"] = action
    if event == "issue_comment":
        default_sender = _issue_comment(shapes, payload, tmpl, comment_id, changes_from)
    elif event == "pull_request":
        default_sender = _pull_request(shapes, payload, tmpl, pull, action, label, before, after)
    elif event == "pull_request_review":
        default_sender = _review(shapes, payload, tmpl, review_id)
    else:
        default_sender = _workflow_run(shapes, payload, tmpl, run_id)
    who = sender or default_sender
    if not st.is_known(who):
        raise WebhookError(f"sender {who!r} is not a user of the sandbox")
    payload["sender"] = fit(tmpl["sender"], shapes.simple_user(who), "sender")
    payload["repository"] = fit(tmpl["repository"], shapes.repository(), "repository")
    if st.owner_type == "Organization":
        proto = tmpl.get("organization") or example_payload(_PR["opened"])["organization"]
        payload["organization"] = fit(proto, _organization(shapes))
    else:
        payload.pop("organization", None)
    old_repo = tmpl["repository"]["full_name"]
    return _rewrite(payload, [(f"https://api.github.com/repos/{old_repo}", shapes.repo_api),
                              (f"https://github.com/{old_repo}", shapes.repo_web),
                              ("https://api.github.com", shapes.api), ("https://github.com", shapes.web)])


def _issue_comment(shapes: Shapes, payload: dict[str, Any], tmpl: dict[str, Any], comment_id: int | None,
                   changes_from: str | None) -> str:
    st = shapes.state
    comment = st.comments.get(comment_id) if comment_id is not None else None
    if comment is None:
        raise WebhookError(f"issue_comment needs comment_id of an existing comment (got {comment_id!r})")
    issue = st.issues[comment.issue]
    rest_issue = shapes.issue(issue)
    payload["issue"] = fit(tmpl["issue"], rest_issue, "issue")
    if issue.is_pull:
        payload["issue"]["pull_request"] = rest_issue["pull_request"]
        payload["issue"]["draft"] = issue.draft
    rest_comment = shapes.comment(comment)
    payload["comment"] = fit(tmpl["comment"], rest_comment, "comment")
    if rest_comment["performed_via_github_app"] is not None:
        payload["comment"]["performed_via_github_app"] = _app(shapes, tmpl["sender"])
    if payload["action"] == "edited":
        payload["changes"] = {"body": {"from": changes_from if changes_from is not None else comment.body}}
    return comment.user


def _find_pull(shapes: Shapes, pull: int | None) -> Any:
    issue = shapes.state.issues.get(pull) if pull is not None else None
    if issue is None or not issue.is_pull:
        raise WebhookError(f"pull_request events need pull=<number of a seeded pull> (got {pull!r})")
    return issue


def _check_consistent(issue: Any, action: str, label: str | None) -> None:
    """An event describes something that happened: the state must already show it."""
    n = issue.number
    how = f"change it first with POST /_sandbox/pulls/{n}"
    wrong = {
        "closed": (issue.state != "closed", f"pull #{n} is open; {how} {{\"state\": \"closed\"}}"),
        "reopened": (issue.state != "open", f"pull #{n} is closed; {how} {{\"state\": \"open\"}}"),
        "ready_for_review": (issue.draft, f"pull #{n} is a draft; {how} {{\"draft\": false}}"),
        "converted_to_draft": (not issue.draft, f"pull #{n} is not a draft; {how} {{\"draft\": true}}"),
        "labeled": (label is not None and label not in issue.labels,
                    f"pull #{n} does not carry label {label!r}; add it through the API first"),
        "unlabeled": (label is not None and label in issue.labels,
                      f"pull #{n} still carries label {label!r}; remove it through the API first"),
    }
    bad, message = wrong.get(action, (False, ""))
    if bad:
        raise WebhookError(message)


def _pull_request(shapes: Shapes, payload: dict[str, Any], tmpl: dict[str, Any], pull: int | None, action: str,
                  label: str | None, before: str | None, after: str | None) -> str:
    st = shapes.state
    issue = _find_pull(shapes, pull)
    _check_consistent(issue, action, label)
    payload["number"] = issue.number
    payload["pull_request"] = fit(tmpl["pull_request"], shapes.pull(issue), "pull_request")
    if action in ("labeled", "unlabeled"):
        if not label:
            raise WebhookError(f"pull_request/{action} needs label=<name>")
        payload["label"] = fit(tmpl["label"], shapes.label(label), "label")
    if action == "synchronize":
        head = after or st.head_sha(issue)
        parents = st.git.commit(head).parents
        payload["after"] = head
        payload["before"] = before or (parents[0] if parents else head)
    return issue.author


def _review(shapes: Shapes, payload: dict[str, Any], tmpl: dict[str, Any], review_id: int | None) -> str:
    st = shapes.state
    review = st.reviews.get(review_id) if review_id is not None else None
    if review is None:
        raise WebhookError(f"pull_request_review needs review_id of an existing review (got {review_id!r})")
    rest = shapes.review(review)
    rest["state"] = rest["state"].lower()  # webhooks spell review states in lower case
    payload["review"] = fit(tmpl["review"], rest, "review")
    payload["pull_request"] = fit(tmpl["pull_request"], shapes.pull(st.issues[review.pull], simple=True),
                                  "pull_request")
    return review.user


def _workflow_run(shapes: Shapes, payload: dict[str, Any], tmpl: dict[str, Any], run_id: int | None) -> str:
    st = shapes.state
    run = st.runs.get(run_id) if run_id is not None else None
    if run is None:
        raise WebhookError(f"workflow_run needs run_id of an existing run (got {run_id!r})")
    payload["workflow_run"] = fit(tmpl["workflow_run"], shapes.run(run), "workflow_run")
    payload["workflow"] = fit(tmpl["workflow"], shapes.workflow(st.workflows[run.workflow_id]), "workflow")
    return run.actor
