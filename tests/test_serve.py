"""`recipe-bot serve` against the sandbox: signatures, the durable queue, redelivery, restart, per-PR order."""
from __future__ import annotations

import os
import signal
import sqlite3
import threading
import time

import pytest
from werkzeug.test import Client

from bot.serve.queue import DeliveryQueue
from bot.serve.signature import sign, verify
from handle_helpers import Harness, seed
from serve_helpers import SECRET, body_of, drain, post, service, until_ready


@pytest.fixture
def h(sandbox, tmp_path):
    return Harness(sandbox(seed(tmp_path)), tmp_path)


@pytest.fixture
def svc(h, tmp_path):
    """As `recipe-bot serve` runs it: deliveries handled in a worker process."""
    s = service(h.sb, tmp_path / "queue.sqlite3")
    yield s
    s.stop()
    s.queue.close()


@pytest.fixture
def local_svc(h, tmp_path):
    """Deliveries handled by threads of the test's process, so a test can wrap the handler."""
    s = service(h.sb, tmp_path / "queue.sqlite3", in_process=True)
    yield s
    s.stop()
    s.queue.close()


def sweep_event(h: Harness, pr: int = 7, user: str = "alice", body: str = "/sweep") -> dict:
    return h.sb.event("issue_comment", "created", comment_id=h.comment(pr, user, body))


def test_a_signed_sweep_from_a_maintainer_is_queued_then_dispatches_once(h, svc):
    svc.start()
    event = sweep_event(h)
    answer = post(Client(svc), "issue_comment", event, delivery="d-1")
    assert answer.status_code == 202 and answer.json == {"queued": True, "delivery": "d-1"}
    assert drain(svc)["done"] == 1
    [run] = h.dispatches()
    assert run["inputs"]["pr"] == "7" and run["inputs"]["command"] == "/sweep"
    assert [r["state"] for r in svc.queue.rows()] == ["done"]


@pytest.mark.parametrize("case", ["missing", "wrong secret", "no sha256= prefix", "body changed after signing"])
def test_a_wrong_or_missing_signature_is_401_logged_and_never_handled(h, svc, case):
    svc.start()
    event = sweep_event(h)
    raw = body_of(event)
    signature = {"missing": "", "wrong secret": sign("not the secret", raw),
                 "no sha256= prefix": sign(SECRET, raw).removeprefix("sha256="),
                 "body changed after signing": sign(SECRET, raw + b" ")}[case]
    before = h.seq()
    answer = post(Client(svc), "issue_comment", body=raw, signature=signature)
    assert answer.status_code == 401
    assert svc.queue.rows() == []
    assert h.writes(before) == [] and h.dispatches() == []
    assert [line["msg"] for line in svc.log.lines if line.get("status") == 401] == ["webhook signature refused"]


@pytest.mark.parametrize("raw,reason", [
    (b"{not json", "not JSON"),
    (b"[1, 2]", "must be a JSON object"),
    (b'{"action": "created"}', "repository.full_name"),
    (b'{"action": "created", "repository": {"full_name": "acme/bench"}, "issue": {}}', "no field"),
], ids=["not-json", "array", "no-repository", "comment-without-fields"])
def test_a_malformed_payload_is_400_with_the_reason(svc, raw, reason):
    answer = post(Client(svc), "issue_comment", body=raw)
    assert answer.status_code == 400 and reason in answer.json["error"]
    assert svc.queue.rows() == []


def test_an_unknown_event_is_204_and_not_queued(svc):
    answer = post(Client(svc), "star", {"action": "created", "repository": {"full_name": "acme/bench"}})
    assert answer.status_code == 204 and svc.queue.rows() == []


def test_a_missing_delivery_id_is_400(h, svc):
    answer = post(Client(svc), "issue_comment", sweep_event(h), headers={"X-GitHub-Delivery": ""})
    assert answer.status_code == 400 and "X-GitHub-Delivery" in answer.json["error"]


def test_an_oversized_body_is_413_before_the_signature_is_read(svc):
    svc.max_body = 1000
    answer = post(Client(svc), "issue_comment", body=b"x" * 1001)
    assert answer.status_code == 413 and svc.queue.rows() == []
    at_limit = post(Client(svc), "issue_comment", body=b"x" * 1000)  # signed, at the limit: read, then checked
    assert at_limit.status_code == 400 and "not JSON" in at_limit.json["error"]


