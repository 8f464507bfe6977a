"""The serving core: a webhook checked and stored (WSGI app); the workers it wakes live in bot/serve/workers.py."""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from pydantic import SecretStr
from werkzeug.wrappers import Request, Response

from bot.core.events import EventError, parse_event
from bot.serve import signature
from bot.serve.logs import JsonLog
from bot.serve.metrics import Metrics
from bot.serve.queue import DeliveryQueue
from bot.serve.workers import Handler, WorkerPool, Workers

MAX_BODY = 25 * 1024 * 1024  # GitHub caps webhook payloads at 25 MB
# The events the Actions-mode handler acts on (bot.control.handle.handle_event); others get 204.
EVENTS = frozenset({"issue_comment", "pull_request", "pull_request_review", "workflow_run", "merge_group"})
PARSED = frozenset({"issue_comment", "pull_request", "pull_request_review"})  # checked by parse_event up front

def order_key(event: str, payload: dict[str, Any]) -> str:
    """repo#PR for events about one PR (handled in order), repo#merge_group or repo alone otherwise."""
    repo = payload["repository"]["full_name"].lower()
    for field in ("issue", "pull_request"):
        number = (payload.get(field) or {}).get("number")
        if isinstance(number, int):
            return f"{repo}#{number}"
    pulls = (payload.get("workflow_run") or {}).get("pull_requests") or []
    if pulls and isinstance(pulls[0], dict) and isinstance(pulls[0].get("number"), int):
        return f"{repo}#{pulls[0]['number']}"
    return f"{repo}#{event}"


def check_payload(event: str, body: bytes) -> dict[str, Any]:
    """The payload as a dict, or ValueError naming what is wrong with it."""
    try:
        payload = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"the body is not JSON: {exc}") from None
    if not isinstance(payload, dict):
        raise ValueError("the payload must be a JSON object")
    repo = payload.get("repository")
    if not isinstance(repo, dict) or not isinstance(repo.get("full_name"), str) or repo["full_name"].count("/") != 1:
        raise ValueError("the payload has no repository.full_name (owner/name)")
    if event in PARSED:
        try:
            parse_event(event, payload)
        except EventError as exc:
            raise ValueError(str(exc)) from None
    return payload


class Service:
    """The WSGI app of one `recipe-bot serve` process: it checks and stores deliveries, and wakes the workers."""

    def __init__(self, queue: DeliveryQueue, secret: SecretStr | str, workers: Workers, *, log: JsonLog | None = None,
                 max_body: int = MAX_BODY):
        # a SecretStr shows as '**********' in any repr, log line or traceback; only verify() sees the value
        self.secret = secret if isinstance(secret, SecretStr) else SecretStr(secret)
        if not self.secret.get_secret_value():
            raise ValueError("the webhook secret is empty")
        self.queue, self.workers = queue, workers
        self.log = log or JsonLog()
        self.metrics = Metrics()
        self.max_body = max_body
        self.started_at = time.time()  # /metrics counts the deliveries handled since

    @classmethod
    def in_process(cls, queue: DeliveryQueue, secret: SecretStr | str, handler: Handler, *, workers: int = 4,
                   log: JsonLog | None = None, max_body: int = MAX_BODY) -> Service:
        """Deliveries handled by threads of this process, on `queue`'s connection, by a handler passed here."""
        log = log or JsonLog()
        return cls(queue, secret, WorkerPool(queue, handler, workers, log), log=log, max_body=max_body)

    def start(self) -> Service:
        self.workers.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        self.workers.stop(timeout)

    def ready(self) -> bool:
        return self.workers.alive() and self.queue.ping()

    # -- HTTP ----------------------------------------------------------------------------------
    def __call__(self, environ: dict[str, Any], start_response: Callable) -> Any:
        request = Request(environ)
        response = self.route(request)
        return response(environ, start_response)

    def route(self, request: Request) -> Response:
        if request.method == "GET" and request.path == "/healthz":
            return _json(200, {"ok": True})
        if request.method == "GET" and request.path == "/readyz":
            ready = self.ready()
            return _json(200 if ready else 503, {"ready": ready, **self.queue.counts()})
        if request.method == "GET" and request.path == "/metrics":
            return Response(self.metrics.render(self.queue.counts(), self.queue.outcomes(self.started_at)), 200,
                            content_type="text/plain; version=0.0.4; charset=utf-8")
        if request.path in ("/", "/webhook"):
            if request.method != "POST":
                return _json(405, {"error": "POST webhooks here"})
            return self.webhook(request)
        return _json(404, {"error": f"no route {request.path}"})

    def webhook(self, request: Request) -> Response:
        started = time.perf_counter()
        event = request.headers.get("X-GitHub-Event", "")
        delivery = request.headers.get("X-GitHub-Delivery", "")
        fields = {"event": event, "delivery": delivery, "remote": request.remote_addr}

        def answer(status: int, body: dict[str, Any] | None, msg: str, level: str = "info") -> Response:
            self.metrics.response(event if event in EVENTS or event == "ping" else "other", status)
            # answer_ms: from the request's headers read to the answer's (GitHub waits at most 10 s)
            self.log(msg, level=level, status=status, **fields, answer_ms=round((time.perf_counter() - started) * 1000, 2),
                     **({"reason": body.get("error")} if body else {}))
            return _json(status, body) if body is not None else Response(status=status)

        if request.content_length is not None and request.content_length > self.max_body:
            return answer(413, {"error": f"the body is over {self.max_body} bytes"}, "webhook refused", "warning")
        body = request.stream.read(self.max_body + 1)
        if len(body) > self.max_body:
            return answer(413, {"error": f"the body is over {self.max_body} bytes"}, "webhook refused", "warning")
        if not signature.verify(self.secret.get_secret_value(), body, request.headers.get("X-Hub-Signature-256")):
            # Nothing about an unsigned body is trusted or handled, not even its event name.
            return answer(401, {"error": "bad or missing X-Hub-Signature-256"}, "webhook signature refused", "warning")
        if event == "ping":
            return answer(200, {"pong": True}, "webhook ping")
        if event not in EVENTS:
            return answer(204, None, "webhook event ignored")
        if not delivery:
            return answer(400, {"error": "no X-GitHub-Delivery header"}, "webhook malformed", "warning")
        try:
            payload = check_payload(event, body)
        except ValueError as exc:
            return answer(400, {"error": str(exc)}, "webhook malformed", "warning")
        key = order_key(event, payload)
        fields["key"] = key
        if not self.queue.put(delivery, event, key, payload):  # on disk before the 2xx
            return answer(200, {"duplicate": True, "delivery": delivery}, "webhook redelivery ignored")
        self.workers.wake()
        return answer(202, {"queued": True, "delivery": delivery}, "webhook queued")


def _json(status: int, body: dict[str, Any]) -> Response:
    return Response(json.dumps(body) + "\n", status, content_type="application/json")
