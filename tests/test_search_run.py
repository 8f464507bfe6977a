"""The runner chooses each search point within one launch and keeps every point's raw file and the trace."""
from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from bot.core.jobs import Case, LoadPoint, SearchSpec
from bot.core.results import PointMetrics, PointResult
from bot.runner.search import next_point
from bot.runner.search_run import (case_points, measurements, own_points, point_at, search_points,
                                   search_trace)
from fake_servers import FAKE_VLLM, fake_job, run_cli

SPEC = SearchSpec(range=(1, 16), target="knee", budget=5, tolerance=0.2,
                  prompts_per_concurrency=3, min_prompts=4)
TEMPLATE = LoadPoint(point_id="tp1-search", concurrency=1, isl=16, osl=8, num_prompts=4)


def _metrics(c: int) -> PointMetrics:
    tput = 100 * c / (c + 4)
    return PointMetrics(completed=4, failed=0, duration_s=1.0, request_throughput=1.0, output_throughput=tput,
                        total_token_throughput=tput, tput_per_gpu=tput, output_tput_per_gpu=tput,
                        input_tput_per_gpu=0.0, interactivity=50 / (1 + c / 8), ttft_ms={"median": 10.0 + c})


def test_a_chosen_point_is_sized_by_the_workloads_per_point_rules():
    point = point_at(SPEC, TEMPLATE, 6)
    assert (point.point_id, point.concurrency, point.num_prompts) == ("tp1-c6", 6, 18)
    assert point_at(SPEC, TEMPLATE, 1).num_prompts == 4  # min_prompts wins over 3 x 1


def test_search_points_follow_the_results_as_they_come_and_stop_at_the_budget():
    case = Case(name="tp1-search", servers=[{"engine": "vllm", "model": "m"}], points=[TEMPLATE], search=SPEC)
    done: list[PointResult] = []
    for point in search_points(case, done):
        status = "failed" if point.concurrency == 6 else "passed"
        done.append(PointResult(point_id=point.point_id, concurrency=point.concurrency, status=status,
                                metrics=_metrics(point.concurrency) if status == "passed" else None))
    assert len(done) == SPEC.budget
    trace = search_trace(SPEC, done)
    assert [c.concurrency for c in trace.choices] == [p.concurrency for p in done]
    assert trace.stop == "budget" and 6 not in trace.suggested
    assert trace.answer == next_point(SPEC, measurements(done)).answer


def test_an_interrupted_search_keeps_the_choices_it_made_and_no_stop_reason():
    done = [PointResult(point_id="tp1-c1", concurrency=1, status="passed", metrics=_metrics(1))]
    trace = search_trace(SPEC, done)
    assert [c.concurrency for c in trace.choices] == [1] and trace.stop is None


def test_the_runner_runs_the_search_on_one_launch_and_keeps_raw_files_and_trace(tmp_path: Path):
    job = fake_job("ok", points=1, num_prompts=4)
    case = job.cases[0]
    search = SearchSpec(range=(1, 8), target="knee", budget=4, tolerance=0.2)
    template = case.points[0].model_copy(update={"point_id": "ok-search"})
    job = job.model_copy(update={"cases": [case.model_copy(update={"points": [template], "search": search})]})
    run = run_cli(job, tmp_path, {"RECIPE_BOT_VLLM": str(FAKE_VLLM), "RECIPE_BOT_SHUTDOWN_GRACE_S": "2"})
    assert run.returncode == 0, run.output
    (result_case,) = run.result["cases"]
    trace = result_case["search"]
    chosen = [c["concurrency"] for c in trace["choices"]]
    assert chosen == [p["concurrency"] for p in result_case["points"]] == [1, 2, 4, 8]
    assert trace["stop"] == "budget" and trace["suggested"] == [1, 2, 4, 8]
    assert run.result["server_launches"] == 1
    for point in result_case["points"]:
        assert point["status"] == "passed" and (tmp_path / "out" / point["raw_result_file"]).is_file()


def _run_in_order(case: Case, metrics) -> list[PointResult]:
    done: list[PointResult] = []
    for point in case_points(case, done):
        done.append(PointResult(point_id=point.point_id, concurrency=point.concurrency, status="passed",
                                metrics=metrics(point)))
    return done


