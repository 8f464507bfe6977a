"""`recipe-bot demo --serve`: the comment reaches the bot as a signed webhook to `recipe-bot serve`, as in App mode."""
from __future__ import annotations

import contextlib
import json
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol


class Sandbox(Protocol):
    """What this step needs of a sandbox GitHub: where to send webhooks, and its state (bot/demo/sandbox.py)."""

    def deliver_to(self, url: str | None, secret: str = "") -> None: ...

    def state(self) -> dict[str, Any]: ...


class ServeError(RuntimeError):
    """serve did not start, or the webhook did not lead to a dispatch in time; the message names the log."""


@contextlib.contextmanager
def serving(sandbox: Sandbox, env: dict[str, str], work_dir: Path, log: Path) -> Iterator[str]:
    """`recipe-bot serve` on a free port with a fresh secret, registered as the sandbox's webhook target."""
    secret = secrets.token_hex(16)
    env = {**env, "RECIPE_BOT_WEBHOOK_SECRET": secret}
    with log.open("a", encoding="utf-8") as handle:
        handle.write("$ recipe-bot serve --port 0 --token-env GITHUB_TOKEN\n")
    out = log.open("a", encoding="utf-8")
    proc = subprocess.Popen([sys.executable, "-m", "bot", "serve", "--port", "0", "--token-env", "GITHUB_TOKEN",
                             "--queue", str(work_dir / "serve-queue.sqlite3")],
                            env=env, cwd=work_dir, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        url = _listening(proc, out)
        # serve's JSON log lines keep going to the demo log, so a full pipe never blocks it
        threading.Thread(target=_copy, args=(proc, out), daemon=True).start()
        sandbox.deliver_to(url, secret)
        yield url
    finally:
        sandbox.deliver_to(None)
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        out.close()


def _listening(proc: subprocess.Popen[str], out: Any) -> str:
    assert proc.stderr is not None
    for line in proc.stderr:
        out.write(line)
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        if entry.get("msg") == "listening":
            return str(entry["url"])
    raise ServeError(f"`recipe-bot serve` exited with code {proc.wait()} before listening; see {out.name}")


def _copy(proc: subprocess.Popen[str], out: Any) -> None:
    assert proc.stderr is not None
    with contextlib.suppress(ValueError):  # the log file closes at the end of the demo
        for line in proc.stderr:
            out.write(line)
            out.flush()


def wait_for_dispatch(sandbox: Sandbox, workflow: str, timeout: float = 60.0) -> float:
    """Seconds until the sandbox holds a run of `workflow`; ServeError after `timeout`."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if any(run["workflow"] == workflow for run in sandbox.state()["workflow_runs"]):
            return time.monotonic() - start
        time.sleep(0.05)
    raise ServeError(f"no {workflow} run {timeout:.0f} s after the comment: see serve's lines in the demo log")


__all__ = ["ServeError", "serving", "wait_for_dispatch"]
