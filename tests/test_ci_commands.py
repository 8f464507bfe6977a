"""`recipe-bot ci …`: every step the shipped workflows run is a documented subcommand, not a hidden module path."""
import pathlib
import re

import pytest
from click.testing import CliRunner

from bot.cli import CI_SUBCOMMANDS, main

ROOT = pathlib.Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))


@pytest.mark.parametrize("name", sorted(CI_SUBCOMMANDS))
def test_each_ci_subcommand_answers_dash_h_with_its_usage(name):
    done = CliRunner().invoke(main, ["ci", name, "-h"], prog_name="recipe-bot")
    assert done.exit_code == 0, done.output
    assert f"Usage: recipe-bot ci {name}" in done.output


def test_ci_lists_every_subcommand():
    done = CliRunner().invoke(main, ["ci", "-h"], prog_name="recipe-bot")
    assert done.exit_code == 0, done.output
    assert all(name in done.output for name in CI_SUBCOMMANDS)


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_the_workflows_call_the_bot_only_through_its_command_line(workflow):
    text = workflow.read_text(encoding="utf-8")
    assert not re.search(r"-m bot\b", text), "a workflow calls a module path: make it a `recipe-bot ci` subcommand"


def test_every_ci_subcommand_a_workflow_calls_exists():
    called = {m for w in WORKFLOWS for m in re.findall(r"\bci ([a-z][a-z-]+)", w.read_text(encoding="utf-8"))}
    assert called and called <= set(CI_SUBCOMMANDS)


def test_plan_failed_refuses_a_short_sha_in_both_languages(tmp_path):
    done = CliRunner().invoke(main, ["ci", "plan-failed", "abc123", str(tmp_path / "plan.json")], prog_name="recipe-bot")
    assert done.exit_code == 2
    assert "not a full commit SHA" in done.output and "不是完整的提交 SHA" in done.output
