"""The engine registry: an engine is one module; a new one plans and launches with no other file changed."""
from __future__ import annotations

import shutil
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.core.settings import load_settings
from bot import engines
from bot.engines import Engine
from bot.plan import PlanFilters, plan_catalog
from bot.inferencex.catalog import load_catalog
from bot.recipes.errors import RecipeError
from bot.runner.cli import JobFileError, load_job
from bot.runner.engines import build_launch
from bot.runner.load import bench_command, choose_client
from engine_helpers import POINT, target

ROOT = Path(__file__).resolve().parents[1]

# The whole of a new engine, written as its module would be (bot/engines/<name>.py).
FAKE_ENGINE_MODULE = '''
from bot.engines import Engine, register


class Fake(Engine):
    name = "fake"
    title = "FakeLLM"
    client = "fake-bench"
    cache_reset_path = "/cache/reset"
    missing_server = "no FakeLLM here"
    result_names = {"ttft": "first_token"}  # its client's own name for time to first token

    def locate(self, repo, env, settings):
        return env.get("FAKE_BIN")

    def server_argv(self, program, *, model, served, host, port, args):
        return [program, "--model", model, "--name", served, "--bind", f"{host}:{port}", *args]

    def parallel_args(self, p):
        return [f"--shards={p.tp}x{p.pp}"] + (["--experts"] if p.ep > 1 else [])

    def client_command(self, program):
        return [program, "bench"]

    def client_args(self, point, target, result_file, seed=0):
        return ["--url", target.base_url, "-c", str(point.concurrency), "-o", str(result_file)]


ENGINE = register(Fake())
'''


@pytest.fixture
def fake_engine() -> Iterator[Engine]:
    module = types.ModuleType("bot.engines.fake")
    exec(compile(FAKE_ENGINE_MODULE, "bot/engines/fake.py", "exec"), module.__dict__)
    sys.modules[module.__name__] = module
    try:
        yield module.ENGINE
    finally:
        engines.unregister("fake")
        sys.modules.pop(module.__name__, None)


def _recipes_on(tmp_path: Path, engine: str) -> Path:
    shutil.copytree(ROOT / "recipes", tmp_path / "recipes")
    base = tmp_path / "recipes" / "_base" / "tiny-cpu.yaml"
    base.write_text(base.read_text().replace("  name: vllm\n", f"  name: {engine}\n"))
    return tmp_path


def test_a_registered_engine_plans_and_builds_its_server_and_client_commands(fake_engine, tmp_path) -> None:
    catalog = load_catalog(_recipes_on(tmp_path, "fake"), inferencex=False)
    plan = plan_catalog(catalog, PlanFilters(recipes=("tiny-cpu",), canary=False))
    (job,) = plan.jobs
    case = job.cases[0]
    (spec,) = case.servers
    assert spec.engine == "fake" and spec.args[0] == "--shards=1x1"

    installed = engines.installed(tmp_path, {"FAKE_BIN": "/opt/fake/bin/fake"}, load_settings({}))
    launch = build_launch(spec, case, port=9000, repo=tmp_path, installed=installed,
                          runner_env={"RECIPE_BOT_TINY_MODEL": "/models/tiny"}, run_tag="t")
    assert launch.argv[:6] == ["/opt/fake/bin/fake", "--model", "/models/tiny", "--name", "tiny",
                               "--bind"] and launch.argv[6] == "127.0.0.1:9000"
    assert launch.argv[7] == "--shards=1x1" and "--enforce-eager" in launch.argv
    client = choose_client(installed, spec.engine)
    assert (client.name, bench_command(client, POINT, target("fake"), tmp_path / "r.json")) == (
        "fake-bench", ["/opt/fake/bin/fake", "bench", "--url", "http://127.0.0.1:8123", "-c", "8",
                       "-o", str(tmp_path / "r.json")])


def test_a_registered_engines_client_results_are_read_under_its_own_names(fake_engine) -> None:
    from bot.runner.metrics import parse_bench_result

    raw = {"completed": 8, "duration": 2.0, "request_throughput": 4.0, "output_throughput": 40.0,
           "total_token_throughput": 80.0, "median_tpot_ms": 5.0, "median_first_token_ms": 30.0}
    assert parse_bench_result(raw, gpus=1, client_names=fake_engine.result_names).ttft_ms == {"median": 30.0}
    assert parse_bench_result(raw, gpus=1).ttft_ms == {}  # another client's file: not its names


def test_the_job_file_of_a_registered_engine_loads_and_an_unknown_one_is_refused(fake_engine, tmp_path) -> None:
    plan = plan_catalog(load_catalog(_recipes_on(tmp_path, "fake"), inferencex=False),
                        PlanFilters(recipes=("tiny-cpu",), canary=False))
    path = tmp_path / "job.json"
    path.write_text(plan.jobs[0].model_dump_json())
    assert load_job(path).cases[0].servers[0].engine == "fake"
    engines.unregister("fake")
    with pytest.raises(JobFileError, match=r"cases\.0\.servers\.0\.engine: Input should be 'vllm' or 'sglang'"):
        load_job(path)


def test_a_recipe_naming_an_unknown_engine_lists_the_registered_ones(tmp_path) -> None:
    with pytest.raises(RecipeError) as caught:
        load_catalog(_recipes_on(tmp_path, "trtllm"), inferencex=False)
    text = str(caught.value)
    assert "'trtllm' is not accepted" in text and "vllm" in text and "sglang" in text


def test_an_unknown_engine_name_is_a_clear_error() -> None:
    with pytest.raises(KeyError, match="unknown engine 'trtllm': expected vllm or sglang"):
        engines.get("trtllm")


def test_an_engine_without_its_program_cannot_start_a_server(fake_engine, tmp_path) -> None:
    from bot.core.jobs import Case, ServerSpec
    from bot.runner.environment import EnvironmentProblem

    spec = ServerSpec(engine="fake", model="m")
    with pytest.raises(EnvironmentProblem, match="no FakeLLM here"):
        build_launch(spec, Case(name="c", servers=[spec]), port=1, repo=tmp_path, runner_env={},
                     run_tag="t", installed=engines.installed(tmp_path, {}, load_settings({})))


def test_the_engine_modules_never_import_the_engine_packages() -> None:
    # The control plane imports bot.engines; vllm and sglang are runner-side extras.
    import ast

    for path in (ROOT / "bot" / "engines").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        roots = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                 for alias in node.names}
        roots |= {node.module.split(".")[0] for node in ast.walk(tree)
                  if isinstance(node, ast.ImportFrom) and node.module and node.level == 0}
        assert not roots & {"vllm", "sglang", "torch"}, path