def test_a_redelivery_of_the_same_delivery_id_is_handled_once(h, svc):
    svc.start()
    event = sweep_event(h)
    first = post(Client(svc), "issue_comment", event, delivery="same")
    drain(svc)
    again = post(Client(svc), "issue_comment", event, delivery="same")
    assert (first.status_code, again.status_code) == (202, 200) and again.json["duplicate"] is True
    drain(svc)
    assert len(svc.queue.rows()) == 1 and len(h.dispatches()) == 1


def test_a_restart_resumes_the_pending_queue(h, tmp_path):
    path = tmp_path / "queue.sqlite3"
    first = service(h.sb, path)  # workers never started: the process "dies" with the delivery queued
    assert post(Client(first), "issue_comment", sweep_event(h), delivery="queued").status_code == 202
    first.queue.close()
    # a delivery a worker had claimed when the process died is run again too
    crashed = DeliveryQueue(path)
    crashed.put("claimed", "issue_comment", "acme/bench#7", sweep_event(h, user="carol", body="/sweep tiny*"))
    assert crashed.claim().delivery == "queued"
    crashed.close()
    assert h.dispatches() == []

    second = service(h.sb, path).start()
    try:
        assert drain(second)["done"] == 2
        assert [r["delivery"] for r in second.queue.rows()] == ["queued", "claimed"]
        assert sorted(r["inputs"]["command"] for r in h.dispatches()) == ["/sweep", "/sweep tiny*"]
    finally:
        second.stop()
        second.queue.close()


def test_two_prs_are_handled_concurrently_and_each_pr_in_arrival_order(h, local_svc):
    svc = local_svc
    handle, seen, lock = svc.workers.handler, [], threading.Lock()
    pr8_started = threading.Event()
    waited: list[bool] = []

    def recording(event, payload):
        key = (payload["issue"]["number"], payload["comment"]["body"])
        with lock:
            seen.append(("start", *key))
        if key[0] == 8:
            pr8_started.set()
        if key == (7, "/sweep"):  # PR 7's first delivery holds its worker until PR 8 runs beside it
            waited.append(pr8_started.wait(60))
        try:
            return handle(event, payload)
        finally:
            with lock:
                seen.append(("end", *key))

    svc.workers.handler = recording
    client = Client(svc)
    events = [sweep_event(h, 7, "alice", "/sweep"), sweep_event(h, 7, "alice", "/status"),
              sweep_event(h, 8, "alice", "/status")]
    for i, event in enumerate(events):
        assert post(client, "issue_comment", event, delivery=f"d{i}").status_code == 202
    svc.start()
    drain(svc)
    assert waited == [True], "PR 8 was not handled while PR 7's first delivery was in flight"
    pr7 = [(kind, body) for kind, pr, body in seen if pr == 7]
    assert pr7 == [("start", "/sweep"), ("end", "/sweep"), ("start", "/status"), ("end", "/status")]
    assert [r["state"] for r in svc.queue.rows()] == ["done", "done", "done"]


def test_health_readiness_and_metrics(h, svc):
    client = Client(svc)
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 503  # no worker yet
    svc.start()
    until_ready(svc)
    assert client.get("/readyz").status_code == 200
    post(client, "issue_comment", sweep_event(h))
    post(client, "issue_comment", body=b"{}", signature="sha256=00")
    drain(svc)
    text = client.get("/metrics").get_data(as_text=True)
    assert 'recipe_bot_webhook_deliveries_total{event="issue_comment",status="202"} 1' in text
    assert 'recipe_bot_webhook_deliveries_total{event="issue_comment",status="401"} 1' in text
    assert 'recipe_bot_deliveries_handled_total{event="issue_comment",outcome="ok"} 1' in text
    assert "recipe_bot_delivery_failures_total 0" in text
    assert "recipe_bot_delivery_latency_seconds_count 1" in text


def test_the_queue_is_sqlite_in_wal_mode(tmp_path):
    assert DeliveryQueue(tmp_path / "q.sqlite3").journal_mode() == "wal"


@pytest.mark.parametrize("header,ok", [
    (sign(SECRET, b"body"), True), (sign(SECRET, b"other"), False), (None, False), ("", False),
    ("sha1=" + "0" * 40, False), (sign(SECRET, b"body").upper(), False),
], ids=["good", "other-body", "none", "empty", "sha1", "upper-case-prefix"])
def test_verify_accepts_only_the_exact_sha256_signature(header, ok):
    assert verify(SECRET, b"body", header) is ok


