"""Posting: the sticky-comment rule, the check run as merge gate, the job summary."""
import json

import pytest
from click.testing import CliRunner

from bot.core.github import Comment
from bot.core import stage_markers
from bot.report import post
from tests import synthetic
from bot.report.cli import report_cmd

BOT = "recipe-bot[bot]"
SHA_A, SHA_B = "a" * 40, "b" * 40


def body(sha, failures=()):
    return stage_markers.report_marker(sha, list(failures)) + "\n## report"


def comment(id_, user, text):
    return Comment(id=id_, user=user, body=text, created_at=None)


STICKY = [
    ("first-report", [], body(SHA_A), ("create", None, "first report")),
    ("same-sha", [comment(5, BOT, body(SHA_A))], body(SHA_A), ("edit", 5, "same head SHA")),
    ("same-sha-edits-the-latest", [comment(5, BOT, body(SHA_A)), comment(9, BOT, body(SHA_A))],
     body(SHA_A), ("edit", 9, "same head SHA")),
    ("new-sha", [comment(5, BOT, body(SHA_A))], body(SHA_B), ("create", None, "new head SHA")),
    ("new-failure", [comment(5, BOT, body(SHA_A, ["job/a/failed"]))],
     body(SHA_A, ["job/a/failed", "job/b/lost"]), ("create", None, "new failure")),
    ("failure-fixed", [comment(5, BOT, body(SHA_A, ["job/a/failed"]))], body(SHA_A),
     ("edit", 5, "same head SHA")),
    ("login-case-insensitive", [comment(5, "Recipe-Bot[bot]", body(SHA_A))], body(SHA_A),
     ("edit", 5, "same head SHA")),
    # Only the bot's own markers count, and only on the first line.
    ("someone-elses-marker", [comment(5, "mallory", body(SHA_A))], body(SHA_A),
     ("create", None, "first report")),
    ("marker-quoted-lower-down", [comment(5, BOT, "thanks!\n" + body(SHA_A))], body(SHA_A),
     ("create", None, "first report")),
    ("bot-comment-without-marker", [comment(5, BOT, "✅ dispatched")], body(SHA_A),
     ("create", None, "first report")),
]


@pytest.mark.parametrize("comments, new_body, expected", [c[1:] for c in STICKY],
                         ids=[c[0] for c in STICKY])
def test_sticky_comment_rule(comments, new_body, expected):
    decision = post.decide(comments, BOT, new_body)
    assert (decision.action, decision.comment_id, decision.why) == expected


@pytest.mark.parametrize("first_line", [
    "<!-- recipe-bot:report sha=abc failures=- -->",  # too short for a SHA
    "<!-- recipe-bot:report sha=" + "a" * 40 + " failures=xyz -->",
    "<!-- recipe-bot:report sha=" + "a" * 40 + " -->",
    "<!-- recipe-bot:reports sha=" + "a" * 40 + " failures=- -->",
], ids=["short-sha", "bad-digests", "no-failures-field", "other-marker"])
def test_malformed_markers_are_not_markers(first_line):
    assert stage_markers.parse_report_marker(first_line + "\nbody") is None


def test_marker_round_trips():
    keys = ["job/a/failed", "job/b//lost"]
    parsed = stage_markers.parse_report_marker(stage_markers.report_marker(SHA_A, keys) + "\n")
    assert parsed.sha == SHA_A and parsed.failures == {stage_markers.failure_digest(k) for k in keys}


