"""The bilingual report comment: golden renders, the size limit, untrusted text and the chart."""
import pathlib
import re

import pytest
from click.testing import CliRunner

from bot.core import stage_markers
from bot.report import chart, render
from tests import synthetic
from bot.report.cli import report_cmd
from golden_helpers import assert_golden

GOLDEN = pathlib.Path(__file__).parent / "golden" / "report"
# RECIPE_BOT_UPDATE_GOLDEN=1 pytest tests/test_report_render.py rewrites the golden files.


@pytest.fixture(autouse=True)
def outside_the_checkout(tmp_path, monkeypatch):
    """The report reads .github/recipe-bot.yaml from the working folder; these use the defaults."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def run_report(scenario, tmp_path, *extra):
    paths = synthetic.materialize(scenario, tmp_path / "in")
    out = tmp_path / "out"
    result = CliRunner().invoke(report_cmd, [
        "--results", str(paths["results"]), "--jobs", str(paths["plan"]),
        "--baseline", str(paths["baseline"]), "--out", str(out),
        "--run-url", synthetic.RUN_URL, "--command", scenario.command, *extra],
        catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.parametrize("name", list(synthetic.SCENARIOS))
def test_comment_matches_its_golden_file_in_both_languages(name, tmp_path):
    out = run_report(synthetic.SCENARIOS[name](), tmp_path)
    text = (out / "comment.md").read_text(encoding="utf-8")
    assert_golden(GOLDEN / f"{name}.md", text)


@pytest.mark.parametrize("name", list(synthetic.SCENARIOS))
def test_golden_files_hold_english_first_then_chinese(name):
    text = (GOLDEN / f"{name}.md").read_text(encoding="utf-8")
    english, _, chinese = text.partition("\n\n---\n\n## ")
    assert stage_markers.parse_report_marker(text) is not None
    assert "recipe-bot benchmarks" in english and "基准测试" not in english
    assert chinese.split("\n", 1)[0].endswith("recipe-bot 基准测试")
    assert len(text) <= render.COMMENT_LIMIT


@pytest.mark.parametrize("name, expected", [
    ("passing-sweep", ["## ✅ success", "no baseline", "🆕 2 without baseline"]),
    ("regression", ["## ❌ failure", "regressed beyond the threshold", "❌ regressed",
                    "〰️ noise", "base from 3 runs", "from 3 base runs only"]),
    ("e2e-sigkill", ["❌ SIGKILL escalation", "needed SIGKILL", "Last 6 lines of the server log"]),
    ("lost-runner", ["👻 lost", "2 jobs lost", "No result and no log came back"]),
    ("points-500", ["<details><summary>All 50 points", "Needs attention:",
                    "full-results.json"]),
], ids=lambda v: v if isinstance(v, str) else None)
def test_each_golden_shows_what_its_case_is_about(name, expected):
    text = (GOLDEN / f"{name}.md").read_text(encoding="utf-8")
    for needle in expected:
        assert needle in text, needle


def _report(scenario, tmp_path):
    from bot.report import build, collect, compare
    from bot.report.model import Meta

    paths = synthetic.materialize(scenario, tmp_path)
    plan = collect.load_plan(paths["plan"])
    collection = collect.collect(paths["results"], plan, synthetic.HEAD_SHA)
    return build.build_report(collection, compare.load_baseline(paths["baseline"]),
                              compare.thresholds_from(None),
                              Meta(sha=synthetic.HEAD_SHA, pr=7, command=scenario.command,
                                   run_url=synthetic.RUN_URL))


def test_five_thousand_points_stay_under_the_comment_limit(tmp_path):
    report = _report(synthetic.many_points(5000), tmp_path)
    rendered = render.render_comment(report)
    assert report.counts.points_total == 5000
    assert len(rendered.text) <= render.COMMENT_LIMIT
    assert rendered.shortened
    assert "Shortened to fit GitHub's 65,536-character comment limit" in rendered.text
    assert "删减" in rendered.text
    # The regressed arm of the first recipe stays visible above the fold.
    assert rendered.text.count("❌ regressed") >= 1
    assert rendered.text.count("<details>") == rendered.text.count("</details>")


def test_a_report_that_fits_is_not_shortened(tmp_path):
    rendered = render.render_comment(_report(synthetic.passing_sweep(), tmp_path))
    assert not rendered.shortened
    assert "Shortened" not in rendered.text


def _table_rows(text):
    return [line for line in text.splitlines() if line.startswith("| ")]


def _cells(row):
    return re.split(r"(?<!\\)\|", row.strip())[1:-1]


@pytest.mark.parametrize("case_name", [
    "pipe|in|name", "back`tick", "``fence``", "<details>", "new\nline",
], ids=["pipes", "backtick", "double-backticks", "html", "newline"])
def test_untrusted_case_names_cannot_break_the_table(case_name, tmp_path):
    job = synthetic.sweep_plan("tiny-cpu", arms=(case_name,), concurrencies=(1, 2))
    scenario = synthetic.Scenario("hostile", [job], [synthetic.run_sweep(job)])
    text = render.render_comment(_report(scenario, tmp_path)).text
    header = next(row for row in _table_rows(text) if row.startswith("| arm"))
    for row in _table_rows(text):
        if "tiny-cpu" in row or row.startswith("| arm") or row.startswith("|---"):
            continue
        assert len(_cells(row)) == len(_cells(header)), row


def test_a_log_tail_cannot_close_its_code_block(tmp_path):
    text = render.render_comment(_report(synthetic.e2e_sigkill(), tmp_path)).text
    block = re.search(r"^(`{4,})text\n(.*?)\n\1$", text, re.MULTILINE | re.DOTALL)
    assert block is not None
    assert "```" in block.group(2) and "</details>" in block.group(2)


def test_an_untrusted_reason_is_escaped_in_the_failure_summary(tmp_path):
    job = synthetic.sweep_plan("tiny-cpu", concurrencies=(1,))
    result = synthetic.run_sweep(job, failed_points={"tp1-c1": "boom </summary></details><img src=x>"})
    scenario = synthetic.Scenario("hostile", [job], [result])
    text = render.render_comment(_report(scenario, tmp_path)).text
    # Fenced blocks (log tails, failure evidence; indented inside a list) are inert, then inline code.
    fenced = re.sub(r"^ *(`{3,})text\n.*?\n *\1$", "", text, flags=re.MULTILINE | re.DOTALL)
    outside_code = re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", fenced)
    assert "<img" not in outside_code
    assert "&lt;/summary&gt;&lt;/details&gt;&lt;img src=x&gt;" in text


@pytest.mark.parametrize("length", [3, 10, 120])
def test_fenced_uses_a_fence_longer_than_any_backtick_run(length):
    body = "x" + "`" * length + "y"
    block = render.fenced(body)
    fence = block.split("text\n", 1)[0]
    assert len(fence) > length and block.endswith("\n" + fence)


# --- the Mermaid chart ------------------------------------------------------------------------
# A check of the subset of mermaid's xychart grammar (packages/mermaid/src/diagrams/xychart/
# parser/xychart.jison) that the report writes: numbers are plain decimals, strings are quoted
# without inner quotes, the x-axis lists quoted categories, every line has one value per category.
NUMBER = r"[+-]?(?:\d+(?:\.\d+)?|\.\d+)"
STATEMENTS = [
    re.compile(r'^%%\{init: \{.*\}\}%%$'),
    re.compile(r"^xychart-beta$"),
    re.compile(r'^    title "[^"\n]*"$'),
    re.compile(rf'^    x-axis "[^"\n]*" \["{NUMBER}"(?:, "{NUMBER}")*\]$'),
    re.compile(rf'^    y-axis "[^"\n]*" {NUMBER} --> {NUMBER}$'),
    re.compile(rf"^    line \[{NUMBER}(?:, {NUMBER})*\]$"),
]


def mermaid_blocks(text):
    return re.findall(r"^```mermaid\n(.*?)\n```$", text, re.MULTILINE | re.DOTALL)


@pytest.mark.parametrize("name", ["passing-sweep", "regression", "points-500"])
def test_mermaid_chart_is_valid_xychart_syntax(name):
    text = (GOLDEN / f"{name}.md").read_text(encoding="utf-8")
    blocks = mermaid_blocks(text)
    assert len(blocks) == 2  # one per language
    for block in blocks:
        lines = block.splitlines()
        for line in lines:
            assert any(p.match(line) for p in STATEMENTS), line
        assert lines[1] == "xychart-beta"
        series = [re.findall(NUMBER, line) for line in lines if line.startswith("    line [")]
        assert 1 <= len(series) <= chart.MAX_LINES
        x_axis = next(line for line in lines if line.startswith("    x-axis"))
        categories = [float(x) for x in re.findall(rf'"({NUMBER})"', x_axis.split("[", 1)[1])]
        assert {len(s) for s in series} == {len(categories)}
        assert categories == sorted(set(categories)) and len(categories) >= 2


def test_legend_names_each_line_in_palette_order():
    text = (GOLDEN / "regression.md").read_text(encoding="utf-8")
    block = mermaid_blocks(text)[0]
    count = block.count("    line [")
    swatches = [swatch for swatch, _ in chart.PALETTE[:count]]
    legend = text.split("```mermaid", 1)[1].split("```\n\n", 1)[1].split("\n", 1)[0]
    assert [s for s in swatches if s in legend] == swatches
    palette = re.search(r'"plotColorPalette": "([^"]*)"', block).group(1).split(", ")
    assert palette == [colour for _, colour in chart.PALETTE[:count]]


@pytest.mark.parametrize("x, expected", [
    (10.0, 900.0),   # left of the lowest interactivity: holds the best measured throughput
    (20.0, 900.0),   # a measured point
    (30.0, 650.0),   # halfway between (20, 900) and (40, 400)
    (40.0, 400.0),
    (40.1, 0.0),     # faster than the arm ever served users: nothing achievable
], ids=["hold-left", "measured", "interpolated", "last-measured", "beyond"])
def test_frontier_reads_the_sweep_as_throughput_at_least_this_interactive(x, expected):
    assert chart.frontier(((20.0, 900.0), (40.0, 400.0)), x) == pytest.approx(expected)


def test_png_chart_is_written_with_every_arm(tmp_path):
    out = run_report(synthetic.regression(), tmp_path)
    data = (out / "chart.png").read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000


@pytest.mark.parametrize("source, room", [
    ("  {{ a }}  \n\n", 5), ("  {{ a }}  \n\n", 4), ("{% for i in range(3) %}{{ a }} {% endfor %}", 17),
    ("{% for i in range(3) %}{{ a }} {% endfor %}", 16), ("\n\n   \n", 0), ("{{ a }}{{ '  ' * 40 }}", 5),
], ids=["fits-exactly", "one-over", "loop-fits", "loop-over", "blank", "long-trailing-blank"])
def test_a_size_attempt_gives_the_render_when_it_fits_and_nothing_when_it_cannot(source, room):
    """render._within stops a language's render once it cannot fit: what it keeps must be exactly
    i18n.render's stripped text, and it must refuse exactly the texts longer than the room."""
    from bot.core import i18n

    template = i18n.environment().from_string(source)
    whole = template.render(a="abcde").strip()
    assert render._within(template, {"a": "abcde"}, room) == (whole if len(whole) <= room else None)


def test_each_mermaid_line_passes_through_every_measured_point():
    from bot.report.chart import Series, mermaid_chart

    measured = ((3.2, 1031.6), (9.8, 640.2), (21.5, 210.0))
    other = ((5.0, 900.0), (21.5, 180.0))
    made = mermaid_chart([Series("tiny / tp1", False, measured), Series("tiny / tp2", False, other)])
    categories = [float(x.strip('"')) for x in made.x_labels.split(", ")]
    assert categories == [3.2, 5.0, 9.8, 21.5]
    first = [float(v) for v in made.lines[0].values.split(", ")]
    assert [first[categories.index(x)] for x, _ in measured] == [1031.6, 640.2, 210.0]
    second = [float(v) for v in made.lines[1].values.split(", ")]
    assert second[categories.index(5.0)] == 900.0 and second[categories.index(21.5)] == 180.0
