"""The real git repository behind the sandbox: refs, commits, trees, diffs, and pushes made with git plumbing."""
from __future__ import annotations

import os
import subprocess
import tempfile
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

ZERO_SHA = "0" * 40
_STATUS = {"A": "added", "D": "removed", "M": "modified", "R": "renamed", "C": "copied", "T": "changed"}


class GitError(RuntimeError):
    pass


@dataclass(frozen=True)
class Person:
    name: str
    email: str
    date: str  # ISO 8601, UTC, "YYYY-MM-DDTHH:MM:SSZ"


@dataclass(frozen=True)
class CommitInfo:
    sha: str
    tree: str
    parents: tuple[str, ...]
    author: Person
    committer: Person
    message: str


@dataclass(frozen=True)
class FileChange:
    filename: str
    status: str  # GitHub's vocabulary: added, removed, modified, renamed, copied, changed
    additions: int
    deletions: int
    blob_sha: str
    previous_filename: str | None
    patch: str | None


@dataclass(frozen=True)
class TreeEntry:
    path: str
    name: str
    kind: str  # "file", "dir", "symlink", "submodule"
    sha: str
    size: int


def _iso(git_date: str) -> str:
    """git's %cI (2024-01-01T00:00:00+00:00) → GitHub's UTC form."""
    from datetime import datetime, timezone

    return datetime.fromisoformat(git_date).astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def login_email(login: str) -> str:
    """The email a sandbox commit by `login` carries; the sandbox maps it back to the GitHub user."""
    return f"{login}@users.noreply.github.com"


