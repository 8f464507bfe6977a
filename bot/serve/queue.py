"""The durable delivery queue: SQLite in WAL mode, one row per X-GitHub-Delivery, written before the 2xx.

Per-PR order: a delivery is claimable only when it is the oldest pending one of its key and no delivery
of that key is running, so one PR's events are handled one at a time in arrival order while other PRs
proceed in parallel. A restart turns `running` rows back into `pending` (the handler is idempotent per
comment and per head SHA, so a delivery interrupted mid-way is safe to run again).

Only a new delivery's row is synced to disk before its answer (synchronous=FULL); the workers' state changes
are not (NORMAL): losing one to a power cut only runs an idempotent delivery again, as a restart does, and
the webhook answer never waits behind a worker's sync. Deliveries that arrive together share one sync
(group commit: the thread that takes the lock writes every row waiting then), so a burst is answered in
about two syncs, not one per delivery.
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

_CLAIM = """
SELECT seq, delivery, event, key, payload, received FROM deliveries AS d
WHERE d.state = 'pending'
  AND NOT EXISTS (SELECT 1 FROM deliveries r WHERE r.key = d.key AND r.state = 'running')
  AND NOT EXISTS (SELECT 1 FROM deliveries p WHERE p.key = d.key AND p.state = 'pending' AND p.seq < d.seq)
ORDER BY d.seq LIMIT 1
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


class DeliveryQueue:
    """One SQLite file shared by the HTTP threads and the workers (one connection, one lock)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")  # put() syncs; the workers' updates need not
        self._arrivals: list[_Arrival] = []
        self._arrivals_lock = threading.Lock()
        self._db.executescript(SCHEMA)
        self._db.execute("UPDATE deliveries SET state = 'pending' WHERE state = 'running'")

    def journal_mode(self) -> str:
        with self._lock:
            return self._db.execute("PRAGMA journal_mode").fetchone()[0]

    def put(self, delivery: str, event: str, key: str, payload: Any) -> bool:
        """Store a delivery, synced to disk before this returns; False when this X-GitHub-Delivery was stored
        before (a redelivery)."""
        mine = _Arrival((delivery, event, key, json.dumps(payload), time.time()))
        with self._arrivals_lock:
            self._arrivals.append(mine)
        with self._lock:
            if mine.stored is None:  # no other thread wrote it meanwhile: write every row waiting, in order
                with self._arrivals_lock:
                    batch, self._arrivals = self._arrivals, []
                self._db.execute("PRAGMA synchronous=FULL")  # the 2xx promises the row is on disk
                try:
                    self._db.execute("BEGIN IMMEDIATE")
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
                finally:
                    self._db.execute("PRAGMA synchronous=NORMAL")
        if mine.stored is None:
            raise sqlite3.OperationalError("the delivery could not be stored (another arrival's write failed)")
        return mine.stored

    def claim(self) -> Delivery | None:
        """The next delivery whose PR has nothing running, marked running; None when there is none."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                row = self._db.execute(_CLAIM).fetchone()
                if row is not None:
                    self._db.execute("UPDATE deliveries SET state = 'running', started = ?, attempts = attempts + 1 "
                                     "WHERE seq = ?", (time.time(), row[0]))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        if row is None:
            return None
        seq, delivery, event, key, payload, received = row
        return Delivery(seq, delivery, event, key, json.loads(payload), received)

    def finish(self, seq: int, error: str | None = None) -> None:
        with self._lock:
            self._db.execute("UPDATE deliveries SET state = ?, finished = ?, error = ? WHERE seq = ?",
                             ("failed" if error else "done", time.time(), error, seq))

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