def test_the_job_summary_gets_the_comment_without_its_marker(tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    assert post.append_step_summary(body(SHA_A), {"GITHUB_STEP_SUMMARY": str(summary)})
    assert summary.read_text(encoding="utf-8") == "earlier step\n## report\n"
    assert not post.append_step_summary(body(SHA_A), {})


# --- through the sandbox: the real client, the real HTTP, GitHub's OpenAPI description ------

def report(sb, tmp_path, sha, *, failed=False, tag=""):
    job = synthetic.sweep_plan("tiny-cpu", concurrencies=(1, 2), sha=sha, job_id="sweep-tiny")
    result = synthetic.run_sweep(job, failed_points={"tp1-c2": "client crashed"} if failed else None)
    root = tmp_path / f"{sha[:8]}{tag}"
    synthetic.write_results(root / "results", [result])
    synthetic.write_plan(root / "plan.json", [job])
    env = {**sb.env(), "GITHUB_STEP_SUMMARY": str(root / "step-summary.md")}
    outcome = CliRunner().invoke(report_cmd, [
        "--results", str(root / "results"), "--jobs", str(root / "plan.json"),
        "--out", str(root / "out"), "--post", "--pr", "7", "--sha", sha,
        "--run-url", "https://github.com/acme/bench/actions/runs/1"], env=env,
        catch_exceptions=False)
    assert outcome.exit_code == 0, outcome.output
    return root


def bot_reports(state):
    return [c for c in state["comments"]
            if c["user"] == state["bot"] and stage_markers.parse_report_marker(c["body"]) is not None]


def latest_check(state, sha):
    runs = [c for c in state["check_runs"]
            if c["head_sha"] == sha and c["name"] == post.REPORT_CHECK_NAME]
    return max(runs, key=lambda c: c["id"])


@pytest.fixture()
def sb(sandbox, tmp_path, monkeypatch):
    """A running sandbox (tests/conftest.py checks every response against GitHub's spec)."""
    # No .github/recipe-bot.yaml in the working folder: the bot's login comes from GET /user.
    monkeypatch.chdir(tmp_path)
    return sandbox()


def test_one_sticky_comment_per_head_sha_and_a_check_run_per_verdict(sb, tmp_path):
    head = next(p for p in sb.state()["pulls"] if p["number"] == 7)["head_sha"]

    first = report(sb, tmp_path, head)
    # Someone else copies the bot's marker: it must not be taken for the bot's comment.
    copied = (first / "out" / "comment.md").read_text(encoding="utf-8")
    sb.request("POST", "/repos/acme/bench/issues/7/comments", {"body": copied}, user="mallory")
    report(sb, tmp_path, head, tag="-again")
    state = sb.state()
    assert len(bot_reports(state)) == 1
    assert latest_check(state, head)["conclusion"] == "success"
    assert (first / "step-summary.md").read_text(encoding="utf-8").startswith("## ✅ success")

    pushed = sb.push("feature", {"NOTES.md": "a second commit on the PR branch\n"})
    new_head = pushed["after"]
    assert new_head != head
    report(sb, tmp_path, new_head, failed=True)
    state = sb.state()
    reports = bot_reports(state)
    assert len(reports) == 2
    assert [stage_markers.parse_report_marker(c["body"]).sha for c in reports] == [head, new_head]
    assert latest_check(state, new_head)["conclusion"] == "failure"
    assert latest_check(state, head)["conclusion"] == "success"
    summary = (tmp_path / f"{new_head[:8]}" / "out" / "summary.json").read_text(encoding="utf-8")
    assert '"comment": "create"' in summary and '"why": "new head SHA"' in summary


def test_a_new_failure_on_the_same_sha_gets_a_new_comment(sb, tmp_path):
    head = next(p for p in sb.state()["pulls"] if p["number"] == 7)["head_sha"]
    report(sb, tmp_path, head)
    report(sb, tmp_path, head, failed=True, tag="-failed")
    report(sb, tmp_path, head, failed=True, tag="-failed-again")
    state = sb.state()
    assert len(bot_reports(state)) == 2  # the failure's comment was edited, not repeated
    assert latest_check(state, head)["conclusion"] == "failure"


def test_the_comment_stays_under_the_limit_with_5000_points(sb, tmp_path):
    head = next(p for p in sb.state()["pulls"] if p["number"] == 7)["head_sha"]
    scenario = synthetic.many_points(5000, sha=head)
    paths = synthetic.materialize(scenario, tmp_path / "big")
    outcome = CliRunner().invoke(report_cmd, [
        "--results", str(paths["results"]), "--baseline", str(paths["baseline"]),
        "--out", str(tmp_path / "big" / "out"), "--post", "--pr", "7", "--sha", head],
        env=sb.env(), catch_exceptions=False)
    assert outcome.exit_code == 0, outcome.output
    state = sb.state()
    (posted,) = bot_reports(state)
    assert len(posted["body"]) <= 65_536
    assert "**Points:** 5000 — ✅ 5000 passed" in posted["body"]
    check = latest_check(state, head)
    assert check["conclusion"] == "failure"  # the first recipe's regressed arm
    assert 0 < len(check["summary"]) <= 65_535


def test_dry_run_prints_the_writes_and_makes_none(sb, tmp_path):
    head = next(p for p in sb.state()["pulls"] if p["number"] == 7)["head_sha"]
    job = synthetic.sweep_plan("tiny-cpu", concurrencies=(1,), sha=head)
    synthetic.write_results(tmp_path / "results", [synthetic.run_sweep(job)])
    outcome = CliRunner().invoke(report_cmd, [
        "--results", str(tmp_path / "results"), "--out", str(tmp_path / "out"), "--post",
        "--dry-run", "--pr", "7", "--sha", head], env=sb.env(), catch_exceptions=False)
    assert outcome.exit_code == 0, outcome.output
    writes = [json.loads(line) for line in outcome.output.splitlines() if line.startswith("{")]
    assert [(w["action"], w["op"]) for w in writes] == [("comment", "create"), ("check", "create")]
    assert writes[1]["conclusion"] == "success" and writes[1]["head_sha"] == head
    assert [e for e in sb.log() if e["method"] != "GET"] == []
