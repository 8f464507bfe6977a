"""The job's time budget and cancellation: one deadline, SIGTERM/SIGINT turned into an exception."""
from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager

from bot.core.messages import Message, msg


class JobInterrupted(Exception):
    """Stops the work in progress; teardown still runs."""


class JobTimedOut(JobInterrupted):
    pass


class JobCancelled(JobInterrupted):
    pass


class Budget:
    """`tick()` raises when the job's deadline passed or a stop signal arrived.

    Signals raise only at a tick, never in the middle of teardown: a signal that arrives while
    servers are being stopped is remembered and honoured afterwards (the afd-plugin runner defers
    a signal during cleanup the same way).
    """

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.deadline = time.monotonic() + timeout_s
        self.cancel_signal: int | None = None
        self._previous: dict[int, object] = {}

    def remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def tick(self, doing: Message | None = None) -> None:
        """`doing`: what the job was doing, a message that reads after "while" ("starting the case")."""
        if self.cancel_signal is not None:
            name = signal.Signals(self.cancel_signal).name
            raise JobCancelled(msg("cancelled by %(signal)s while %(doing)s", signal=name, doing=doing) if doing
                               else msg("cancelled by %(signal)s", signal=name))
        if time.monotonic() >= self.deadline:
            limit = f"{self.timeout_s:g}"
            raise JobTimedOut(msg("job timeout of %(limit)s s reached while %(doing)s", limit=limit, doing=doing)
                              if doing else msg("job timeout of %(limit)s s reached", limit=limit))

    def _on_signal(self, signum: int, frame: object) -> None:
        self.cancel_signal = signum

    @contextmanager
    def signals_handled(self) -> Iterator[None]:
        """Install SIGTERM/SIGINT handlers (main thread only) for the duration of the job."""
        try:
            for sig in (signal.SIGTERM, signal.SIGINT):
                self._previous[sig] = signal.signal(sig, self._on_signal)
        except ValueError:  # not the main thread: leave signals alone
            self._previous.clear()
        try:
            yield
        finally:
            for sig, handler in self._previous.items():
                signal.signal(sig, handler)  # type: ignore[arg-type]
