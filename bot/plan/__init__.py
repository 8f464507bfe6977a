"""Planning: which recipes a change touches and the GPU jobs they need (packed, filtered, in matrices)."""
from bot.plan.model import Matrix, MatrixEntry, Plan, PlanError, PlanFilters, RecipePlan, TouchedRecipe
from bot.plan.planner import plan_catalog, plan_change

__all__ = [
    "Matrix", "MatrixEntry", "Plan", "PlanError", "PlanFilters", "RecipePlan", "TouchedRecipe", "plan_catalog",
    "plan_change",
]
