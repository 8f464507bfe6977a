"""`recipe-bot serve` keeps only what cannot change between deliveries: reads at a full commit SHA, and what is
planned from them; permissions, the PR, comments, runs and the default branch's config are read each time.
Twenty deliveries for ten PRs at once: each stored and handled once, one PR at a time, in arrival order."""
from __future__ import annotations

import os
import threading
import time

import pytest
from werkzeug.test import Client

from bot.core.github_cache import CommitReads, EditHistories
from bot.serve.logs import JsonLog
from bot.serve.queue import DeliveryQueue
from bot.serve.service import Service
from handle_helpers import PULLS, Harness, seed
from serve_helpers import SECRET, drain, post, service

SHA = "a" * 40
OTHER = "b" * 40


@pytest.fixture
def h(sandbox, tmp_path):
    return Harness(sandbox(seed(tmp_path)), tmp_path)


def test_a_read_at_a_full_sha_is_kept_and_a_read_at_a_branch_is_not():
    reads = CommitReads()
    assert reads.cacheable(SHA) and not reads.cacheable("main") and not reads.cacheable(SHA[:12])
    reads.put("acme/bench", SHA, "file", "recipes/a.yaml", b"x: 1\n")
    assert reads.get("ACME/bench", SHA, "file", "recipes/a.yaml") == (True, b"x: 1\n")
    assert reads.get("acme/bench", OTHER, "file", "recipes/a.yaml") == (False, None)
    assert reads.get("acme/other", SHA, "file", "recipes/a.yaml") == (False, None)


def test_no_such_file_is_kept_only_for_a_commit_already_read():
    reads = CommitReads()
    reads.put("acme/bench", OTHER, "file", "missing.yaml", None)  # GitHub may not know the commit yet
    assert reads.get("acme/bench", OTHER, "file", "missing.yaml") == (False, None)
    reads.put("acme/bench", SHA, "dir", "recipes", [("recipes/a.yaml", "file")])
    reads.put("acme/bench", SHA, "file", "missing.yaml", None)
    assert reads.get("acme/bench", SHA, "file", "missing.yaml") == (True, None)


def test_the_least_recently_used_reads_go_first_past_the_size_bound():
    reads = CommitReads(max_bytes=1000)
    reads.put("acme/bench", SHA, "file", "old", b"o" * 400)
    reads.put("acme/bench", SHA, "file", "new", b"n" * 400)
    assert reads.get("acme/bench", SHA, "file", "new")[0]
    reads.put("acme/bench", SHA, "file", "newest", b"x" * 400)
    assert not reads.get("acme/bench", SHA, "file", "old")[0]
    assert reads.get("acme/bench", SHA, "file", "newest")[0]


def test_edit_histories_keep_each_version_apart_and_the_least_recently_used_go_first():
    histories = EditHistories(max_items=2)
    histories.put(("node", "2026-12-02T10:00:00Z", "text"), (False, ()))
    assert histories.get(("node", "2026-12-02T10:00:01Z", "text")) is None  # saved again since: another version
    assert histories.get(("node", "2026-12-02T10:00:00Z", "other")) is None
    histories.put(("node", "2026-12-02T10:00:01Z", "text"), (True, ("carol",)))
    assert histories.get(("node", "2026-12-02T10:00:00Z", "text")) == (False, ())
    histories.put(("node", "2026-12-02T10:00:02Z", "text"), (True, ("alice",)))
    assert histories.get(("node", "2026-12-02T10:00:01Z", "text")) is None  # the least recently used went first
    assert histories.get(("node", "2026-12-02T10:00:02Z", "text")) == (True, ("alice",))


def test_a_derived_value_that_raises_is_computed_again():
    reads, calls = CommitReads(), []

    def failing():
        calls.append(1)
        raise ValueError("transient")

    for _ in range(2):
        with pytest.raises(ValueError):
            reads.derived(("estimate", SHA), failing)
    assert len(calls) == 2
    assert reads.derived(("estimate", SHA), lambda: 3) == 3 and reads.derived(("estimate", SHA), lambda: 4) == 3


def test_the_second_sweep_on_the_same_commits_reads_no_file_again_but_asks_permission_pr_and_config_again(h, tmp_path):
    svc = service(h.sb, tmp_path / "queue.sqlite3").start()
    try:
        per_delivery = []
        for n, pr in enumerate((7, 8)):  # two PRs with one head commit and one base
            before = h.seq()
            event = h.sb.event("issue_comment", "created", comment_id=h.comment(pr, "alice", "/sweep"))
            assert post(Client(svc), "issue_comment", event, delivery=f"d{n}").status_code == 202
            drain(svc)
            per_delivery.append([e for e in h.requests(before)])
    finally:
        svc.stop()
        svc.queue.close()
    first, second = ([(e["operation"], (e.get("query") or {}).get("ref")) for e in d] for d in per_delivery)
    at_commit = [op for op, ref in first if op == "repos/get-content" and ref and len(ref) == 40]
    assert at_commit, "the first delivery reads the head's and base's files"
    assert not [op for op, ref in second if op == "repos/get-content" and ref and len(ref) == 40]
    for operation in ("repos/get-collaborator-permission-level", "issues/list-comments"):
        assert operation in [op for op, _ in second], operation
    # the PR (its live head) and the default branch's config (by name) in one GraphQL query, read each time
    asked = [e["body"]["variables"] for e in per_delivery[1] if e["operation"] == "graphql"]
    assert {"number": 8, "expression": "main:.github/recipe-bot.yaml"}.items() <= asked[0].items()


