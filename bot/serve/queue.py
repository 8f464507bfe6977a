"""The durable delivery queue: SQLite in WAL mode, one row per X-GitHub-Delivery, written before the 2xx.

Per-PR order: a delivery is claimable only when it is the oldest pending one of its key and no delivery
of that key is running, so one PR's events are handled one at a time in arrival order while other PRs
proceed in parallel. Opening the queue to claim from it turns `running` rows back into `pending` (a worker
that died left them; the handler is idempotent per comment and per head SHA, so a delivery interrupted
mid-way is safe to run again).

Each connection has one durability, set when it opens: the answering process's (synchronous=FULL) syncs a
new delivery's row before its answer; the worker process's (NORMAL) does not sync its state changes, as
losing one to a power cut only runs an idempotent delivery again, as a restart does. Deliveries that arrive
together share one sync (group commit: the thread that takes the lock writes every row waiting then), so a
burst is answered in about two syncs, not one per delivery.
"""
from __future__ import annotations

import dataclasses
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS deliveries (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery TEXT NOT NULL UNIQUE,
    event TEXT NOT NULL,
    key TEXT NOT NULL,
    payload TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending',
    received REAL NOT NULL,
    started REAL,
    finished REAL,
    attempts INTEGER NOT NULL DEFAULT 0,
    error TEXT
);
CREATE INDEX IF NOT EXISTS deliveries_state ON deliveries (state, key, seq);
"""

# One statement, so the claim is one step of SQLite's (its write lock held for that step only, not across the
# GIL hand-overs between several statements of a transaction; the answering process's `put` takes that lock too).
_CLAIM = """
UPDATE deliveries SET state = 'running', started = ?, attempts = attempts + 1
WHERE seq = (
  SELECT d.seq FROM deliveries AS d
  WHERE d.state = 'pending'
    AND NOT EXISTS (SELECT 1 FROM deliveries r WHERE r.key = d.key AND r.state = 'running')
    AND NOT EXISTS (SELECT 1 FROM deliveries p WHERE p.key = d.key AND p.state = 'pending' AND p.seq < d.seq)
  ORDER BY d.seq LIMIT 1)
RETURNING seq, delivery, event, key, payload, received
"""


@dataclasses.dataclass
class _Arrival:
    """A delivery waiting for the next group commit; `stored`: None until written, then whether it was new."""

    row: tuple[str, str, str, str, float]
    stored: bool | None = None


@dataclasses.dataclass(frozen=True)
class Delivery:
    seq: int
    delivery: str
    event: str
    key: str
    payload: Any
    received: float


BUSY_TIMEOUT_S = 10.0  # another process's write holds the file's lock for one commit: wait that long, then fail


@dataclasses.dataclass(frozen=True)
class Role:
    """How one connection uses the queue: its durability, and whether it claims."""

    synchronous: str  # FULL: a commit is on disk when it returns; NORMAL: it may be lost to a power cut
    claims: bool  # opening it turns rows left running by a dead worker back into pending


ROLES = {
    "answer": Role("FULL", claims=False),  # serve's HTTP side: only `put`, synced
    "work": Role("NORMAL", claims=True),  # the worker process: claim and finish
    "both": Role("FULL", claims=True),  # one process does both (Service.in_process)
}


class DeliveryQueue:
    """One connection to the queue's SQLite file, shared by this process's threads under one lock.

    `role`: "answer" for the process that answers webhooks beside a worker process, "work" for that worker
    process (the only one that claims), "both" for one process that answers and handles.
    """

    def __init__(self, path: str | Path, *, role: str = "both"):
        if role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
        self.role = ROLES[role]
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None,
                                   timeout=BUSY_TIMEOUT_S)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(f"PRAGMA synchronous={self.role.synchronous}")
        self._arrivals: list[_Arrival] = []
        self._arrivals_lock = threading.Lock()
        self._db.executescript(SCHEMA)
        if self.role.claims:
            self._db.execute("UPDATE deliveries SET state = 'pending' WHERE state = 'running'")

    def journal_mode(self) -> str:
        with self._lock:
            return self._db.execute("PRAGMA journal_mode").fetchone()[0]

    def put(self, delivery: str, event: str, key: str, payload: Any) -> bool:
        """Store a delivery (on a FULL connection, synced to disk before this returns); False when this
        X-GitHub-Delivery was stored before (a redelivery)."""
        mine = _Arrival((delivery, event, key, json.dumps(payload), time.time()))
        with self._arrivals_lock:
            self._arrivals.append(mine)
        with self._lock:
            if mine.stored is None:  # no other thread wrote it meanwhile: write every row waiting, in order
                with self._arrivals_lock:
                    batch, self._arrivals = self._arrivals, []
                try:
                    self._db.execute("BEGIN IMMEDIATE")  # waits up to BUSY_TIMEOUT_S for a claim's one step
                except BaseException:
                    for arrival in batch:
                        arrival.stored = None
                    raise
                try:
                    for arrival in batch:
                        arrival.stored = self._db.execute(
                            "INSERT OR IGNORE INTO deliveries (delivery, event, key, payload, received) "
                            "VALUES (?, ?, ?, ?, ?)", arrival.row).rowcount == 1
                    self._db.execute("COMMIT")
                except BaseException:
                    self._db.execute("ROLLBACK")
                    for arrival in batch:  # none of them is stored: each caller gets the error or retries
                        arrival.stored = None
                    raise
        if mine.stored is None:
            raise sqlite3.OperationalError("the delivery could not be stored (another arrival's write failed)")
        return mine.stored

    def claim(self) -> Delivery | None:
        """The next delivery whose PR has nothing running, marked running; None when there is none."""
        with self._lock:
            rows = self._db.execute(_CLAIM, (time.time(),)).fetchall()  # all: the statement ends, so it commits
        if not rows:
            return None
        seq, delivery, event, key, payload, received = rows[0]
        return Delivery(seq, delivery, event, key, json.loads(payload), received)

    def finish(self, seq: int, error: str | None = None) -> None:
        with self._lock:
            self._db.execute("UPDATE deliveries SET state = ?, finished = ?, error = ? WHERE seq = ?",
                             ("failed" if error else "done", time.time(), error, seq))

    def outcomes(self, since: float) -> list[tuple[str, str, int, float, float]]:
        """(event, done|failed, how many, seconds from receipt to finish: sum, max) of what finished since."""
        with self._lock:
            return self._db.execute(
                "SELECT event, state, COUNT(*), SUM(finished - received), MAX(finished - received) FROM deliveries "
                "WHERE state IN ('done', 'failed') AND finished >= ? GROUP BY event, state ORDER BY event, state",
                (since,)).fetchall()

    def counts(self) -> dict[str, int]:
        with self._lock:
            rows = self._db.execute("SELECT state, COUNT(*) FROM deliveries GROUP BY state").fetchall()
        return {"pending": 0, "running": 0, "done": 0, "failed": 0, **dict(rows)}

    def rows(self) -> list[dict[str, Any]]:
        """Every delivery, oldest first (for tests and operators)."""
        with self._lock:
            cur = self._db.execute("SELECT seq, delivery, event, key, state, attempts, error FROM deliveries ORDER BY seq")
            names = [c[0] for c in cur.description]
            return [dict(zip(names, r)) for r in cur.fetchall()]

    def ping(self) -> bool:
        try:
            with self._lock:
                self._db.execute("SELECT 1").fetchone()
            return True
        except sqlite3.Error:
            return False

    def close(self) -> None:
        with self._lock:
            self._db.close()
