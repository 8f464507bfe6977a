"""Stage a rehearsal: the sandbox's repository made from this checkout, the locked dependencies, act's command line."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[2]
ACTIONS = Path(__file__).resolve().parent / "actions"
WORKFLOWS = ".github/workflows"
LOCK = "requirements/workflows.txt"
DEPS_CACHE = ROOT / "out" / "rehearsal"
FIXED_DATE = "2024-01-01T00:00:00+00:00"
# The remote actions the workflows use, each replaced for the rehearsal by a local action of ours with the
# same inputs and outputs (act's --local-repository: the workflow files themselves stay byte for byte).
STAND_INS = {"actions/checkout": "checkout", "actions/upload-artifact": "upload-artifact",
             "actions/download-artifact": "download-artifact",
             "actions/create-github-app-token": "create-github-app-token"}
_USES = re.compile(r"^\s*(?:-\s*)?uses:\s*([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)@([^\s#]+)", re.MULTILINE)


class StageError(RuntimeError):
    """The rehearsal cannot be set up here; the message says what is missing and how to get it."""


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "alice", "GIT_AUTHOR_EMAIL": "alice@users.noreply.github.com",
           "GIT_COMMITTER_NAME": "alice", "GIT_COMMITTER_EMAIL": "alice@users.noreply.github.com",
           "GIT_AUTHOR_DATE": FIXED_DATE, "GIT_COMMITTER_DATE": FIXED_DATE}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def tracked_files(root: Path = ROOT) -> list[str]:
    """This checkout's files as they are now (uncommitted edits included: a change is rehearsed before pushing)."""
    out = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], check=True, capture_output=True).stdout
    return [p for p in out.decode().split("\0") if p and (root / p).is_file()]


Edits = dict[str, "str | None | Callable[[str], str]"]


def _apply(repo: Path, edits: Edits) -> None:
    for rel, change in edits.items():
        target = repo / rel
        if change is None:
            target.unlink(missing_ok=True)
            continue
        old = target.read_text(encoding="utf-8") if target.is_file() else ""
        text = change(old) if callable(change) else change
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def build_repository(dest: Path, *, main_edits: Edits, feature_edits: Edits) -> Path:
    """The sandbox's git: `main` is this checkout (recipe-bot's workflows, code and recipes, as a repository
    using recipe-bot has them), `feature` is main plus the pull request's change."""
    repo = dest / "repo"
    repo.mkdir(parents=True)
    for rel in tracked_files():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, repo / rel)
    _apply(repo, main_edits)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "commit.gpgsign", "false")
    # GitHub serves any commit by its SHA (actions/checkout fetches `ref: <sha>` so).
    _git(repo, "config", "uploadpack.allowAnySHA1InWant", "true")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "recipe-bot at the rehearsed revision")
    _git(repo, "checkout", "-q", "-b", "feature")
    _apply(repo, feature_edits)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "The pull request's change")
    _git(repo, "checkout", "-q", "main")
    return repo


def act_directory(repo: Path, dest: Path, repository: str) -> Path:
    """What act reads the workflows from: a clone of main whose origin names the repository on GitHub
    (act takes github.repository from it); nothing in it is checked out into a job (the checkout does that)."""
    subprocess.run(["git", "clone", "-q", "--branch", "main", str(repo), str(dest)], check=True, capture_output=True)
    _git(dest, "remote", "set-url", "origin", f"https://github.com/{repository}.git")
    return dest


def local_actions(workflow_dir: Path) -> list[str]:
    """act's --local-repository values: every `owner/name@ref` the workflows use, mapped to our stand-in.
    A remote action without a stand-in stops the rehearsal (act would try to clone it)."""
    found: set[tuple[str, str]] = set()
    for path in sorted(workflow_dir.glob("*.yml")):
        found |= {(m.group(1), m.group(2)) for m in _USES.finditer(path.read_text(encoding="utf-8"))}
    missing = sorted(name for name, _ in found if name not in STAND_INS)
    if missing:
        raise StageError(f"the workflows use remote actions the rehearsal has no local stand-in for: {missing}; "
                         f"add one under {ACTIONS.relative_to(ROOT)} and to STAND_INS in tests/rehearsal/stage.py")
    return [f"{name}@{ref}={ACTIONS / STAND_INS[name]}" for name, ref in sorted(found)]


def locked_dependencies() -> Path:
    """The lock file's packages (requirements/workflows.txt, hashes checked) installed once into a folder that
    every job's fresh venv sees through PYTHONPATH: the install steps then run for real and offline, find the
    locked requirements satisfied, and build and install recipe-bot itself from the job's checkout."""
    lock = (ROOT / LOCK).read_bytes()
    version = f"py{sys.version_info.major}{sys.version_info.minor}"
    target = DEPS_CACHE / f"deps-{version}-{hashlib.sha256(lock).hexdigest()[:16]}"
    if (target / ".complete").is_file():
        return target
    python3 = shutil.which("python3")
    if python3 is None:
        raise StageError("python3 is not on PATH: the workflows' install steps run `python3 -m venv`")
    theirs = subprocess.run([python3, "-c", "import sys; print(f'py{sys.version_info[0]}{sys.version_info[1]}')"],
                            capture_output=True, text=True).stdout.strip()
    if theirs != version:
        raise StageError(f"python3 on PATH is {theirs}, this interpreter {version}: run the rehearsal with the "
                         "python3 the workflows' steps will find (the locked wheels are per Python version)")
    partial = target.with_suffix(".partial")
    shutil.rmtree(partial, ignore_errors=True)
    print(f"[rehearsal] installing the locked dependencies of {LOCK} once into {target} (needs the package index)",
          flush=True)
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                           "--target", str(partial), "--require-hashes", "--only-binary", ":all:", "--no-deps",
                           "-r", str(ROOT / LOCK)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise StageError(f"could not install {LOCK} (network to the package index needed once):\n{proc.stderr[-2000:]}")
    (partial / ".complete").write_text(json.dumps({"lock_sha256": hashlib.sha256(lock).hexdigest()}))
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    return target


def wheelhouse() -> Path:
    """The lock's wheels for this platform, downloaded once (hashes checked), for `--fresh-installs`: every
    job's venv then installs them as on GitHub, from this folder instead of the index (PIP_FIND_LINKS)."""
    lock = (ROOT / LOCK).read_bytes()
    target = DEPS_CACHE / f"wheels-py{sys.version_info.major}{sys.version_info.minor}-{hashlib.sha256(lock).hexdigest()[:16]}"
    if (target / ".complete").is_file():
        return target
    partial = target.with_suffix(".partial")
    shutil.rmtree(partial, ignore_errors=True)
    print(f"[rehearsal] downloading the wheels of {LOCK} once into {target} (needs the package index)", flush=True)
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                           "--require-hashes", "--only-binary", ":all:", "--no-deps", "-d", str(partial),
                           "-r", str(ROOT / LOCK)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise StageError(f"could not download {LOCK} (network to the package index needed once):\n{proc.stderr[-2000:]}")
    (partial / ".complete").write_text(hashlib.sha256(lock).hexdigest())
    shutil.rmtree(target, ignore_errors=True)
    partial.rename(target)
    return target
