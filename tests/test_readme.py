"""README.md keeps its generated parts current and shows the two set-up commands CI runs."""
import re
from pathlib import Path

from bot.control.help_docs import render_docs

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def block(name: str) -> str:
    match = re.search(rf"<!-- {name}:start -->\n(.*?)\n<!-- {name}:end -->", README, re.S)
    assert match, f"README.md has no {name} block"
    return match.group(1)


def test_command_reference_is_generated_from_the_registry():
    english = render_docs().split("## English", 1)[1].split("## 简体中文", 1)[0].strip()
    assert block("commands") == english, "README's command reference is stale: regenerate it from bot.core.commands"


def test_configuration_reference_is_the_shipped_config():
    shipped = (ROOT / ".github" / "recipe-bot.yaml").read_text(encoding="utf-8").rstrip()
    assert block("config") == f"```yaml\n{shipped}\n```"


def test_the_two_setup_commands_are_the_ones_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for command in ("scripts/dev demo", "scripts/dev test"):
        assert command in README
        assert command in ci
    assert "recipe-bot demo" in README


def test_a_newcomer_reads_the_prerequisites_before_the_architecture():
    before = README.index("## Before you start")
    assert before < README.index("PR comment / label ──► events") and before < README.index("| package | what it holds |")
    for needed in ("Python ≥ 3.11", "npm", "root with `apt-get`", "4 GB of disk", "dpkg lock"):
        assert needed in README[before:README.index("## How it works")], needed


def test_each_command_says_what_it_installs_how_long_it_takes_and_where_the_figure_comes_from():
    table = README.split("How long each command takes", 1)[1].split("**`recipe-bot` on your `PATH`.**", 1)[0]
    for command in ("`scripts/dev demo`", "`scripts/dev test`", "`scripts/dev setup`"):
        row = next(line for line in table.splitlines() if line.startswith(f"| {command}"))
        assert re.search(r"\*\*[\d.,]+ (?:s|min)", row), row  # a measured figure
        assert "bench/" in row or "issue #41" in row, row  # and its source
    assert ".venv/" in table and ".engine/" in table and ".upstream/" in table


def test_the_readme_says_how_to_put_recipe_bot_on_path_and_the_walkthrough_runs_from_shipped_files():
    assert "source .venv/bin/activate" in README and ".venv/bin/recipe-bot" in README
    assert "--seed demo/seed.yaml" in README and (ROOT / "demo" / "seed.yaml").is_file()
    assert "--deliver http://127.0.0.1:8080/" in README and "recipe-bot serve --port 8080" in README
