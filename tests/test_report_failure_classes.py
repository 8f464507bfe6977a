"""The report groups failures by class, shows both attempts of a retried job, tells whom to call
in the check's title in both languages, and keeps a per-host record of infrastructure failures."""
from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from bot.core import stage_markers
from bot.report import build, collect, compare, failure_groups, render
from tests import synthetic
from bot.report.cli import check_title, report_cmd
from bot.report.model import Meta
from bot.core.results import JobResult


@pytest.fixture(autouse=True)
def outside_the_checkout(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def _report(scenario, tmp_path):
    paths = synthetic.materialize(scenario, tmp_path)
    collection = collect.collect(paths["results"], collect.load_plan(paths["plan"]),
                                 synthetic.HEAD_SHA)
    return build.build_report(collection, compare.load_baseline(paths["baseline"]),
                              compare.thresholds_from(None),
                              Meta(sha=synthetic.HEAD_SHA, pr=7, command=scenario.command))


def test_groups_put_infrastructure_first_with_each_attempt(tmp_path):
    groups = _report(synthetic.infra_retried(), tmp_path).failure_groups
    assert [(g.kind, g.rule) for g in groups] == [
        ("infrastructure", "port-busy"), ("infrastructure", "slurm-node-failure"),
        ("recipe", "bad-arguments")]
    node = groups[1]
    assert [(a.attempt, a.host, a.retry) for a in node.attempts] == [
        (1, "gpu-node-07", "failed"), (2, "gpu-node-09", None)]
    assert [(a.attempt, a.retry) for a in groups[0].attempts] == [(1, "passed")]


def test_whom_to_call_says_infrastructure_retried_and_recipe(tmp_path):
    report = _report(synthetic.infra_retried(), tmp_path)
    title = check_title(report)
    english, chinese = title.split(" / ")
    assert english.endswith("· infrastructure, retried · recipe")
    assert chinese.endswith("· 基础设施，已重试 · 配方")


def test_a_recipe_failure_alone_says_recipe_and_nothing_about_a_retry(tmp_path):
    report = _report(synthetic.e2e_sigkill(), tmp_path)
    assert check_title(report).split(" / ")[0].endswith("· recipe")
    assert [(g.kind, g.rule) for g in report.failure_groups] == [("recipe", "teardown")]


def test_a_passing_report_has_no_class_and_no_record_line(tmp_path):
    report = _report(synthetic.passing_sweep(), tmp_path)
    assert report.failure_groups == ()
    text = render.render_comment(report).text
    title = check_title(report)
    assert stage_markers.INFRA_RECORD_PREFIX not in text
    assert "infrastructure" not in title and "recipe" not in title and "配方" not in title


def test_comment_quotes_the_deciding_lines_inside_code_blocks_in_both_languages(tmp_path):
    text = render.render_comment(_report(synthetic.infra_retried(), tmp_path)).text
    english, _, chinese = text.partition("\n\n---\n\n## ")
    for part, words in ((english, ["### Failure classes", "passed on attempt 2",
                                   "failed again on attempt 2", "never retried automatically"]),
                        (chinese, ["### 失败类别", "第 2 次尝试 ✅ 通过", "仍然 ❌ 失败",
                                   "从不自动重试"])):
        for word in words:
            assert word in part, word
    block = re.search(r"^  ```text\n  vllm serve: error: unrecognized arguments.*\n  ```$",
                      english, re.MULTILINE)
    assert block is not None


def test_a_first_attempt_that_left_no_result_is_shown_as_runner_lost(tmp_path):
    job = synthetic.sweep_plan("tiny-cpu", concurrencies=(1,), job_id="only-retry")
    second = synthetic.run_sweep(job).model_copy(update={"attempt": 2})
    groups = _report(synthetic.Scenario("lost-then-passed", [job], [second]), tmp_path)
    assert [(g.rule, g.attempts[0].retry) for g in groups.failure_groups] == [
        ("runner-lost", "passed")]


def test_record_counts_infrastructure_failures_per_host_and_reads_back(tmp_path):
    report = _report(synthetic.infra_retried(), tmp_path)
    record = failure_groups.runner_record(report.failure_groups)
    assert record == {"gpu-host-3": 1, "gpu-node-07": 1, "gpu-node-09": 1}
    text = render.render_comment(report).text
    assert stage_markers.parse_infra_record(text) == record


FORGED = [
    pytest.param("<!-- recipe-bot:report sha=abc1234 failures=- -->\nhello\n"
                 "<!-- recipe-bot:infra-runners evil=99 -->", id="a-record-further-down-is-text"),
    pytest.param("<!-- recipe-bot:report sha=abc1234 failures=- -->\n"
                 "<!-- recipe-bot:infra-runners a b=1 -->", id="a-host-with-a-space"),
    pytest.param("<!-- recipe-bot:infra-runners x=1 -->", id="a-single-line"),
]


@pytest.mark.parametrize("body", FORGED)
def test_only_a_well_formed_second_line_is_a_record(body):
    assert stage_markers.parse_infra_record(body) == {}


def test_report_cli_writes_classes_and_the_runner_record_to_summary_json(tmp_path):
    paths = synthetic.materialize(synthetic.infra_retried(), tmp_path / "in")
    out = tmp_path / "out"
    result = CliRunner().invoke(report_cmd, ["--results", str(paths["results"]), "--jobs",
                                             str(paths["plan"]), "--out", str(out)],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["failure_classes"] == [
        {"kind": "infrastructure", "retried": True, "count": 2},
        {"kind": "recipe", "retried": False, "count": 1}]
    assert summary["infra_runners"]["gpu-node-07"] == 1


def test_an_older_result_without_a_class_is_classified_by_the_report(tmp_path):
    job = synthetic.sweep_plan("tiny-cpu", concurrencies=(1,), job_id="old")
    old = synthetic.run_sweep(job, failed_points={"tp1-c1": "12 of 12 requests failed"})
    assert JobResult.model_validate_json(old.model_dump_json()).failure is None
    groups = _report(synthetic.Scenario("old", [job], [old]), tmp_path).failure_groups
    assert [(g.kind, g.rule) for g in groups] == [("recipe", "client-error")]
