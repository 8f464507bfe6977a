"""The demo's sandbox GitHub, driven from outside: `github-sandbox` as a process, its state through its HTTP API.

The sandbox is a distribution of its own (sandbox/ in the repository) that the bot never imports: the demo
builds the seed with `github-sandbox seed`, serves it with `github-sandbox serve`, and talks to it as any
client would, through GitHub's REST API and the sandbox's /_sandbox/ control endpoints (docs/sandbox.md).
"""
from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

SANDBOX = [sys.executable, "-m", "github_sandbox"]  # the `github-sandbox` script, in this interpreter


class SandboxError(RuntimeError):
    """The sandbox did not start, refused a call, or left responses that break GitHub's description."""


def build_seed(work_dir: Path, main_files: dict[str, str], feature_files: dict[str, str | None],
               seed: dict[str, Any]) -> Path:
    """`github-sandbox seed WORK_DIR`: WORK_DIR/repo (main and the PR's branch) and the seed file's path."""
    work_dir.mkdir(parents=True, exist_ok=True)
    spec = work_dir / "seed-spec.json"
    spec.write_text(json.dumps({"main": main_files, "feature": feature_files, "seed": seed}), encoding="utf-8")
    done = subprocess.run([*SANDBOX, "seed", str(work_dir), "--spec", str(spec)], text=True, capture_output=True,
                          stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise SandboxError(f"`github-sandbox seed` failed: {done.stderr.strip() or done.stdout.strip()}")
    return Path(done.stdout.strip())


class Sandbox:
    """`github-sandbox serve --seed F --port 0` for the length of a `with` block; `url` once it listens."""

    def __init__(self, seed: Path):
        self.seed = seed
        self.stderr = seed.parent / "sandbox-stderr.log"  # a file, not a pipe: nothing reads it while it runs
        self.url = ""
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> "Sandbox":
        with self.stderr.open("w", encoding="utf-8") as err:
            self._proc = subprocess.Popen([*SANDBOX, "serve", "--seed", str(self.seed), "--port", "0"],
                                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err, text=True)
        assert self._proc.stdout is not None
        first = self._proc.stdout.readline()  # `listening on URL`, or nothing when it exits with an error
        if not first.startswith("listening on "):
            self._proc.kill()
            self._proc.communicate()
            why = self.stderr.read_text(encoding="utf-8").strip()
            raise SandboxError(f"the sandbox did not start: {first.strip()} {why}".strip())
        self.url = first.removeprefix("listening on ").strip()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        broken = self.broken_responses() if exc_type is None else []
        assert self._proc is not None
        self._proc.terminate()
        try:
            self._proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.communicate()
        if broken:
            raise SandboxError("the sandbox answered outside GitHub's description or was asked for an unknown "
                               "operation:\n  " + "\n  ".join(broken))

    def request(self, method: str, path: str, body: Any = None, user: str | None = None) -> Any:
        """One call, JSON both ways; `user` names the acting user (the sandbox's token convention)."""
        headers = {"Content-Type": "application/json", **({"Authorization": f"token {user}"} if user else {})}
        data = None if body is None else json.dumps(body).encode()
        call = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(call, timeout=30) as response:
                raw = response.read()
        except urllib.error.HTTPError as err:
            raise SandboxError(f"{method} {path}: {err.code} {err.read().decode(errors='replace')}") from None
        return json.loads(raw) if raw else None

    def state(self) -> dict[str, Any]:
        return self.request("GET", "/_sandbox/state")

    def log(self) -> list[dict[str, Any]]:
        """Every request the sandbox saw, oldest first, with whether its response kept GitHub's description."""
        return self.request("GET", "/_sandbox/log?all=1")

    def env(self) -> dict[str, str]:
        """Variables that point recipe-bot at this sandbox, acting as the seed's bot."""
        state = self.state()
        return {"GITHUB_API_URL": self.url, "GITHUB_SERVER_URL": self.url,
                "GITHUB_REPOSITORY": state["repository"]["full_name"], "GITHUB_TOKEN": state["bot"]}

    def comment(self, user: str, repository: str, number: int, body: str) -> dict[str, Any]:
        """`user` comments on issue or PR `number` through GitHub's REST API."""
        return self.request("POST", f"/repos/{repository}/issues/{number}/comments", {"body": body}, user=user)

    def set_run(self, run_id: int, **fields: Any) -> dict[str, Any]:
        """A workflow run's status or conclusion, as GitHub Actions would move it."""
        return self.request("POST", f"/_sandbox/runs/{run_id}", fields)

    def deliver_to(self, url: str | None, secret: str = "") -> None:
        """Send each new comment as a signed webhook to `url` (None stops it), as a GitHub App receives them."""
        self.request("POST", "/_sandbox/webhooks/target", {"url": url, "secret": secret})

    def write_event(self, path: Path, event: str, action: str, **selectors: Any) -> Path:
        """`github-sandbox deliver`: the event payload GitHub Actions would hand the job, written to `path`."""
        argv = [*SANDBOX, "deliver", event, action, "--sandbox", self.url, "--out", str(path)]
        for key, value in selectors.items():
            argv += ["--select", f"{key}={json.dumps(value)}"]
        done = subprocess.run(argv, text=True, capture_output=True, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise SandboxError(f"`github-sandbox deliver {event} {action}` failed: {done.stderr.strip()}")
        return path

    def broken_responses(self) -> list[str]:
        return [f"{e['method']} {e['path']} → {e['status']}" for e in self.log()
                if not e["response_valid"] or not e["known"]]
