"""A repository's whole catalog: its native recipes and, in an InferenceX checkout, its InferenceX configs."""
from __future__ import annotations

from pathlib import Path

from bot.inferencex.repo import load_inferencex
from bot.recipes.catalog import Catalog, raise_problems, read_catalog
from bot.recipes.errors import RecipeError
from bot.recipes.sources import Source


def load_catalog(repo: Path | str | Source, rev: str | None = None, *, inferencex: bool = True) -> Catalog:
    """Every recipe of a repository (a directory, or `rev` of a git repository), validated, and with
    `inferencex` its InferenceX configs (catalog.inferencex, None outside an InferenceX checkout).

    Raises RecipeError listing one problem per broken file, of either kind; nothing is half-loaded.
    """
    catalog, problems = read_catalog(repo, rev)
    if inferencex:
        try:
            catalog.inferencex = load_inferencex(catalog.source)
        except RecipeError as exc:
            problems.extend(exc.problems)
    raise_problems(problems)
    return catalog
