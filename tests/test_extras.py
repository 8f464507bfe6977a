"""Engines are optional extras of the runner: declared in pyproject, never imported by the bot itself."""
from __future__ import annotations

import ast
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from bot.core.settings import load_settings
from bot.engines.sglang import ENGINE as SGLANG

ROOT = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
ENGINES = {"vllm", "sglang", "torch"}


def names(requirements: list[str]) -> set[str]:
    return {Requirement(r).name.lower() for r in requirements}


@pytest.mark.parametrize(("extra", "engine", "lowest"), [
    pytest.param("vllm", "vllm", "0.26.0", id="vllm-extra"),
    pytest.param("sglang", "sglang", "0.5.17", id="sglang-extra"),
])
def test_each_engine_is_an_extra_with_a_lower_bound_and_torch(extra, engine, lowest):
    requirements = {Requirement(r).name.lower(): Requirement(r)
                    for r in PROJECT["optional-dependencies"][extra]}
    assert set(requirements) == {engine, "torch"}
    assert requirements[engine].specifier.contains(lowest)
    assert not requirements[engine].specifier.contains("0.0.1")


def test_the_base_install_pulls_no_engine():
    assert not names(PROJECT["dependencies"]) & ENGINES
    assert not names(PROJECT["optional-dependencies"]["test"]) & ENGINES


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


# Scripts the runner starts as programs with the engine's own Python; no bot module imports them
# (tests/test_runner_inprocess.py pins that), so they may import the engine.
ENGINE_SIDE_SCRIPTS = {"bot/runner/bench_driver.py"}


def test_no_module_of_the_bot_imports_an_engine():
    # The runner starts engines as programs (vllm serve, python -m sglang.launch_server), so the
    # control plane and the runner alike run where no engine is installed.
    offenders = {str(p.relative_to(ROOT)): sorted(imported_roots(p) & ENGINES)
                 for p in sorted((ROOT / "bot").rglob("*.py")) if imported_roots(p) & ENGINES}
    assert {k: v for k, v in offenders.items() if k not in ENGINE_SIDE_SCRIPTS} == {}
    assert set(offenders) <= ENGINE_SIDE_SCRIPTS


@pytest.mark.parametrize(("env", "has_sglang", "expected"), [
    pytest.param({"RECIPE_BOT_SGLANG_PYTHON": "/opt/sgl/bin/python"}, True, "/opt/sgl/bin/python",
                 id="explicit-python-wins"),
    pytest.param({}, True, sys.executable, id="sglang-extra-beside-the-runner"),
])
def test_sglang_python_prefers_the_runners_own_when_the_extra_is_installed(
        env, has_sglang, expected, monkeypatch):
    monkeypatch.setattr("importlib.util.find_spec",
                        lambda name: object() if name == "sglang" and has_sglang else None)
    assert SGLANG.locate(ROOT, env, load_settings(env)) == expected


def test_sglang_python_falls_back_to_python3_on_path(monkeypatch):
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    assert SGLANG.locate(ROOT, {}, load_settings({})).endswith("python3")
