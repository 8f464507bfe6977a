"""docs/commands.md, written from the command registry and the default repository config."""
from __future__ import annotations

import click

from bot.core import i18n
from bot.core.cli_guard import HELP_OPTIONS
from bot.core.config import RepoConfig
from bot.core import commands


def render_docs() -> str:
    """docs/commands.md: the same registry and templates as /help, with the default config."""
    config = RepoConfig()
    signoff_check = "recipe-bot / sign-off"  # bot/checklist/render.py CHECK_NAME
    context = {"rows": commands.help_rows(), "topic": None, "labels": sorted(config.labels.items()),
               "head_sha": None}
    return (
        "# recipe-bot commands\n\n"
        "<!-- Generated from bot/core/commands.py by `recipe-bot ci commands-doc > docs/commands.md`; "
        "tests/test_commands.py checks it is current. -->\n\n"
        "Permissions shown are the defaults; `.github/recipe-bot.yaml` (`permissions:`, `labels:`) "
        "changes them per repository, and `/help` on a PR shows that repository's values.\n\n"
        "## English\n\n" + i18n.render("control/help", "en", **context) + "\n\n"
        + i18n.render("checklist/help", "en", check=signoff_check) + "\n\n"
        "## 简体中文\n\n" + i18n.render("control/help", "zh", **context) + "\n\n"
        + i18n.render("checklist/help", "zh", check=signoff_check) + "\n"
    )


@click.command("commands-doc", context_settings=HELP_OPTIONS)
def commands_doc_cmd() -> None:
    """Print docs/commands.md (`recipe-bot ci commands-doc > docs/commands.md`)."""
    click.echo(render_docs(), nl=False)
