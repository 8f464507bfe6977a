"""Shared fixtures. `sandbox` starts the local GitHub stand-in and fails the test if it answered out of spec."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest

from github_sandbox.harness import SAMPLE_FEATURE_FILES, SAMPLE_MAIN_FILES, SandboxProcess, describe, make_seed

# Fixture repositories carry test files of their own (afd_shaped's pytest harness): they are run by the
# tests that need them, inside their own checkout, never collected as recipe-bot's tests.
collect_ignore_glob = ["fixtures/*"]

# Parallel workers (`pytest -n 2`, pytest-xdist): each file runs whole on one worker, so that its
# module fixtures are built once. The files that use what this machine has only one of (the Slurm cluster
# with its two GPUs, the CPU engine's memory and cores, act's runners, and the afd-shaped fixture's port
# 18431, which its recipe declares, so a runner refuses to start a case while another holds it) form one
# unit, so that they run one after another and never wait on each other's jobs. The controller sees only
# test ids, so the unit is a list of files; collection fails when a slurm- or engine-marked test sits in
# a file the list lacks.
ONE_AT_A_TIME_MARKS = ("slurm", "engine")
ONE_AT_A_TIME_FILES = frozenset({"test_afd_harness_engine.py", "test_ix_run.py", "test_runner_engine.py",
                                 "test_slurm.py", "test_slurm_failures.py", "test_slurm_multinode.py",
                                 "test_workflow_rehearsal.py", "test_afd_harness.py"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    unlisted = sorted({item.path.name for item in items if item.path.name not in ONE_AT_A_TIME_FILES
                       and any(item.get_closest_marker(mark) for mark in ONE_AT_A_TIME_MARKS)})
    if unlisted:
        raise pytest.UsageError(f"tests/conftest.py: add {', '.join(unlisted)} to ONE_AT_A_TIME_FILES "
                                "(they use the Slurm cluster or the CPU engine)")


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: without it installed, there is nothing to schedule
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    from xdist.scheduler import LoadScopeScheduling

    class ByFile(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return "one-at-a-time" if Path(path).name in ONE_AT_A_TIME_FILES else path

    return ByFile(config, log)


@pytest.fixture
def sandbox(tmp_path: Path) -> Any:
    """Factory: `sb = sandbox()` (default seed: acme/bench, pull #7 feature→main by bob) or
    `sandbox(seed_path)` / `sandbox(files_main=..., files_feature=..., seed_overrides=...)`.

    Each call runs `github-sandbox serve --seed F --port 0` as a subprocess (github_sandbox.harness.SandboxProcess).
    At teardown every sandbox is stopped with SIGTERM, and the test fails if any response broke GitHub's
    OpenAPI description or any request named an operation the sandbox does not serve (pass check=False to
    a call that probes unknown operations on purpose).
    """
    started: list[SandboxProcess] = []

    def start(seed_path: str | Path | None = None, *, files_main: dict[str, str] | None = None,
              files_feature: dict[str, str | None] | None = None, seed_overrides: dict[str, Any] | None = None,
              check: bool = True) -> SandboxProcess:
        if seed_path is None:
            seed_path = make_seed(tmp_path / f"sandbox-{len(started)}",
                                  SAMPLE_MAIN_FILES if files_main is None else files_main,
                                  SAMPLE_FEATURE_FILES if files_feature is None else files_feature,
                                  seed_overrides)
        sb = SandboxProcess(seed_path, check=check).start()
        started.append(sb)
        return sb

    start_fn: Callable[..., SandboxProcess] = start
    yield start_fn
    problems: list[dict[str, Any]] = []
    for sb in started:
        if sb.check and sb.proc is not None and sb.proc.poll() is None:
            problems += sb.problems()
        sb.stop()
    assert not problems, describe(problems)


@pytest.fixture
def h(sandbox, tmp_path):
    """tests/test_handle*.py: a seeded sandbox and `recipe-bot handle` driven as Actions runs it; fails the
    test if the bot sent a request that breaks GitHub's OpenAPI description."""
    from handle_helpers import Harness, seed

    harness = Harness(sandbox(seed(tmp_path)), tmp_path)
    yield harness
    invalid = [f"{e['method']} {e['path']}: {e['errors']}" for e in harness.requests() if not e["valid"]]
    assert invalid == [], "the bot sent requests that break GitHub's OpenAPI description"
