"""Drive a sandbox from Python (tests, the demo): build a seed repository, run the server as a subprocess.

    make_seed(tmpdir, files_main, files_feature, seed_overrides=None, *, feature_branch="feature") -> Path
        Writes tmpdir/repo (a git repository: branch `main` with files_main, branch `feature` = main plus
        files_feature, where a None value deletes a file) and tmpdir/seed.yaml, and returns the seed path.
        SAMPLE_MAIN_FILES / SAMPLE_FEATURE_FILES are a small ready-made pair. Default seed: acme/bench, bot recipe-bot[bot], users alice admin / carol write / bob read /
        mallory none, team acme/core [alice], pull #7 feature→main by bob, no comments. `seed_overrides`
        replace top-level keys (e.g. {"pulls": [...]}); commits have fixed dates, so SHAs are reproducible.

    with SandboxProcess(seed_path) as sb:        # `github-sandbox serve --seed F --port 0 [extra_args]`, a subprocess
        sb.url, sb.seed_path, sb.env()           # env(): {"GITHUB_API_URL": sb.url, ...} for `recipe-bot handle`
        sb.github("alice")                       # a PyGithub client whose token acts as alice
        sb.log(all=False, since=0), sb.state()   # GET /_sandbox/log, GET /_sandbox/state
        sb.push(branch, files, message=..., author=None)  # commit like a push: {"before", "after", "pulls"}
        sb.checkout(dest)                        # a clone of main, as recipe-bot.yml's checkout step leaves it
        sb.add_run(workflow, **fields), sb.set_run(run_id, status=, conclusion=, jobs=, artifacts=)
        sb.add_review(pull, user, state, body=""), sb.update_pull(number, **fields)
        sb.event(event, action, **selectors)     # a webhook payload consistent with the state
        sb.write_event(path, event, action, **selectors) -> Path   # for `recipe-bot handle --event-path`
        sb.deliver_to(url, secret)               # signed webhooks to a receiver, e.g. `recipe-bot serve`
        sb.add_faults(rule, ...), sb.clear_faults()   # fault injection (docs/sandbox.md)
        sb.problems()                            # responses that broke the OpenAPI description, unknown calls
    Leaving the block sends SIGTERM and waits; with check=True (the default) it then raises SandboxProblem
    if any response broke GitHub's OpenAPI description or any request named an operation the sandbox
    does not serve.
"""
from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

FIXED_DATE = "2024-01-01T00:00:00+00:00"
# A small benchmark repository: `feature` changes one recipe and adds a launch script, as a typical PR would.
SAMPLE_MAIN_FILES = {
    "README.md": "# bench\n",
    "configs/tiny-master.yaml": "tiny:\n  model: tiny\n  concurrency: [1, 2]\n",
}
SAMPLE_FEATURE_FILES: dict[str, str | None] = {
    "configs/tiny-master.yaml": "tiny:\n  model: tiny\n  concurrency: [1, 2, 4]\n",
    "scripts/launch.sh": "#!/bin/sh\necho launch\n",
}
DEFAULT_SEED: dict[str, Any] = {
    "repository": "acme/bench",
    "default_branch": "main",
    "git": "./repo",
    "bot": "recipe-bot[bot]",
    "users": {"alice": "admin", "carol": "write", "bob": "read", "mallory": "none"},
    "teams": {"acme/core": ["alice"]},
    "pulls": [{"number": 7, "head": "feature", "base": "main", "author": "bob", "fork": False, "draft": False,
               "title": "Tune tiny recipe", "body": "", "labels": [], "comments": []}],
}


class SandboxProblem(AssertionError):
    """The sandbox answered something GitHub's description forbids, or was asked for an unknown operation."""


class SandboxStartError(RuntimeError):
    pass


def _git(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    full_env = {**os.environ, "GIT_AUTHOR_NAME": "alice", "GIT_AUTHOR_EMAIL": "alice@users.noreply.github.com",
                "GIT_COMMITTER_NAME": "alice", "GIT_COMMITTER_EMAIL": "alice@users.noreply.github.com",
                "GIT_AUTHOR_DATE": FIXED_DATE, "GIT_COMMITTER_DATE": FIXED_DATE, **(env or {})}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=full_env).stdout.strip()


