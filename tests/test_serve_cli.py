"""`recipe-bot serve` as an operator runs it: clear bilingual errors for bad config, and the whole loop as a process."""
from __future__ import annotations

import os
import urllib.request

import pytest
from click.testing import CliRunner

from bot.cli import main  # the edge that shows a refusal in both languages
from bot.serve.cli import serve_cmd
from bot.serve.signature import sign
from handle_helpers import ROOT, Harness, seed
from serve_helpers import SECRET, ServeProcess, body_of

GOOD = {"RECIPE_BOT_WEBHOOK_SECRET": SECRET, "GITHUB_TOKEN": "bot"}


@pytest.mark.parametrize("env,args,english,chinese", [
    ({"GITHUB_TOKEN": "bot"}, ["--token-env", "GITHUB_TOKEN"], "webhook secret is not set", "未设置 webhook 密钥"),
    ({"MY_SECRET": ""}, ["--secret-env", "MY_SECRET"], "export MY_SECRET", "MY_SECRET"),
    ({"RECIPE_BOT_WEBHOOK_SECRET": SECRET}, ["--token-env", "NOPE"], "--token-env NOPE", "该环境变量未设置"),
    ({"RECIPE_BOT_WEBHOOK_SECRET": SECRET}, [], "RECIPE_BOT_APP_ID", "私钥"),
    ({"RECIPE_BOT_WEBHOOK_SECRET": SECRET, "RECIPE_BOT_APP_ID": "twelve"}, [],
     "RECIPE_BOT_APP_ID='twelve' is not accepted: expected digits", "RECIPE_BOT_APP_ID='twelve' 无效"),
    ({"RECIPE_BOT_WEBHOOK_SECRET": SECRET, "RECIPE_BOT_APP_ID": "12",
      "RECIPE_BOT_APP_PRIVATE_KEY_PATH": "/nonexistent/key.pem"}, [], "cannot read the private key", "无法读取私钥"),
    ({"RECIPE_BOT_WEBHOOK_SECRET": SECRET, "RECIPE_BOT_APP_ID": "12",
      "RECIPE_BOT_APP_PRIVATE_KEY_PATH": "{readme}"}, [], "not a PEM private key", "不是 PEM 私钥"),
    ({**GOOD}, ["--token-env", "GITHUB_TOKEN", "--queue", "{readme}/q.sqlite3"], "cannot open the SQLite queue", "无法打开"),
    ({**GOOD, "RECIPE_BOT_GITHUB_ATTEMPTS": "lots"}, ["--token-env", "GITHUB_TOKEN"],
     "RECIPE_BOT_GITHUB_ATTEMPTS='lots' is not accepted: expected a whole number", "无效，应为：整数"),
], ids=["no-secret", "empty-named-secret", "empty-token-env", "no-app-id", "app-id-not-digits", "unreadable-key", "key-not-pem",
        "queue-under-a-file", "bad-retry-setting"])
def test_bad_config_is_one_bilingual_error_and_exit_1(tmp_path, env, args, english, chinese):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("RECIPE_BOT_", "GITHUB_"))}
    env = {k: v.format(readme=ROOT / "README.md") for k, v in env.items()}
    args = [a.format(readme=ROOT / "README.md") for a in args]
    result = CliRunner().invoke(main, ["serve", "--port", "0", *args], env={**{k: None for k in os.environ
                                                                           if k not in clean}, **env})
    assert result.exit_code == 1, result.output
    assert english in result.output and chinese in result.output
    assert "Traceback" not in result.output


def test_help_names_the_options():
    result = CliRunner().invoke(serve_cmd, ["-h"])
    assert result.exit_code == 0
    for option in ("--port", "--queue", "--secret-env", "--token-env", "--workers"):
        assert option in result.output


def test_the_serve_process_turns_a_signed_comment_into_one_dispatch(sandbox, tmp_path):
    h = Harness(sandbox(seed(tmp_path)), tmp_path)
    serve = ServeProcess(h.sb, tmp_path / "q.sqlite3")
    try:
        raw = body_of(h.sb.event("issue_comment", "created", comment_id=h.comment(7, "alice", "/sweep")))
        request = urllib.request.Request(serve.url, data=raw, method="POST", headers={
            "X-GitHub-Event": "issue_comment", "X-GitHub-Delivery": "e2e-1", "Content-Type": "application/json",
            "X-Hub-Signature-256": sign(SECRET, raw)})
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert answer.status == 202
            assert answer.headers["Server"] == "recipe-bot"  # waitress, not werkzeug's development server
        done = serve.until("delivery handled", "delivery failed")
        assert done["msg"] == "delivery handled" and done["delivery"] == "e2e-1"
        # the access line was written before the 202 left, so it is among the lines read so far
        assert [(line["method"], line["path"], line["status"]) for line in serve.lines if line["msg"] == "http"] == [
            ("POST", "/", "202")]
        assert len(h.dispatches()) == 1
    finally:
        assert serve.stop() == 0


def test_the_sandbox_sends_signed_webhooks_and_serve_answers_a_comment(sandbox, tmp_path):
    h = Harness(sandbox(seed(tmp_path)), tmp_path)
    serve = ServeProcess(h.sb, tmp_path / "q.sqlite3")
    try:
        h.sb.request("POST", "/_sandbox/webhooks/target", {"url": serve.url, "secret": SECRET})
        comment_id = h.comment(7, "alice", "/sweep")  # only a comment: the sandbox delivers the event
        done = serve.until("delivery handled", "delivery failed")  # one thread delivers: this is alice's comment
        assert done["msg"] == "delivery handled", done
        [run] = h.dispatches()
        assert run["inputs"]["comment_id"] == str(comment_id)
        sent = h.sb.request("GET", "/_sandbox/webhooks/deliveries")
        assert sent[0]["event"] == "issue_comment" and sent[0]["status"] == 202
    finally:
        assert serve.stop() == 0


def test_a_webhook_signed_with_another_secret_is_refused_by_serve(sandbox, tmp_path):
    h = Harness(sandbox(seed(tmp_path)), tmp_path)
    serve = ServeProcess(h.sb, tmp_path / "q.sqlite3")
    try:
        h.sb.request("POST", "/_sandbox/webhooks/target", {"url": serve.url, "secret": "not the secret"})
        h.comment(7, "alice", "/sweep")
        assert serve.until("webhook signature refused")["status"] == 401
        assert h.dispatches() == []
    finally:
        assert serve.stop() == 0
