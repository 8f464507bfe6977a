"""The serving core: a webhook checked and stored (WSGI app), and workers that hand deliveries to the handler."""
from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from pydantic import SecretStr
from werkzeug.wrappers import Request, Response

from bot.core.events import EventError, parse_event
from bot.serve import signature
from bot.serve.logs import JsonLog
from bot.serve.metrics import Metrics
from bot.serve.queue import Delivery, DeliveryQueue

MAX_BODY = 25 * 1024 * 1024  # GitHub caps webhook payloads at 25 MB
# The events the Actions-mode handler acts on (bot.control.handle.handle_event); others get 204.
EVENTS = frozenset({"issue_comment", "pull_request", "pull_request_review", "workflow_run", "merge_group"})
PARSED = frozenset({"issue_comment", "pull_request", "pull_request_review"})  # checked by parse_event up front

Handler = Callable[[str, Any], Any]  # (event name, payload) -> an Outcome-like object (.failed, .log)


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
    """The queue, the workers and the WSGI app of one `recipe-bot serve` process."""

    def __init__(self, queue: DeliveryQueue, secret: SecretStr | str, handler: Handler, *, workers: int = 4,
                 log: JsonLog | None = None, max_body: int = MAX_BODY):
        # a SecretStr shows as '**********' in any repr, log line or traceback; only verify() sees the value
        self.secret = secret if isinstance(secret, SecretStr) else SecretStr(secret)
        if not self.secret.get_secret_value():
            raise ValueError("the webhook secret is empty")
        self.queue, self.handler = queue, handler
        self.log = log or JsonLog()
        self.metrics = Metrics()
        self.max_body = max_body
        self.n_workers = workers
        self._wake = threading.Condition()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    # -- workers -------------------------------------------------------------------------------
    def start(self) -> Service:
        for i in range(self.n_workers):
            t = threading.Thread(target=self._work, name=f"recipe-bot-worker-{i}", daemon=True)
            t.start()
            self._threads.append(t)
        self.log("workers started", workers=self.n_workers, queue=str(self.queue.path), **self.queue.counts())
        return self

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        with self._wake:
            self._wake.notify_all()
        for t in self._threads:
            t.join(timeout)
        self._threads = []

    def ready(self) -> bool:
        return bool(self._threads) and all(t.is_alive() for t in self._threads) and self.queue.ping()

    def _notify(self) -> None:
        with self._wake:
            self._wake.notify_all()

    def _work(self) -> None:
        while not self._stop.is_set():
            item = self.queue.claim()
            if item is None:
                with self._wake:
                    self._wake.wait(0.5)  # woken by a new delivery or a finished key; the timeout is a safety net
                continue
            self._run(item)
            self._notify()  # this key may have a next delivery waiting

    def _run(self, item: Delivery) -> None:
        error: str | None = None
        try:
            outcome = self.handler(item.event, item.payload)
            error = getattr(outcome, "failed", None)
            for line in getattr(outcome, "log", []) or []:
                self.log("handler", delivery=item.delivery, key=item.key, line=line)
        except Exception as exc:  # noqa: BLE001 (one delivery's failure must not stop the worker)
            error = f"{type(exc).__name__}: {exc}"
        self.queue.finish(item.seq, error)
        seconds = time.time() - item.received
        self.metrics.done(item.event, error is None, seconds)
        self.log("delivery handled" if error is None else "delivery failed", level="info" if error is None else "error",
                 delivery=item.delivery, event=item.event, key=item.key, seconds=round(seconds, 4), error=error)

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
            return Response(self.metrics.render(self.queue.counts()), 200,
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
        self._notify()
        return answer(202, {"queued": True, "delivery": delivery}, "webhook queued")


def _json(status: int, body: dict[str, Any]) -> Response:
    return Response(json.dumps(body) + "\n", status, content_type="application/json")
