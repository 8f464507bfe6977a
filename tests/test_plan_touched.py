"""Touched detection from a git diff base..head: semantic, per recipe, with shared infra named."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bot.plan import PlanError, PlanFilters, plan_change
from bot.recipes import RecipeError
from git_helpers import GIT_ENV, git  # noqa: F401
from ix_repo_helpers import edit

ROOT = Path(__file__).resolve().parents[1]


def commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository holding the shipped recipes and the scripts their runners share; one commit."""
    shutil.copytree(ROOT / "recipes", tmp_path / "recipes")
    (tmp_path / "scripts" / "gpu").mkdir(parents=True)
    (tmp_path / "scripts" / "setup-cpu-engine.sh").write_text("#!/bin/sh\necho install\n")
    (tmp_path / "scripts" / "gpu" / "vllm-device.sh").write_text("#!/bin/sh\necho stage\n")
    (tmp_path / "README.md").write_text("sample\n")
    git(tmp_path, "init", "-q", "-b", "main")
    commit(tmp_path, "base")
    return tmp_path


def touched_names(plan) -> list[str]:
    return sorted(t.name for t in plan.touched)


def planned_recipes(plan) -> list[str]:
    return sorted({j.recipe for j in plan.jobs})


def test_a_change_to_one_recipe_plans_only_that_recipe(repo):
    base = git(repo, "rev-parse", "HEAD")
    edit(repo, "recipes/tiny-cpu.yaml", "concurrency: [1, 2, 4, 8, 16, 32]", "concurrency: [1, 2, 4, 8, 16, 32, 64]")
    head = commit(repo, "more points")
    plan = plan_change(repo, base, head)
    assert touched_names(plan) == ["tiny-cpu"]
    assert planned_recipes(plan) == ["tiny-cpu"]
    assert list(map(str, plan.touched[0].reasons)) == ["recipe changed"]
    assert plan.touched[0].base_fingerprint != plan.touched[0].fingerprint
    assert plan.points == 7


def test_a_change_to_a_runner_shared_script_plans_every_recipe_of_that_runner(repo):
    base = git(repo, "rev-parse", "HEAD")
    edit(repo, "scripts/setup-cpu-engine.sh", "echo install", "echo install --fixed")
    plan = plan_change(repo, base, commit(repo, "fix the engine setup"))
    assert touched_names(plan) == ["tiny-cpu", "tiny-cpu-e2e"]
    assert planned_recipes(plan) == ["tiny-cpu", "tiny-cpu-e2e"]
    assert "shared infra touched, 2 recipes affected: scripts/setup-cpu-engine.sh (runner cpu)" in map(str, plan.notes)
    assert all("shared infra of runner cpu" in str(t.reasons[0]) for t in plan.touched)


def test_a_shared_glob_covers_every_gpu_runner(repo):
    base = git(repo, "rev-parse", "HEAD")
    edit(repo, "scripts/gpu/vllm-device.sh", "stage", "stage --resume")
    plan = plan_change(repo, base, commit(repo, "staging"))
    assert touched_names(plan) == ["gpu-smoke-e2e", "gpu-smoke-sglang", "gpu-smoke-sglang-e2e",
                                   "gpu-smoke-vllm", "qwen3.5-122b-a10b-afd"]


REFORMATTED_TINY = """\
# Same recipe, other layout: block lists, other key order, quotes, comments.
kind: "sweep"
name: tiny-cpu
description: >-
  The CPU engine under load at six concurrencies; packable, so one server launch serves every point.
  `--scope lowest` keeps concurrency 1 only.
include: "_base/tiny-cpu.yaml"
workload: {osl: 32, isl: 128, min_prompts: 8, prompts_per_concurrency: 2, dataset: random}
search_space:
- tp: 1
  name: tp1
concurrency:
- 1
- 2
- 4
- 8   # the middle
- 16
- 32
"""


def test_a_yaml_reformat_that_changes_no_value_plans_nothing(repo):
    base = git(repo, "rev-parse", "HEAD")
    (repo / "recipes" / "tiny-cpu.yaml").write_text(REFORMATTED_TINY)
    base_file = repo / "recipes" / "_base" / "gpu-smoke.yaml"
    text = base_file.read_text().replace('  version: "0.26.0"', "  version: '0.26.0'")
    first, second = '    NCCL_NVLS_ENABLE: "0"\n', '    TORCH_SYMM_MEM_DISABLE_MULTICAST: "1"\n'
    base_file.write_text("# reflowed\n" + text.replace(first + second, second + first))  # env order
    plan = plan_change(repo, base, commit(repo, "reformat"))
    assert plan.touched == [] and plan.jobs == [] and plan.matrices == []
    assert plan.recipes == []


def test_a_change_in_an_include_base_touches_every_recipe_that_includes_it(repo):
    base = git(repo, "rev-parse", "HEAD")
    edit(repo, "recipes/_base/gpu-smoke.yaml", '--max-model-len, "4096"', '--max-model-len, "8192"')
    plan = plan_change(repo, base, commit(repo, "longer context"))
    assert touched_names(plan) == ["gpu-smoke-e2e", "gpu-smoke-vllm"]
    assert all(list(map(str, t.reasons)) == ["include recipes/_base/gpu-smoke.yaml changed"] for t in plan.touched)


