"""`recipe-bot handle` on pull_request events (labels, pushes, state changes), --dry-run, and races."""
import datetime as dt
import json

import pytest

from bot.control import handle
from bot.core.github import GitHubClient
from handle_helpers import Harness, bilingual, dry_run_lines


def test_a_sweep_label_dispatches_its_configured_command(h):
    h.label(7, "carol", "sweep-enabled")
    before = h.seq()
    h.handle("pull_request", "labeled", pull=7, label="sweep-enabled", sender="carol")
    [run] = h.dispatches()
    assert run["inputs"] == {"pr": "7", "sha": h.head(7), "command": "/sweep --scope lowest",
                             "requester": "carol", "comment_id": "label-sweep-enabled", "gpu_hours": ""}
    [ack] = h.bot_comments(7)
    assert f"<!-- recipe-bot:ack comment=label-sweep-enabled sha={h.head(7)} -->" in ack["body"].splitlines()
    english, _ = bilingual(ack["body"])
    assert "label `sweep-enabled`" in english
    assert [w["operation"] for w in h.writes(before)] == ["issues/create-comment", "actions/create-workflow-dispatch",
                                                          "issues/update-comment"]  # claim, dispatch, reply


def test_a_redelivered_label_event_runs_once(h):
    h.label(7, "alice", "full-sweep-fail-fast")
    event = h.event_file("pull_request", "labeled", pull=7, label="full-sweep-fail-fast", sender="alice")
    h.handle("pull_request", "labeled", path=event)
    before = h.seq()
    h.handle("pull_request", "labeled", path=event)
    assert [r["inputs"]["command"] for r in h.dispatches()] == ["/sweep --scope full --fail-fast"]
    assert h.writes(before) == []


def test_a_label_that_maps_to_nothing_only_reads_the_config(h):
    h.label(7, "alice", "documentation")
    before = h.seq()
    h.handle("pull_request", "labeled", pull=7, label="documentation", sender="alice")
    assert [r["operation"] for r in h.requests(before)] == ["repos/get-content"]


LABEL_REFUSALS = [
    ("labeler-without-permission", 7, "bob", "has `read` permission"),
    ("fork", 9, "alice", "comes from a fork"),
    ("draft", 10, "alice", "is a draft"),
]


@pytest.mark.parametrize("pr, sender, why", [r[1:] for r in LABEL_REFUSALS], ids=[r[0] for r in LABEL_REFUSALS])
def test_a_refused_label_gets_a_reply(h, pr, sender, why):
    h.label(pr, "alice", "sweep-enabled")
    h.handle("pull_request", "labeled", pull=pr, label="sweep-enabled", sender=sender)
    assert h.dispatches() == []
    english, chinese = bilingual(h.bot_comments(pr)[0]["body"])
    assert why in english and "未执行" in chinese


def test_a_push_reruns_the_label_on_the_new_head(h):
    h.label(7, "carol", "sweep-enabled")
    h.handle("pull_request", "labeled", pull=7, label="sweep-enabled", sender="carol")
    old = h.head(7)
    new = h.push()
    h.handle("pull_request", "synchronize", pull=7, before=old, after=new, sender="carol")
    assert [r["inputs"]["sha"] for r in h.dispatches()] == [old, new]


def test_a_push_to_an_approved_fork_needs_a_new_approval(h):
    h.label(9, "alice", "sweep-enabled")
    h.on_comment(9, "alice", f"/ok-to-test {h.head(9)}")
    h.handle("pull_request", "labeled", pull=9, label="sweep-enabled", sender="alice")
    assert len(h.dispatches()) == 1
    old, new = h.head(9), h.push()
    h.handle("pull_request", "synchronize", pull=9, before=old, after=new, sender="mallory")
    assert len(h.dispatches()) == 1
    english, _ = bilingual(h.bot_comments(9)[-1]["body"])
    assert f"`/ok-to-test {new}`" in english


def test_ready_for_review_runs_the_labels_a_draft_was_refused(h):
    h.label(10, "alice", "sweep-enabled")
    h.handle("pull_request", "labeled", pull=10, label="sweep-enabled", sender="alice")
    assert h.dispatches() == []
    h.sb.update_pull(10, draft=False)
    h.handle("pull_request", "ready_for_review", pull=10, sender="carol")
    [run] = h.dispatches()
    assert run["inputs"]["requester"] == "carol"


def test_closing_a_pr_without_runs_writes_nothing(h):
    h.sb.update_pull(7, state="closed")
    before = h.seq()
    h.handle("pull_request", "closed", pull=7, sender="carol")
    assert h.writes(before) == []


