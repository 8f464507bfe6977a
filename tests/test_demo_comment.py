"""The demo's comment as printed and as posted: whole figures when piped, the model and the variables
as they ran, a Reproduce line that sets them, CPU wording on a CPU run, Chinese cells kept whole."""
from __future__ import annotations

import io
import re

import pytest
from rich.console import Console
from rich.markdown import Markdown

from bot.core import i18n
from bot.demo.cli import comment_width
from bot.demo.preview import render_html
from bot.report import chart
from tests import synthetic
from bot.runner.provenance import provenance_of


def _comment(tmp_path, scenario) -> str:
    from bot.report import build, collect, compare, render
    from bot.report.model import Meta

    paths = synthetic.materialize(scenario, tmp_path)
    collection = collect.collect(paths["results"], collect.load_plan(paths["plan"]), synthetic.HEAD_SHA)
    report = build.build_report(collection, compare.load_baseline(paths["baseline"]), compare.thresholds_from(None),
                                Meta(sha=synthetic.HEAD_SHA, pr=7, command=scenario.command,
                                     run_url=synthetic.RUN_URL))
    return render.render_comment(report).text


def _cpu_scenario(model_env: dict[str, str] | None = None) -> synthetic.Scenario:
    job = synthetic.sweep_plan("tiny-cpu", concurrencies=(1, 4, 16), gpus=0, runner_label="cpu")
    result = synthetic.run_sweep(job)
    if model_env is not None:
        result = result.model_copy(update={"provenance": provenance_of(job, job.sha, env=model_env)})
    return synthetic.Scenario("cpu", [job], [result], command="/sweep tiny-cpu --conc 1,4,16")


def test_the_comment_piped_prints_every_figure_whole(tmp_path) -> None:
    comment = _comment(tmp_path, _cpu_scenario())
    out = io.StringIO()
    Console(file=out, width=comment_width(comment), highlight=False, force_terminal=False).print(Markdown(comment))
    printed = out.getvalue()
    table_rows = [line for line in comment.splitlines() if re.match(r"^\| `tp1` \| \d", line)]
    figures = {cell.strip() for row in table_rows for cell in row.split("|")[3:6]}
    assert figures and all(figure in printed for figure in figures), figures
    assert "…" not in "".join(line for line in printed.splitlines() if "tp1" in line)


def test_the_model_and_its_variables_are_named_as_they_ran(tmp_path) -> None:
    env = {"RECIPE_BOT_TINY_MODEL": "/opt/models/tiny-model", "RECIPE_BOT_VLLM": "/opt/vllm-cpu/bin/vllm"}
    comment = _comment(tmp_path, _cpu_scenario(env))
    assert "${RECIPE_BOT_TINY_MODEL}" not in comment and "model `/opt/models/tiny-model`" in comment
    line = next(line for line in comment.splitlines() if "recipe-bot run --job" in line)
    assert ("&& RECIPE_BOT_TINY_MODEL=/opt/models/tiny-model RECIPE_BOT_VLLM=/opt/vllm-cpu/bin/vllm "
            "recipe-bot run --job") in line


def test_a_model_variable_that_was_not_set_stays_as_written() -> None:
    job = synthetic.sweep_plan("tiny-cpu", gpus=0)
    found = provenance_of(job, job.sha, env={})
    assert found.model == "${RECIPE_BOT_TINY_MODEL}" and found.run_env == {}


def test_a_cpu_run_says_cpu_in_both_languages_and_in_the_chart(tmp_path) -> None:
    english, chinese = _comment(tmp_path, _cpu_scenario()).split(i18n.SEPARATOR)
    assert "tput/GPU" not in english and "per GPU" not in english and "tput (CPU)" in english
    assert "单卡" not in chinese and "吞吐（CPU）" in chinese
    assert chart.y_label("Throughput (CPU) vs interactivity · abc") == "Throughput (CPU) (tok/s)"
    assert chart.y_label("Throughput per GPU vs interactivity · abc") == "Throughput per GPU (tok/s)"


def test_the_preview_keeps_chinese_cells_whole() -> None:
    html = render_html("| 搜索分支 | 并发 |\n|---|---|\n| `tp1` | 1 |\n", {"name": "recipe-bot", "conclusion": "success",
                                                                     "head_sha": "0" * 40}, None)
    assert "word-break: keep-all" in html and "th { white-space: nowrap; }" in html


@pytest.mark.parametrize("stiff", ["不能证明任何事"])
def test_the_chinese_catalog_has_no_stiff_phrases(stiff: str) -> None:
    from bot.core import catalogue

    assert stiff not in catalogue.catalog_path("zh").read_text(encoding="utf-8")


@pytest.mark.parametrize("cpu, unit", [(True, "tok/s (CPU)"), (False, "tok/s/GPU")])
def test_the_runners_own_lines_say_cpu_on_a_cpu_job(tmp_path, cpu: bool, unit: str) -> None:
    from bot.runner.progress import Progress

    result = synthetic.run_sweep(synthetic.sweep_plan("tiny-cpu", concurrencies=(1,), gpus=0))
    progress = Progress(Console(file=io.StringIO(), width=200), tmp_path / "runner.log", cpu=cpu)
    progress.point(result.cases[0].points[0])
    line = (tmp_path / "runner.log").read_text()
    assert unit in line and ("tok/s/GPU" in line) is not cpu
