"""The report as a reader sees it: implausible figures flagged and kept out of the chart, CPU runs, zero counts."""
import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core import i18n
from bot.report import build, chart, collect, compare, plausible, render
from tests import synthetic
from bot.report.model import Meta

SWEEP = synthetic.sweep_plan("tiny-cpu", concurrencies=(1, 4, 16), job_id="sweep")


def report_for(tmp_path, plan, results):
    synthetic.write_results(tmp_path / "results", results)
    (tmp_path / "base").mkdir(exist_ok=True)
    collection = collect.collect(tmp_path / "results", plan, synthetic.HEAD_SHA)
    return build.build_report(collection, compare.load_baseline(tmp_path / "base"),
                              compare.thresholds_from(None), Meta(sha=synthetic.HEAD_SHA))


def with_row(report, concurrency, **changes):
    """The report with one row's figures replaced (what a client timing bug would have reported)."""
    sections = []
    for section in report.recipes:
        rows = tuple(dataclasses.replace(r, **changes) if r.concurrency == concurrency else r for r in section.rows)
        sections.append(dataclasses.replace(section, rows=rows))
    return dataclasses.replace(report, recipes=tuple(sections))


@pytest.fixture
def report(tmp_path):
    return report_for(tmp_path, [SWEEP], [synthetic.run_sweep(SWEEP)])


@pytest.mark.parametrize("changes, metric", [
    pytest.param({"tpot_p50": 0.0, "interactivity": 179_904.0}, "tpot_p50", id="tpot-zero"),
    pytest.param({"tpot_p50": 0.05}, "tpot_p50", id="tpot-below-bound"),
    pytest.param({"interactivity": 50_000.0}, "interactivity", id="interactivity-absurd"),
    pytest.param({"tput_per_gpu": 5e6}, "tput_per_gpu", id="tput-absurd"),
    pytest.param({"ttft_p50": float("nan")}, "ttft_p50", id="non-finite"),
    pytest.param({"tput_per_gpu": -1.0}, "tput_per_gpu", id="negative"),
])
def test_an_implausible_row_is_flagged_with_the_metric_it_breaks(report, changes, metric):
    row = with_row(report, 1, **changes).recipes[0].rows[0]
    found = plausible.implausible(row)
    assert found is not None and found.metric == metric


def test_believable_rows_and_rows_that_did_not_pass_are_not_flagged(report):
    rows = report.recipes[0].rows
    assert [plausible.implausible(r) for r in rows] == [None, None, None]
    failed = dataclasses.replace(rows[0], status="failed", tpot_p50=0.0)
    assert plausible.implausible(failed) is None  # already not a pass; its reason says why


def test_an_implausible_point_never_passes_silently_and_stays_out_of_the_chart(report):
    odd = with_row(report, 1, tpot_p50=0.0, interactivity=179_904.0)
    text = render.render_comment(odd).text
    english, _, chinese = text.partition(i18n.SEPARATOR)
    assert "⚠️ implausible: TPOT p50 0.00 ms, expected ≥ 0.1 ms; left out of the chart" in english
    assert "**Implausible figures:** ⚠️ 1 point measured values no engine reaches" in english
    assert "⚠️ 数值存疑：TPOT p50 为 0.00 ms，应为 ≥ 0.1 ms；未画入图表" in chinese
    assert "**数值存疑**：⚠️ 1 个测试点" in chinese
    row_line = next(line for line in english.splitlines() if line.startswith("| `tp1` | 1 |"))
    assert "✅ passed" not in row_line
    drawn = chart.series_from(plausible.without_implausible(odd))
    assert all(x < 10_000 for s in drawn for x, _ in s.points)
    mermaid = render.view(odd)["chart"]
    assert float(mermaid.x_max) < 10_000  # the other points are not squashed against the axis


def test_a_believable_report_has_no_implausible_line(report):
    text = render.render_comment(report).text
    assert "Implausible" not in text and "数值存疑" not in text


def test_a_cpu_run_shows_no_gpu_count_beside_per_gpu_columns(tmp_path):
    cpu = synthetic.sweep_plan("tiny-cpu", concurrencies=(1, 4), gpus=0, job_id="cpu")
    text = render.render_comment(report_for(tmp_path, [cpu], [synthetic.run_sweep(cpu)])).text
    english, _, chinese = text.partition(i18n.SEPARATOR)
    assert "0 GPU" not in english and "0 张 GPU" not in chinese
    assert "CPU only" in english and "仅 CPU" in chinese
    (header,) = [line for line in english.splitlines() if line.startswith("| arm |")]
    assert "GPU" not in header and "| tput (tok/s, CPU) |" in header and "| Δ tput |" in header
    assert "单卡吞吐 (tok/s)" not in chinese and "吞吐 (tok/s，CPU)" in chinese


@pytest.mark.parametrize("regressed, icon", [(0, "✅"), (2, "❌")], ids=["zero-is-not-red", "some-are-red"])
def test_the_regressed_count_is_red_only_when_something_regressed(report, regressed, icon):
    context = render.view(report)
    context.update(regressions=regressed, shortened=False)
    english = i18n.render("report/comment", "en", **context)
    chinese = i18n.render("report/comment", "zh", **context)
    assert f"**Against base:** {icon} {regressed} regressed" in english
    assert f"**对比基线**：{icon} {regressed} 性能回退" in chinese


FIGURES = st.one_of(st.none(), st.floats(allow_nan=True, allow_infinity=True),
                    st.sampled_from([0.0, -0.0, 0.1, 0.0999, 10_000.0, 10_000.5, 1e6, 1e6 + 1, -1e-9]))


@settings(max_examples=300, deadline=None)
@given(FIGURES, FIGURES, FIGURES, FIGURES)
def test_a_row_is_implausible_exactly_when_a_figure_breaks_a_bound(tput, interactivity, ttft, tpot):
    import math

    from bot.report.model import PointRow

    row = PointRow("j", "r", "f", "a", "c", "p", 1, "passed", tput_per_gpu=tput, interactivity=interactivity,
                   ttft_p50=ttft, tpot_p50=tpot)
    figures = [v for v in (tput, interactivity, ttft, tpot) if v is not None]
    broken = (any(not math.isfinite(v) or v < 0 for v in figures)
              or (tpot is not None and tpot < plausible.MIN_TPOT_MS)
              or (interactivity is not None and interactivity > plausible.MAX_INTERACTIVITY)
              or (tput is not None and tput > plausible.MAX_TPUT_PER_GPU))
    assert (plausible.implausible(row) is not None) == broken
