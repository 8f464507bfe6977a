"""Shared by tests/test_handle*.py: a seeded sandbox, and `recipe-bot handle` run as Actions runs it."""
from __future__ import annotations

import contextlib
import json
import os
import pathlib
import subprocess
import traceback
from typing import Any

from click.testing import CliRunner

from bot.core import i18n
from github_sandbox.harness import SandboxProcess, make_seed

ROOT = pathlib.Path(__file__).resolve().parents[1]
BOT = "recipe-bot[bot]"
CONFIG = f"bot_login: {BOT}\ncooldown_seconds: 0\n"

# #7: carol's (write) same-repo PR; #8: bob's (read) same-repo PR; #9: mallory's fork;
# #10: carol's draft. They share one head branch; each test moves it with a push when it must.
PULLS = [
    {"number": 7, "head": "feature", "base": "main", "author": "carol", "title": "Tune tiny recipe"},
    {"number": 8, "head": "feature", "base": "main", "author": "bob", "title": "Bob's change"},
    {"number": 9, "head": "feature", "base": "main", "author": "mallory", "fork": True, "title": "From a fork"},
    {"number": 10, "head": "feature", "base": "main", "author": "carol", "draft": True, "title": "WIP"},
]


def seed(tmp_path: pathlib.Path, *, config: str = CONFIG, pulls: list[dict] | None = None,
         extra: dict[str, Any] | None = None) -> pathlib.Path:
    files_main = {
        "README.md": "# bench\n",
        ".github/recipe-bot.yaml": config,
        ".github/workflows/gpu.yml": (ROOT / ".github/workflows/gpu.yml").read_text(encoding="utf-8"),
    }
    overrides = {"pulls": pulls or PULLS, "issues": [{"number": 20, "author": "bob", "title": "A bug"}],
                 **(extra or {})}
    return make_seed(tmp_path / "sandbox", files_main, {"recipes/tiny.yaml": "name: tiny\n"}, overrides)


class Harness:
    """One sandbox, and the bot's command line pointed at it."""

    def __init__(self, sb: SandboxProcess, tmp_path: pathlib.Path):
        self.sb, self.tmp, self.events = sb, tmp_path, 0
        self.env = {**os.environ, **sb.env()}

    # -- acting as GitHub users -------------------------------------------------------------
    def comment(self, pr: int, user: str, body: str) -> int:
        return self.sb.request("POST", f"/repos/acme/bench/issues/{pr}/comments", {"body": body}, user=user)["id"]

    def edit(self, comment_id: int, user: str, body: str) -> None:
        self.sb.request("PATCH", f"/repos/acme/bench/issues/comments/{comment_id}", {"body": body}, user=user)

    def label(self, pr: int, user: str, name: str) -> None:
        self.sb.request("POST", f"/repos/acme/bench/issues/{pr}/labels", {"labels": [name]}, user=user)

    def head(self, pr: int) -> str:
        return next(p for p in self.sb.state()["pulls"] if p["number"] == pr)["head_sha"]

    def push(self, text: str = "name: tiny\nchanged: true\n") -> str:
        return self.sb.push("feature", {"recipes/tiny.yaml": text}, author="carol")["after"]

    # -- events through the command line ------------------------------------------------------
    def event_file(self, event: str, action: str, **selectors: Any) -> pathlib.Path:
        self.events += 1
        return self.sb.write_event(self.tmp / f"event-{self.events}.json", event, action, **selectors)

    def handle(self, event: str, action: str, *, dry_run: bool = False, path: pathlib.Path | None = None,
               env: dict[str, str] | None = None, expect: int = 0, **selectors: Any) -> subprocess.CompletedProcess:
        path = path or self.event_file(event, action, **selectors)
        args = ["handle", "--event-name", event, "--event-path", str(path)]
        if dry_run:
            args.append("--dry-run")
        result = run_in_process(args, env or self.env)
        assert result.returncode == expect, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
        return result

    def on_comment(self, pr: int, user: str, body: str, **kwargs: Any) -> subprocess.CompletedProcess:
        comment_id = self.comment(pr, user, body)
        return self.handle("issue_comment", "created", comment_id=comment_id, **kwargs)

    # -- what the bot did -----------------------------------------------------------------------
    def seq(self) -> int:
        entries = self.sb.log(all=True)
        return entries[-1]["seq"] if entries else 0

    def requests(self, since: int = 0) -> list[dict[str, Any]]:
        return [e for e in self.sb.log(all=True, since=since) if e["user"] == BOT]

    def writes(self, since: int = 0) -> list[dict[str, Any]]:
        return [e for e in self.requests(since) if e["method"] != "GET" and e["operation"] != "graphql"]  # reads

    def dispatches(self) -> list[dict[str, Any]]:
        return [r for r in self.sb.state()["workflow_runs"] if r["event"] == "workflow_dispatch"]

    def bot_comments(self, pr: int) -> list[dict[str, Any]]:
        return [c for c in self.sb.state()["comments"] if c["issue"] == pr and c["user"] == BOT]

    def reactions(self, comment_id: int) -> list[str]:
        return [r["content"] for r in self.sb.state()["reactions"]
                if r["subject"] == "comment" and r["subject_id"] == comment_id]


def run_in_process(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    """`recipe-bot ARGS` as the Actions step runs it (exactly `env` as its environment, the repository as its
    working folder, its exit code, stdout and stderr), but called in this process: these tests are about what
    the bot does with an event, and a Python start with the bot's imports per event was most of their time.
    An exception that escaped the command is appended to stderr as the traceback a process would print."""
    from bot.cli import main

    unset: dict[str, str | None] = {name: None for name in os.environ if name not in env}
    with contextlib.chdir(ROOT):
        result = CliRunner().invoke(main, args, env={**unset, **env}, prog_name="recipe-bot")
    stderr = result.stderr
    if result.exc_info is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(*result.exc_info))
    return subprocess.CompletedProcess(["recipe-bot", *args], result.exit_code, result.stdout, stderr)


def bilingual(body: str) -> tuple[str, str]:
    """The English and the Chinese halves of one reply (after the marker header)."""
    english, chinese = body.split(i18n.SEPARATOR)
    assert any("\u4e00" <= ch <= "\u9fff" for ch in chinese), "the second half is not Chinese"
    return english, chinese


def dry_run_lines(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]

