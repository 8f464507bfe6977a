"""The sandbox driven by hand, as README and docs/sandbox.md tell a newcomer: the shipped seed, GitHub's
own curl style, and `--deliver` so that a comment posted by HTTP reaches a running `recipe-bot serve`."""
from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from bot.core import i18n
from github_sandbox.harness import SandboxProcess
from github_sandbox.seed import load_seed

ROOT = Path(__file__).resolve().parents[1]
SEED = ROOT / "demo" / "seed.yaml"
SECRET = "a-secret-for-the-test"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def post_like_curl(url: str, body: bytes, user: str) -> tuple[int, dict]:
    """What `curl -H 'Authorization: token alice' -d '{...}' URL` sends: a form content type."""
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Authorization": f"token {user}", "Content-Type": "application/x-www-form-urlencoded",
        "User-Agent": "curl/8.5.0"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return answer.status, json.loads(answer.read())


def test_the_docs_name_a_seed_the_repository_ships_and_it_builds_a_pull() -> None:
    docs = (ROOT / "docs" / "sandbox.md").read_text(encoding="utf-8")
    named = set(re.findall(r"--seed (\S+\.yaml)", docs + (ROOT / "README.md").read_text(encoding="utf-8")))
    assert "demo/seed.yaml" in named and all((ROOT / path).is_file() for path in named), named
    seed = load_seed(SEED)
    assert Path(seed.git_dir).is_dir() and [p.number for p in seed.seed.pulls] == [7]


def test_docs_do_not_say_webhook_delivery_is_not_covered() -> None:
    docs = (ROOT / "docs" / "sandbox.md").read_text(encoding="utf-8")
    not_covered = docs.split("## Not covered", 1)[1]
    assert "webhook delivery" not in not_covered and "--deliver" in docs


def test_a_comment_posted_as_curl_posts_it_is_created_as_github_creates_it(sandbox) -> None:
    sb = sandbox(SEED)
    status, comment = post_like_curl(f"{sb.url}/repos/acme/bench/issues/7/comments", b'{"body":"/help"}', "alice")
    assert status == 201 and comment["body"] == "/help" and comment["user"]["login"] == "alice"


@pytest.mark.parametrize("args, env, english, chinese", [
    pytest.param(["--deliver", "http://127.0.0.1:1/"], {"RECIPE_BOT_WEBHOOK_SECRET": ""},
                 "--deliver needs the webhook secret in RECIPE_BOT_WEBHOOK_SECRET", "需要环境变量", id="no-secret"),
    pytest.param(["--deliver", "127.0.0.1:8080"], {"RECIPE_BOT_WEBHOOK_SECRET": "x"},
                 "expected an http:// or https:// URL", "应为 http:// 或 https:// 开头的 URL", id="not-a-url"),
])
def test_deliver_refuses_what_cannot_work_in_both_languages(args, env, english, chinese) -> None:
    done = subprocess.run([sys.executable, "-m", "github_sandbox", "serve", "--seed", str(SEED), "--port", "0", *args],
                          env={**os.environ, **env}, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert english in done.stderr and chinese in done.stderr


def _bot_replies(url: str) -> list[str]:
    with urllib.request.urlopen(f"{url}/repos/acme/bench/issues/7/comments?per_page=100", timeout=30) as answer:
        return [c["body"] for c in json.loads(answer.read()) if c["user"]["login"] == "recipe-bot[bot]"]


def test_a_comment_typed_with_curl_reaches_serve_and_the_bot_answers(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    sandbox_port = free_port()
    monkeypatch.setenv("RECIPE_BOT_WEBHOOK_SECRET", SECRET)
    env = {**os.environ, "GITHUB_API_URL": f"http://127.0.0.1:{sandbox_port}", "GITHUB_TOKEN": "recipe-bot[bot]"}
    serve = subprocess.Popen([sys.executable, "-m", "bot", "serve", "--port", "0", "--token-env", "GITHUB_TOKEN",
                              "--queue", str(tmp_path / "queue.sqlite3")], env=env, cwd=tmp_path,
                             stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        serve_url = next(json.loads(line)["url"] for line in serve.stderr  # type: ignore[union-attr]
                         if line.startswith("{") and json.loads(line).get("msg") == "listening")
        with SandboxProcess(SEED, extra_args=["--port", str(sandbox_port), "--deliver", serve_url]) as sb:
            post_like_curl(f"{sb.url}/repos/acme/bench/issues/7/comments", b'{"body":"/help"}', "alice")
            deadline = time.monotonic() + 60
            while not _bot_replies(sb.url) and time.monotonic() < deadline:
                time.sleep(0.2)
            replies = _bot_replies(sb.url)
            assert replies, f"no answer from the bot; deliveries: {sb.request('GET', '/_sandbox/webhooks/deliveries')}"
            english, chinese = replies[0].split("\n", 1)[1].split(i18n.SEPARATOR)
            assert "recipe-bot commands" in english and "/sweep" in english and "命令" in chinese
            assert sb.request("GET", "/_sandbox/webhooks/deliveries")[0]["status"] == 202
    finally:
        serve.terminate()
        serve.wait(30)


@pytest.mark.parametrize("lang, joined", [("en", "pull request.What works"), ("zh", "使用该命令。可行的做法")])
def test_the_permission_refusal_keeps_its_sentences_on_their_own_lines(lang: str, joined: str) -> None:
    text = i18n.render("control/refused-permission", lang, command="/sweep", login="bob", have="read",
                       needed="write", author_path=True, is_author=False, head_sha="abc")
    assert joined not in text and len(text.splitlines()) == 3


@pytest.mark.parametrize("counted, english, chinese", [
    pytest.param(1, "1 active run(s) in the repository, none with a job yet", "都还没有作业", id="queued-run"),
    pytest.param(0, "No run of the repository is queued or running.", "没有排队或运行中的运行", id="nothing"),
])
def test_status_says_a_queued_run_is_queued_not_that_nothing_is(counted: int, english: str, chinese: str) -> None:
    context = dict(runs=[], jobs=[], queue=[], counted_runs=counted, capped=False, infra=None, active_runs=counted,
                   more_pages=False)
    assert english in i18n.render("control/status", "en", **context)
    zh = i18n.render("control/status", "zh", **context)
    assert chinese in zh and "没有排队或运行中的作业" not in zh
