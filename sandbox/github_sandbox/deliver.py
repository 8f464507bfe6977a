"""Signed webhook deliveries from the sandbox to a registered URL, as a GitHub App receives them.

`POST /_sandbox/webhooks/target {url, secret}` registers the receiver (`{url: null}` stops delivery). From
then on a new issue comment sends `issue_comment created`, and `POST /_sandbox/webhook {..., deliver: true}`
sends any payload the sandbox can build. One thread delivers in order, each body signed with
X-Hub-Signature-256 (HMAC-SHA256 with the target's secret) and named by a fresh X-GitHub-Delivery;
`GET /_sandbox/webhooks/deliveries` lists what was sent and the receiver's status.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import queue
import threading
import urllib.error
import urllib.request
import uuid
from typing import Any, Callable

# The REST operations that make GitHub send an event, and how to name the event from the reply.
AFTER_WRITE: dict[str, Callable[[Any], tuple[str, str, dict[str, Any]]]] = {
    "issues/create-comment": lambda body: ("issue_comment", "created", {"comment_id": body["id"]}),
}


class Deliverer:
    def __init__(self, build: Callable[[str, str, str, dict[str, Any]], dict[str, Any]]):
        self._build = build  # (server, event, action, selectors) -> payload, under the state lock
        self.url: str | None = None
        self.secret = ""
        self.sent: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._queue: queue.Queue[tuple[str, str, str, str, dict[str, Any]]] = queue.Queue()
        self._thread: threading.Thread | None = None

    def target(self, url: str | None, secret: str) -> dict[str, Any]:
        with self._lock:
            self.url, self.secret = url, secret
            if url and self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="sandbox-webhooks", daemon=True)
                self._thread.start()
        return {"url": url}

    def after_write(self, operation: str, status: int, body: Any, server: str) -> None:
        if self.url and status < 300 and operation in AFTER_WRITE:
            event, action, selectors = AFTER_WRITE[operation](body)
            self.enqueue(server, event, action, selectors)

    def enqueue(self, server: str, event: str, action: str, selectors: dict[str, Any]) -> str:
        delivery = str(uuid.uuid4())
        self._queue.put((delivery, server, event, action, selectors))
        return delivery

    def deliveries(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.sent)

    def _loop(self) -> None:
        while True:
            delivery, server, event, action, selectors = self._queue.get()
            record: dict[str, Any] = {"delivery": delivery, "event": event, "action": action, "status": None}
            try:
                raw = json.dumps(self._build(server, event, action, selectors)).encode()
                with self._lock:
                    url, secret = self.url, self.secret
                if url:
                    record["status"] = _post(url, secret, event, delivery, raw)
            except Exception as exc:  # noqa: BLE001 (a broken receiver must not stop later deliveries)
                record["error"] = f"{type(exc).__name__}: {exc}"
            with self._lock:
                self.sent.append(record)


def _post(url: str, secret: str, event: str, delivery: str, raw: bytes) -> int:
    signature = "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
    request = urllib.request.Request(url, data=raw, method="POST", headers={
        "Content-Type": "application/json", "User-Agent": "GitHub-Hookshot/sandbox", "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery, "X-Hub-Signature-256": signature})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status
    except urllib.error.HTTPError as exc:
        return exc.code
