"""Where deliveries are handled: a pool of worker threads over the durable queue, run in a process of its own.

`recipe-bot serve` answers webhooks in one process and handles them in another (`WorkerProcess`). The
handler is CPU-hungry Python (YAML, JSON, pydantic, PyGithub) and every one of its threads competes for the
GIL; in the process that answers, each of the queue's SQLite calls drops the GIL and must win it back, so a
0.5 ms insert stretched to tens of ms behind the handler (bench/README.md, issue #38 item 1). Apart, the two
processes share only the queue's file: the answering process inserts on its own connection, the worker
process claims and finishes on its own, and per-PR order and exactly-once stay the queue's `claim`.

A `WorkerPool` on its own runs in the caller's process, for callers that pass a Python handler of their own
(tests that record what the handler saw).
"""
from __future__ import annotations

import multiprocessing
import signal
import threading
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Protocol

from bot.serve.logs import JsonLog
from bot.serve.queue import Delivery, DeliveryQueue

Handler = Callable[[str, Any], Any]  # (event name, payload) -> an Outcome-like object (.failed, .log)
LogLine = Callable[..., None]  # JsonLog's signature: (msg, level="info", **fields)

RESTART_AFTER_S = 1.0  # a worker process that died is started again after this pause (a crash loop stays slow)
IDLE_WAIT_S = 0.5  # an idle worker looks at the queue again this often even when nobody wakes it


class Workers(Protocol):
    """Where the queue's deliveries are handled: threads of this process, or a worker process."""

    def start(self) -> None: ...
    def wake(self) -> None: ...
    def stop(self, timeout: float = 30.0) -> None: ...
    def alive(self) -> bool: ...


class WorkerPool:
    """`n` threads that claim deliveries from `queue`, hand each to `handler` and record the outcome."""

    def __init__(self, queue: DeliveryQueue, handler: Handler, n: int, log: LogLine):
        self.queue, self.handler, self.n, self.log = queue, handler, n, log
        self._wake = threading.Condition()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        for i in range(self.n):
            t = threading.Thread(target=self._work, name=f"recipe-bot-worker-{i}", daemon=True)
            t.start()
            self._threads.append(t)
        self.log("workers started", workers=self.n, queue=str(self.queue.path), **self.queue.counts())

    def wake(self) -> None:
        with self._wake:
            self._wake.notify_all()

    def stop(self, timeout: float = 30.0) -> None:
        """Let each thread finish the delivery it is handling, then end."""
        self._stop.set()
        self.wake()
        for t in self._threads:
            t.join(timeout)
        self._threads = []

    def alive(self) -> bool:
        return bool(self._threads) and all(t.is_alive() for t in self._threads)

    def _work(self) -> None:
        while not self._stop.is_set():
            item = self.queue.claim()
            if item is None:
                with self._wake:
                    self._wake.wait(IDLE_WAIT_S)  # woken by a new delivery or a finished key
                continue
            self._run(item)
            self.wake()  # this key may have a next delivery waiting

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
        self.log("delivery handled" if error is None else "delivery failed", level="info" if error is None else "error",
                 delivery=item.delivery, event=item.event, key=item.key, seconds=round(seconds, 4), error=error)


