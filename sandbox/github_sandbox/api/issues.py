"""Issue operations: get, comments (list/create/get/update/delete), labels and reactions."""
from __future__ import annotations

from typing import Any

from ..state import Comment, Reaction, record_edit, utcnow
from . import (ApiError, Call, Reply, check_repo, find_issue, int_param, not_found, operation, paginate,
               require_push, require_user, validation_failed)

MAX_COMMENT = 65536  # GitHub refuses longer comment bodies


def _find_comment(call: Call) -> Comment:
    check_repo(call)
    comment = call.state.comments.get(int_param(call, "comment_id"))
    if comment is None:
        raise not_found()
    return comment


def _check_body(body: str) -> None:
    if len(body) > MAX_COMMENT:
        raise validation_failed("IssueComment", "body", f"body is too long (maximum is {MAX_COMMENT} characters)")


@operation("issues/get")
def get_issue(call: Call) -> Reply:
    check_repo(call)
    return Reply(200, call.shapes.issue(find_issue(call)))


@operation("issues/list-comments")
def list_comments(call: Call) -> Reply:
    check_repo(call)
    issue = find_issue(call)
    since = call.query.get("since")
    comments = sorted((c for c in call.state.comments.values() if c.issue == issue.number), key=lambda c: c.id)
    if since:
        comments = [c for c in comments if c.updated >= since]
    return paginate(call, [call.shapes.comment(c) for c in comments])


@operation("issues/create-comment")
def create_comment(call: Call) -> Reply:
    check_repo(call)
    user = require_user(call)
    issue = find_issue(call)
    body = call.body["body"]
    _check_body(body)
    now = utcnow()
    comment = Comment(call.state.new_id(), issue.number, user, body, now, now)
    call.state.comments[comment.id] = comment
    issue.updated = now
    data = call.shapes.comment(comment)
    return Reply(201, data, {"Location": data["url"]})


@operation("issues/get-comment")
def get_comment(call: Call) -> Reply:
    return Reply(200, call.shapes.comment(_find_comment(call)))


def may_edit(call: Call, comment: Comment) -> str:
    user = require_user(call)
    if user != comment.user and not call.state.can(user, "write"):
        raise ApiError(403, "Must have push access to edit another user's comment")
    return user


@operation("issues/update-comment")
def update_comment(call: Call) -> Reply:
    comment = _find_comment(call)
    editor = may_edit(call, comment)
    body = call.body["body"]
    _check_body(body)
    comment.body = body
    comment.updated = utcnow()
    record_edit(comment, editor, comment.updated)
    return Reply(200, call.shapes.comment(comment))


@operation("issues/delete-comment")
def delete_comment(call: Call) -> Reply:
    comment = _find_comment(call)
    may_edit(call, comment)
    del call.state.comments[comment.id]
    for rid in [r.id for r in call.state.reactions.values() if r.subject == "comment" and r.subject_id == comment.id]:
        del call.state.reactions[rid]
    return Reply(204)


@operation("issues/list-labels-on-issue")
def list_labels(call: Call) -> Reply:
    check_repo(call)
    issue = find_issue(call)
    return paginate(call, [call.shapes.label(n) for n in issue.labels])


def _label_names(body: Any) -> list[str]:
    items = body.get("labels", []) if isinstance(body, dict) else body
    return [item["name"] if isinstance(item, dict) else item for item in items]


@operation("issues/add-labels")
def add_labels(call: Call) -> Reply:
    check_repo(call)
    require_push(call)
    issue = find_issue(call)
    names = _label_names(call.body)
    if not names:
        raise validation_failed("Label", "labels", "at least one label is required", code="missing_field")
    for name in names:
        if not name.strip() or len(name) > 50:
            raise validation_failed("Label", "name", f"label name {name!r} must be 1 to 50 characters", code="invalid")
        call.state.ensure_label(name)
        if name not in issue.labels:
            issue.labels.append(name)
    issue.updated = utcnow()
    return Reply(200, [call.shapes.label(n) for n in issue.labels])


@operation("issues/remove-label")
def remove_label(call: Call) -> Reply:
    check_repo(call)
    require_push(call)
    issue = find_issue(call)
    name = call.params["name"]
    if name not in issue.labels:
        raise ApiError(404, "Label does not exist")
    issue.labels.remove(name)
    issue.updated = utcnow()
    return Reply(200, [call.shapes.label(n) for n in issue.labels])


def _react(call: Call, subject: str, subject_id: int, issue_number: int) -> Reply:
    user = require_user(call)
    content = call.body["content"]
    for r in call.state.reactions.values():
        if (r.subject, r.subject_id, r.user, r.content) == (subject, subject_id, user, content):
            return Reply(200, call.shapes.reaction(r))
    reaction = Reaction(call.state.new_id(), subject, subject_id, issue_number, user, content, utcnow())
    call.state.reactions[reaction.id] = reaction
    return Reply(201, call.shapes.reaction(reaction))


@operation("reactions/create-for-issue-comment")
def react_to_comment(call: Call) -> Reply:
    comment = _find_comment(call)
    return _react(call, "comment", comment.id, comment.issue)


@operation("reactions/create-for-issue")
def react_to_issue(call: Call) -> Reply:
    check_repo(call)
    issue = find_issue(call)
    return _react(call, "issue", issue.number, issue.number)


@operation("reactions/list-for-issue-comment")
def list_comment_reactions(call: Call) -> Reply:
    comment = _find_comment(call)
    content = call.query.get("content")
    found = [r for r in call.state.reactions.values()
             if r.subject == "comment" and r.subject_id == comment.id and (content is None or r.content == content)]
    return paginate(call, [call.shapes.reaction(r) for r in sorted(found, key=lambda r: r.id)])
