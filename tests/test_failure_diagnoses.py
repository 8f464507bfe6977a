"""Diagnoses that point the right way: a bot_login that is not the bot's own account, an unreadable
result.json, a cancelled runner, a runner killed before it reported, an unreachable GitHub."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.core import failure_classes
from bot.core.jobs import Job
from bot.report.collect import collect
from bot.core.results import CaseResult, JobResult
from handle_helpers import BOT, Harness, bilingual, seed


def test_a_bot_login_that_is_not_the_bots_account_is_named_as_such(sandbox, tmp_path: Path) -> None:
    h = Harness(sandbox(seed(tmp_path, config="bot_login: someone-else[bot]\ncooldown_seconds: 0\n")), tmp_path)

    result = h.on_comment(7, "carol", "/sweep", expect=1)

    said = result.stdout + result.stderr
    assert f"it posts as `{BOT}`, but `bot_login` is `someone-else[bot]`" in said
    assert "githubstatus.com" not in said
    reply = h.bot_comments(7)[-1]["body"]
    english, chinese = bilingual(reply.split("\n", 1)[-1] if reply.startswith("<!--") else reply)
    assert f"set `bot_login: {BOT}` in `.github/recipe-bot.yaml`" in english and "GitHub did nothing wrong" in english
    assert "认不出自己的评论" in chinese and "githubstatus" not in reply


def _plan() -> list[Job]:
    from tests import synthetic
    return [synthetic.sweep_plan("tiny-cpu", concurrencies=(1, 2), job_id="job-a")]


@pytest.mark.parametrize("content", [
    pytest.param(b"\xff\xfe not utf-8", id="not-utf8"),
    pytest.param(b"{not json", id="not-json"),
    pytest.param(json.dumps({"job_id": "job-a", "kind": "sweep"}).encode(), id="wrong-shape"),
    pytest.param(b"[1, 2, 3]", id="not-an-object"),
])
def test_an_unreadable_result_is_an_infrastructure_failure_of_the_job(tmp_path: Path, content: bytes) -> None:
    target = tmp_path / "job-a" / "result.json"
    target.parent.mkdir(parents=True)
    target.write_bytes(content)

    job = collect(tmp_path, _plan()).jobs[0].result
    annotated = failure_classes.annotate(job)

    assert annotated.status == "failed"
    assert (annotated.failure.kind, annotated.failure.rule) == ("infrastructure", "result-unreadable")
    assert failure_classes.should_retry(annotated)
    rule = failure_classes.rule("result-unreadable")
    english, chinese = str(rule.sentence), rule.sentence.render("zh")
    assert "result.json" in english and "result.json" in chinese and "无法读取" in chinese


@pytest.mark.parametrize("signal_name", ["SIGINT", "SIGTERM"])
def test_a_cancelled_runner_reads_cancelled_with_no_failure_class(signal_name: str) -> None:
    case = CaseResult(name="tiny", status="failed", reason=f"cancelled by {signal_name} while running point 'c1'")
    job = JobResult(job_id="job-a", kind="sweep", recipe="tiny-cpu", recipe_fingerprint="f", runner_label="cpu",
                    status="cancelled", reason=f"case tiny: {case.reason}", cases=[case])

    annotated = failure_classes.annotate(job)

    assert annotated.status == "cancelled" and annotated.failure is None
    assert annotated.cases[0].failure is None
    assert not failure_classes.should_retry(annotated)


def test_a_killed_runner_shows_as_lost_with_its_runner_log_tail(tmp_path: Path) -> None:
    folder = tmp_path / "results" / "job-a"
    folder.mkdir(parents=True)
    (folder / "runner.log").write_text("job job-a (sweep, recipe tiny-cpu): 1 case(s)\n"
                                       "case tiny: 1 server(s), 2 point(s)\n"
                                       "  server ready after 21.4 s\n  point c1: 812 tok/s\n\n")

    job = collect(tmp_path, _plan()).jobs[0].result
    annotated = failure_classes.annotate(job)

    assert annotated.status == "lost"
    assert annotated.reason.endswith("its runner.log ends: case tiny: 1 server(s), 2 point(s) / "
                                     "server ready after 21.4 s / point c1: 812 tok/s")
    assert (annotated.failure.kind, annotated.failure.rule) == ("infrastructure", "runner-lost")


def test_a_lost_job_without_a_runner_log_says_only_that_nothing_came_back(tmp_path: Path) -> None:
    (tmp_path / "job-b").mkdir()
    (tmp_path / "job-b" / "runner.log").write_text("another job's line\n")
    job = collect(tmp_path, _plan()).jobs[0].result
    assert job.status == "lost" and "runner.log" not in job.reason


def test_an_unreachable_github_does_not_suggest_bot_login(tmp_path: Path, monkeypatch) -> None:
    from test_new_user import _report_inputs, _unreachable_env, invoke

    monkeypatch.chdir(tmp_path)
    paths = _report_inputs(tmp_path)
    result = invoke("report", "--results", paths["results"], "--out", tmp_path / "out", "--post",
                    env={**_unreachable_env(), "GITHUB_ACTIONS": ""})
    assert result.exit_code != 0
    assert "cannot reach the GitHub API at http://127.0.0.1:" in result.output
    assert "check GITHUB_API_URL and the network" in result.output and "请检查 GITHUB_API_URL 和网络" in result.output
    assert "bot_login" not in result.output
