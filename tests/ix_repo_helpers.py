"""The ix-repo fixture (our own InferenceX-shaped repository) as a git repository in a temporary folder."""
from __future__ import annotations

import shutil
from pathlib import Path

from git_helpers import git

FIXTURE = Path(__file__).parent / "fixtures" / "ix-repo"
FAKE_VLLM = Path(__file__).parent / "fake_servers" / "fake_vllm.py"
AGENTIC = "tinyq-fp4-cpu-sglang-agentic-mtp"


def commit(repo: Path) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", "change")
    return git(repo, "rev-parse", "HEAD")


def make_repo(tmp_path: Path) -> tuple[Path, str]:
    """A copy of the fixture committed once; returns the folder and the base commit."""
    repo = tmp_path / "ix-repo"
    shutil.copytree(FIXTURE, repo)
    git(repo, "init", "-q", "-b", "main")
    return repo, commit(repo)


def append_entry(repo: Path, keys: list[str], extra: str = "") -> str:
    entry = "\n- config-keys:\n" + "".join(f"    - {k}\n" for k in keys)
    entry += '  description:\n    - "test"\n  pr-link: https://github.com/example/ix-repo/pull/2420\n' + extra
    with open(repo / "perf-changelog.yaml", "a") as handle:
        handle.write(entry)
    return commit(repo)
