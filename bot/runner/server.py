"""One engine server as a context manager: own group, log file, readiness, bounded teardown."""
from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from bot.core.messages import Message, msg
from bot.runner import procs

READY_PATHS = ("/health", "/v1/models")
POLL_S = 0.25
REAP_S = 5.0  # after SIGKILL, how long the kernel gets to take the group down
SETTLE_S = 5.0  # after a failed point, how long a server that does not answer gets to exit or answer
# urllib follows HTTP(S)_PROXY; the server is on loopback, so never go through a proxy.
_HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))
# Servers and clients get a process group of their own (killpg takes each down whole) but stay in
# the runner's session. A new session (setsid) is a new scheduler autogroup on Linux: on a loaded
# CPU host the server's API process then starves beside its busy engine core, buffers a whole
# streamed answer and sends it at once, and the client measures TTFT = latency, TPOT = 0
# (bench/README.md, #25). One session keeps the server, its client and the runner one group.
OWN_GROUP: dict = {"process_group": 0}


class ServerError(RuntimeError):
    """The server failed; `log_tail` holds the last lines of its log for the result."""

    def __init__(self, message: Message | str, log_tail: str = "") -> None:
        super().__init__(message)
        self.log_tail = log_tail


class ServerDied(ServerError):
    pass


class ServerNotReady(ServerError):
    pass


@dataclass
class StopReport:
    name: str
    pgid: int
    exit_code: int | None = None
    sigkill_escalated: bool = False
    leftover_pids: list[int] = field(default_factory=list)
    failures: list[Message] = field(default_factory=list)
    seconds: float = 0.0


def die_with_runner() -> Callable[[], None] | None:
    """A preexec hook: the kernel sends the server SIGTERM if the runner dies without teardown
    (SIGKILL, OOM), so a lost runner leaves no engine holding GPUs. Linux only."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl  # bound now: the child only calls it
    except (OSError, AttributeError):
        return None
    pr_set_pdeathsig = 1
    return lambda: prctl(pr_set_pdeathsig, signal.SIGTERM, 0, 0, 0)


def http_status(url: str, timeout_s: float, method: str = "GET") -> int | None:
    """The HTTP status of one request, or None when nothing answered. Never raises."""
    request = urllib.request.Request(url, method=method)
    try:
        with _HTTP.open(request, timeout=timeout_s) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code
    except (OSError, ValueError):
        return None


def tail_lines(path: Path, lines: int = 40) -> str:
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 64 * 1024))
            data = handle.read()
    except OSError:
        return ""
    return "\n".join(data.decode(errors="replace").splitlines()[-lines:])


class InferenceServer:
    """`with InferenceServer(...) as server: server.wait_ready(t)`; leaving the block stops it."""

    def __init__(self, *, name: str, argv: Sequence[str], env: dict[str, str], port: int,
                 log_path: Path, host: str = "127.0.0.1", cwd: Path | None = None,
                 grace_s: float = 30.0, ready_paths: Sequence[str] = READY_PATHS) -> None:
        self.name = name
        self.ready_paths = tuple(ready_paths)  # its engine's (bot.engines): all answer 200 when it is up
        self.argv = list(argv)
        self.env = env
        self.port = port
        self.host = host
        self.log_path = log_path
        self.cwd = cwd
        self.grace_s = grace_s
        self.process: subprocess.Popen | None = None
        self.started_at = 0.0
        self.stop_report: StopReport | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def pgid(self) -> int:
        assert self.process is not None
        return self.process.pid  # process_group=0 makes the leader's PID the group's ID

    def __enter__(self) -> InferenceServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            log.write(f"# recipe-bot: {' '.join(self.argv)}\n".encode())
            log.flush()
            self.process = subprocess.Popen(
                self.argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                env=self.env, cwd=self.cwd, **OWN_GROUP,
                preexec_fn=die_with_runner())
        self.started_at = time.monotonic()

    def exit_code(self) -> int | None:
        return None if self.process is None else self.process.poll()

    def log_tail(self, lines: int = 40) -> str:
        return tail_lines(self.log_path, lines)

    def check_alive(self, during: Message) -> None:
        """`during`: when it was found dead, a message that reads after the exit code ("before teardown")."""
        code = self.exit_code()
        if code is not None:
            raise ServerDied(msg("server %(name)s exited with code %(code)s %(when)s", name=repr(self.name), code=code,
                                 when=during), self.log_tail())

    def check_alive_settled(self, during: Message, settle_s: float = SETTLE_S) -> None:
        """`check_alive` after a point failed: a server that crashed under the point may still be
        exiting when its client ends, so one that does not answer its ready paths gets `settle_s`
        to answer (alive: the point failed on its own) or to exit (raises ServerDied)."""
        deadline = time.monotonic() + settle_s
        while True:
            self.check_alive(during)
            if self.is_ready(timeout_s=1.0) or time.monotonic() >= deadline:
                return
            time.sleep(POLL_S)

    def is_ready(self, timeout_s: float = 5.0) -> bool:
        return all(http_status(self.base_url + path, timeout_s) == 200 for path in self.ready_paths)

    def wait_ready(self, timeout_s: float, *, others: Sequence[InferenceServer] = (),
                   tick: Callable[[], None] | None = None) -> float:
        """Poll the ready paths (/health and /v1/models) until all answer 200; fail fast when a process dies.

        `others` are servers of the same case that must stay alive meanwhile; `tick` runs every
        loop (cancellation and job-deadline checks raise from there). Returns seconds to ready.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            for server in (self, *others):
                server.check_alive(msg("before it was ready"))
            if self.is_ready(timeout_s=min(5.0, max(0.5, deadline - time.monotonic()))):
                return time.monotonic() - self.started_at
            if tick is not None:
                tick()
            if time.monotonic() >= deadline:
                raise ServerNotReady(
                    f"server {self.name!r} was not ready after {timeout_s:.0f} s "
                    f"({' and '.join(self.ready_paths)} on port {self.port})", self.log_tail())
            time.sleep(POLL_S)

    def stop(self) -> StopReport:
        if self.stop_report is None:
            self.stop_report = terminate_servers([self], self.grace_s)[0]
        return self.stop_report


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _live_groups(servers: Sequence[InferenceServer]) -> list[InferenceServer]:
    owned = {s.process.pid for s in servers if s.process is not None}
    for server in servers:
        server.exit_code()  # reaps the leader through Popen, keeping its exit status
    procs.reap_zombie_children(skip=owned)
    return [s for s in servers if procs.group_members(s.pgid)]


