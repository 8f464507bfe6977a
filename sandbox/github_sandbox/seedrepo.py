"""A seed's `branches:` built into a git repository at start, so that a seed file alone (no repository
beside it) serves a whole pull request: the one shipped as demo/seed.yaml, for trying the bot by hand."""
from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from .seed import SeedError, SeedFile

_AUTHOR = {"GIT_AUTHOR_NAME": "alice", "GIT_AUTHOR_EMAIL": "alice@users.noreply.github.com",
           "GIT_COMMITTER_NAME": "alice", "GIT_COMMITTER_EMAIL": "alice@users.noreply.github.com",
           "GIT_AUTHOR_DATE": "2026-01-01T10:00:00Z", "GIT_COMMITTER_DATE": "2026-01-01T10:00:00Z"}


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "commit.gpgsign=false", *args], check=True,
                   capture_output=True, text=True, env={**os.environ, **_AUTHOR})


def _text(seed_file: SeedFile, branch: str, path: str, value: str | dict[str, str]) -> str:
    """A file's text: inline, or `{from: path}` read relative to the seed file."""
    if isinstance(value, str):
        return value
    source = (seed_file.path.parent / value["from"]).resolve()
    try:
        return source.read_text(encoding="utf-8")
    except OSError as exc:
        raise seed_file.error(("branches", branch, path, "from"), f"cannot read {source}: {exc.strerror}") from None


def build(seed_file: SeedFile) -> SeedFile:
    """The seed file, its `git` pointing at a fresh repository holding `branches` (default branch first,
    every other branch one commit on top of it); unchanged when the seed has no `branches`."""
    seed = seed_file.seed
    if not seed.branches:
        return seed_file
    if seed.default_branch not in seed.branches:
        raise seed_file.error(("branches",), f"must hold the default branch {seed.default_branch!r}; "
                                             f"has: {', '.join(seed.branches)}")
    repo = Path(tempfile.mkdtemp(prefix="recipe-bot-sandbox-repo-"))
    atexit.register(shutil.rmtree, repo, True)
    _git(repo, "init", "-q", "-b", seed.default_branch)
    order = [seed.default_branch, *(b for b in seed.branches if b != seed.default_branch)]
    for branch in order:
        if branch != seed.default_branch:
            _git(repo, "checkout", "-q", "-b", branch, seed.default_branch)
        for path, value in seed.branches[branch].items():
            target = repo / path
            if not target.resolve().is_relative_to(repo.resolve()):
                raise seed_file.error(("branches", branch, path), "must be a path inside the repository")
            if value is None:
                target.unlink(missing_ok=True)
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(_text(seed_file, branch, path, value), encoding="utf-8")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "--allow-empty", "-m", f"{branch} (from the seed file)")
    _git(repo, "checkout", "-q", seed.default_branch)
    seed_file.seed = seed.model_copy(update={"git": str(repo)})
    return seed_file


__all__ = ["SeedError", "build"]
