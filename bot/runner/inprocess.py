"""One benchmark-client process per case: the engine's benchmark library driven point after point.

`vllm bench serve` imports vLLM and torch before it sends anything (about 7.5 s on 2 CPU cores,
about 20 s on an H200 host), `python -m sglang.bench_serving` transformers and SGLang's modules
(the H200's SGLang points took 26-31 s of wall for 2-8 s of load), once a point. A case's points
all go to the same server, and so do an adaptive search's, one after the other, so the runner
starts bot/runner/bench_driver.py with the engine's own Python once per case and hands it each
point's client arguments: the same parser, the same entry point, the same raw result file, without
the start-up. When the engine's Python cannot import the library (another layout, no such engine
there, RECIPE_BOT_INPROCESS_CLIENT=0), the runner keeps one client process a point.
"""
from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from bot.core.settings import Settings
from bot.engines import Engine
from bot.runner.server import OWN_GROUP, die_with_runner

DRIVER = Path(__file__).with_name("bench_driver.py")
SWITCH_ENV = "RECIPE_BOT_INPROCESS_CLIENT"  # "0" keeps one client process a point
READY_TIMEOUT_S = 300.0  # importing vLLM or SGLang on a loaded 2-core machine can take a minute
GRACE_S = 5.0


class DriverGone(RuntimeError):
    """The driver process ended or answered nonsense; the case falls back to one process a point."""


class InProcessClient:
    """The driver process of one case: `launch()` beside the servers, `wait_ready()` before the
    first point (False: fall back), `run()` a point, `close()` before the teardown."""

    def __init__(self, python: str, env: Mapping[str, str], log_path: Path,
                 engine: Engine | None = None) -> None:
        self.engine = engine  # whose client it runs: only its points go through it
        self.python = python
        self.env = dict(env)
        self.log_path = log_path
        self.process: subprocess.Popen | None = None
        self.replies: queue.Queue[dict | None] = queue.Queue()
        self.problem: str | None = None

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def argv(self) -> list[str]:
        # The driver's loader is the engine's name (bench_driver.py LOADERS); vLLM's when none is given.
        return [self.python, str(DRIVER), self.engine.name if self.engine is not None else "vllm"]

    def launch(self) -> bool:
        """Start the driver; it imports the engine's benchmark library meanwhile (the runner launches it
        while the servers start, so the import overlaps their start-up). False: fall back."""
        with self.log_path.open("ab") as log:
            try:
                self.process = subprocess.Popen(
                    self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                    env=self.env, **OWN_GROUP, preexec_fn=die_with_runner())
            except OSError as exc:
                self.problem = f"could not start {self.python}: {exc}"
                return False
        threading.Thread(target=self._read, args=(self.process.stdout,), daemon=True).start()
        return True

    def wait_ready(self, watch: Callable[[], None]) -> bool:
        """Wait until the driver has imported the library; `watch` runs every 0.2 s meanwhile
        (server liveness, budget) and may raise. False: it cannot be used, fall back."""
        try:
            reply = self._await(watch, READY_TIMEOUT_S)
        except DriverGone as exc:
            self.problem = str(exc)
            self.close()
            return False
        except BaseException:
            self.close()
            raise
        if not reply.get("ready"):
            self.problem = str(reply.get("error") or "the driver was not ready")
            self.close()
            return False
        return True

    def _read(self, stdout) -> None:
        for raw in stdout:
            try:
                self.replies.put(json.loads(raw))
            except ValueError:
                continue  # not a reply: stray output can only be noise
        self.replies.put(None)

    def _await(self, watch: Callable[[], None], timeout_s: float | None) -> dict:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            watch()
            try:
                reply = self.replies.get(timeout=0.2)
            except queue.Empty:
                if deadline is not None and time.monotonic() > deadline:
                    raise DriverGone(f"no answer from the in-process client within {timeout_s:g} s")
                continue
            if reply is None:
                code = self.process.wait() if self.process else None
                raise DriverGone(f"the in-process client exited with code {code}")
            return reply

    def run(self, argv: Sequence[str], log_file: Path, watch: Callable[[], None]) -> int:
        """One point: the client's command with ARGV (`vllm bench serve ARGV`, ...) in the driver, output appended to `log_file`.
        Returns its exit code; raises DriverGone when the driver died under it, and whatever
        `watch` raises (the driver is then stopped: a half-run point must not go on)."""
        if self.process is None or self.process.stdin is None or self.process.poll() is not None:
            raise DriverGone("the in-process client is not running")
        try:
            self.process.stdin.write((json.dumps({"argv": list(argv), "log": str(log_file)})
                                      + "\n").encode())
            self.process.stdin.flush()
        except OSError as exc:
            raise DriverGone(f"the in-process client stopped reading: {exc}") from exc
        try:
            reply = self._await(watch, None)
        except BaseException:
            self.close()
            raise
        return int(reply.get("rc", 1))

    def close(self) -> None:
        """End of stdin ends the driver; a driver that does not end in GRACE_S is killed, group
        and all (the case's teardown proof must find nothing carrying its tag)."""
        process, self.process = self.process, None
        if process is None:
            return
        try:
            if process.stdin:
                process.stdin.close()
        except OSError:
            pass
        try:
            process.wait(timeout=GRACE_S if process.poll() is None else 0.1)
        except subprocess.TimeoutExpired:
            pass
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(process.pid, sig)
            except (ProcessLookupError, PermissionError):
                break
            try:
                process.wait(timeout=GRACE_S)
                break
            except subprocess.TimeoutExpired:
                continue
        try:
            os.killpg(process.pid, signal.SIGKILL)  # stragglers of the group, if any
        except (ProcessLookupError, PermissionError):
            pass


def launch_session(engine: Engine, program: str, env: Mapping[str, str], log_path: Path,
                   settings: Settings) -> tuple[InProcessClient | None, str | None]:
    """Start the case's benchmark-client process (it imports the engine's library while the
    servers start); else (None, why not), and the points run one process each. settings: the
    RECIPE_BOT_* values the run read at its start (the switch, the engine's Python)."""
    if not settings.INPROCESS_CLIENT:
        return None, f"{SWITCH_ENV}=0"
    python = engine.session_python(program, settings)
    if python is None:
        return None, f"no Python found for {program} (set {engine.session_python_env})"
    session = InProcessClient(python, env, log_path, engine)
    return (session, None) if session.launch() else (None, session.problem)
