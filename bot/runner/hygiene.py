"""Which machines may run a pull request's code: on self-hosted Actions runners, ephemeral ones only.

A persistent runner keeps what one job leaves behind (files in the work folder, a process that
outlives the job, a poisoned cache) for the next job, which may be a release or another PR. So a
self-hosted runner says it is ephemeral (registered with `--ephemeral`, or one job per fresh VM or
container) by setting RECIPE_BOT_RUNNER_EPHEMERAL=1 in its environment; the repository config on the
default branch may allow persistent runners instead (`pr_jobs.allow_persistent_runners: true`).
Outside GitHub Actions (a developer's machine, Slurm by hand) nothing is checked.
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from bot.core.config import load_config
from bot.core.messages import Message, msg
from bot.core.settings import Settings

EPHEMERAL_ENV = "RECIPE_BOT_RUNNER_EPHEMERAL"


def allows_persistent(config_path: Path | None) -> bool:
    """`pr_jobs.allow_persistent_runners` of the default branch's config (False when there is none)."""
    if config_path is None or not config_path.is_file():
        return False

    return load_config(config_path.read_text(encoding="utf-8"), str(config_path)).pr_jobs.allow_persistent_runners


def runner_refusal(env: Mapping[str, str], settings: Settings, *, allow_persistent: bool) -> Message | None:
    """Why this machine must not run PR code, or None when it may (env: the Actions runner's own
    variables; settings: RECIPE_BOT_RUNNER_EPHEMERAL as the command read it)."""
    if env.get("GITHUB_ACTIONS") != "true" or env.get("RUNNER_ENVIRONMENT") != "self-hosted":
        return None
    if settings.RUNNER_EPHEMERAL == "1" or allow_persistent:
        return None
    name = env["RUNNER_NAME"] if "RUNNER_NAME" in env else msg("this runner")
    return msg("refusing to run pull request code on %(name)s: a self-hosted runner must be ephemeral (set "
               "%(var)s=1 where it is), or .github/recipe-bot.yaml on the default branch must set "
               "pr_jobs.allow_persistent_runners: true. See docs/security.md.", name=name, var=EPHEMERAL_ENV)
