"""Fault injection in the sandbox (POST /_sandbox/faults), and the GitHub client against it: what it
repeats, what it never repeats, and how every failure reaches the caller as one GitHubError."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from bot.core.github import GitHubClient, GitHubError
from bot.core.github_retry import RetryPolicy

FAST = RetryPolicy(attempts=3, budget_s=3, base_s=0.01, timeout_s=1)
COMMENTS = "/repos/acme/bench/issues/7/comments"


def raw(sb, method, path, body=None, user="alice"):
    """(status, headers, body) without raising on an error status."""
    req = urllib.request.Request(sb.url + path, method=method, data=json.dumps(body).encode() if body else None)
    req.add_header("Authorization", f"token {user}")
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, dict(resp.headers), json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), json.loads(exc.read() or b"null")


def client(sb, **kwargs):
    return GitHubClient(base_url=sb.url, token=sb.state()["bot"], repository="acme/bench", policy=FAST, **kwargs)


def bot_comments(sb):
    return [c for c in sb.state()["comments"] if c["user"] == sb.state()["bot"]]


@pytest.mark.parametrize(("rule", "message"), [
    pytest.param({"path": "(unclosed"}, "not a regular expression", id="bad-regex"),
    pytest.param({"path": "x", "status": 99}, "status", id="status-out-of-range"),
    pytest.param({"path": "x", "colour": "red"}, "colour", id="unknown-key"),
    pytest.param({"path": "x", "method": "BREW"}, "method", id="unknown-method"),
    pytest.param({"status": 502}, "path", id="path-missing"),
])
def test_a_bad_rule_is_refused_naming_the_field(sandbox, rule, message):
    sb = sandbox()
    status, _, body = raw(sb, "POST", "/_sandbox/faults", {"rules": [rule]})
    assert status == 400 and message in body["message"]
    assert sb.state()["faults"] == []


def test_a_fault_instead_of_the_request_answers_for_it_and_is_listed(sandbox):
    sb = sandbox()
    sb.add_faults({"method": "POST", "path": r"/issues/\d+/comments$", "status": 403,
                   "headers": {"Retry-After": "7"}, "count": 1})
    status, headers, body = raw(sb, "POST", COMMENTS, {"body": "hi"})
    assert status == 403 and headers["Retry-After"] == "7" and "rate limit" in body["message"]
    assert [c for c in sb.state()["comments"] if c["body"] == "hi"] == []  # nothing was done
    [rule] = sb.state()["faults"]
    assert (rule["fired"], rule["remaining"], rule["after"]) == (1, 0, False)
    assert raw(sb, "POST", COMMENTS, {"body": "hi"})[0] == 201  # the count is spent
    assert [e.get("fault") for e in sb.log() if e["method"] == "POST"] == [rule["id"], None]


def test_a_fault_after_forwarding_does_the_work_then_fails(sandbox):
    sb = sandbox()
    sb.add_faults({"method": "POST", "path": "comments$", "status": 502, "after": True})
    status, _, _ = raw(sb, "POST", COMMENTS, {"body": "made anyway"})
    assert status == 502
    assert [c["body"] for c in sb.state()["comments"]] == ["made anyway"]


def test_skip_lets_requests_through_before_the_rule_fires_and_method_and_user_narrow_it(sandbox):
    sb = sandbox()
    sb.add_faults({"path": "comments$", "method": "GET", "user": "bob", "status": 500, "skip": 1, "count": None})
    assert raw(sb, "GET", COMMENTS, user="bob")[0] == 200  # skipped
    assert raw(sb, "GET", COMMENTS, user="bob")[0] == 500
    assert raw(sb, "GET", COMMENTS, user="bob")[0] == 500  # count null: every time
    assert raw(sb, "GET", COMMENTS, user="alice")[0] == 200  # another user
    assert raw(sb, "POST", COMMENTS, {"body": "x"}, user="bob")[0] == 201  # another method
    sb.clear_faults()
    assert sb.state()["faults"] == [] and raw(sb, "GET", COMMENTS, user="bob")[0] == 200


def test_reads_are_retried_through_5xx(sandbox):
    sb = sandbox()
    sb.add_faults({"method": "GET", "path": "/pulls/7$", "status": 502, "count": 2})
    gh = client(sb)
    assert gh.get_pull(7).number == 7
    assert gh.request_count == 3
    assert sb.state()["faults"][0]["fired"] == 2


@pytest.mark.parametrize(("rule", "ambiguous", "made"), [
    pytest.param({"status": 502}, True, 0, id="5xx-before"),
    pytest.param({"status": 502, "after": True}, True, 1, id="5xx-after"),
    pytest.param({"delay_s": 2.5, "after": True}, True, 1, id="time-out-after"),
    pytest.param({"status": 422}, False, 0, id="422"),
])
def test_a_new_comment_is_never_sent_twice(sandbox, rule, ambiguous, made):
    sb = sandbox()
    sb.add_faults({"method": "POST", "path": "comments$", "count": None, **rule})
    gh = client(sb)
    with pytest.raises(GitHubError) as failure:
        gh.create_comment(7, "once")
    assert failure.value.ambiguous is ambiguous
    assert [e["method"] for e in sb.log() if e["path"].endswith("/comments")] == ["POST"]  # one attempt
    assert len(bot_comments(sb)) == made
    assert "\n" not in str(failure.value) and "POST issues/7/comments" in str(failure.value)


def test_a_rate_limit_past_the_budget_fails_at_once_saying_how_long(sandbox):
    sb = sandbox()
    sb.add_faults({"path": "/pulls/7$", "status": 403, "headers": {"Retry-After": "3600"}})
    gh = client(sb)
    with pytest.raises(GitHubError) as failure:
        gh.get_pull(7)
    assert failure.value.throttled_s == 3600 and gh.waited_s == 0  # never slept towards it
    assert "asks to wait 3600 s" in str(failure.value)


def test_a_rate_limit_within_the_budget_is_waited_out_even_for_a_write(sandbox):
    sb = sandbox()
    sb.add_faults({"method": "POST", "path": "comments$", "status": 429, "headers": {"Retry-After": "1"}})
    gh = client(sb)
    gh.create_comment(7, "after the wait")
    assert gh.waited_s >= 1 and [c["body"] for c in bot_comments(sb)] == ["after the wait"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_no_server_at_all_is_one_github_error():
    gh = GitHubClient(base_url=f"http://127.0.0.1:{free_port()}", token="x", repository="acme/bench", policy=FAST)
    with pytest.raises(GitHubError, match="cannot reach the GitHub API at") as failure:
        gh.get_pull(7)
    assert failure.value.ambiguous and gh.request_count == FAST.attempts


def test_handle_without_github_is_one_clear_line_in_both_languages(tmp_path):
    event = tmp_path / "event.json"
    event.write_text(json.dumps({
        "action": "created", "repository": {"full_name": "acme/bench", "default_branch": "main"},
        "sender": {"login": "carol", "type": "User"}, "issue": {"number": 7, "state": "open", "pull_request": {}},
        "comment": {"id": 5, "body": "/sweep", "user": {"login": "carol"}}}))
    env = {"GITHUB_API_URL": f"http://127.0.0.1:{free_port()}", "GITHUB_TOKEN": "recipe-bot[bot]",
           "GITHUB_REPOSITORY": "acme/bench", "RECIPE_BOT_GITHUB_ATTEMPTS": "2",
           "RECIPE_BOT_GITHUB_BACKOFF_S": "0.01", "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", "from bot.cli import main; main(prog_name='recipe-bot')", "handle",
                           "--event-name", "issue_comment", "--event-path", str(event)],
                          env={**env, "PYTHONPATH": ":".join(sys.path)}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("recipe-bot: ⚠️ GitHub failed") and "cannot reach the GitHub API at" in last
    assert "GitHub 出错" in last
