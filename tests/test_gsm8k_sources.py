"""The data that scored each GSM8K gate is named: in result.json, in the report's E2E table, in the
provenance (recipe-bot's own sample problems are never called real data)."""
from __future__ import annotations

import pytest

from bot.core import i18n, provenance
from bot.core.jobs import AccuracySpec, Case, Job, LoadPoint, ServerSpec
from tests import synthetic
from bot.core.results import AccuracyResult

SAMPLE = "recipe-bot-sample-problems:/x/bot/data/sample_problems/test.jsonl (not GSM8K: recipe-bot's own sample problems, named by RECIPE_BOT_GSM8K_DIR)"


def _job(data_path: str | None = None, *, points: bool = False) -> Job:
    server = ServerSpec(engine="vllm", model="/models/m")
    load = [LoadPoint(point_id="c1", concurrency=1, dataset="random", isl=8, osl=8, num_prompts=1)] if points else []
    accuracy = AccuracySpec(num_samples=7, num_shots=2, threshold=0.5, data_path=data_path)
    return Job(job_id="j", kind="e2e", recipe="r", recipe_fingerprint="f", runner_label="cpu",
               cases=[Case(name="c", servers=[server], points=load, accuracy=accuracy)])


@pytest.mark.parametrize("data_path, sample_gates, expected", [
    pytest.param(None, False, "real", id="gsm8k-from-the-hub-or-the-fleet"),
    pytest.param("/srv/gsm8k", False, "real", id="a-gsm8k-folder"),
    pytest.param("bot/data/sample_problems", False, "sample", id="sample-folder-named-by-the-recipe"),
    pytest.param("bot/data/sample_problems/test.jsonl", False, "sample", id="sample-file-named-by-the-recipe"),
    pytest.param(None, True, "sample", id="sample-problems-the-runner-saw-score"),
])
def test_provenance_never_calls_the_sample_problems_real(data_path, sample_gates, expected) -> None:
    assert provenance.dataset_of(_job(data_path), sample_gates=sample_gates) == expected


def test_a_sweep_with_synthetic_prompts_and_a_sample_gate_is_mixed() -> None:
    assert provenance.dataset_of(_job("bot/data/sample_problems", points=True)) == "mixed"


def _e2e_comment(tmp_path, source: str | None, gsm8k: bool | None) -> str:
    from bot.report import build, collect, compare, render
    from bot.report.model import Meta

    scenario = synthetic.e2e_sigkill()
    for result in scenario.results:
        result.cases[:] = [case.model_copy(update={"accuracy": case.accuracy.model_copy(
            update={"source": source, "gsm8k": gsm8k})}) for case in result.cases]
    paths = synthetic.materialize(scenario, tmp_path)
    collection = collect.collect(paths["results"], collect.load_plan(paths["plan"]), synthetic.HEAD_SHA)
    report = build.build_report(collection, compare.load_baseline(paths["baseline"]), compare.thresholds_from(None),
                                Meta(sha=synthetic.HEAD_SHA, pr=7, command="/e2e", run_url=synthetic.RUN_URL))
    return render.render_comment(report).text


@pytest.mark.parametrize("source, gsm8k, english, chinese", [
    pytest.param(SAMPLE, False, "(5-shot, sample problems, not GSM8K)", "5-shot，示例题，不是 GSM8K", id="sample"),
    pytest.param("huggingface:openai/gsm8k@main", True, "5-shot, `openai/gsm8k@main`)", "，`openai/gsm8k@main`）",
                 id="hub"),
    pytest.param("local:/srv/data/gsm8k/test.jsonl (RECIPE_BOT_GSM8K_DIR)", True, "5-shot, `gsm8k/test.jsonl`)",
                 "，`gsm8k/test.jsonl`）", id="fleet-folder"),
])
def test_the_e2e_table_names_the_data_that_scored_each_gate(tmp_path, source, gsm8k, english, chinese) -> None:
    text = _e2e_comment(tmp_path, source, gsm8k)
    en, zh = text.split(i18n.SEPARATOR)
    assert en.count(english) == 3 and zh.count(chinese) == 3


def test_an_older_result_without_a_source_renders_as_before(tmp_path) -> None:
    text = _e2e_comment(tmp_path, None, None)
    assert "GSM8K)" not in text and "(5-shot) |" in text


def test_result_json_carries_the_source_and_whether_it_is_gsm8k() -> None:
    result = AccuracyResult(task="gsm8k", num_samples=7, num_shots=2, strict_match=1.0, flexible_extract=1.0,
                            metric="strict-match", threshold=0.5, passed=True, source=SAMPLE, gsm8k=False)
    dumped = result.model_dump()
    assert dumped["source"] == SAMPLE and dumped["gsm8k"] is False
