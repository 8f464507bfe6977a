"""Recipes: the native YAML format, its strict schema, `include:` bases and the catalog of a repository."""
from bot.recipes.catalog import Catalog, CatalogEntry, load_recipes
from bot.recipes.errors import RecipeError, RecipeProblem
from bot.recipes.schema import E2ESuite, Recipe, SweepRecipe

__all__ = [
    "Catalog", "CatalogEntry", "E2ESuite", "Recipe", "RecipeError", "RecipeProblem", "SweepRecipe", "load_recipes",
]