def test_a_failing_delivery_is_kept_as_failed_counted_and_the_next_one_still_runs(h, local_svc):
    svc = local_svc
    handle = svc.workers.handler

    def first_fails(event, payload):
        if payload["comment"]["body"] == "/status":
            raise RuntimeError("GitHub was down")
        return handle(event, payload)

    svc.workers.handler = first_fails
    client = Client(svc)
    post(client, "issue_comment", sweep_event(h, 7, "alice", "/status"), delivery="bad")
    post(client, "issue_comment", sweep_event(h, 7, "alice", "/sweep"), delivery="good")
    svc.start()
    drain(svc)
    rows = {r["delivery"]: r for r in svc.queue.rows()}
    assert rows["bad"]["state"] == "failed" and "GitHub was down" in rows["bad"]["error"]
    assert rows["good"]["state"] == "done" and len(h.dispatches()) == 1
    assert "recipe_bot_delivery_failures_total 1" in client.get("/metrics").get_data(as_text=True)
    assert [line["msg"] for line in svc.log.lines if line.get("delivery") == "bad"][-1] == "delivery failed"


def test_the_answering_connection_leaves_a_live_workers_rows_running_and_the_claiming_one_recovers_them(tmp_path):
    path = tmp_path / "q.sqlite3"
    worker = DeliveryQueue(path, role="work")
    worker.put("d-1", "issue_comment", "acme/bench#7", {"n": 1})
    assert worker.claim().delivery == "d-1"
    answering = DeliveryQueue(path, role="answer")  # serve's HTTP side opens beside a worker at work
    assert [r["state"] for r in answering.rows()] == ["running"]
    answering.close()
    worker.close()  # the worker "dies"; the next process that claims turns its row back
    again = DeliveryQueue(path, role="work")
    assert [r["state"] for r in again.rows()] == ["pending"]
    again.close()


def test_a_queue_connection_with_an_unknown_role_is_refused(tmp_path):
    with pytest.raises(ValueError, match="answer, work, both"):
        DeliveryQueue(tmp_path / "q.sqlite3", role="reader")


def test_a_put_that_meets_the_worker_processs_write_lock_waits_for_it_and_stores_the_delivery(tmp_path):
    path = tmp_path / "q.sqlite3"
    answering = DeliveryQueue(path, role="answer")
    holder = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)  # another process's write transaction, in effect
    holder.execute("BEGIN IMMEDIATE")
    release = threading.Timer(0.3, holder.execute, args=("COMMIT",))
    release.start()
    started = time.monotonic()
    assert answering.put("d-1", "issue_comment", "acme/bench#7", {"n": 1}) is True
    waited = time.monotonic() - started
    release.join()
    holder.close()
    assert waited >= 0.25, "the put did not wait for the lock"  # it waited, rather than failing at once
    assert [r["delivery"] for r in answering.rows()] == ["d-1"]
    answering.close()


def test_the_worker_process_logs_through_serve_and_stops_when_serve_does(h, svc):
    svc.start()
    until_ready(svc)
    pid = svc.workers.pid
    assert pid is not None and pid != os.getpid()
    post(Client(svc), "issue_comment", sweep_event(h), delivery="d-1")
    assert drain(svc)["done"] == 1 and len(h.dispatches()) == 1
    handled = [line for line in svc.log.lines if line["msg"] == "delivery handled"]
    assert [line["delivery"] for line in handled] == ["d-1"]  # written by serve's log, from the worker process
    svc.stop()
    assert not svc.ready()
    with pytest.raises(ProcessLookupError):  # ended and reaped, not left behind
        os.kill(pid, 0)


def test_a_worker_process_killed_mid_delivery_is_started_again_and_the_delivery_runs_once_more(h, svc):
    svc.start()
    until_ready(svc)
    # the delivery's first GitHub request (the PR's head, read-only) hangs until the worker process is killed
    h.sb.add_faults({"method": "POST", "path": "^/graphql$", "delay_s": 30, "count": 1})
    post(Client(svc), "issue_comment", sweep_event(h), delivery="d-1")
    deadline = time.monotonic() + 60
    while svc.queue.rows()[0]["state"] != "running":
        assert time.monotonic() < deadline, svc.queue.rows()
        time.sleep(0.05)
    first = svc.workers.pid
    os.kill(first, signal.SIGKILL)
    assert drain(svc)["done"] == 1
    [row] = svc.queue.rows()
    assert (row["state"], row["attempts"]) == ("done", 2)
    assert len(h.dispatches()) == 1
    [exited] = [line for line in svc.log.lines if line["msg"] == "worker process exited"]
    assert (exited["pid"], exited["exitcode"]) == (first, -signal.SIGKILL)
    until_ready(svc)
    assert svc.workers.pid != first
