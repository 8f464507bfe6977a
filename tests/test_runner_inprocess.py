"""A case's points go through one client process that imports vLLM's benchmark library once, and
the runner falls back to one `vllm bench serve` process a point whenever that cannot be used.

Driven through `recipe-bot run` against tests/fake_servers: fake_vllm.py stands in for the `vllm`
command and fake_vllm_lib/ for the `vllm` package the engine's Python imports. Each raw result file
records the pid of the process that ran the point, so the tests see how many client processes ran.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.core.settings import load_settings
from bot.engines.vllm import ENGINE as VLLM
from bot.engines.vllm import PYTHON_ENV
from bot.runner.inprocess import SWITCH_ENV
from fake_servers import FAKE_VLLM, HERE, REPO, fake_job, live_marked_processes, run_cli
from message_text import english

# The stand-in package first, then this checkout (so `recipe-bot` runs this tree's runner).
LIB = f"{HERE / 'fake_vllm_lib'}{os.pathsep}{REPO}"
BASE = {"RECIPE_BOT_VLLM": str(FAKE_VLLM), "RECIPE_BOT_SHUTDOWN_GRACE_S": "2",
        PYTHON_ENV: sys.executable}


def _client_pids(run, out: Path) -> list[int]:
    points = run.result["cases"][0]["points"]
    assert [p["status"] for p in points] == ["passed"] * 3, run.output
    return [json.loads((out / p["raw_result_file"]).read_text())["fake_client_pid"] for p in points]


CASES = [
    # (name, extra environment, distinct client processes for 3 points, runner.log says,
    #  each point's recorded client_process)
    ("library importable: one process for the case", {"PYTHONPATH": str(LIB)}, 1, None, ["case"] * 3),
    ("switched off: one process a point", {"PYTHONPATH": str(LIB), SWITCH_ENV: "0"}, 3,
     f"{SWITCH_ENV}=0", ["point"] * 3),
    ("library missing: one process a point", {"PYTHONPATH": str(REPO)}, 3, "No module named 'vllm'",
     ["point"] * 3),
    ("library fails to import: one process a point",
     {"PYTHONPATH": str(LIB), "FAKE_CLIENT_IMPORT_ERROR": "1"}, 3, "vllm.benchmarks.serve is broken",
     ["point"] * 3),
    ("library crashes at the second point: it reruns as a process, the third as well",
     {"PYTHONPATH": str(LIB), "FAKE_CLIENT_CRASH_AT": "2"}, 3, None, ["case", "point", "point"]),
    # The client measurement knob (docs/gpu-runs/2026-12-01-clients-cause): one driver, imported
    # once, each point in a child of its own.
    ("forked a point: one import for the case, a fresh process each point",
     {"PYTHONPATH": str(LIB), "RECIPE_BOT_CLIENT_FORK": "1"}, 3, None, ["case"] * 3),
]


@pytest.mark.parametrize(("env", "processes", "logged", "recorded"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_points_pass_with_one_client_process_or_fall_back(tmp_path: Path, env: dict[str, str],
                                                          processes: int, logged: str | None,
                                                          recorded: list[str]) -> None:
    run = run_cli(fake_job("ok", points=3), tmp_path, {**BASE, **env})

    assert run.returncode == 0, run.output
    out = tmp_path / "out"
    assert len(set(_client_pids(run, out))) == processes
    # Which client measured each point is kept: the two give different figures on a GPU host.
    assert [p["client_process"] for p in run.result["cases"][0]["points"]] == recorded
    if logged:
        assert logged in (out / "runner.log").read_text()
    assert run.result["cases"][0]["cleanup"]["groups_gone"]
    assert live_marked_processes(run.marker) == []


def test_in_process_points_keep_the_raw_file_and_log_of_each_point(tmp_path: Path) -> None:
    run = run_cli(fake_job("ok", points=3), tmp_path, {**BASE, "PYTHONPATH": str(LIB)})

    out = tmp_path / "out"
    for point in run.result["cases"][0]["points"]:
        raw = json.loads((out / point["raw_result_file"]).read_text())
        assert point["metrics"]["completed"] == raw["completed"] == 12
        assert point["client"] == "vllm bench serve"
        log = (out / point["raw_result_file"]).with_suffix(".log").read_text()
        assert "run in process" in log and "Successful requests: 12" in log


@pytest.mark.parametrize("exits_after_s", ["0", "1.5"],
                         ids=["gone at once", "silent a while before its process exits"])
def test_a_dying_server_fails_the_point_and_stops_the_client_process(tmp_path: Path,
                                                                     exits_after_s: str) -> None:
    job = fake_job("die_mid_benchmark", points=2)
    run = run_cli(job, tmp_path, {**BASE, "PYTHONPATH": str(LIB), "FAKE_DIE_SLOWLY_S": exits_after_s})

    assert run.returncode == 1
    points = run.result["cases"][0]["points"]
    assert [p["status"] for p in points] == ["failed", "skipped"]
    assert "exited with code 7" in english(points[0]["reason"])
    assert live_marked_processes(run.marker) == []


PYTHONS = [
    ("python beside the vllm script", "venv", True),
    ("absolute #! line", "shebang", True),
    ("#!/usr/bin/env names no environment", "env", False),
]


@pytest.mark.parametrize(("layout", "found"), [c[1:] for c in PYTHONS], ids=[c[0] for c in PYTHONS])
def test_engine_python_is_the_one_that_runs_vllm(tmp_path: Path, layout: str, found: bool) -> None:
    script = tmp_path / "bin" / "vllm"
    script.parent.mkdir()
    if layout == "venv":
        (tmp_path / "bin" / "python3").write_text("")
        (tmp_path / "bin" / "python3").chmod(0o755)
        script.write_text("#!/elsewhere/python\n")
        expected = str(tmp_path / "bin" / "python3")
    elif layout == "shebang":
        script.write_text("#!/opt/engine/bin/python3.12 -s\n")
        expected = "/opt/engine/bin/python3.12"
    else:
        script.write_text("#!/usr/bin/env python3\n")
        expected = None

    assert VLLM.session_python(str(script), load_settings({})) == (expected if found else None)


def _imports(path: Path) -> set[str]:
    import ast

    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_the_driver_stands_alone_and_nothing_imports_it() -> None:
    """It runs in the engine's environment, which has no recipe-bot; the runner starts it by path."""
    from bot.runner.inprocess import DRIVER

    assert not {n for n in _imports(DRIVER) if n == "bot" or n.startswith("bot.")}
    importers = [p for p in (REPO / "bot").rglob("*.py")
                 if any("bench_driver" in n for n in _imports(p))]
    assert importers == []