def test_dry_run_prints_each_intended_write_and_makes_none(h):
    comment_id = h.comment(7, "carol", "/sweep")
    before = h.seq()
    result = h.handle("issue_comment", "created", comment_id=comment_id, dry_run=True)
    lines = dry_run_lines(result.stdout)
    assert [line["action"] for line in lines] == ["dispatch", "comment"]  # the reply is the acknowledgement
    dispatch, comment = lines
    assert dispatch["workflow"] == "gpu.yml" and dispatch["ref"] == "main"
    assert dispatch["inputs"]["sha"] == h.head(7) and dispatch["inputs"]["comment_id"] == str(comment_id)
    assert comment["pr"] == 7 and "recipe-bot:ack" in comment["body"]
    assert h.writes(before) == [] and h.dispatches() == []
    # reads only: GETs, and the GraphQL query that reads the PR with the config (a POST, but no mutation)
    asked = h.requests(before)
    assert {r["method"] for r in asked if r["operation"] != "graphql"} == {"GET"}
    assert [str(r["body"]["query"]).lstrip()[:6] for r in asked if r["operation"] == "graphql"] == ["query("]


def test_dry_run_of_a_refusal_prints_the_reply(h):
    comment_id = h.comment(7, "bob", "/sweep")
    result = h.handle("issue_comment", "created", comment_id=comment_id, dry_run=True)
    assert [line["action"] for line in dry_run_lines(result.stdout)] == ["react", "comment"]


class PushAfterFirstRead(GitHubClient):
    """GitHub as seen by a bot that loses a race: new commits land right after it reads the PR."""

    def __init__(self, harness: Harness, **kwargs):
        super().__init__(**kwargs)
        self.harness, self.reads = harness, 0

    def _read(self, pull):
        self.reads += 1
        if self.reads == 1:
            self.harness.push("name: tiny\nsneaky: true\n")
        return pull

    def get_pull(self, number):
        return self._read(super().get_pull(number))

    def get_pull_and_text(self, number, path, ref):  # the PR read with the config (GraphQL)
        pull, text = super().get_pull_and_text(number, path, ref)
        return self._read(pull), text


def test_a_push_after_authorization_never_runs_the_pushed_commit(h):
    # A comment's handler reads the PR once and dispatches exactly the commit it authorized: the GPU
    # workflow checks out that SHA, so a push in between can never run unapproved code.
    authorized = h.head(7)
    comment_id = h.comment(7, "alice", "/sweep")
    payload = h.sb.event("issue_comment", "created", comment_id=comment_id)
    client = PushAfterFirstRead(h, base_url=h.sb.url, token="recipe-bot[bot]", repository="acme/bench")
    outcome = handle.handle_event("issue_comment", payload, client, now=dt.datetime.now(dt.timezone.utc))
    assert client.reads == 1
    [run] = h.dispatches()
    assert run["inputs"]["sha"] == authorized != h.head(7)
    assert [d["sha"] for d in outcome.dispatched] == [authorized]


def test_a_label_event_older_than_the_head_starts_nothing(h):
    # A label's payload can be minutes old: its handler reads the PR again right before dispatching.
    h.label(7, "alice", "sweep-enabled")
    payload = h.sb.event("pull_request", "labeled", pull=7, label="sweep-enabled", sender="alice")
    authorized = payload["pull_request"]["head"]["sha"]
    h.push("name: tiny\nsneaky: true\n")
    client = GitHubClient(base_url=h.sb.url, token="recipe-bot[bot]", repository="acme/bench")
    outcome = handle.handle_event("pull_request", payload, client, now=dt.datetime.now(dt.timezone.utc))
    assert outcome.dispatched == [] and h.dispatches() == []
    english, chinese = bilingual(h.bot_comments(7)[-1]["body"])
    assert f"`{authorized[:12]}` → `{h.head(7)[:12]}`" in english
    assert "comment the command again" in english and "重新评论" in chinese


@pytest.mark.parametrize("name, payload, message", [
    ("not-json", "{", "is not JSON"),
    ("wrong-shape", json.dumps({"action": "created", "comment": {}}), "has no field"),
], ids=["not-json", "wrong-shape"])
def test_a_bad_event_file_is_one_clear_error(h, tmp_path, name, payload, message):
    path = tmp_path / f"{name}.json"
    path.write_text(payload, encoding="utf-8")
    before = h.seq()
    result = h.handle("issue_comment", "created", path=path, expect=1)
    assert message in result.stderr and str(path) in result.stderr
    assert "Traceback" not in result.stderr
    assert h.requests(before) == []


def test_missing_token_is_one_clear_error(h):
    env = {k: v for k, v in h.env.items() if k != "GITHUB_TOKEN"}
    comment_id = h.comment(7, "alice", "/sweep")
    result = h.handle("issue_comment", "created", comment_id=comment_id, env=env, expect=1)
    assert "GITHUB_TOKEN" in result.stderr and "Traceback" not in result.stderr
