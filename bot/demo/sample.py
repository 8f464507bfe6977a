"""The demo's sample benchmark repository: the project's own tiny-cpu recipe, and a PR that tunes it."""
from __future__ import annotations

from pathlib import Path

import yaml

PROJECT_ROOT = Path(__file__).resolve().parents[2]
RECIPE_FILES = ("recipes/tiny-cpu.yaml", "recipes/_base/tiny-cpu.yaml", "recipes/_runners.yaml")
BOT_LOGIN = "recipe-bot[bot]"
MAINTAINER = "alice"
AUTHOR = "carol"
PR_NUMBER = 7
# The PR's change: one more output token per request, so the touched-recipe detection has a real
# semantic change to find and the report a fresh point to show.
ORIGINAL_OSL = "osl: 32"
CHANGED_OSL = "osl: 48"


class SampleRepoError(RuntimeError):
    pass


def _read(rel: str) -> str:
    path = PROJECT_ROOT / rel
    if not path.is_file():
        raise SampleRepoError(
            f"{path} is missing: `recipe-bot demo` builds its sample repository from the recipes of a "
            "recipe-bot checkout; run it from a clone (scripts/dev demo)")
    return path.read_text(encoding="utf-8")


# What the demo's maintainer posts, and so what its merge gate requires: the gate is one verdict for
# every required command, and the shipped config requires the full /sweep (six points, minutes more).
DEMO_COMMAND = "/sweep tiny-cpu --conc 1,4,16"


def repo_config(required: tuple[str, ...] | None = (DEMO_COMMAND,)) -> str:
    """The project's own .github/recipe-bot.yaml, acting as the sandbox's bot login; its gate requires
    REQUIRED (the demo's command by default; None keeps the shipped requirement)."""
    config = yaml.safe_load(_read(".github/recipe-bot.yaml"))
    config["bot_login"] = BOT_LOGIN
    if required is not None:
        config["gate"] = {**(config.get("gate") or {}), "required": list(required)}
    return "# recipe-bot's configuration for the demo repository\n" + yaml.safe_dump(config, sort_keys=False)


def main_files() -> dict[str, str]:
    files = {rel: _read(rel) for rel in RECIPE_FILES}
    files[".github/recipe-bot.yaml"] = repo_config()
    files["README.md"] = "# acme/bench\n\nA sample benchmark repository for `recipe-bot demo`.\n"
    return files


def feature_files() -> dict[str, str | None]:
    recipe = _read("recipes/tiny-cpu.yaml")
    if ORIGINAL_OSL not in recipe:
        raise SampleRepoError(f"recipes/tiny-cpu.yaml no longer has `{ORIGINAL_OSL}`; update bot/demo/sample.py")
    return {"recipes/tiny-cpu.yaml": recipe.replace(ORIGINAL_OSL, CHANGED_OSL)}


def seed_overrides() -> dict[str, object]:
    return {
        "bot": BOT_LOGIN,
        "users": {MAINTAINER: "admin", AUTHOR: "write", "bob": "read", "mallory": "none"},
        "pulls": [{"number": PR_NUMBER, "head": "feature", "base": "main", "author": AUTHOR, "fork": False,
                   "draft": False, "title": "tiny-cpu: longer outputs", "body": "Tunes the tiny recipe.",
                   "labels": [], "comments": []}],
    }
