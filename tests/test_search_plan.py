"""A recipe arm may ask for a search: strict schema errors, one job whose case carries the spec."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bot.plan.expand import expand
from bot.plan.model import PlanFilters
from bot.inferencex.catalog import load_catalog
from bot.recipes.errors import RecipeError

ROOT = Path(__file__).resolve().parent.parent

SEARCHING = """\
include: _base/tiny-cpu.yaml
name: searching
kind: sweep
search_space:
  - name: tp1
    tp: 1
    search: {range: [1, 64], target: knee, budget: 7, tolerance: 0.2}
  - name: listed
    tp: 1
    concurrency: [1, 2]
    search: {range: [2, 32], target: max-conc-under, bound: {metric: ttft_ms, value: 500}}
workload:
  dataset: random
  isl: 128
  osl: 32
  prompts_per_concurrency: 2
  min_prompts: 4
"""


def _catalog(tmp_path: Path, text: str):
    shutil.copytree(ROOT / "recipes" / "_base", tmp_path / "recipes" / "_base")
    shutil.copy(ROOT / "recipes" / "_runners.yaml", tmp_path / "recipes" / "_runners.yaml")
    (tmp_path / "recipes" / "searching.yaml").write_text(text)
    return load_catalog(tmp_path, inferencex=False)


def _jobs(tmp_path, filters=PlanFilters()):
    catalog = _catalog(tmp_path, SEARCHING)
    return expand(catalog.entries["searching"], None, filters).jobs


def test_an_arm_without_a_list_becomes_one_search_job_carrying_the_spec(tmp_path):
    jobs = {job.job_id: job for job in _jobs(tmp_path)}
    assert sorted(jobs) == ["searching--listed", "searching--tp1--search"]
    (case,) = jobs["searching--tp1--search"].cases
    assert case.search is not None and case.search.range == (1, 64) and case.search.budget == 7
    assert case.search.prompts_per_concurrency == 2 and case.search.min_prompts == 4
    assert [p.concurrency for p in case.points] == [1]  # the template point
    assert [p.concurrency for p in jobs["searching--listed"].cases[0].points] == [1, 2]
    assert jobs["searching--listed"].cases[0].search is None


def test_sweep_search_runs_the_search_of_an_arm_that_also_lists_points(tmp_path):
    jobs = {job.job_id: job for job in _jobs(tmp_path, PlanFilters(search=True))}
    assert sorted(jobs) == ["searching--listed--search", "searching--tp1--search"]
    spec = jobs["searching--listed--search"].cases[0].search
    assert spec.target == "max-conc-under" and spec.bound.metric == "ttft_ms" and spec.bound.value == 500


def test_a_search_job_is_estimated_for_its_whole_budget(tmp_path):
    jobs = {job.job_id: job for job in _jobs(tmp_path)}
    search, listed = jobs["searching--tp1--search"], jobs["searching--listed"]
    # tiny-cpu: 30 s start-up, 10 s a point: 7 points against 2.
    assert search.estimate_s == 30 + 7 * 10 and listed.estimate_s == 30 + 2 * 10


BROKEN = [
    ("range-reversed", "range: [1, 64]", "range: [64, 1]", "search_space[0].search", "1 <= lo < hi"),
    ("unknown-target", "target: knee", "target: pareto", "search_space[0].search.target", "knee"),
    ("budget-too-small", "budget: 7", "budget: 1", "search_space[0].search.budget", "2"),
    ("bound-without-bound-target", "target: knee", "target: knee, bound: {metric: ttft_ms, value: 1}",
     "search_space[0].search", "bound"),
    ("unknown-key", "budget: 7", "budget: 7, points: 3", "search_space[0].search.points", "unknown key"),
    ("bound-missing", "target: max-conc-under, bound: {metric: ttft_ms, value: 500}",
     "target: max-conc-under", "search_space[1].search", "bound"),
]


@pytest.mark.parametrize("old,new,field,words", [b[1:] for b in BROKEN], ids=[b[0] for b in BROKEN])
def test_a_bad_search_gives_one_error_naming_file_line_and_field(tmp_path, old, new, field, words):
    assert old in SEARCHING
    with pytest.raises(RecipeError) as caught:
        _catalog(tmp_path, SEARCHING.replace(old, new))
    (problem,) = caught.value.problems
    assert problem.file == "recipes/searching.yaml" and problem.line in (7, 11)
    assert problem.field == field, str(problem)
    assert words in str(problem)


def test_a_search_cannot_go_with_one_launch_per_point(tmp_path):
    text = SEARCHING.replace("kind: sweep\n", "kind: sweep\nlaunch: {depends_on_concurrency: true}\n")
    with pytest.raises(RecipeError, match="depends_on_concurrency"):
        _catalog(tmp_path, text)


def test_sweep_search_flag_reaches_the_planner_and_the_normalized_line():
    from bot.core import commands
    command = commands.parse_single("/sweep searching --search")
    assert command.plan_filters()["search"] is True
    assert command.normalized() == "/sweep searching --search"
    assert "search" not in commands.parse_single("/sweep").plan_filters()
    assert PlanFilters(**command.plan_filters()).search is True


def test_scope_lowest_runs_a_search_only_arm_as_one_point_at_the_low_end(tmp_path):
    jobs = {job.job_id: job for job in _jobs(tmp_path, PlanFilters(scope="lowest"))}
    (case,) = jobs["searching--tp1"].cases
    assert case.search is None and [p.concurrency for p in case.points] == [1]
    assert "searching--tp1--search" not in jobs
