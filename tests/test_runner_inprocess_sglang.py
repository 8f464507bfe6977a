"""SGLang's points and an adaptive search's go through one client process per case too, and fall
back to one client process a point when that cannot be used.

Driven through `recipe-bot run` against tests/fake_servers: fake_sglang_lib/ stands in for the
`sglang` package with sglang 0.5.17's layout (`sglang.bench_serving` re-exports
`sglang.benchmark.serving` and calls its `cli_main()`, which parses sys.argv), and its
`sglang.launch_server` serves fake_vllm.py's server. Each raw result records the pid of the
process that ran the point, so the tests see how many client processes ran.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from bot.core.jobs import Job, SearchSpec
from bot.core.settings import load_settings
from bot.engines.sglang import ENGINE as SGLANG
from bot.engines.vllm import PYTHON_ENV as VLLM_PYTHON_ENV
from bot.runner.inprocess import SWITCH_ENV
from fake_servers import FAKE_VLLM, HERE, REPO, fake_job, live_marked_processes, run_cli
from message_text import english

SGLANG_LIB = f"{HERE / 'fake_sglang_lib'}{os.pathsep}{REPO}"
VLLM_LIB = f"{HERE / 'fake_vllm_lib'}{os.pathsep}{REPO}"
SGLANG_ENV = {"RECIPE_BOT_SGLANG_PYTHON": sys.executable, "PYTHONPATH": SGLANG_LIB,
              "RECIPE_BOT_SHUTDOWN_GRACE_S": "2"}
VLLM_ENV = {"RECIPE_BOT_VLLM": str(FAKE_VLLM), VLLM_PYTHON_ENV: sys.executable, "PYTHONPATH": VLLM_LIB,
            "RECIPE_BOT_SHUTDOWN_GRACE_S": "2"}


def on_sglang(job: Job) -> Job:
    cases = [case.model_copy(update={"servers": [s.model_copy(update={"engine": "sglang"})
                                                 for s in case.servers]}) for case in job.cases]
    return job.model_copy(update={"cases": cases})


def searching(job: Job, budget: int = 4) -> Job:
    case = job.cases[0]
    template = case.points[0].model_copy(update={"point_id": "ok-search"})
    search = SearchSpec(range=(1, 8), target="knee", budget=budget, tolerance=0.2)
    return job.model_copy(update={"cases": [case.model_copy(update={"points": [template], "search": search})]})


def _points(run) -> list[dict]:
    return run.result["cases"][0]["points"]


def _client_pids(run, out: Path) -> list[int]:
    points = _points(run)
    assert all(p["status"] == "passed" for p in points), run.output
    # SGLang's client appends JSON lines: the point's own is the last.
    return [json.loads((out / p["raw_result_file"]).read_text().splitlines()[-1])["fake_client_pid"]
            for p in points]


CASES = [
    # (name, extra environment, distinct client processes for 3 points, each point's client_process)
    ("library importable: one process for the case", {}, 1, ["case"] * 3),
    ("switched off: one process a point", {SWITCH_ENV: "0"}, 3, ["point"] * 3),
    ("library crashes at the second point: it reruns as a process, the third as well",
     {"FAKE_CLIENT_CRASH_AT": "2"}, 3, ["case", "point", "point"]),
]


@pytest.mark.parametrize(("env", "processes", "recorded"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_sglang_points_pass_with_one_client_process_or_fall_back(tmp_path: Path, env: dict[str, str],
                                                                 processes: int, recorded: list[str]) -> None:
    run = run_cli(on_sglang(fake_job("ok", points=3)), tmp_path, {**SGLANG_ENV, **env})

    assert run.returncode == 0, run.output
    assert len(set(_client_pids(run, tmp_path / "out"))) == processes
    assert [p["client_process"] for p in _points(run)] == recorded
    assert {p["client"] for p in _points(run)} == {"sglang.bench_serving"}
    assert run.result["cases"][0]["cleanup"]["groups_gone"]
    assert live_marked_processes(run.marker) == []


def test_an_sglang_point_in_process_gets_the_command_line_arguments_and_keeps_its_log(tmp_path: Path) -> None:
    run = run_cli(on_sglang(fake_job("ok", points=2)), tmp_path, SGLANG_ENV)

    out = tmp_path / "out"
    for point in _points(run):
        raw = json.loads((out / point["raw_result_file"]).read_text().splitlines()[-1])
        # The runner's own flags, parsed by the library's parser: nothing dropped on the way.
        assert raw["backend"] == "sglang-oai" and raw["dataset_name"] == "random-ids"
        assert raw["max_concurrency"] == point["concurrency"]
        assert point["metrics"]["completed"] == raw["completed"] == 12
        log = (out / point["raw_result_file"]).with_suffix(".log").read_text()
        assert "-m sglang.bench_serving" in log and "run in process" in log
        assert "Successful requests: 12" in log


def test_an_unknown_client_flag_fails_the_point_as_the_command_would_and_the_process_stays(tmp_path: Path) -> None:
    job = on_sglang(fake_job("ok", points=2))
    case = job.cases[0]
    bad = case.points[0].model_copy(update={"extra_args": ["--no-such-flag"]})
    job = job.model_copy(update={"cases": [case.model_copy(update={"points": [bad, case.points[1]]})]})
    run = run_cli(job, tmp_path, SGLANG_ENV)

    first, second = _points(run)
    assert first["status"] == "failed" and "exited with code 2" in english(first["reason"])
    assert second["status"] == "passed" and second["client_process"] == "case"
    assert live_marked_processes(run.marker) == []


def test_the_sglang_client_python_is_the_engines_own_program() -> None:
    assert SGLANG.in_process_client
    assert SGLANG.session_python("/opt/sgl/bin/python3", load_settings({})) == "/opt/sgl/bin/python3"


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_an_adaptive_search_runs_every_point_in_the_cases_client_process(tmp_path: Path, engine: str) -> None:
    job = searching(fake_job("ok", points=1, num_prompts=4))
    job, env = (on_sglang(job), SGLANG_ENV) if engine == "sglang" else (job, VLLM_ENV)
    run = run_cli(job, tmp_path, env)

    assert run.returncode == 0, run.output
    assert [p["concurrency"] for p in _points(run)] == [1, 2, 4, 8]
    assert [p["client_process"] for p in _points(run)] == ["case"] * 4
    pids = [json.loads((tmp_path / "out" / p["raw_result_file"]).read_text().splitlines()[-1])["fake_client_pid"]
            for p in _points(run)]
    assert len(set(pids)) == 1
    assert run.result["cases"][0]["search"]["stop"] == "budget"
    assert live_marked_processes(run.marker) == []


def test_a_search_point_whose_client_process_dies_reruns_as_a_process_and_the_search_goes_on(tmp_path: Path) -> None:
    run = run_cli(searching(fake_job("ok", points=1, num_prompts=4)), tmp_path,
                  {**VLLM_ENV, "FAKE_CLIENT_CRASH_AT": "2"})

    assert run.returncode == 0, run.output
    assert [p["client_process"] for p in _points(run)] == ["case", "point", "point", "point"]
    assert all(p["status"] == "passed" for p in _points(run))
    assert live_marked_processes(run.marker) == []


def test_a_repeat_whose_client_process_dies_reruns_as_a_process_and_the_point_says_mixed(tmp_path: Path) -> None:
    job = on_sglang(fake_job("ok", points=1))
    case = job.cases[0]
    point = case.points[0].model_copy(update={"repeats": 3})
    job = job.model_copy(update={"cases": [case.model_copy(update={"points": [point]})]})
    run = run_cli(job, tmp_path, {**SGLANG_ENV, "FAKE_CLIENT_CRASH_AT": "2"})

    assert run.returncode == 0, run.output
    (measured,) = _points(run)
    assert measured["status"] == "passed" and len(measured["repeats"]) == 3
    assert measured["client_process"] == "mixed"
    assert live_marked_processes(run.marker) == []
