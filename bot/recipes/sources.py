"""Read repository files either from a directory or from one git revision (without checking it out)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path, PurePosixPath

from bot.core.messages import msg


class SourceError(Exception):
    """A revision or repository that cannot be read: a catalogue message as its argument, or git's own words."""


def _git(repo: Path, *args: str, input_bytes: bytes | None = None) -> bytes:
    proc = subprocess.run(
        ["git", "-c", "core.quotepath=off", *args],
        cwd=repo,
        input=input_bytes,
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SourceError(proc.stderr.decode("utf-8", "replace").strip() or msg("git %(command)s failed",
                                                                               command=args[0]))
    return proc.stdout


def is_git_repo(path: Path) -> bool:
    try:
        return _git(path, "rev-parse", "--is-inside-work-tree").strip() == b"true"
    except (SourceError, FileNotFoundError, NotADirectoryError):
        return False


class DirSource:
    """Files of a directory as they are on disk (the working tree)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self.label = "working tree"
        self._cache: dict[str, bytes | None] = {}

    def read(self, path: str) -> bytes | None:
        if path not in self._cache:
            try:
                self._cache[path] = (self.root / path).read_bytes()
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
                self._cache[path] = None
        return self._cache[path]

    def read_many(self, paths: list[str]) -> dict[str, bytes | None]:
        return {path: self.read(path) for path in paths}

    def list(self, prefix: str) -> list[str]:
        base = self.root / prefix
        if not base.is_dir():
            return []
        found = []
        for dirpath, dirnames, filenames in os.walk(base):
            dirnames[:] = sorted(d for d in dirnames if d != ".git")
            rel = Path(dirpath).relative_to(self.root)
            found.extend(str(PurePosixPath(*rel.parts, name)) for name in filenames)
        return sorted(found)

    def all_paths(self) -> set[str]:
        return set(self.list(""))


class GitSource:
    """Files of one commit, read through `git ls-tree` and `git cat-file --batch`."""

    def __init__(self, repo: Path, rev: str) -> None:
        self.repo = Path(repo)
        self.rev = rev
        try:
            self.sha = _git(self.repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").decode().strip()
        except SourceError:
            raise SourceError(msg("unknown revision %(rev)s in %(repo)s", rev=repr(rev), repo=str(self.repo))) from None
        self.label = self.sha[:12]
        self._tree: dict[str, str] | None = None
        self._cache: dict[str, bytes | None] = {}

    @property
    def tree(self) -> dict[str, str]:
        """path → blob id for every file of the commit."""
        if self._tree is None:
            out = _git(self.repo, "ls-tree", "-r", "-z", "--full-tree", self.sha)
            tree: dict[str, str] = {}
            for record in out.split(b"\0"):
                if not record:
                    continue
                meta, _, path = record.partition(b"\t")
                mode, kind, blob = meta.split()
                if kind == b"blob":
                    tree[path.decode("utf-8", "surrogateescape")] = blob.decode()
            self._tree = tree
        return self._tree

    def read_many(self, paths: list[str]) -> dict[str, bytes | None]:
        wanted = [p for p in paths if p not in self._cache]
        present = [p for p in wanted if p in self.tree]
        for path in wanted:
            if path not in self.tree:
                self._cache[path] = None
        if present:
            request = "".join(f"{self.tree[p]}\n" for p in present).encode()
            out = _git(self.repo, "cat-file", "--batch", input_bytes=request)
            offset = 0
            for path in present:
                header_end = out.index(b"\n", offset)
                _, _, size = out[offset:header_end].split()
                start = header_end + 1
                end = start + int(size)
                self._cache[path] = out[start:end]
                offset = end + 1
        return {path: self._cache[path] for path in paths}

    def read(self, path: str) -> bytes | None:
        return self.read_many([path])[path]

    def list(self, prefix: str) -> list[str]:
        prefix = prefix.rstrip("/")
        if not prefix:
            return sorted(self.tree)
        return sorted(p for p in self.tree if p.startswith(prefix + "/"))

    def all_paths(self) -> set[str]:
        return set(self.tree)


Source = DirSource | GitSource


def open_source(repo: Path, rev: str | None) -> Source:
    """`rev=None` reads the directory as it is; otherwise the commit `rev` of the git repository."""
    if rev is None:
        return DirSource(repo)
    return GitSource(repo, rev)


def changed_paths(base: Source, head: Source) -> set[str]:
    """Paths whose content differs between two sources (added, removed or modified)."""
    if isinstance(base, GitSource) and isinstance(head, GitSource):
        a, b = base.tree, head.tree
        return {p for p in a.keys() | b.keys() if a.get(p) != b.get(p)}
    if isinstance(base, GitSource) and isinstance(head, DirSource) and is_git_repo(head.root):
        diff = _git(head.root, "diff", "--name-only", "-z", "--no-renames", base.sha, "--")
        untracked = _git(head.root, "ls-files", "--others", "--exclude-standard", "-z")
        names = {n.decode("utf-8", "surrogateescape") for n in (diff + b"\0" + untracked).split(b"\0") if n}
        return names
    paths = base.all_paths() | head.all_paths()
    return {p for p in paths if base.read(p) != head.read(p)}