KNOBS = [
    # (name, environment, (pause seconds, fork))
    ("unset: no pause, no fork", {}, (0.0, False)),
    ("both set", {"RECIPE_BOT_CLIENT_PAUSE_S": "20", "RECIPE_BOT_CLIENT_FORK": "1"}, (20.0, True)),
    ("not a number: no pause rather than a crash", {"RECIPE_BOT_CLIENT_PAUSE_S": "soon"}, (0.0, False)),
    ("negative: no pause", {"RECIPE_BOT_CLIENT_PAUSE_S": "-3"}, (0.0, False)),
    ("fork off in words", {"RECIPE_BOT_CLIENT_FORK": "off"}, (0.0, False)),
]


@pytest.mark.parametrize(("env", "expected"), [k[1:] for k in KNOBS], ids=[k[0] for k in KNOBS])
def test_the_client_measurement_knobs_read_safely(monkeypatch: pytest.MonkeyPatch, env: dict[str, str],
                                                  expected: tuple[float, bool]) -> None:
    import importlib.util

    from bot.runner.inprocess import DRIVER

    spec = importlib.util.spec_from_file_location("driver_under_test", DRIVER)
    driver = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(driver)
    for name in ("RECIPE_BOT_CLIENT_PAUSE_S", "RECIPE_BOT_CLIENT_FORK"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert driver._knobs() == expected


@pytest.mark.parametrize("mode", ["exit_during_startup", "never_ready"])
def test_a_server_that_never_serves_leaves_no_client_process(tmp_path: Path, mode: str) -> None:
    """The client process starts beside the servers; a case that fails before its first point
    still stops it before the teardown proof."""
    job = fake_job(mode, points=2, startup_timeout_s=3.0)
    run = run_cli(job, tmp_path, {**BASE, "PYTHONPATH": LIB})

    assert run.returncode == 1
    assert [p["status"] for p in run.result["cases"][0]["points"]] == ["skipped", "skipped"]
    assert run.result["cases"][0]["cleanup"]["groups_gone"]
    assert live_marked_processes(run.marker) == []


def test_the_driver_leaves_at_end_of_input_without_running_the_libraries_exit_handlers(tmp_path: Path) -> None:
    # The engine's libraries register exit handlers that take seconds (torch, transformers), while the
    # case's GPU waits for the driver to be gone; a handler that ran would write the marker.
    marker = tmp_path / "exit-handler-ran"
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import atexit, pathlib\n"
        f"atexit.register(pathlib.Path({str(marker)!r}).write_text, 'ran')\n")
    driver = Path(REPO) / "bot" / "runner" / "bench_driver.py"
    env = {**os.environ, "PYTHONPATH": f"{site}{os.pathsep}{HERE / 'fake_vllm_lib'}"}
    done = subprocess.run([sys.executable, str(driver), "vllm"], input="", capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[0]) == {"ready": True}
    assert not marker.exists()
