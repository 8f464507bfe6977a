"""A PR that changes InferenceX's own planner: its rows are held until /approve-planner, then the head's
planner plans them within the approved GPU-hours (bot/plan/own_planner.py)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli import main
from bot.inferencex.own_tools import changed_tool_files, planner_files
from bot.plan import plan_change
from bot.plan.own_planner import PlannerGrant
from bot.recipes.sources import GitSource
from ix_repo_helpers import append_entry, commit, edit, make_repo

VLLM = "tinyq-bf16-cpu-vllm"
PROCESSOR = "utils/process_changelog.py"
# The head's processor plans only the first row: a planner whose rows the base's does not plan.
ONE_ROW = ("    if args.trim_conc:\n", "    throughput, evals = throughput[:1], []\n    if args.trim_conc:\n")
# The head's processor plans an append-only entry as a plain one, so it may name a config the base lacks
# (InferenceX #2614's class: a changelog the base's processor refuses).
NEW_RULE = ("    entries = yaml.safe_load(text)\n",
            '    entries = [{k: v for k, v in e.items() if k != "append-only"} for e in yaml.safe_load(text)]\n')


@pytest.fixture
def ix(tmp_path: Path) -> tuple[Path, str]:
    return make_repo(tmp_path)


def _rows(plan) -> list[dict]:
    ix = plan.inferencex
    return [e.row for m in ix.matrices for e in m.include] + ([ix.canary.row] if ix.canary else [])


def _one_row_pr(repo: Path) -> str:
    edit(repo, PROCESSOR, *ONE_ROW)
    return append_entry(repo, [VLLM])


def _sha(repo: Path, rev: str) -> str:
    return GitSource(repo, rev).sha


def test_a_pr_editing_the_processor_holds_every_inferencex_row_and_names_the_approval(ix):
    repo, base = ix
    head = _one_row_pr(repo)
    plan = plan_change(repo, base, head)
    held = plan.inferencex.held
    assert held and not plan.inferencex.matrices and plan.inferencex.canary is None
    assert len(held) > 1  # what the base's tools plan, shown, not run
    assert [r for r in plan.recipes if r.source == "inferencex"] == [] and plan.gpu_hours == 0
    note = str(plan.notes[0])
    assert note.startswith("held: this pull request changes InferenceX's own planner (utils/process_changelog.py)")
    assert f"the base's tools plan {len(held)} row(s)" in note
    assert f"`/approve-planner {_sha(repo, head)} --max-gpu-hours " in note


def test_the_approved_head_is_planned_by_its_own_planner(ix):
    repo, base = ix
    head = _one_row_pr(repo)
    plan = plan_change(repo, base, head, planner=PlannerGrant(_sha(repo, head), 1000.0))
    assert plan.inferencex.held == []
    assert len(_rows(plan)) == 1  # the head's processor: one row, where the base's plans several
    assert str(plan.notes[0]).startswith("InferenceX rows planned by this pull request's own planner")
    assert plan.gpu_hours > 0


def test_rows_over_the_approved_gpu_hours_stay_held_with_the_cap_that_covers_them(ix):
    repo, base = ix
    head = _one_row_pr(repo)
    plan = plan_change(repo, base, head, planner=PlannerGrant(_sha(repo, head), 0.001))
    assert len(plan.inferencex.held) == 1 and not _rows(plan) and plan.gpu_hours == 0
    note = str(plan.notes[0])
    assert "more than the 0.001 its approval allows" in note
    assert f"`/approve-planner {_sha(repo, head)} --max-gpu-hours 1`" in note


def test_the_base_tools_refusing_the_head_is_named_and_the_approved_head_plans_it(ix):
    repo, base = ix
    edit(repo, PROCESSOR, *NEW_RULE)
    block = (repo / "configs/cpu-master.yaml").read_text().split(f"{VLLM}:\n", 1)[1].split("\n\n", 1)[0]
    with open(repo / "configs/cpu-master.yaml", "a") as handle:
        handle.write(f"\ntinyq-bf16-cpu-vllm-new:\n{block}\n")
    head = append_entry(repo, ["tinyq-bf16-cpu-vllm-new"], "  append-only: true\n")
    plan = plan_change(repo, base, head)
    note = str(plan.notes[0])
    assert "the base's tools cannot plan this head" in note and "append-only requires" in note
    assert plan.inferencex.held == [] and not _rows(plan)
    approved = plan_change(repo, base, head, planner=PlannerGrant(_sha(repo, head), 1000.0))
    ix = approved.inferencex
    recipes = {e.recipe for m in ix.matrices for e in m.include} | ({ix.canary.recipe} if ix.canary else set())
    assert recipes == {"tinyq-bf16-cpu-vllm-new"}


# Named negatives: approvals that do not apply, and changes beside the planner that hold nothing.
def test_an_approval_of_another_commit_is_ignored_and_the_rows_stay_held(ix):
    repo, base = ix
    head = _one_row_pr(repo)
    plan = plan_change(repo, base, head, planner=PlannerGrant(_sha(repo, base), 1000.0))
    assert plan.inferencex.held and not _rows(plan)
    assert any(str(n).startswith(f"the planner approval for {_sha(repo, base)} is ignored: the head is")
               for n in plan.notes)


@pytest.mark.parametrize("path", ["utils/plot_results.py", "utils/test_process_changelog.py",
                                  "utils/matrix_logic/test_generate_sweep_configs.py"])
def test_a_tool_file_the_planner_does_not_import_holds_nothing(ix, path):
    repo, base = ix
    (repo / path).write_text("print('not imported by the processor or the generator')\n")
    head = append_entry(repo, [VLLM])
    assert changed_tool_files(GitSource(repo, base), GitSource(repo, head)) == []
    plan = plan_change(repo, base, head)
    assert plan.inferencex.held == [] and _rows(plan)


def test_a_file_the_processor_imports_is_part_of_the_planner(ix):
    repo, base = ix
    assert {"utils/constants.py", PROCESSOR, "utils/matrix_logic/generate_sweep_configs.py"} <= planner_files(
        GitSource(repo, base))
    edit(repo, "utils/constants.py", "RUNNER_CONFIG = ", "# a comment\nRUNNER_CONFIG = ")
    head = append_entry(repo, [VLLM])
    assert changed_tool_files(GitSource(repo, base), GitSource(repo, head)) == ["utils/constants.py"]
    assert plan_change(repo, base, head).inferencex.held


def test_the_plan_cli_takes_the_approval_and_refuses_a_malformed_one(ix):
    repo, base = ix
    head = _one_row_pr(repo)
    sha = _sha(repo, head)
    args = ["plan", "--repo", str(repo), "--base", base, "--head", head, "--format", "json"]
    held = json.loads(CliRunner().invoke(main, args).output)
    assert held["inferencex"]["held"]
    assert held["inferencex"]["planner"]["files"] == [PROCESSOR] and held["inferencex"]["planner"]["tools"] == "base"
    assert held["inferencex"]["planner"]["held"] is True and held["inferencex"]["planner"]["note"]["id"].startswith(
        "held: this pull request changes InferenceX's own planner")
    approved = json.loads(CliRunner().invoke(main, [*args, "--approved-planner", sha,
                                                    "--planner-max-gpu-hours", "1000"]).output)
    assert approved["inferencex"]["held"] == [] and len(approved["inferencex"]["matrices"]) + (
        approved["inferencex"]["canary"] is not None) >= 1
    assert approved["inferencex"]["planner"]["tools"] == "head" and approved["inferencex"]["planner"]["held"] is False
    unset = json.loads(CliRunner().invoke(main, [*args, "--approved-planner", "", "--planner-max-gpu-hours", ""]).output)
    assert unset["inferencex"]["held"]  # the workflow passes empty inputs when nobody approved
    for bad, named in ((["--approved-planner", sha[:12], "--planner-max-gpu-hours", "5"], "--approved-planner"),
                       (["--approved-planner", sha], "--planner-max-gpu-hours"),
                       (["--approved-planner", sha, "--planner-max-gpu-hours", "-3"], "--planner-max-gpu-hours"),
                       (["--approved-planner", sha, "--planner-max-gpu-hours", "nan"], "--planner-max-gpu-hours")):
        result = CliRunner().invoke(main, [*args, *bad])
        assert result.exit_code == 2 and named in result.output and "Traceback" not in result.output
        assert "的值无效" in result.output