def test_only_a_description_change_runs_nothing_and_says_so(repo):
    base = git(repo, "rev-parse", "HEAD")
    edit(repo, "recipes/gpu-smoke-vllm.yaml", "One H200:", "A single H200:")
    plan = plan_change(repo, base, commit(repo, "words"))
    assert plan.touched == [] and plan.jobs == []
    assert any("only description" in n for n in map(str, plan.notes))


def test_a_new_recipe_is_touched_and_a_removed_one_is_noted(repo):
    base = git(repo, "rev-parse", "HEAD")
    text = (repo / "recipes" / "tiny-cpu.yaml").read_text().replace("name: tiny-cpu", "name: tiny-cpu-2")
    (repo / "recipes" / "tiny-cpu-2.yaml").write_text(text)
    (repo / "recipes" / "gpu-smoke-e2e.yaml").unlink()
    plan = plan_change(repo, base, commit(repo, "add and remove"))
    assert touched_names(plan) == ["tiny-cpu-2"]
    assert list(map(str, plan.touched[0].reasons)) == ["new recipe (recipes/tiny-cpu-2.yaml)"]
    assert any("gpu-smoke-e2e.yaml was removed" in n for n in map(str, plan.notes))


def test_a_change_to_the_runner_table_touches_that_runners_recipes(repo):
    base = git(repo, "rev-parse", "HEAD")
    edit(repo, "recipes/_runners.yaml", "      - scripts/make_tiny_model.py\n",
         "      - scripts/make_tiny_model.py\n      - scripts/tiny-extra.sh\n")
    plan = plan_change(repo, base, commit(repo, "runner table"))
    assert touched_names(plan) == ["tiny-cpu", "tiny-cpu-e2e"]


def test_a_launch_script_a_recipe_names_touches_it(repo):
    (repo / "scripts" / "serve-tiny.sh").write_text("#!/bin/sh\nexec vllm serve \"$MODEL\"\n")
    edit(repo, "recipes/tiny-cpu.yaml", "concurrency:", "launch:\n  script: scripts/serve-tiny.sh\nconcurrency:")
    base = commit(repo, "a launch script")
    edit(repo, "scripts/serve-tiny.sh", "exec vllm", "exec nice vllm")
    plan = plan_change(repo, base, commit(repo, "change the script"))
    assert touched_names(plan) == ["tiny-cpu"]
    assert list(map(str, plan.touched[0].reasons)) == ["uses scripts/serve-tiny.sh, which changed"]


def test_an_unrelated_change_plans_nothing(repo):
    base = git(repo, "rev-parse", "HEAD")
    edit(repo, "README.md", "sample", "sample, reworded")
    plan = plan_change(repo, base, commit(repo, "docs"))
    assert plan.touched == [] and plan.jobs == []


def test_the_working_tree_is_the_default_head(repo):
    base = git(repo, "rev-parse", "HEAD")
    edit(repo, "recipes/gpu-smoke-vllm.yaml", "min_prompts: 128", "min_prompts: 160")
    plan = plan_change(repo, base)
    assert touched_names(plan) == ["gpu-smoke-vllm"] and plan.head == "working tree"


def test_a_broken_recipe_at_head_is_one_error_not_a_plan(repo):
    base = git(repo, "rev-parse", "HEAD")
    edit(repo, "recipes/tiny-cpu.yaml", "  isl: 128", "  isl: 128\n  isll: 256")
    head = commit(repo, "typo")
    with pytest.raises(RecipeError) as caught:
        plan_change(repo, base, head)
    (problem,) = caught.value.problems
    assert (problem.file, problem.field) == ("recipes/tiny-cpu.yaml", "workload.isll")
    lines = (repo / "recipes" / "tiny-cpu.yaml").read_text().splitlines()
    assert lines[problem.line - 1] == "  isll: 256" and "isl" in problem.accepted


def test_a_recipe_broken_at_base_and_fixed_at_head_is_touched(repo):
    edit(repo, "recipes/tiny-cpu.yaml", "  isl: 128", "  isl: many")
    base = commit(repo, "broken")
    edit(repo, "recipes/tiny-cpu.yaml", "  isl: many", "  isl: 128")
    plan = plan_change(repo, base, commit(repo, "fixed"))
    assert list(map(str, plan.touched[0].reasons)) == ["recipe was invalid on the base revision"]


def test_an_unknown_revision_is_a_plan_error(repo):
    with pytest.raises(PlanError, match="unknown revision"):
        plan_change(repo, "no-such-branch", "HEAD")


def test_explicit_recipe_globs_plan_those_recipes_touched_or_not(repo):
    base = git(repo, "rev-parse", "HEAD")
    head = commit(repo, "nothing")
    plan = plan_change(repo, base, head, PlanFilters(recipes=("gpu-smoke-*",)))
    assert planned_recipes(plan) == ["gpu-smoke-e2e", "gpu-smoke-sglang", "gpu-smoke-sglang-e2e",
                                     "gpu-smoke-vllm"] and plan.touched == []