def terminate_servers(servers: Sequence[InferenceServer], grace_s: float) -> list[StopReport]:
    """SIGTERM every group, one shared grace deadline, then SIGKILL; a SIGKILL is a failure.

    The afd-plugin rule (E2E-INV-006): owned process groups, SIGTERM, a bounded grace, reap every
    leader, and a harness SIGKILL escalation fails the case even when the benchmark passed.
    """
    started = time.monotonic()
    pending = [s for s in servers if s.process is not None and s.stop_report is None]
    reports = {id(s): StopReport(name=s.name, pgid=s.pgid) for s in pending}
    for server in pending:
        _signal_group(server.pgid, signal.SIGTERM)
    deadline = started + grace_s
    alive = _live_groups(pending)
    while alive and time.monotonic() < deadline:
        time.sleep(0.1)
        alive = _live_groups(alive)
    for server in alive:
        report = reports[id(server)]
        report.sigkill_escalated = True
        report.failures.append(msg("forced SIGKILL for server %(server)s (process group %(group)s) after "
                                   "%(grace)s s SIGTERM grace", server=repr(server.name), group=server.pgid,
                                   grace=f"{grace_s:g}"))
        _signal_group(server.pgid, signal.SIGKILL)
    reap_deadline = time.monotonic() + REAP_S
    while alive and time.monotonic() < reap_deadline:
        time.sleep(0.05)
        alive = _live_groups(alive)
    for server in alive:
        pids = [p.pid for p in procs.group_members(server.pgid)]
        reports[id(server)].leftover_pids = pids
        reports[id(server)].failures.append(msg(
            "process group %(group)s of server %(server)s still alive after SIGKILL: pids %(pids)s",
            group=server.pgid, server=repr(server.name), pids=str(pids)))
    elapsed = time.monotonic() - started
    for server in pending:
        report = reports[id(server)]
        report.exit_code = server.exit_code()
        report.seconds = elapsed
        server.stop_report = report
    return [s.stop_report for s in servers if s.stop_report is not None]
