"""The report shows what a search chose, why it stopped and the list to paste, in both languages."""
from __future__ import annotations

from bot.report import build, compare
from tests import synthetic
from bot.report.collect import CollectedJob, Collection
from bot.report.model import Meta
from bot.report.render import render_comment
from bot.core.results import SearchChoice, SearchTrace

TRACE = SearchTrace(target="knee", range=(1, 64), budget=6, tolerance=0.15,
                    choices=[SearchChoice(concurrency=c, why="log-spaced bracket") for c in (1, 4, 16, 64)]
                    + [SearchChoice(concurrency=c, why="bisect below the knee") for c in (8, 11)],
                    stop="budget", stop_why="used the budget of 6 points", answer=11, suggested=[1, 4, 8, 11, 16, 64])


def _comment(trace: SearchTrace | None) -> str:
    job = synthetic.sweep_plan("tiny", concurrencies=(1, 4, 8, 11, 16, 64))
    result = synthetic.run_sweep(job)
    if trace is not None:
        result.cases[0] = result.cases[0].model_copy(update={"search": trace})
    collection = Collection((CollectedJob(result=result, source=None, plan=job),), True, synthetic.HEAD_SHA)
    report = build.build_report(collection, compare.Baseline(), compare.DEFAULT_THRESHOLDS,
                                Meta(sha=synthetic.HEAD_SHA))
    return render_comment(report).text


def test_the_report_lists_the_chosen_points_the_stop_reason_and_a_yaml_snippet_in_both_languages():
    text = _comment(TRACE)
    assert "Chose, in order: 1, 4, 16, 64, 8, 11. Stopped because it used its budget of points" in text
    assert "answer: concurrency **11**" in text
    assert "依次选择的并发：1, 4, 16, 64, 8, 11。停止原因：测试点预算已用完" in text
    assert text.count("```yaml\nconcurrency: [1, 4, 8, 11, 16, 64]\n```") == 2


def test_a_sweep_without_a_search_shows_no_search_section():
    text = _comment(None)
    assert "**Search**" not in text and "**搜索**" not in text and "```yaml" not in text


def test_a_bound_search_that_broke_at_once_says_so_and_suggests_nothing():
    trace = TRACE.model_copy(update={"target": "max-conc-under", "bound": {"metric": "ttft_ms", "value": 50.0},
                                     "choices": TRACE.choices[:1], "stop": "bound crossed",
                                     "answer": None, "suggested": []})
    text = _comment(trace)
    assert "the highest concurrency meeting the bound (`ttft_ms` ≤ 50.0)" in text
    assert "the bound is broken already at the lowest concurrency" in text
    assert "最低并发已不满足约束" in text and "```yaml" not in text