class WorkerProcess:
    """The pool in a child process with its own queue connection, supervised: started again if it dies.

    `make_handler` is called in the child (it must pickle: a module-level function or a partial of one), so
    the handler's imports, clients and caches live there. The parent talks to the child over two pipes:
    a byte on the wake pipe means "a delivery arrived", its end of file means "stop"; the child sends its
    log lines back, and the parent writes them, so one process writes the log stream.
    """

    def __init__(self, queue_path: str | Path, make_handler: Callable[[], Handler], n: int, log: JsonLog):
        self.queue_path, self.make_handler, self.n, self.log = str(queue_path), make_handler, n, log
        self._context = multiprocessing.get_context("spawn")  # no fork of a process with threads running
        self._process: multiprocessing.process.BaseProcess | None = None
        self._wake_send: Connection | None = None
        self._wake_lock = threading.Lock()
        self._ready = threading.Event()
        self._stopping = threading.Event()
        self._supervisor: threading.Thread | None = None

    def start(self) -> None:
        self._launch()
        self._supervisor = threading.Thread(target=self._supervise, name="recipe-bot-worker-process", daemon=True)
        self._supervisor.start()

    def wait_ready(self, timeout: float) -> bool:
        return self._ready.wait(timeout)

    def wake(self) -> None:
        with self._wake_lock:
            if self._wake_send is None:
                return
            try:
                self._wake_send.send_bytes(b"w")
            except OSError:  # the child is gone; the supervisor starts another, which reads the queue itself
                pass

    def stop(self, timeout: float = 30.0) -> None:
        """Close the wake pipe (the child finishes what it handles, then exits) and wait for the child."""
        self._stopping.set()
        self._close_wake()
        if self._supervisor is not None:
            self._supervisor.join(timeout + 5)
        process = self._process
        if process is not None and process.is_alive():
            process.join(timeout)
            if process.is_alive():
                process.kill()
                process.join(5)

    def alive(self) -> bool:
        return self._ready.is_set() and self._process is not None and self._process.is_alive()

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def _launch(self) -> None:
        wake_recv, wake_send = self._context.Pipe(duplex=False)
        self._log_recv, log_send = self._context.Pipe(duplex=False)
        self._ready.clear()
        self._process = self._context.Process(
            target=run_child, args=(self.queue_path, self.make_handler, self.n, wake_recv, log_send),
            name="recipe-bot-workers", daemon=True)
        self._process.start()
        wake_recv.close()  # the child's ends: only the child holds them now, so either side sees the other close
        log_send.close()
        with self._wake_lock:
            if self._stopping.is_set():  # stop() came while this one started: it ends at once
                wake_send.close()
            else:
                self._wake_send = wake_send

    def _close_wake(self) -> None:
        with self._wake_lock:
            if self._wake_send is not None:
                self._wake_send.close()
                self._wake_send = None

    def _supervise(self) -> None:
        """Write the child's log lines until it exits; start another unless we are stopping."""
        while True:
            self._relay_logs()
            assert self._process is not None
            self._process.join(5)
            if self._stopping.is_set():
                return
            self._ready.clear()
            self._close_wake()
            self.log("worker process exited", level="error", pid=self._process.pid, exitcode=self._process.exitcode,
                     restart_in_s=RESTART_AFTER_S)
            time.sleep(RESTART_AFTER_S)
            if self._stopping.is_set():
                return
            self._launch()

    def _relay_logs(self) -> None:
        while True:
            try:
                line = self._log_recv.recv()
            except (EOFError, OSError):
                self._log_recv.close()
                return
            if line.get("msg") == "workers started":
                self._ready.set()
            self.log(line.pop("msg"), **line)


def run_child(queue_path: str, make_handler: Callable[[], Handler], n: int, wake: Connection,
              log_pipe: Connection) -> None:
    """The worker process: its own queue connection (which turns rows a dead worker left running back into
    pending), the pool, and a loop on the wake pipe until the parent closes it."""
    for stop in (signal.SIGINT, signal.SIGTERM):  # a Ctrl-C or a stop reaches the group: the parent ends us
        signal.signal(stop, signal.SIG_IGN)
    send_lock = threading.Lock()

    def log(msg: str, level: str = "info", **fields: Any) -> None:
        with send_lock:
            try:
                log_pipe.send({"msg": msg, "level": level, **fields})
            except OSError:  # the parent is gone; the pool still finishes its deliveries
                pass

    queue = DeliveryQueue(queue_path, role="work")
    pool = WorkerPool(queue, make_handler(), n, log)
    pool.start()
    while True:
        try:
            wake.recv_bytes()
        except (EOFError, OSError):
            break
        pool.wake()
    pool.stop(timeout=60.0)
    queue.close()
    log_pipe.close()
