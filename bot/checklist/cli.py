"""`recipe-bot checklist verify --pr N [--sha S]`: the sign-off verdict for a PR's head, posted like the handler does."""
from __future__ import annotations

import sys

import click

from bot.checklist.hooks import verify_cli
from bot.core.cli_guard import HELP_OPTIONS
from bot.core.config import ConfigError
from bot.core.github import GitHubClient, GitHubError
from bot.core.markers import is_full_sha
from bot.core.messages import Message, msg


def _fail(message: Message) -> None:
    click.echo(f"recipe-bot: {message.render('en')}\nrecipe-bot: {message.render('zh')}", err=True)
    sys.exit(2)


@click.group("checklist", context_settings=HELP_OPTIONS)
def checklist_cmd() -> None:
    """The PR_REVIEW_CHECKLIST sign-off (check `recipe-bot / sign-off`)."""


@checklist_cmd.command("verify", context_settings=HELP_OPTIONS)
@click.option("--pr", type=int, required=True, help="Pull request number.")
@click.option("--sha", help="Verify only if this full 40-hex SHA is still the PR's head (e.g. after a GPU run).")
@click.option("--dry-run", is_flag=True, help="Make no write to GitHub; print each intended write as one JSON line.")
def verify_cmd(pr: int, sha: str | None, dry_run: bool) -> None:
    """Find the latest sign-off for the PR's head commit, check it by rules, and post the verdict:
    one bilingual comment per head SHA (edited in place) and the `recipe-bot / sign-off` check run.

    Reads GITHUB_API_URL, GITHUB_TOKEN and GITHUB_REPOSITORY like any Actions step.
    """

    if pr <= 0:
        _fail(msg("--pr %(pr)s: a pull request number is a positive integer", pr=pr))
    if sha is not None and not is_full_sha(sha):
        _fail(msg("--sha %(sha)s: write the full 40-character hexadecimal commit SHA", sha=repr(sha)))
    try:
        client = GitHubClient.from_env(dry_run=dry_run)
        result = verify_cli(client, pr, sha)
    except ConfigError as exc:
        _fail(exc.located)
        return
    except GitHubError as exc:
        _fail(msg("GitHub: %(failure)s", failure=exc.message))
        return
    for line in result.log:
        click.echo(f"recipe-bot: {line}", err=True)
    click.echo(result.state)