def _write(repo: Path, files: dict[str, str | None]) -> None:
    for rel, text in files.items():
        target = repo / rel
        if text is None:
            if target.exists():
                target.unlink()
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")


def make_seed(tmpdir: str | Path, files_main: dict[str, str], files_feature: dict[str, str | None],
              seed_overrides: dict[str, Any] | None = None, *, feature_branch: str = "feature") -> Path:
    tmpdir = Path(tmpdir)
    repo = tmpdir / "repo"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "commit.gpgsign", "false")
    _write(repo, files_main or {"README.md": "# bench\n"})
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "Initial commit")
    _git(repo, "checkout", "-q", "-b", feature_branch)
    _write(repo, files_feature)
    _git(repo, "add", "-A")
    bob = {"GIT_AUTHOR_NAME": "bob", "GIT_AUTHOR_EMAIL": "bob@users.noreply.github.com"}
    _git(repo, "commit", "-q", "--allow-empty", "-m", "Change on the feature branch", env=bob)
    _git(repo, "checkout", "-q", "main")
    seed = {**DEFAULT_SEED, **(seed_overrides or {})}
    seed_path = tmpdir / "seed.yaml"
    seed_path.write_text(yaml.safe_dump(seed, sort_keys=False), encoding="utf-8")
    return seed_path


