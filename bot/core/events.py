"""GitHub webhook payloads parsed once, at the edge, into the few typed events the bot acts on."""
from __future__ import annotations

import dataclasses
from typing import Any, Literal

from bot.core.messages import msg

PULL_ACTIONS = frozenset({
    "opened", "synchronize", "labeled", "unlabeled", "edited", "reopened", "closed",
    "ready_for_review", "converted_to_draft",
})
COMMENT_ACTIONS = frozenset({"created", "edited"})
REVIEW_ACTIONS = frozenset({"submitted", "edited"})


class EventError(ValueError):
    """A payload that does not have the shape GitHub sends; names the missing or wrong field."""


@dataclasses.dataclass(frozen=True)
class Pull:
    """What the bot needs to know about a pull request, from a payload or from the API."""

    number: int
    state: str  # open | closed
    draft: bool
    merged: bool
    author: str
    head_sha: str
    head_repo: str | None  # None when the fork was deleted
    base_repo: str
    base_ref: str
    base_sha: str
    labels: tuple[str, ...] = ()
    updated_at: str = ""  # GitHub's time of the last change; in a synchronize payload, the push

    @property
    def fork(self) -> bool:
        return self.head_repo != self.base_repo

    @property
    def closed(self) -> bool:
        return self.state != "open"


@dataclasses.dataclass(frozen=True)
class CommentEvent:
    """A comment (or a review body) that may carry commands."""

    event_name: Literal["issue_comment", "pull_request_review"]
    action: str
    repository: str
    default_branch: str
    number: int
    on_pull: bool
    key: str  # what idempotency keys on: the comment id, or "review-<id>"
    comment_id: int | None  # None for reviews: they take no reactions
    body: str
    author: str  # who wrote the comment
    sender: str  # who caused the event (the editor, for an edit)
    sender_is_bot: bool
    issue_state: str
    pull: Pull | None = None  # a review's payload carries the pull request; a comment's does not

    @property
    def edited(self) -> bool:
        return self.action == "edited"


@dataclasses.dataclass(frozen=True)
class PullRequestEvent:
    action: str
    repository: str
    default_branch: str
    pull: Pull
    sender: str
    sender_is_bot: bool
    label: str | None = None  # labeled / unlabeled


@dataclasses.dataclass(frozen=True)
class Ignored:
    reason: str


Event = CommentEvent | PullRequestEvent


def parse_event(event_name: str, payload: Any) -> Event | Ignored:
    """Typed event for the ones the bot acts on, Ignored (with why) for the rest."""
    if not isinstance(payload, dict):
        raise EventError(msg("the event payload must be a JSON object"))
    action = payload.get("action")
    handled = ("issue_comment", "pull_request", "pull_request_target", "pull_request_review")
    if event_name in handled and not isinstance(action, str):
        raise EventError(msg("the event payload field %(field)s should be %(expected)s, not %(got)s", field="action",
                               expected="str", got=type(action).__name__))
    if event_name == "issue_comment":
        if action not in COMMENT_ACTIONS:
            return Ignored(f"issue_comment {action}: nothing to do")
        return _comment(payload, action)
    if event_name in ("pull_request", "pull_request_target"):
        if action not in PULL_ACTIONS:
            return Ignored(f"{event_name} {action}: nothing to do")
        return _pull_request(payload, action)
    if event_name == "pull_request_review":
        if action not in REVIEW_ACTIONS:
            return Ignored(f"pull_request_review {action}: nothing to do")
        return _review(payload, action)
    return Ignored(f"{event_name}: not an event recipe-bot handles")


def _get(payload: Any, path: str, kind: type | tuple[type, ...], nullable: bool = False) -> Any:
    value = payload
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            raise EventError(msg("the event payload has no field %(field)s", field=path))
        value = value[part]
    if value is None and nullable:
        return None
    if not isinstance(value, kind) or isinstance(value, bool) and kind is int:
        expected = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise EventError(msg("the event payload field %(field)s should be %(expected)s, not %(got)s", field=path,
                               expected=expected, got=type(value).__name__))
    return value


def _repository(payload: dict) -> tuple[str, str]:
    return _get(payload, "repository.full_name", str), _get(payload, "repository.default_branch", str)


def _sender(payload: dict) -> tuple[str, bool]:
    login = _get(payload, "sender.login", str)
    return login, payload["sender"].get("type") == "Bot"


def pull_from_json(data: dict, where: str = "pull_request") -> Pull:
    """A Pull from the pull-request object of a payload or of GET /pulls/{n}."""
    wrapped = {where: data}
    head_repo = _get(wrapped, f"{where}.head.repo", dict, nullable=True)
    return Pull(
        number=_get(wrapped, f"{where}.number", int),
        state=_get(wrapped, f"{where}.state", str),
        draft=bool(data.get("draft") or False),
        merged=bool(data.get("merged") or False),
        author=_get(wrapped, f"{where}.user.login", str),
        head_sha=_get(wrapped, f"{where}.head.sha", str),
        head_repo=_get(wrapped, f"{where}.head.repo.full_name", str) if head_repo else None,
        base_repo=_get(wrapped, f"{where}.base.repo.full_name", str),
        base_ref=_get(wrapped, f"{where}.base.ref", str),
        base_sha=_get(wrapped, f"{where}.base.sha", str),
        labels=tuple(label["name"] for label in _list(data.get("labels")) if isinstance(label, dict)
                     and isinstance(label.get("name"), str)),
        updated_at=str(data.get("updated_at") or ""),
    )


def _comment(payload: dict, action: str) -> CommentEvent:
    repository, default_branch = _repository(payload)
    sender, sender_is_bot = _sender(payload)
    comment_id = _get(payload, "comment.id", int)
    return CommentEvent(
        event_name="issue_comment",
        action=action,
        repository=repository,
        default_branch=default_branch,
        number=_get(payload, "issue.number", int),
        # GitHub marks a PR's conversation with issue.pull_request; plain issues lack it.
        on_pull=isinstance(payload["issue"].get("pull_request"), dict),
        key=str(comment_id),
        comment_id=comment_id,
        body=_get(payload, "comment.body", str, nullable=True) or "",
        author=_get(payload, "comment.user.login", str),
        sender=sender,
        sender_is_bot=sender_is_bot,
        issue_state=_get(payload, "issue.state", str),
    )


def _review(payload: dict, action: str) -> CommentEvent:
    repository, default_branch = _repository(payload)
    sender, sender_is_bot = _sender(payload)
    pull = pull_from_json(_get(payload, "pull_request", dict))
    review_id = _get(payload, "review.id", int)
    return CommentEvent(
        event_name="pull_request_review",
        action=action,
        repository=repository,
        default_branch=default_branch,
        number=pull.number,
        on_pull=True,
        key=f"review-{review_id}",
        comment_id=None,
        body=_get(payload, "review.body", str, nullable=True) or "",
        author=_get(payload, "review.user.login", str),
        sender=sender,
        sender_is_bot=sender_is_bot,
        issue_state=pull.state,
        pull=pull,
    )


def _pull_request(payload: dict, action: str) -> PullRequestEvent:
    repository, default_branch = _repository(payload)
    sender, sender_is_bot = _sender(payload)
    label = None
    if action in ("labeled", "unlabeled"):
        label = _get(payload, "label.name", str)
    return PullRequestEvent(
        action=action,
        repository=repository,
        default_branch=default_branch,
        pull=pull_from_json(_get(payload, "pull_request", dict)),
        sender=sender,
        sender_is_bot=sender_is_bot,
        label=label,
    )


def _list(value: Any) -> list:
    return value if isinstance(value, list) else []
