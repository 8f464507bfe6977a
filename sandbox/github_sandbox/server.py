"""The sandbox HTTP server: token → user, routing by the OpenAPI paths, validation both ways, and the request log."""
from __future__ import annotations

import base64
import itertools
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from .api import HANDLERS, ApiError, Call, Reply
from .control import Control
from .faults import Faults, FaultRule
from .deliver import Deliverer
from .wire import RawRequest, RawResponse
from .openapi import DEFAULT_API, Route, SpecValidator
from .seed import SeedFile
from .shapes import Shapes
from .state import SandboxState, utcnow

API_PREFIX = "/api/v3"  # GitHub Enterprise's prefix; tolerated so base_url may carry it
DOCS = "https://docs.github.com/rest"


def _json_bytes(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _writes(entry: dict[str, Any]) -> bool:
    """What the log lists by default: requests that may change something (a GraphQL query reads)."""
    return entry["method"] != "GET" and entry.get("operation") != "graphql"


def token_login(authorization: str | None) -> str | None:
    """`token <login>`, `Bearer <login>` or Basic `<login>:<anything>`: the token names the acting user."""
    if not authorization:
        return None
    scheme, _, value = authorization.strip().partition(" ")
    value = value.strip()
    if scheme.lower() == "basic":
        try:
            value = base64.b64decode(value).decode().split(":", 1)[0]
        except (ValueError, UnicodeDecodeError):
            return ""
    return value


class Sandbox:
    """The application behind the HTTP server; `handle` turns one raw request into one raw response."""

    def __init__(self, seed_file: SeedFile, api: str = DEFAULT_API):
        self.state = SandboxState(seed_file)
        self.validator = SpecValidator(api=api)
        self.entries: list[dict[str, Any]] = []
        self._log_lock = threading.Lock()
        self._seq = itertools.count(1)
        self.control = Control(self)
        self.faults = Faults()
        self.deliverer = Deliverer(self.control.build_webhook)

    # --- the log ---------------------------------------------------------------------------
    def record(self, entry: dict[str, Any]) -> None:
        with self._log_lock:
            entry["seq"] = next(self._seq)
            self.entries.append(entry)

    def log(self, *, everything: bool = False, since: int = 0) -> list[dict[str, Any]]:
        with self._log_lock:
            return [e for e in self.entries if e["seq"] > since and (everything or _writes(e))]

    # --- one request -------------------------------------------------------------------------
    def handle(self, req: RawRequest) -> RawResponse:
        split = urlsplit(req.target)
        raw_path = split.path
        prefix = API_PREFIX if raw_path == API_PREFIX or raw_path.startswith(API_PREFIX + "/") else ""
        path = raw_path[len(prefix):] or "/"
        server = f"http://{req.host}"
        if path.startswith("/_sandbox/"):
            return self.control.handle(req.method, path, split.query, req.body, server)
        if req.method == "POST" and raw_path in ("/graphql", "/api/graphql"):  # GHES: /api/graphql
            return self._graphql(req, raw_path, server)
        fault = self.faults.take(req.method, path, token_login(req.headers.get("authorization")))
        if fault is None:
            return self._rest(req, path, split.query, server, server + prefix)[0]
        return self._faulty(fault, req, path, split.query, server, server + prefix)

    def _faulty(self, fault: tuple[int, FaultRule], req: RawRequest, path: str, raw_query: str, server: str,
                api: str) -> RawResponse:
        """A request a fault rule fired on: delayed, answered instead, or answered after it was handled."""
        fault_id, rule = fault
        if rule.after or rule.status is None:
            if not rule.after:
                time.sleep(rule.delay_s)
            resp, entry = self._rest(req, path, raw_query, server, api)
            if rule.after:
                time.sleep(rule.delay_s)
            entry["fault"] = fault_id
            if rule.status is None:
                return resp
            entry["fault_status"] = rule.status  # the effect was made; the client hears the fault
        else:
            time.sleep(rule.delay_s)
            self.record({"time": utcnow(), "method": req.method, "path": path,
                         "query": dict(parse_qsl(raw_query, keep_blank_values=True)), "operation": None,
                         "known": True, "user": token_login(req.headers.get("authorization")), "body": None,
                         "status": rule.status, "valid": True, "errors": [], "response_valid": True,
                         "response_errors": [], "fault": fault_id, "fault_status": rule.status})
        headers = {"Content-Type": "application/json; charset=utf-8", **rule.headers}
        return RawResponse(rule.status, headers, _json_bytes(rule.body()))

    def _rest(self, req: RawRequest, path: str, raw_query: str, server: str,
              api: str) -> tuple[RawResponse, dict[str, Any]]:
        started = time.perf_counter()
        query = parse_qsl(raw_query, keep_blank_values=True)
        body_obj: Any = None
        entry: dict[str, Any] = {"time": utcnow(), "method": req.method, "path": path, "query": dict(query),
                                 "operation": None, "known": False, "user": None, "body": None, "status": 0,
                                 "valid": True, "errors": [], "response_valid": True, "response_errors": []}
        route, raw_params, _ = self.validator.router.match(req.method, path)
        params = {k: unquote(v) for k, v in raw_params.items()}
        if req.body:
            try:
                body_obj = json.loads(req.body)
            except ValueError:
                body_obj = req.body.decode("utf-8", errors="replace")
        entry["body"] = body_obj
        validation_ms = 0.0
        login = token_login(req.headers.get("authorization"))
        entry["user"] = login
        if route is not None:
            entry.update(operation=route.operation_id, known=True)
        try:
            if login is not None and (not login or not self.state.is_known(login)):
                raise ApiError(401, "Bad credentials")
            if route is None:
                raise ApiError(404, "Not Found")
            if req.body and isinstance(body_obj, str):
                raise ApiError(400, "Problems parsing JSON")
            t0 = time.perf_counter()
            # GitHub reads every body as JSON whatever its Content-Type: `curl -d '{"body": "/help"}'`
            # (sent as application/x-www-form-urlencoded) creates the comment there, and so here.
            verdict = self.validator.check_request(route, params, query, req.headers, req.body, "application/json")
            validation_ms += (time.perf_counter() - t0) * 1000
            if not verdict.valid:
                entry.update(valid=False, errors=verdict.messages())
                first = verdict.problems[0]
                raise ApiError(422, f"Invalid request.\n\n{first.field}: {first.message}",
                               [p.as_error(route.operation_id) for p in verdict.problems])
            shapes = Shapes(self.state, api, server)
            call = Call(route.operation_id, params, dict(query), body_obj, login, req.headers.get("accept", ""),
                        shapes, f"{api}{path}", query)
            with self.state.lock:
                reply = HANDLERS[route.operation_id](call)
        except ApiError as err:
            if err.status == 400:
                entry.update(valid=False, errors=[f"body: {err.message}"])
            reply = self._error_reply(err, route)
        status, headers, data, content_type = self._encode(reply)
        entry["status"] = status
        if route is not None:
            t0 = time.perf_counter()
            verdict = self.validator.check_response(route, params, query, status, content_type, headers, data)
            validation_ms += (time.perf_counter() - t0) * 1000
        else:
            verdict = self.validator.check_error_body(status, data)
        entry.update(response_valid=verdict.valid, response_errors=verdict.messages(), response_schema=verdict.schema)
        entry["ms"] = round((time.perf_counter() - started) * 1000, 2)
        entry["validation_ms"] = round(validation_ms, 2)
        self.record(entry)
        if route is not None:  # GitHub sends the event after the write (sandbox/github_sandbox/deliver.py)
            self.deliverer.after_write(route.operation_id, status, reply.body, server)
        return RawResponse(status, headers, data), entry

    def _graphql(self, req: RawRequest, path: str, server: str) -> RawResponse:
        """POST /graphql (sandbox/github_sandbox/graphql.py): logged like a REST call; `valid` says the schema took it."""
        from . import graphql

        started = time.perf_counter()
        login = token_login(req.headers.get("authorization"))
        status, body, problems = graphql.answer(self.state, login, req.body, server)
        try:
            logged: Any = json.loads(req.body or b"null")
        except ValueError:
            logged = req.body.decode("utf-8", errors="replace")
        self.record({"time": utcnow(), "method": "POST", "path": path, "query": {}, "operation": "graphql",
                     "known": True, "user": login, "body": logged, "status": status, "valid": not problems,
                     "errors": problems, "response_valid": True, "response_errors": [],
                     "ms": round((time.perf_counter() - started) * 1000, 2)})
        headers = {"Content-Type": "application/json; charset=utf-8", "X-RateLimit-Resource": "graphql"}
        if status == 401:
            headers["WWW-Authenticate"] = 'Bearer realm="sandbox"'
        return RawResponse(status, headers, _json_bytes(body))

    @staticmethod
    def _error_reply(err: ApiError, route: Route | None) -> Reply:
        body: dict[str, Any] = {"message": err.message, "documentation_url": route.doc_url if route else DOCS,
                                "status": str(err.status)}
        if err.errors:
            body["errors"] = err.errors
        headers = {"WWW-Authenticate": 'Bearer realm="sandbox"'} if err.status == 401 else {}
        return Reply(err.status, body, headers)

    @staticmethod
    def _encode(reply: Reply) -> tuple[int, dict[str, str], bytes, str]:
        if reply.body is None:
            data, content_type = b"", ""
        elif isinstance(reply.body, str) and reply.media_type != "application/json":
            data, content_type = reply.body.encode("utf-8"), f"{reply.media_type}; charset=utf-8"
        else:
            data, content_type = _json_bytes(reply.body), "application/json; charset=utf-8"
        reset = int(time.time()) + 3600
        headers = {"X-GitHub-Media-Type": "github.v3; format=json", "X-RateLimit-Limit": "5000",
                   "X-RateLimit-Remaining": "4999", "X-RateLimit-Reset": str(reset), "X-RateLimit-Used": "1",
                   "X-RateLimit-Resource": "core", **reply.headers}
        if content_type:
            headers["Content-Type"] = content_type
        return reply.status, headers, data, content_type


class _HTTPHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle on, the body waits for the client's delayed ACK
    # (about 40 ms a request on Linux).
    disable_nagle_algorithm = True
    server_version = "recipe-bot-sandbox"
    sys_version = ""

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        host = headers.get("host") or f"{self.server.server_address[0]}:{self.server.server_address[1]}"
        app: Sandbox = self.server.app  # type: ignore[attr-defined]
        try:
            resp = app.handle(RawRequest(self.command, self.path, headers, body, host))
        except Exception as exc:  # a sandbox bug: answer 500 and keep serving; the log shows it
            data = _json_bytes({"message": f"sandbox error: {type(exc).__name__}: {exc}", "documentation_url": DOCS})
            app.record({"time": utcnow(), "method": self.command, "path": self.path, "query": {}, "operation": None,
                        "known": False, "user": None, "body": None, "status": 500, "valid": True, "errors": [],
                        "response_valid": False, "response_errors": [f"sandbox raised {type(exc).__name__}: {exc}"]})
            resp = RawResponse(500, {"Content-Type": "application/json; charset=utf-8"}, data)
        try:
            self.send_response(resp.status)
            for name, value in resp.headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(resp.body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(resp.body)
        except (BrokenPipeError, ConnectionResetError):  # the client timed out (a delay fault): expected
            self.close_connection = True

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = do_HEAD = _serve

    def log_message(self, format: str, *args: Any) -> None:  # the request log is /_sandbox/log
        pass


class SandboxHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, app: Sandbox, host: str = "127.0.0.1", port: int = 0):
        self.app = app
        super().__init__((host, port), _HTTPHandler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"