class SandboxProcess:
    """The sandbox as a subprocess, exactly as users start it (`github-sandbox serve --seed F --port 0`)."""

    def __init__(self, seed_path: str | Path, *, check: bool = True, start_timeout: float = 30.0,
                 extra_args: list[str] | None = None):
        self.seed_path = Path(seed_path)
        self.check = check
        self.extra_args = list(extra_args or [])
        self.start_timeout = start_timeout
        self.url = ""
        self.proc: subprocess.Popen[str] | None = None
        self._stderr = tempfile.TemporaryFile(mode="w+")
        self.exit_output = ""

    # --- lifecycle ---------------------------------------------------------------------------
    def start(self) -> "SandboxProcess":
        cmd = [sys.executable, "-m", "github_sandbox", "serve", "--seed", str(self.seed_path), "--port", "0", *self.extra_args]
        # Same process group as the caller: Ctrl-C on a test run stops its sandboxes too.
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self._stderr, text=True)
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)  # type: ignore[arg-type]
        deadline = time.monotonic() + self.start_timeout
        line = ""
        while time.monotonic() < deadline and not line:
            if sel.select(timeout=0.1):
                line = self.proc.stdout.readline()  # type: ignore[union-attr]
                if not line:
                    break
            elif self.proc.poll() is not None:
                break
        sel.close()
        if not line.startswith("listening on "):
            self.proc.kill()
            self.proc.wait()
            self._stderr.seek(0)
            raise SandboxStartError(f"sandbox did not start: {line!r} {self._stderr.read().strip()}")
        self.url = line.split("listening on ", 1)[1].strip()
        return self

    def stop(self) -> int:
        """SIGTERM, then wait; returns the exit code."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            out, _ = self.proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, _ = self.proc.communicate()
        self.exit_output = out or ""
        return self.proc.returncode

    def __enter__(self) -> "SandboxProcess":
        return self.start()

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        problems = self.problems() if self.check and exc_type is None and self.proc and self.proc.poll() is None else []
        self.stop()
        self._stderr.close()
        if problems:
            raise SandboxProblem(describe(problems))

    # --- HTTP ---------------------------------------------------------------------------------
    def request(self, method: str, path: str, body: Any = None, user: str | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if user:
            req.add_header("Authorization", f"token {user}")
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"{method} {path}: {exc.code} {exc.read().decode(errors='replace')}") from None
        return json.loads(raw) if raw else None

    def log(self, all: bool = False, since: int = 0) -> list[dict[str, Any]]:  # noqa: A002 (mirrors ?all=1)
        return self.request("GET", f"/_sandbox/log?all={int(all)}&since={since}")

    def state(self) -> dict[str, Any]:
        return self.request("GET", "/_sandbox/state")

    def push(self, branch: str, files: dict[str, str | None], message: str = "Update from the sandbox",
             author: str | None = None, start_from: str | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"branch": branch, "files": files, "message": message}
        if author:
            body["author"] = author
        if start_from:
            body["from"] = start_from
        return self.request("POST", "/_sandbox/push", body)

    def checkout(self, dest: str | Path, branch: str = "main") -> Path:
        """What recipe-bot.yml's checkout step leaves: a clone of the default branch whose `origin` is this
        sandbox's repository (so `git fetch origin <sha>` reaches every commit the sandbox holds)."""
        seed = yaml.safe_load(Path(self.seed_path).read_text(encoding="utf-8"))
        repo = (Path(self.seed_path).parent / seed.get("git", "./repo")).resolve()
        dest = Path(dest)
        subprocess.run(["git", "clone", "--quiet", "--branch", branch, "--single-branch", str(repo), str(dest)],
                       check=True, capture_output=True)
        return dest

    def add_run(self, workflow: str, **fields: Any) -> dict[str, Any]:
        return self.request("POST", "/_sandbox/runs", {"workflow": workflow, **fields})

    def set_run(self, run_id: int, **fields: Any) -> dict[str, Any]:
        return self.request("POST", f"/_sandbox/runs/{run_id}", {k: v for k, v in fields.items() if v is not None})

    def add_review(self, pull: int, user: str, state: str, body: str = "") -> dict[str, Any]:
        return self.request("POST", "/_sandbox/reviews", {"pull": pull, "user": user, "state": state, "body": body})

    def update_pull(self, number: int, **fields: Any) -> dict[str, Any]:
        return self.request("POST", f"/_sandbox/pulls/{number}", fields)

    def event(self, event: str, action: str, **selectors_: Any) -> dict[str, Any]:
        return self.request("POST", "/_sandbox/webhook", {"event": event, "action": action, **selectors_})

    def write_event(self, path: str | Path, event: str, action: str, **selectors_: Any) -> Path:
        path = Path(path)
        path.write_text(json.dumps(self.event(event, action, **selectors_), indent=2), encoding="utf-8")
        return path

    def deliver_to(self, url: str | None, secret: str = "") -> None:
        """POST /_sandbox/webhooks/target: send each new comment as a signed webhook to `url` (None stops it)."""
        self.request("POST", "/_sandbox/webhooks/target", {"url": url, "secret": secret})

    def add_faults(self, *rules: dict[str, Any]) -> list[dict[str, Any]]:
        """POST /_sandbox/faults: make GitHub misbehave (sandbox/github_sandbox/faults.py); returns the active rules."""
        return self.request("POST", "/_sandbox/faults", {"rules": list(rules)})

    def clear_faults(self) -> None:
        self.request("DELETE", "/_sandbox/faults")

    def github(self, login: str, **kwargs: Any) -> Any:
        from github import Auth, Github

        # No client-side throttling or retries against a local server: they only hide latency and bugs.
        options = {"retry": None, "seconds_between_requests": None, "seconds_between_writes": None, **kwargs}
        return Github(auth=Auth.Token(login), base_url=self.url, **options)

    def env(self) -> dict[str, str]:
        """Variables that point recipe-bot (and PyGithub through it) at this sandbox."""
        st = self.state()
        return {"GITHUB_API_URL": self.url, "GITHUB_SERVER_URL": self.url,
                "GITHUB_REPOSITORY": st["repository"]["full_name"], "GITHUB_TOKEN": st["bot"]}

    def problems(self) -> list[dict[str, Any]]:
        return [e for e in self.log(all=True) if not e["response_valid"] or not e["known"]]


def describe(problems: list[dict[str, Any]]) -> str:
    lines = []
    for e in problems:
        if not e["known"]:
            lines.append(f"{e['method']} {e['path']}: not an operation the sandbox serves (not in its OpenAPI copy)")
        else:
            lines.append(f"{e['method']} {e['path']} ({e['operation']}) → {e['status']}: response breaks the "
                         f"OpenAPI description: {'; '.join(e['response_errors'])}")
    return "sandbox problems:\n  " + "\n  ".join(lines)
