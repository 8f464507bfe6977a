"""Webhook payloads built by the sandbox keep octokit's shapes (validated by its JSON schemas) and match the state."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from github_sandbox import upstream
from github_sandbox.harness import SAMPLE_FEATURE_FILES, SAMPLE_MAIN_FILES, make_seed
from github_sandbox.seed import load_seed
from github_sandbox.server import Sandbox
from github_sandbox.wire import RawRequest
from github_sandbox.webhooks import TEMPLATES, Example, WebhookError, example_payload, examples
from tests.octokit_data import schema_errors, used_examples

URL = "http://127.0.0.1:9"
BOT = "recipe-bot[bot]"


class InProcess:
    """The sandbox application without HTTP: same routing, validation and log, much faster to start."""

    def __init__(self, seed: Path):
        self.app = Sandbox(load_seed(seed))

    def call(self, method: str, path: str, body: Any = None, user: str = "alice") -> tuple[int, Any]:
        raw = json.dumps(body).encode() if body is not None else b""
        resp = self.app.handle(RawRequest(method, path, {"authorization": f"token {user}",
                                                          "content-type": "application/json"}, raw, "127.0.0.1:9"))
        return resp.status, json.loads(resp.body) if resp.body else None

    def event(self, event: str, action: str, **selectors: Any) -> dict[str, Any]:
        resp = self.app.handle(RawRequest("POST", "/_sandbox/webhook", {},
                                          json.dumps({"event": event, "action": action, **selectors}).encode(),
                                          "127.0.0.1:9"))
        body = json.loads(resp.body)
        if resp.status != 200:
            raise AssertionError(body["message"])
        return body


@pytest.fixture
def box(tmp_path: Path) -> Any:
    seed = make_seed(tmp_path, SAMPLE_MAIN_FILES, SAMPLE_FEATURE_FILES, {"pulls": [
        {"number": 7, "head": "feature", "author": "bob", "title": "Tune tiny recipe",
         "comments": [{"id": 101, "user": "alice", "body": "/sweep"}]},
        {"number": 8, "head": "feature", "author": "mallory", "fork": True, "draft": True, "title": "Fork"},
    ], "issues": [{"number": 3, "author": "carol", "title": "Question",
                   "comments": [{"id": 301, "user": "bob", "body": "/sweep"}]}]})
    sb = InProcess(seed)
    yield sb
    assert [e for e in sb.app.log(everything=True) if not e["response_valid"]] == []


def test_builder_templates_come_from_the_pinned_examples_package() -> None:
    installed = json.loads((upstream.package_dir(upstream.WEBHOOK_EXAMPLES) / "package.json").read_text())
    assert installed["version"] == upstream.pinned_version(upstream.WEBHOOK_EXAMPLES)
    for (event, action), example in TEMPLATES.items():
        chosen = example_payload(example)
        assert chosen in examples()[event] and chosen["action"] == example.action, (event, action)
        assert ("organization" in chosen) == example.organization


@pytest.mark.parametrize("example, says", [
    (Example("pull_request", "no_such_action"), "has no example for"),
    (Example("no_such_event", "opened"), "has no example for"),
], ids=["unknown-action", "unknown-event"])
def test_an_example_the_package_lacks_is_a_named_error(example: Example, says: str) -> None:
    with pytest.raises(WebhookError, match=says):
        example_payload(example)


@pytest.mark.parametrize("example", used_examples(),
                         ids=[f"{x.event}-{x.action}-{'org' if x.organization else 'any'}" for x in used_examples()])
def test_every_octokit_example_the_bot_starts_from_validates_against_its_octokit_schema(example: Example) -> None:
    payload = example_payload(example)
    assert schema_errors(example.event, example.action, payload) == [], example


def test_issue_comment_events_carry_the_comment_the_issue_and_the_association(box: InProcess) -> None:
    created = box.event("issue_comment", "created", comment_id=101)
    assert schema_errors("issue_comment", "created", created) == []
    assert (created["comment"]["id"], created["comment"]["body"], created["comment"]["user"]["login"]) == (101, "/sweep", "alice")
    assert (created["issue"]["number"], created["comment"]["author_association"], created["sender"]["login"]) == (7, "MEMBER", "alice")
    assert created["issue"]["pull_request"]["url"] == f"{URL}/repos/acme/bench/pulls/7"
    assert created["repository"]["full_name"] == "acme/bench" and created["organization"]["login"] == "acme"
    assert "api.github.com" not in json.dumps(created) and "Codertocat" not in json.dumps(created)

    status, _ = box.call("PATCH", "/repos/acme/bench/issues/comments/101", {"body": "/sweep --full"})
    edited = box.event("issue_comment", "edited", comment_id=101, changes_from="/sweep")
    assert schema_errors("issue_comment", "edited", edited) == []
    assert (status, edited["comment"]["body"], edited["changes"]) == (200, "/sweep --full", {"body": {"from": "/sweep"}})


def test_a_comment_on_a_plain_issue_has_no_pull_request_key(box: InProcess) -> None:
    event = box.event("issue_comment", "created", comment_id=301)
    assert schema_errors("issue_comment", "created", event) == []
    assert event["issue"]["number"] == 3 and "pull_request" not in event["issue"]
    assert event["comment"]["html_url"].endswith("/acme/bench/issues/3#issuecomment-301")


def test_an_event_for_the_bots_own_comment_names_its_app(box: InProcess) -> None:
    status, comment = box.call("POST", "/repos/acme/bench/issues/7/comments", {"body": "report"}, user=BOT)
    event = box.event("issue_comment", "created", comment_id=comment["id"])
    assert status == 201 and schema_errors("issue_comment", "created", event) == []
    assert (event["comment"]["user"]["type"], event["comment"]["performed_via_github_app"]["slug"]) == ("Bot", "recipe-bot")


@pytest.mark.parametrize("action", ["opened", "reopened", "converted_to_draft"])
def test_pull_request_events_carry_head_sha_draft_and_fork(box: InProcess, action: str) -> None:
    event = box.event("pull_request", action, pull=8)
    assert schema_errors("pull_request", action, event) == []
    pr = event["pull_request"]
    state = box.app.state.snapshot()["pulls"][1]
    assert (event["number"], pr["head"]["sha"], pr["draft"], pr["head"]["repo"]["full_name"], pr["head"]["repo"]["fork"]) == (
        8, state["head_sha"], True, "mallory/bench", True)
    assert (pr["user"]["login"], pr["author_association"], event["sender"]["login"]) == ("mallory", "NONE", "mallory")


def test_labeled_unlabeled_closed_and_ready_for_review_follow_the_state(box: InProcess) -> None:
    box.call("POST", "/repos/acme/bench/issues/7/labels", {"labels": ["sweep"]}, user=BOT)
    labeled = box.event("pull_request", "labeled", pull=7, label="sweep", sender=BOT)
    assert schema_errors("pull_request", "labeled", labeled) == []
    assert (labeled["label"]["name"], [lab["name"] for lab in labeled["pull_request"]["labels"]]) == ("sweep", ["sweep"])
    box.call("DELETE", "/repos/acme/bench/issues/7/labels/sweep", user=BOT)
    unlabeled = box.event("pull_request", "unlabeled", pull=7, label="sweep", sender="alice")
    assert schema_errors("pull_request", "unlabeled", unlabeled) == [] and unlabeled["pull_request"]["labels"] == []
    box.app.control.handle("POST", "/_sandbox/pulls/7", "", b'{"state": "closed"}', "127.0.0.1:9")
    closed = box.event("pull_request", "closed", pull=7)
    assert schema_errors("pull_request", "closed", closed) == [] and closed["pull_request"]["state"] == "closed"
    box.app.control.handle("POST", "/_sandbox/pulls/8", "", b'{"draft": false}', "127.0.0.1:9")
    ready = box.event("pull_request", "ready_for_review", pull=8)
    assert schema_errors("pull_request", "ready_for_review", ready) == [] and ready["pull_request"]["draft"] is False


@pytest.mark.parametrize("event, action, selectors, message", [
    ("pull_request", "closed", {"pull": 7}, "pull #7 is open"),
    ("pull_request", "ready_for_review", {"pull": 8}, "pull #8 is a draft"),
    ("pull_request", "labeled", {"pull": 7, "label": "gpu"}, "does not carry label 'gpu'"),
    ("pull_request", "opened", {"pull": 99}, "pull=<number of a seeded pull>"),
    ("issue_comment", "created", {"comment_id": 5}, "comment_id of an existing comment"),
    ("issue_comment", "deleted", {"comment_id": 101}, "no webhook template for issue_comment/deleted"),
    ("issue_comment", "created", {"comment_id": 101, "sender": "ghost"}, "sender 'ghost' is not a user"),
], ids=["closed-while-open", "ready-while-draft", "label-not-on-pull", "unknown-pull", "unknown-comment",
        "unsupported-action", "unknown-sender"])
def test_an_event_the_state_does_not_show_is_refused(box: InProcess, event: str, action: str,
                                                     selectors: dict[str, Any], message: str) -> None:
    with pytest.raises(AssertionError, match=message):
        box.event(event, action, **selectors)


def test_synchronize_after_a_push_names_before_and_after(box: InProcess) -> None:
    resp = box.app.control.handle("POST", "/_sandbox/push", "",
                                  json.dumps({"branch": "feature", "files": {"a.txt": "a\n"}}).encode(), "127.0.0.1:9")
    pushed = json.loads(resp.body)
    event = box.event("pull_request", "synchronize", pull=7, before=pushed["before"], after=pushed["after"])
    assert schema_errors("pull_request", "synchronize", event) == []
    assert (event["before"], event["after"], event["pull_request"]["head"]["sha"]) == (
        pushed["before"], pushed["after"], pushed["after"])
    assert box.event("pull_request", "synchronize", pull=7)["before"] == pushed["before"]  # default: the parent


def test_review_and_workflow_run_events(box: InProcess) -> None:
    resp = box.app.control.handle("POST", "/_sandbox/reviews", "",
                                  b'{"pull": 7, "user": "alice", "state": "APPROVED", "body": "lgtm"}', "127.0.0.1:9")
    review = json.loads(resp.body)
    event = box.event("pull_request_review", "submitted", review_id=review["id"])
    assert schema_errors("pull_request_review", "submitted", event) == []
    assert (event["review"]["state"], event["review"]["user"]["login"], event["pull_request"]["number"]) == ("approved", "alice", 7)
    status, _ = box.call("POST", "/repos/acme/bench/actions/workflows/gpu.yml/dispatches",
                         {"ref": "feature", "inputs": {"pr": "7"}}, user=BOT)
    run = box.app.state.snapshot()["workflow_runs"][-1]
    box.app.control.handle("POST", f"/_sandbox/runs/{run['id']}", "", b'{"conclusion": "success"}', "127.0.0.1:9")
    done = box.event("workflow_run", "completed", run_id=run["id"])
    assert status == 204 and schema_errors("workflow_run", "completed", done) == []
    assert (done["workflow_run"]["id"], done["workflow_run"]["conclusion"], done["workflow_run"]["head_sha"],
            done["workflow"]["path"]) == (run["id"], "success", run["head_sha"], ".github/workflows/gpu.yml")


def test_the_harness_posts_the_same_event_over_http(sandbox: Any, tmp_path: Path) -> None:
    sb = sandbox(seed_overrides={"pulls": [{"number": 7, "head": "feature", "author": "bob",
                                            "comments": [{"id": 101, "user": "carol", "body": "/sweep"}]}]})
    path = sb.write_event(tmp_path / "event.json", "issue_comment", "created", comment_id=101)
    event = json.loads(path.read_text())
    assert schema_errors("issue_comment", "created", event) == []
    assert event["comment"]["html_url"].startswith(sb.url) and event["comment"]["author_association"] == "COLLABORATOR"