def test_interleaved_fixed_points_spread_over_the_search_and_never_steer_it():
    fixed = [TEMPLATE.model_copy(update={"point_id": f"grid-c{c}", "concurrency": c}) for c in (1, 2, 3, 16)]
    alone = Case(name="s", servers=[{"engine": "vllm", "model": "m"}], points=[TEMPLATE], search=SPEC)
    mixed = alone.model_copy(update={"points": [TEMPLATE, *fixed],
                                     "search": SPEC.model_copy(update={"interleave": True})})
    searched = _run_in_order(alone, lambda p: _metrics(p.concurrency))
    # The fixed points measure a different curve: were the search to read them, it would choose otherwise.
    both = _run_in_order(mixed, lambda p: _metrics(p.concurrency if p.point_id.startswith("tp1") else 17 - p.concurrency))
    # 4 fixed points spread over a budget of 5: one before each of the search's first four.
    ids = [p.point_id for p in both]
    assert ids[:8:2] == [p.point_id for p in fixed] and ids[1:8:2] == [p.point_id for p in searched[:4]]
    assert ids[8:] == [p.point_id for p in searched[4:]]
    mixed_trace, alone_trace = search_trace(mixed.search, own_points(mixed, both)), search_trace(SPEC, searched)
    assert (mixed_trace.choices, mixed_trace.answer) == (alone_trace.choices, alone_trace.answer)


def test_a_fixed_point_named_like_the_searchs_own_is_refused():
    with pytest.raises(ValidationError, match="named like the search's own"):
        Case(name="s", servers=[{"engine": "vllm", "model": "m"}], search=SPEC.model_copy(update={"interleave": True}),
             points=[TEMPLATE, TEMPLATE.model_copy(update={"point_id": "tp1-c4", "concurrency": 4})])


def _interleaved(tmp_path: Path, mode: str, **server_env: str):
    """A fake server's job: a knee search over 1..8 (budget 4) with the fixed grid 1 and 8 interleaved, run."""
    job = fake_job(mode, points=1, num_prompts=4, extra_env=server_env)
    case = job.cases[0]
    search = SearchSpec(range=(1, 8), target="knee", budget=4, tolerance=0.2, interleave=True)
    template = case.points[0].model_copy(update={"point_id": "ok-search"})
    grid = [case.points[0].model_copy(update={"point_id": f"grid-c{c}", "concurrency": c}) for c in (1, 8)]
    job = job.model_copy(update={"cases": [case.model_copy(update={"points": [template, *grid], "search": search})]})
    return run_cli(job, tmp_path, {"RECIPE_BOT_VLLM": str(FAKE_VLLM), "RECIPE_BOT_SHUTDOWN_GRACE_S": "2"})


def test_the_runner_interleaves_a_fixed_grid_with_the_search_on_one_launch(tmp_path: Path):
    run = _interleaved(tmp_path, "ok")
    assert run.returncode == 0, run.output
    (result_case,) = run.result["cases"]
    # 2 fixed points spread over a budget of 4: one before the search's 1st point, one before its 3rd.
    assert [p["point_id"] for p in result_case["points"]] == ["grid-c1", "ok-c1", "ok-c2", "grid-c8", "ok-c4", "ok-c8"]
    trace = result_case["search"]
    assert [c["concurrency"] for c in trace["choices"]] == [1, 2, 4, 8] and trace["stop"] == "budget"
    assert run.result["server_launches"] == 1
    for point in result_case["points"]:
        assert point["status"] == "passed" and (tmp_path / "out" / point["raw_result_file"]).is_file()


def test_an_interrupted_interleaved_search_records_its_unrun_fixed_points_as_not_run(tmp_path: Path):
    # The server dies during the search's first point: the grid point after it never runs, and the
    # result says so rather than leaving it out (a report could not tell it from one never planned).
    run = _interleaved(tmp_path, "die_mid_benchmark", FAKE_DIE_AFTER="6")
    (result_case,) = run.result["cases"]
    by_id = {p["point_id"]: p for p in result_case["points"]}
    assert by_id["grid-c1"]["status"] == "passed"
    unrun = by_id["grid-c8"]
    assert unrun["status"] == "skipped" and unrun["reason"]["id"].startswith("not run: ")  # a catalogue message
    assert "ok-search" not in by_id  # the search's template is not a point of its own
    assert [p["point_id"] for p in result_case["points"]].count("grid-c8") == 1
