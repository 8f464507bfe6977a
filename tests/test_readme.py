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
    assert block("commands") == english, "README's command reference is stale: regenerate it from bot.control.commands"


def test_configuration_reference_is_the_shipped_config():
    shipped = (ROOT / ".github" / "recipe-bot.yaml").read_text(encoding="utf-8").rstrip()
    assert block("config") == f"```yaml\n{shipped}\n```"


def test_the_two_setup_commands_are_the_ones_ci_runs():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for command in ("scripts/dev demo", "scripts/dev test"):
        assert command in README
        assert command in ci
    assert "recipe-bot demo" in README