# Issue #38 item 1: at most six GitHub requests from a comment to its dispatch, each one the trust and exactly-once
# rules need live, in this order; the reply (the claim turned into the acknowledgement) comes after the dispatch.
TO_DISPATCH = [
    "graphql",  # the PR's live head, author and fork, with the default branch's config (by name)
    "issues/create-comment",  # the claim, recording the head SHA and the estimate
    "issues/list-comments",  # read back: the ledger, and whether this claim is the first of its comment
    "repos/get-collaborator-permission-level",  # the commenter's permission, live
    "actions/list-workflow-runs",  # after the claim: the comment's run, if any; the limits and the budget
    "actions/create-workflow-dispatch",
]


def test_a_sweep_in_a_warm_process_reaches_its_dispatch_in_six_requests_and_replies_after_it(sandbox, tmp_path):
    fresh = [{**PULLS[0], "number": n, "title": f"Change {n}"} for n in (11, 12)]  # carol's, one head and base
    h = Harness(sandbox(seed(tmp_path, pulls=PULLS + fresh)), tmp_path)
    svc = service(h.sb, tmp_path / "queue.sqlite3").start()
    try:
        asked = []
        for n, pr in enumerate((11, 12)):  # the first delivery also reads the two commits' files once
            before = h.seq()
            event = h.sb.event("issue_comment", "created", comment_id=h.comment(pr, "carol", "/sweep"))
            assert post(Client(svc), "issue_comment", event, delivery=f"d{n}").status_code == 202
            drain(svc)
            asked.append([e["operation"] for e in h.requests(before)])
    finally:
        svc.stop()
        svc.queue.close()
    warm = asked[1]
    upto = warm.index("actions/create-workflow-dispatch") + 1
    assert warm[:upto] == TO_DISPATCH, warm
    # after it: the check for a twin run (a claim written outside Actions names no holder), then the reply
    assert warm[upto:] == ["actions/list-workflow-runs", "issues/update-comment"], warm
    assert len(h.dispatches()) == 2


def test_a_second_sweep_on_one_pr_asks_nothing_of_the_bots_own_reply_until_someone_else_edits_it(sandbox, tmp_path):
    h = Harness(sandbox(seed(tmp_path)), tmp_path)
    svc = service(h.sb, tmp_path / "queue.sqlite3").start()
    try:
        asked = []
        for n in range(3):
            if n == 2:  # between the second and the third: carol edits the bot's first reply
                first = h.bot_comments(7)[0]
                h.edit(first["id"], "carol", first["body"] + "\nforged\n")
            before = h.seq()
            event = h.sb.event("issue_comment", "created", comment_id=h.comment(7, "carol", "/sweep"))
            assert post(Client(svc), "issue_comment", event, delivery=f"d{n}").status_code == 202
            drain(svc)
            asked.append([e["operation"] for e in h.requests(before)])
    finally:
        svc.stop()
        svc.queue.close()
    second, third = asked[1], asked[2]
    # the first reply is the process's own text at the version GitHub gave it: no edit history to ask
    assert second[:second.index("actions/create-workflow-dispatch") + 1] == TO_DISPATCH, second
    # edited since by someone else: a new version, whose editors are asked (one GraphQL query for the page)
    assert third.count("graphql") == 2, third
    assert len(h.dispatches()) == 3


def test_twenty_deliveries_for_ten_prs_at_once_are_each_handled_once_one_pr_at_a_time_in_arrival_order(tmp_path):
    lock, running, handled, overlap = threading.Lock(), set(), [], []

    def recording(event, payload):
        key = payload["workflow_run"]["pull_requests"][0]["number"]
        with lock:
            if key in running:
                overlap.append(key)
            running.add(key)
        time.sleep(0.01)  # long enough for a second worker to take the same PR if the queue let it
        with lock:
            running.discard(key)
            handled.append((key, payload["workflow_run"]["id"]))

    svc = Service.in_process(DeliveryQueue(tmp_path / "queue.sqlite3"), SECRET, recording, workers=4,
                             log=JsonLog(out=open(os.devnull, "w"))).start()  # noqa: SIM115
    # workflow_run deliveries: ordered by their PR like comments, and checked no further before the queue
    payloads = [{"action": "completed", "repository": {"full_name": "acme/bench"},
                 "workflow_run": {"id": n, "pull_requests": [{"number": 100 + n % 10}]}} for n in range(20)]
    answers: dict[int, int] = {}
    barrier = threading.Barrier(len(payloads))

    def deliver(n: int) -> None:
        barrier.wait()
        answers[n] = post(Client(svc), "workflow_run", payloads[n], delivery=f"d{n}").status_code

    threads = [threading.Thread(target=deliver, args=(n,)) for n in range(len(payloads))]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        drain(svc)
    finally:
        svc.stop()
    rows = svc.queue.rows()
    svc.queue.close()
    assert sorted(answers.values()) == [202] * 20
    assert sorted(c for _, c in handled) == list(range(20)), "each delivery handled exactly once"
    assert [(r["state"], r["attempts"]) for r in rows] == [("done", 1)] * 20
    assert overlap == []
    arrival = {int(r["delivery"][1:]): r["seq"] for r in rows}
    for pr in range(100, 110):
        mine = [c for key, c in handled if key == pr]
        assert mine == sorted(mine, key=arrival.__getitem__), f"PR {pr} not in arrival order"


def test_a_redelivery_within_one_group_commit_is_stored_once(tmp_path):
    queue = DeliveryQueue(tmp_path / "queue.sqlite3")
    results: list[bool] = []
    barrier = threading.Barrier(8)

    def put(n: int) -> None:
        barrier.wait()
        results.append(queue.put("same" if n < 4 else f"d{n}", "issue_comment", "acme/bench#1", {"n": n}))

    threads = [threading.Thread(target=put, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert sorted(results) == [False] * 3 + [True] * 5
    assert len(queue.rows()) == 5
    queue.close()
