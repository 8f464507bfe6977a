"""Shared by tests/test_serve*.py: a signed webhook poster, and `recipe-bot serve`'s service on a seeded sandbox."""
from __future__ import annotations

import json
import time
import uuid
from typing import Any

from werkzeug.test import Client

from bot.serve.cli import build_service
from bot.serve.logs import JsonLog
from bot.serve.service import Service
from bot.serve.signature import sign

SECRET = "it's a secret to everybody"


def body_of(payload: Any) -> bytes:
    return json.dumps(payload).encode()


def post(client: Client, event: str, payload: Any = None, *, delivery: str | None = None, secret: str = SECRET,
         signature: str | None = None, body: bytes | None = None, headers: dict[str, str] | None = None) -> Any:
    """POST one webhook as GitHub does: the raw body, signed with `secret` unless `signature` is given."""
    raw = body if body is not None else body_of(payload)
    sent = {"X-GitHub-Event": event, "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
            "Content-Type": "application/json",
            "X-Hub-Signature-256": sign(secret, raw) if signature is None else signature, **(headers or {})}
    if signature == "":
        del sent["X-Hub-Signature-256"]
    return client.post("/", data=raw, headers=sent)


def service(sb: Any, queue_path: Any, *, workers: int = 4, in_process: bool = False) -> Service:
    """The service `recipe-bot serve --token-env GITHUB_TOKEN` builds, against this sandbox (workers not started):
    its deliveries handled in a worker process, or (`in_process`) by threads of this one, for a test that wraps
    `svc.workers.handler`."""
    env = {**sb.env(), "RECIPE_BOT_WEBHOOK_SECRET": SECRET}
    log = JsonLog(out=open("/dev/null", "w"))  # noqa: SIM115 (lives as long as the test)
    log.keep = True
    return build_service(queue=str(queue_path), secret_env="RECIPE_BOT_WEBHOOK_SECRET", token_env="GITHUB_TOKEN",
                         app_id_env="RECIPE_BOT_APP_ID", key_env="RECIPE_BOT_APP_PRIVATE_KEY_PATH",
                         workers=workers, environ=env, log=log, in_process=in_process)


def until_ready(svc: Service, timeout: float = 60.0) -> None:
    """Wait for the workers (a worker process takes a few seconds to start and import the handler)."""
    deadline = time.monotonic() + timeout
    while not svc.ready():
        assert time.monotonic() < deadline, "the workers did not start"
        time.sleep(0.05)


def drain(svc: Service, timeout: float = 120.0) -> dict[str, int]:
    """Wait until nothing is pending or running; the queue's counts then (fails the test on a stuck queue)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        counts = svc.queue.counts()
        if counts["pending"] == 0 and counts["running"] == 0:
            return counts
        time.sleep(0.05)
    raise AssertionError(f"the queue did not drain: {svc.queue.rows()}")


class ServeProcess:
    """`recipe-bot serve --port 0 --token-env GITHUB_TOKEN` as a subprocess against a sandbox; stderr is JSON lines."""

    def __init__(self, sb: Any, queue_path: Any, extra_env: dict[str, str] | None = None):
        import os
        import subprocess
        import sys

        from handle_helpers import ROOT

        env = {**os.environ, **sb.env(), "RECIPE_BOT_WEBHOOK_SECRET": SECRET, **(extra_env or {})}
        self.proc = subprocess.Popen(
            [sys.executable, "-c", "from bot.cli import main; main(prog_name='recipe-bot')", "serve", "--port", "0",
             "--token-env", "GITHUB_TOKEN", "--queue", str(queue_path)],
            env=env, cwd=ROOT, stderr=subprocess.PIPE, text=True)
        self.lines: list[dict[str, Any]] = []
        self.url = self.until("listening")["url"]

    def until(self, *messages: str) -> dict[str, Any]:
        """Read log lines until one whose msg is one of `messages` (every line must be JSON)."""
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.lines.append(json.loads(line))
            if self.lines[-1]["msg"] in messages:
                return self.lines[-1]
        raise AssertionError(f"serve exited ({self.proc.wait()}) before logging {messages}: {self.lines}")

    def stop(self) -> int:
        import signal

        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(30)
