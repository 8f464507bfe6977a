"""Webhook payloads (octokit's real examples) become typed events; anything else is ignored or named."""
import copy

import pytest

from bot.core.events import CommentEvent, EventError, Ignored, PullRequestEvent, parse_event
from tests.octokit_data import payload


def on_pull(data):
    """An issue_comment on a PR: GitHub adds issue.pull_request (octokit's examples are on issues)."""
    data = copy.deepcopy(data)
    number = data["issue"]["number"]
    data["issue"]["pull_request"] = {
        "url": f"https://api.github.com/repos/Codertocat/Hello-World/pulls/{number}",
        "html_url": f"https://github.com/Codertocat/Hello-World/pull/{number}",
        "diff_url": f"https://github.com/Codertocat/Hello-World/pull/{number}.diff",
        "patch_url": f"https://github.com/Codertocat/Hello-World/pull/{number}.patch",
        "merged_at": None,
    }
    return data


def test_created_comment_on_a_pull_request():
    event = parse_event("issue_comment", on_pull(payload("issue_comment", "created")))
    assert isinstance(event, CommentEvent)
    assert event.on_pull and not event.edited
    assert event.key == "492700400" and event.comment_id == 492700400
    assert event.author == event.sender == "Codertocat"
    assert event.repository == "Codertocat/Hello-World" and event.default_branch == "master"
    assert event.number == 1 and event.body.startswith("You are totally right")


def test_comment_on_a_plain_issue_is_marked_as_such():
    event = parse_event("issue_comment", payload("issue_comment", "created"))
    assert isinstance(event, CommentEvent) and not event.on_pull


def test_edited_comment_keeps_its_id():
    event = parse_event("issue_comment", on_pull(payload("issue_comment", "edited")))
    assert event.edited and event.key == "492700400"


def test_labeled_pull_request_carries_head_label_and_sender():
    event = parse_event("pull_request", payload("pull_request", "labeled"))
    assert isinstance(event, PullRequestEvent)
    assert event.action == "labeled" and event.label == "bug"
    assert event.pull.head_sha == "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
    assert event.pull.number == 2 and not event.pull.fork and not event.pull.draft
    assert event.pull.author == "Codertocat" and event.pull.base_ref == "master"


@pytest.mark.parametrize("action", ["opened", "reopened", "synchronize", "closed", "unlabeled"])
def test_pull_request_actions_parse(action):
    event = parse_event("pull_request", payload("pull_request", action))
    assert isinstance(event, PullRequestEvent) and event.action == action


def test_pull_request_target_is_read_like_pull_request():
    event = parse_event("pull_request_target", payload("pull_request", "synchronize"))
    assert isinstance(event, PullRequestEvent) and event.action == "synchronize"


@pytest.mark.parametrize("action", ["ready_for_review", "converted_to_draft", "edited"])
def test_actions_without_an_octokit_example_parse_from_the_same_shape(action):
    data = payload("pull_request", "opened")
    data["action"] = action
    data["pull_request"]["draft"] = action == "converted_to_draft"
    event = parse_event("pull_request", data)
    assert event.action == action and event.pull.draft == (action == "converted_to_draft")


def test_fork_is_a_head_in_another_repository():
    data = payload("pull_request", "labeled")
    data["pull_request"]["head"]["repo"]["full_name"] = "mallory/Hello-World"
    assert parse_event("pull_request", data).pull.fork


def test_deleted_fork_counts_as_a_fork():
    data = payload("pull_request", "labeled")
    data["pull_request"]["head"]["repo"] = None
    assert parse_event("pull_request", data).pull.fork


def test_review_body_is_a_comment_keyed_by_review():
    data = payload("pull_request_review", "submitted")
    data["review"]["body"] = "/sweep"
    event = parse_event("pull_request_review", data)
    assert isinstance(event, CommentEvent)
    assert event.key.startswith("review-") and event.comment_id is None
    assert event.pull is not None and event.pull.number == event.number


def test_bot_sender_is_flagged():
    data = on_pull(payload("issue_comment", "created"))
    data["sender"]["type"] = "Bot"
    assert parse_event("issue_comment", data).sender_is_bot


@pytest.mark.parametrize("name, action", [
    ("issue_comment", "deleted"),
    ("pull_request", "assigned"),
    ("pull_request_review", "dismissed"),
    ("push", None),
    ("workflow_run", "completed"),
], ids=["comment-deleted", "pr-assigned", "review-dismissed", "push", "workflow-run"])
def test_other_events_are_ignored_with_a_reason(name, action):
    result = parse_event(name, {"action": action})
    assert isinstance(result, Ignored) and result.reason


@pytest.mark.parametrize("mutate, fragment", [
    (lambda d: d["comment"].pop("id"), "comment.id"),
    (lambda d: d["issue"].__setitem__("number", "7"), "issue.number should be int"),
    (lambda d: d.pop("repository"), "repository.full_name"),
    (lambda d: d["sender"].pop("login"), "sender.login"),
    (lambda d: d.__setitem__("action", ["created"]), "action should be str, not list"),
    (lambda d: d.__setitem__("action", {"x": 1}), "action should be str, not dict"),
    (lambda d: d.pop("action"), "action should be str, not NoneType"),
], ids=["no-comment-id", "number-as-string", "no-repository", "no-sender-login", "action-a-list",
        "action-an-object", "no-action"])
def test_malformed_payload_names_the_field(mutate, fragment):
    data = on_pull(payload("issue_comment", "created"))
    mutate(data)
    with pytest.raises(EventError, match=fragment.replace(".", r"\.")):
        parse_event("issue_comment", data)


def test_payload_must_be_an_object():
    with pytest.raises(EventError, match="JSON object"):
        parse_event("issue_comment", [1, 2])
