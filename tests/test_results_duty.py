"""Each job's measurement duty cycle (seconds under load / job wall): computed from what the result records,
written into result.json, optional for older files, and one line in the job's report section in both languages."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from bot.core.results import JobResult, duty_cycle_of, with_duty_cycle
from bot.report.cli import report_cmd
from bot.runner.cli import write_result
from tests import synthetic


@pytest.fixture(autouse=True)
def outside_the_checkout(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def sweep_result() -> JobResult:
    job = synthetic.sweep_plan("tiny-cpu", arms=("tp1",), concurrencies=(1, 4), gpus=1)
    return synthetic.run_sweep(job)


def test_the_duty_cycle_is_every_measured_runs_load_over_the_jobs_wall_time():
    result = sweep_result()
    loads = [p.metrics.duration_s for c in result.cases for p in c.points]
    duty = duty_cycle_of(result)
    assert duty is not None and duty.wall_s == result.duration_s
    assert duty.load_s == pytest.approx(sum(loads), abs=1e-3)
    assert duty.ratio == pytest.approx(sum(loads) / result.duration_s, abs=1e-4)


def test_every_repeat_counts_as_time_under_load():
    result = sweep_result()
    point = result.cases[0].points[0]
    repeats = [point.metrics.model_copy(update={"duration_s": s}) for s in (10.0, 20.0, 30.0)]
    cases = [result.cases[0].model_copy(update={"points": [point.model_copy(update={"repeats": repeats})]})]
    duty = duty_cycle_of(result.model_copy(update={"cases": cases}))
    assert duty is not None and duty.load_s == 60.0


def test_no_duty_cycle_without_a_measured_point_or_a_wall_time():
    result = sweep_result()
    assert duty_cycle_of(result.model_copy(update={"duration_s": None})) is None
    unmeasured = [c.model_copy(update={"points": []}) for c in result.cases]
    assert duty_cycle_of(result.model_copy(update={"cases": unmeasured})) is None


def test_result_json_records_it_and_a_file_without_it_still_loads(tmp_path):
    result = sweep_result()
    data = json.loads(write_result(result, tmp_path).read_text(encoding="utf-8"))
    assert data["duty_cycle"] == with_duty_cycle(result).duty_cycle.model_dump()
    del data["duty_cycle"]  # a result.json from before the field
    assert JobResult.model_validate(data).duty_cycle is None


def test_a_recorded_duty_cycle_is_a_line_of_its_jobs_section_in_english_and_chinese(tmp_path):
    scenario = synthetic.passing_sweep()
    recorded = with_duty_cycle(scenario.results[0])
    scenario.results[0] = recorded
    paths = synthetic.materialize(scenario, tmp_path / "in")
    out = tmp_path / "out"
    done = CliRunner().invoke(report_cmd, [
        "--results", str(paths["results"]), "--jobs", str(paths["plan"]), "--baseline", str(paths["baseline"]),
        "--out", str(out), "--run-url", synthetic.RUN_URL, "--command", scenario.command], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    text = (out / "comment.md").read_text(encoding="utf-8")
    duty = recorded.duty_cycle
    english = (f"Duty cycle of `{recorded.job_id}`: {duty.load_s:,.1f} s under load in {duty.wall_s:,.1f} s "
               f"of job wall time ({duty.ratio * 100:.1f} %)")
    chinese = (f"`{recorded.job_id}` 的测量占空比：作业总耗时 {duty.wall_s:,.1f} 秒中，负载下 "
               f"{duty.load_s:,.1f} 秒（{duty.ratio * 100:.1f} %）")
    assert text.count(english) == 1 and text.count(chinese) == 1
    section = text[text.index(f"#### `{recorded.recipe}`"):]
    assert english in section.split("#### ")[1], "the line is in the job's own recipe section"
    assert "Duty cycle of" not in text.replace(english, ""), "a result without it shows no line"
