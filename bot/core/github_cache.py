"""Reads at a full commit SHA kept across deliveries by a long-running process (`recipe-bot serve`).

A commit's files never change, so a file's bytes or a folder's listing read at a full 40-hex SHA may be
used again by any later delivery for the same repository: the estimate of a command reads the head's
and the base's recipes this way, and the base is shared by every PR opened on that commit. Nothing
else is kept: a read at a branch name, a permission, a comment, a run or a PR's head is asked of GitHub
each time, so no decision rests on something that may have moved. An answer "no such file" is kept only
once a read at the same commit succeeded (GitHub answers 404 for a commit it does not know yet as well).
`derived` keeps what is computed from such reads alone (a command's estimate at a head and base SHA).

`EditHistories` keeps who edited a comment or review at one version of it: (node id, updated_at, body). An edit
saves a new version (a new updated_at, and a new body unless the same text was saved again), so an answer
for a version stays true; the comments themselves are still listed for each delivery. A comment the
process writes is recorded at the version GitHub's answer names, so the next delivery on the PR does not
ask who edited the bot's own reply, and asks again as soon as anyone saves it since.
"""
from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from typing import Any

from bot.core.markers import is_full_sha

MAX_BYTES = 64 * 1024 * 1024  # what the process may hold; the least recently used go first
MAX_DERIVED = 1024
MAX_EDIT_HISTORIES = 4096  # comment versions (a few hundred bytes each)

EditKey = tuple[str, str, str]  # (node id, updated_at, body)
EditAnswer = tuple[bool, tuple[str, ...]]  # (edited, editors), as github_records.edit_history answers


class CommitReads:
    """A thread-safe, size-bounded store of (repository, sha, kind, path) -> what GitHub answered."""

    def __init__(self, max_bytes: int = MAX_BYTES):
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._items: collections.OrderedDict[tuple[str, str, str, str], tuple[Any, int]] = collections.OrderedDict()
        self._known_commits: set[tuple[str, str]] = set()  # (repository, sha) read successfully at least once
        self._bytes = 0
        self._derived: collections.OrderedDict[tuple[Any, ...], Any] = collections.OrderedDict()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def cacheable(ref: str) -> bool:
        return is_full_sha(ref)

    def get(self, repository: str, ref: str, kind: str, path: str) -> tuple[bool, Any]:
        """(True, answer) when kept, else (False, None)."""
        key = (repository.lower(), ref, kind, path)
        with self._lock:
            found = self._items.get(key)
            if found is None:
                self.misses += 1
                return False, None
            self._items.move_to_end(key)
            self.hits += 1
            return True, found[0]

    def put(self, repository: str, ref: str, kind: str, path: str, answer: Any) -> None:
        """Keep `answer` (None or [] meaning "not there" only once the commit is known to exist)."""
        repo = repository.lower()
        size = len(answer) if isinstance(answer, bytes) else sum(len(p) + 8 for p, _ in answer or [])
        size += len(path) + 100
        with self._lock:
            if answer:
                self._known_commits.add((repo, ref))
            elif (repo, ref) not in self._known_commits:
                return
            key = (repo, ref, kind, path)
            if key in self._items:
                self._bytes -= self._items.pop(key)[1]
            self._items[key] = (answer, size)
            self._bytes += size
            while self._bytes > self.max_bytes and self._items:
                self._bytes -= self._items.popitem(last=False)[1][1]

    def derived(self, key: tuple[Any, ...], compute: Callable[[], Any]) -> Any:
        """compute(), kept under `key`, which must name every full SHA the value rests on; a compute()
        that raises keeps nothing."""
        with self._lock:
            if key in self._derived:
                self._derived.move_to_end(key)
                self.hits += 1
                return self._derived[key]
        value = compute()
        with self._lock:
            self._derived[key] = value
            while len(self._derived) > MAX_DERIVED:
                self._derived.popitem(last=False)
        return value


class EditHistories:
    """A thread-safe, bounded store of a comment version's edit history (see the module's docstring)."""

    def __init__(self, max_items: int = MAX_EDIT_HISTORIES):
        self.max_items = max_items
        self._lock = threading.Lock()
        self._items: collections.OrderedDict[EditKey, EditAnswer] = collections.OrderedDict()

    def get(self, key: EditKey) -> EditAnswer | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: EditKey, answer: EditAnswer) -> None:
        with self._lock:
            self._items[key] = answer
            self._items.move_to_end(key)
            while len(self._items) > self.max_items:
                self._items.popitem(last=False)
