"""The demo drives the sandbox GitHub from outside (bot/demo/sandbox.py): its commands and its HTTP API, never its code."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bot.demo import sample
from bot.demo.sandbox import Sandbox, SandboxError, build_seed

MAIN = {"README.md": "# bench\n", "recipes/x.yaml": "name: x\n"}
FEATURE: dict[str, str | None] = {"recipes/x.yaml": "name: x\nconcurrency: [1, 2]\n"}


def test_a_comment_in_the_demo_sandbox_becomes_the_event_file_the_bot_reads(tmp_path: Path) -> None:
    seed = build_seed(tmp_path / "work", MAIN, FEATURE, sample.seed_overrides())
    assert seed == tmp_path / "work" / "seed.yaml" and (tmp_path / "work" / "repo" / ".git").is_dir()
    with Sandbox(seed) as sandbox:
        env = sandbox.env()
        assert env["GITHUB_API_URL"] == sandbox.url and env["GITHUB_TOKEN"] == sample.BOT_LOGIN
        comment = sandbox.comment(sample.MAINTAINER, env["GITHUB_REPOSITORY"], sample.PR_NUMBER, "/help")
        event = sandbox.write_event(tmp_path / "event.json", "issue_comment", "created", comment_id=comment["id"])
        payload = json.loads(event.read_text(encoding="utf-8"))
        assert payload["comment"]["id"] == comment["id"] and payload["sender"]["login"] == sample.MAINTAINER
        assert [c["body"] for c in sandbox.state()["comments"]] == ["/help"]
        assert sandbox.broken_responses() == []


def test_a_sandbox_that_cannot_start_is_one_error_with_its_reason(tmp_path: Path) -> None:
    overrides = {**sample.seed_overrides(), "pulls": [{"number": 1, "head": "nope", "base": "main", "author": "bob"}]}
    seed = build_seed(tmp_path / "work", MAIN, FEATURE, overrides)
    with pytest.raises(SandboxError, match="the sandbox did not start: .*pulls\\[0\\].head: no branch 'nope'"):
        with Sandbox(seed):
            pass


def test_a_seed_the_sandbox_refuses_names_the_command(tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match="`github-sandbox seed` failed: .*main.a: expected text"):
        build_seed(tmp_path / "work", {"a": 1}, {}, {})  # type: ignore[dict-item]


def test_running_the_demo_loads_no_sandbox_code() -> None:
    probe = ("import sys, bot.cli, bot.demo.loop, bot.demo.serve_mode, bot.demo.preview; "
             "print(sorted(m for m in sys.modules if m.split('.')[0] == 'github_sandbox'))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]"