class GitRepo:
    """Read-mostly access to one repository; writes go through `commit_files` only (like a push)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._write_lock = threading.Lock()
        if not (self.path / ".git").exists() and not (self.path / "HEAD").exists():
            raise GitError(f"{self.path} is not a git repository")
        self._cached_commit = lru_cache(maxsize=4096)(self._commit_uncached)
        self._cached_diff = lru_cache(maxsize=256)(self._diff_uncached)
        self._cached_file = lru_cache(maxsize=256)(self._read_file_uncached)

    def _git(self, *args: str, input: bytes | None = None, env: dict[str, str] | None = None,
             ok_codes: tuple[int, ...] = (0,)) -> bytes:
        full_env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", **(env or {})}
        proc = subprocess.run(["git", "-C", str(self.path), *args], input=input, capture_output=True, env=full_env)
        if proc.returncode not in ok_codes:
            raise GitError(f"git {' '.join(args)}: {proc.stderr.decode(errors='replace').strip()}")
        return proc.stdout

    # --- refs -------------------------------------------------------------------------------
    def resolve(self, ref: str) -> str | None:
        """A commit SHA for a branch, tag, or (abbreviated) SHA; None when it names nothing."""
        if not ref or ref.startswith("-"):
            return None
        out = self._git("rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}", ok_codes=(0, 1, 128))
        sha = out.decode().strip()
        return sha or None

    def branch_sha(self, branch: str) -> str | None:
        return self.resolve(f"refs/heads/{branch}")

    def tag_sha(self, tag: str) -> str | None:
        return self.resolve(f"refs/tags/{tag}")

    def ref_sha(self, name: str) -> str | None:
        """Branch or tag name first (what GitHub's `ref` arguments mean), then a commit SHA."""
        for candidate in (f"refs/heads/{name}", f"refs/tags/{name}"):
            sha = self.resolve(candidate)
            if sha:
                return sha
        if len(name) >= 7 and all(c in "0123456789abcdef" for c in name.lower()):
            return self.resolve(name)
        return None

    def branches(self) -> list[str]:
        out = self._git("for-each-ref", "--format=%(refname:short)", "refs/heads/").decode()
        return [line for line in out.splitlines() if line]

    # --- commits ----------------------------------------------------------------------------
    def commit(self, sha: str) -> CommitInfo:
        return self._cached_commit(sha)

    def _commit_uncached(self, sha: str) -> CommitInfo:
        fmt = "%H%x00%T%x00%P%x00%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%B"
        out = self._git("show", "-s", f"--format={fmt}", sha, "--").decode("utf-8", errors="replace")
        parts = out.split("\x00", 9)
        return CommitInfo(
            sha=parts[0], tree=parts[1], parents=tuple(parts[2].split()),
            author=Person(parts[3], parts[4], _iso(parts[5])),
            committer=Person(parts[6], parts[7], _iso(parts[8])),
            message=parts[9].rstrip("\n"),
        )

    def rev_list(self, spec: str, path: str | None = None, max_count: int | None = None) -> list[str]:
        """Commit SHAs newest first, e.g. rev_list("base..head")."""
        args = ["rev-list"]
        if max_count:
            args.append(f"--max-count={max_count}")
        args.append(spec)
        args.append("--")
        if path:
            args.append(path)
        return self._git(*args).decode().split()

    def merge_base(self, a: str, b: str) -> str | None:
        out = self._git("merge-base", a, b, ok_codes=(0, 1)).decode().strip()
        return out or None

    def counts(self, base: str, head: str) -> tuple[int, int]:
        """(ahead_by, behind_by) of head relative to base."""
        out = self._git("rev-list", "--left-right", "--count", f"{base}...{head}").decode().split()
        return int(out[1]), int(out[0])

    # --- diffs ------------------------------------------------------------------------------
    def diff(self, base: str, head: str) -> tuple[FileChange, ...]:
        """Files changed from commit base to commit head (both SHAs, so the result can be cached)."""
        return self._cached_diff(base, head)

    def _diff_uncached(self, base: str, head: str) -> tuple[FileChange, ...]:
        raw = self._git("diff", "--raw", "-z", "-M", "--no-abbrev", "--no-ext-diff", base, head, "--").decode("utf-8", errors="replace")
        numstat = self._git("diff", "--numstat", "-z", "-M", "--no-ext-diff", base, head, "--").decode("utf-8", errors="replace")
        patches = self._patches(base, head)
        fields = raw.split("\x00")
        entries = []
        i = 0
        while i < len(fields) - 1:
            meta = fields[i].lstrip(":").split()
            letter = meta[4][0]
            if letter in "RC":
                old, new = fields[i + 1], fields[i + 2]
                i += 3
            else:
                old, new = None, fields[i + 1]
                i += 2
            blob = meta[3] if meta[3] != ZERO_SHA else meta[2]
            entries.append((new, old, letter, blob))
        stats = self._numstat(numstat)
        changes = []
        for new, old, letter, blob in entries:
            adds, dels = stats.get(new, (0, 0))
            changes.append(FileChange(
                filename=new, status=_STATUS.get(letter, "modified"), additions=adds, deletions=dels,
                blob_sha=blob, previous_filename=old, patch=patches.get(new),
            ))
        return tuple(changes)

    @staticmethod
    def _numstat(text: str) -> dict[str, tuple[int, int]]:
        stats: dict[str, tuple[int, int]] = {}
        fields = text.split("\x00")
        i = 0
        while i < len(fields) - 1:
            head = fields[i]
            adds, dels, path = head.split("\t", 2)
            if path == "":  # rename: the two paths follow as separate fields
                path = fields[i + 2]
                i += 3
            else:
                i += 1
            stats[path] = (int(adds) if adds != "-" else 0, int(dels) if dels != "-" else 0)
        return stats

    def _patches(self, base: str, head: str) -> dict[str, str]:
        """Per-file hunks as GitHub's `patch` field shows them (from the first @@, no diff header)."""
        text = self.diff_text(base, head)
        patches: dict[str, str] = {}
        for chunk in ("\n" + text).split("\ndiff --git "):
            if not chunk.strip():
                continue
            lines = chunk.splitlines()
            target = None
            for line in lines:
                if line.startswith("+++ "):
                    target = line[6:] if line.startswith("+++ b/") else None
                elif line.startswith("rename to "):
                    target = line[len("rename to "):]
                if line.startswith("@@"):
                    break
            if target is None:  # deleted file: take the --- side
                for line in lines:
                    if line.startswith("--- a/"):
                        target = line[6:]
                        break
            hunk_start = next((n for n, line in enumerate(lines) if line.startswith("@@")), None)
            if target and hunk_start is not None:
                patches[target] = "\n".join(lines[hunk_start:])
        return patches

    def diff_text(self, base: str, head: str) -> str:
        return self._git("diff", "-M", "--no-color", "--no-ext-diff", base, head, "--").decode("utf-8", errors="replace")

    def patch_text(self, base: str, head: str) -> str:
        return self._git("format-patch", "--stdout", "--no-color", f"{base}..{head}").decode("utf-8", errors="replace")

    # --- trees ------------------------------------------------------------------------------
    def read_file(self, sha: str, path: str) -> bytes | None:
        # A file at a full commit SHA never changes: a dispatch reads the workflow file twice (its
        # inputs, then the run's title), and every dispatch reads it again at the same commit.
        if len(sha) == 40 and all(c in "0123456789abcdef" for c in sha):
            return self._cached_file(sha, path)
        return self._read_file_uncached(sha, path)

    def _read_file_uncached(self, sha: str, path: str) -> bytes | None:
        if self.object_type(sha, path) != "blob":
            return None
        return self._git("cat-file", "blob", f"{sha}:{path}")

    def object_type(self, sha: str, path: str) -> str | None:
        out = self._git("cat-file", "-t", f"{sha}:{path}" if path else f"{sha}^{{tree}}", ok_codes=(0, 128)).decode().strip()
        return out or None

    def tree(self, sha: str, path: str) -> list[TreeEntry]:
        """Entries of directory `path` ("" for the root) at commit sha."""
        spec = f"{sha}:{path}" if path else f"{sha}^{{tree}}"
        out = self._git("ls-tree", "-z", "--long", spec).decode("utf-8", errors="replace")
        entries = []
        for record in out.split("\x00"):
            if not record:
                continue
            meta, name = record.split("\t", 1)
            mode, kind, obj, size = meta.split()
            kind_name = {"tree": "dir", "commit": "submodule"}.get(kind, "symlink" if mode == "120000" else "file")
            full = f"{path}/{name}" if path else name
            entries.append(TreeEntry(full, name, kind_name, obj, int(size) if size.isdigit() else 0))
        return entries

    def blob_sha(self, sha: str, path: str) -> str | None:
        out = self._git("rev-parse", "--verify", "--quiet", f"{sha}:{path}", ok_codes=(0, 1, 128)).decode().strip()
        return out or None

    # --- writes -----------------------------------------------------------------------------
    def commit_files(self, branch: str, files: dict[str, str | bytes | None], message: str, author: str,
                     start_from: str | None = None, date: str | None = None) -> tuple[str | None, str]:
        """Commit `files` (path → content, None deletes) on top of `branch` and move it, like a push.

        A missing branch is created from `start_from` (a ref). Returns (before, after) SHAs; before is None
        for a new branch. The work tree and index of the repository are left alone (a private index is used).
        """
        with self._write_lock:
            before = self.branch_sha(branch)
            parent = before or (self.ref_sha(start_from) if start_from else None)
            if parent is None:
                raise GitError(f"branch {branch!r} does not exist and no start point was given")
            lines = []
            for path, content in files.items():
                if content is None:
                    lines.append(f"0 {ZERO_SHA}\t{path}")
                    continue
                data = content.encode("utf-8") if isinstance(content, str) else content
                blob = self._git("hash-object", "-w", "--stdin", input=data).decode().strip()
                lines.append(f"100644 {blob}\t{path}")
            person = {"GIT_AUTHOR_NAME": author, "GIT_AUTHOR_EMAIL": login_email(author),
                      "GIT_COMMITTER_NAME": author, "GIT_COMMITTER_EMAIL": login_email(author)}
            if date:
                person.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
            with tempfile.TemporaryDirectory() as tmp:
                env = {"GIT_INDEX_FILE": str(Path(tmp) / "index"), **person}
                self._git("read-tree", parent, env=env)
                self._git("update-index", "--index-info", input=("\n".join(lines) + "\n").encode(), env=env)
                tree = self._git("write-tree", env=env).decode().strip()
            after = self._git("commit-tree", tree, "-p", parent, "-F", "-", input=message.encode(), env=person).decode().strip()
            self._git("update-ref", f"refs/heads/{branch}", after, before or ZERO_SHA)
            return before, after
