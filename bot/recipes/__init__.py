"""Recipes: the native YAML format, its strict schema, `include:` bases and the catalog of a repository."""
from bot.recipes.catalog import Catalog, CatalogEntry, load_recipes
from bot.recipes.errors import RecipeError, RecipeProblem

__all__ = [
    "Catalog", "CatalogEntry", "E2ESuite", "Recipe", "RecipeError", "RecipeProblem", "SweepRecipe", "load_recipes",
]


def __getattr__(name: str) -> object:
    # The schema's pydantic models load on first use: `bot.recipes.sources` or the catalog of an
    # InferenceX-only repository never need them.
    if name in ("E2ESuite", "Recipe", "SweepRecipe"):
        from bot.recipes import schema

        return getattr(schema, name)
    raise AttributeError(f"module 'bot.recipes' has no attribute {name!r}")
