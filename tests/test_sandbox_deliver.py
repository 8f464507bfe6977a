"""The sandbox sends signed webhooks to a registered target, in order, and stops when told."""
from __future__ import annotations

import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

SECRET = "sandbox-secret"


@pytest.fixture
def receiver():
    """A local webhook receiver that records each delivery's headers and body, answering 202."""
    got: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            raw = self.rfile.read(int(self.headers["Content-Length"]))
            got.append({"headers": self.headers, "raw": raw})  # case-insensitive, as HTTP is
            self.send_response(202)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/", got
    server.shutdown()
    server.server_close()


def wait_for(sb, n: int) -> list[dict]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        sent = sb.request("GET", "/_sandbox/webhooks/deliveries")
        if len(sent) >= n:
            return sent
        time.sleep(0.02)
    raise AssertionError(f"fewer than {n} deliveries: {sent}")


def test_a_new_comment_is_delivered_signed_with_the_targets_secret(sandbox, receiver):
    url, got = receiver
    sb = sandbox()
    sb.request("POST", "/_sandbox/webhooks/target", {"url": url, "secret": SECRET})
    comment = sb.request("POST", "/repos/acme/bench/issues/7/comments", {"body": "/sweep"}, user="alice")
    [sent] = wait_for(sb, 1)
    [delivery] = got
    headers, raw = delivery["headers"], delivery["raw"]
    assert headers["X-GitHub-Event"] == "issue_comment"
    assert headers["X-GitHub-Delivery"] == sent["delivery"] and sent["status"] == 202
    assert headers["X-Hub-Signature-256"] == "sha256=" + hmac.new(SECRET.encode(), raw, hashlib.sha256).hexdigest()
    payload = json.loads(raw)
    assert payload["action"] == "created" and payload["comment"]["id"] == comment["id"]


def test_deliver_sends_a_built_event_and_a_null_url_stops_delivery(sandbox, receiver):
    url, got = receiver
    sb = sandbox()
    sb.request("POST", "/_sandbox/webhooks/target", {"url": url, "secret": SECRET})
    sb.request("POST", "/_sandbox/webhook", {"event": "pull_request", "action": "opened", "pull": 7, "deliver": True})
    wait_for(sb, 1)
    sb.request("POST", "/_sandbox/webhooks/target", {"url": None})
    sb.request("POST", "/repos/acme/bench/issues/7/comments", {"body": "no one hears this"}, user="alice")
    sb.request("POST", "/_sandbox/webhook", {"event": "pull_request", "action": "opened", "pull": 7})  # not delivered
    assert [d["headers"]["X-GitHub-Event"] for d in got] == ["pull_request"]
    assert len(sb.request("GET", "/_sandbox/webhooks/deliveries")) == 1
