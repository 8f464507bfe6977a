"""`plan_change`: from a repository and a base..head change to the jobs, matrices and GPU-hours it needs."""
from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import TYPE_CHECKING

from bot.core.messages import Message, msg
from bot.inferencex.catalog import load_catalog
from bot.inferencex.own_tools import GENERATOR, PROCESSOR
from bot.plan.expand import expand
from bot.plan.ids import check_globs, job_id
from bot.plan.inferencex_plan import plan_inferencex
from bot.plan.matrix import matrices_for
from bot.plan.model import InferenceXPlan, MatrixEntry, Plan, PlanError, PlanFilters, RecipePlan, TouchedRecipe
from bot.plan.own_planner import PlannerGrant, settle, whose_tools
from bot.plan.touched import Touched, touched_native
from bot.recipes.catalog import Catalog
from bot.recipes.errors import RecipeError
from bot.recipes.schema import SweepRecipe
from bot.recipes.sources import Source, SourceError, changed_paths, open_source

if TYPE_CHECKING:
    from bot.core.jobs import Job

TOOLS = (PROCESSOR, GENERATOR)  # the InferenceX tools whose failure a RecipeError names

# Native recipes' models (pydantic) are imported where a native recipe is planned, never for an
# InferenceX-only repository: its plan needs none of them.


def _select(names: list[str], filters: PlanFilters, touched: Touched | None) -> list[str]:
    if filters.recipes:
        return [n for n in names if any(fnmatch.fnmatchcase(n, g) for g in filters.recipes)]
    if touched is None:
        return list(names)
    return [n for n in names if n in touched.reasons]


def _named(catalog: Catalog, name: str, filters: PlanFilters) -> bool:
    """`/e2e <suite>` or `/e2e <case>` names what to run: it runs whether the change touched it or not."""

    recipe = catalog.entries[name].recipe
    if not filters.cases or isinstance(recipe, SweepRecipe):
        return False
    names = [name, *(case.name for case in recipe.cases)]
    return any(fnmatch.fnmatchcase(n, glob) for n in names for glob in filters.cases)


def _kind_ok(catalog: Catalog, name: str, filters: PlanFilters) -> bool:
    kind = "sweep" if isinstance(catalog.entries[name].recipe, SweepRecipe) else "e2e"
    return filters.kind in ("all", kind)


def _costs(catalog: Catalog, job: Job) -> tuple[float, float]:
    """GPU-hours of one launch's start-up and of one of its points, from the recipe's estimate."""

    recipe = catalog.entries[job.recipe].recipe
    point_s = ((recipe.workload.duration_s or recipe.estimate.point_s) * recipe.workload.repeats
               if isinstance(recipe, SweepRecipe) else 0.0)
    return job.gpus * recipe.estimate.startup_s / 3600.0, job.gpus * point_s / 3600.0


def pick_canary(catalog: Catalog, jobs: list[Job]) -> tuple[Job | None, list[Job], bool]:
    """The sweep point with the lowest concurrency runs first, alone; it leaves its packed job.

    Returns the canary, the other jobs, and whether the canary is a launch of its own (split off).
    """

    candidates = [(p.concurrency, i, p) for i, j in enumerate(jobs) if j.kind == "sweep" for p in j.points]
    if not candidates:
        return None, jobs, False
    _, index, point = min(candidates, key=lambda item: (item[0], item[1]))
    source = jobs[index]
    case = source.cases[0]
    rest = [p for p in case.points if p.point_id != point.point_id]
    if not rest and case.accuracy is None:
        return source, jobs[:index] + jobs[index + 1:], False
    startup_h, point_h = _costs(catalog, source)
    recipe = catalog.entries[source.recipe].recipe
    point_s = (recipe.workload.duration_s or recipe.estimate.point_s) if isinstance(recipe, SweepRecipe) else 0.0
    seconds = {"canary": recipe.estimate.startup_s + point_s,
               "rest": None if source.estimate_s is None else source.estimate_s - point_s}
    canary = source.model_copy(update={
        "estimate_s": seconds["canary"],
        "job_id": job_id(source.recipe, case.name, f"c{point.concurrency}", "canary"),
        "cases": [case.model_copy(update={"name": f"{case.name}-canary", "points": [point], "accuracy": None})],
        "estimated_gpu_hours": round(startup_h + point_h, 4),
    })
    trimmed = source.model_copy(update={
        "cases": [case.model_copy(update={"points": rest})],
        "estimated_gpu_hours": round(max(0.0, source.estimated_gpu_hours - point_h), 4),
        "estimate_s": seconds["rest"],
    })
    return canary, [*jobs[:index], trimmed, *jobs[index + 1:]], True


def _entry(job: Job) -> MatrixEntry:
    return MatrixEntry(job_id=job.job_id, recipe=job.recipe, runner_label=job.runner_label, job=job)


def manual_reason(catalog: Catalog, name: str) -> str | None:
    """A suite marked `manual:` runs only when a command names it, never for a touch (the gate)."""
    return getattr(catalog.entries[name].recipe, "manual", None)


def plan_native(catalog: Catalog, filters: PlanFilters, touched: Touched | None) -> Plan:
    names = catalog.names()
    named = {n for n in names if _named(catalog, n, filters)}
    if filters.recipes:
        named |= set(_select(names, filters, touched))
    picked = set(_select(names, filters, touched)) | named
    plan = Plan(base=None, head=catalog.source.label, filters=filters)
    for name in sorted(picked - named):
        reason = manual_reason(catalog, name)
        if reason is not None:
            picked.discard(name)
            plan.notes.append(msg("%(name)s: manual (%(reason)s); not required by the gate; run it with /e2e %(name)s",
                                  name=name, reason=reason))
    selected = [n for n in names if n in picked and _kind_ok(catalog, n, filters)]
    jobs: list[Job] = []
    for name in selected:
        entry = catalog.entries[name]
        runner = catalog.runners.runners.get(entry.recipe.runner) if catalog.runners else None
        expanded = expand(entry, runner, filters)
        plan.notes.extend(expanded.notes)
        if manual_reason(catalog, name) is not None:
            plan.notes.append(msg("%(name)s: manual (%(reason)s); run on command, not required by the gate",
                                  name=name, reason=manual_reason(catalog, name)))
        if not expanded.jobs:
            continue
        jobs.extend(expanded.jobs)
        plan.recipes.append(RecipePlan(
            recipe=name, source="recipe", kind=entry.recipe.kind, runner_label=entry.recipe.runner,
            jobs=len(expanded.jobs), points=expanded.points,
            server_launches=sum(j.server_launches for j in expanded.jobs),
            packed_launches=expanded.packed_launches, unpacked_launches=expanded.unpacked_launches,
            gpu_hours=round(sum(j.estimated_gpu_hours for j in expanded.jobs), 4), fingerprint=entry.fingerprint,
        ))
    sweep_jobs = sum(1 for j in jobs if j.kind == "sweep")
    use_canary = filters.canary if filters.canary is not None else (filters.scope == "full" and sweep_jobs > 1)
    canary = None
    split = False
    if use_canary and not filters.evals_only:
        canary, jobs, split = pick_canary(catalog, jobs)
    if canary is not None:
        plan.canary = _entry(canary)
        plan.notes.append(msg("canary: %(job)s runs first; the other jobs wait for it", job=canary.job_id))
        if split:
            row = next(r for r in plan.recipes if r.recipe == canary.recipe)
            row.jobs += 1
            row.server_launches += 1
            row.gpu_hours = round(row.gpu_hours + _costs(catalog, canary)[0], 4)
    plan.jobs = [*([canary] if canary else []), *jobs]
    fail_fast = {}
    for job in jobs:
        fail_fast[job.runner_label] = fail_fast.get(job.runner_label, False) or job.fail_fast
    plan.matrices = matrices_for([_entry(j) for j in jobs], filters.max_matrix_jobs, fail_fast)
    plan.gpu_hours = round(sum(j.estimated_gpu_hours for j in plan.jobs), 4)
    return plan


def plan_catalog(catalog: Catalog, filters: PlanFilters | None = None) -> Plan:
    """Plan every recipe of a loaded catalog (no base to compare with), narrowed by the filters."""
    return plan_change_sources(catalog, None, filters or PlanFilters())


def plan_change_sources(catalog: Catalog, base: Source | None, filters: PlanFilters,
                        planner: PlannerGrant | None = None) -> Plan:
    """The plan of `catalog` (the head) against `base`; `planner`: the approval of the head's own InferenceX
    planner, which the control plane passes (bot/plan/own_planner.py)."""
    native_names = catalog.names()
    ix_names = sorted(catalog.inferencex.configs) if catalog.inferencex else []
    check_globs(filters.recipes, [*native_names, *ix_names], "recipe")
    touched = None
    changed: set[str] = set()
    if base is not None:
        changed = changed_paths(base, catalog.source)
        touched = touched_native(catalog, base, changed)
    plan = plan_native(catalog, filters, touched)
    plan.base = base.label if base is not None else None
    if touched is not None:
        plan.notes[:0] = touched.notes
        for name in sorted(touched.reasons):
            entry = catalog.entries[name]
            plan.touched.append(TouchedRecipe(
                name=name, source="recipe", runner_label=entry.recipe.runner, reasons=touched.reasons[name],
                fingerprint=entry.fingerprint, base_fingerprint=touched.base_fingerprints.get(name),
            ))
    else:
        plan.notes.insert(0, msg("no base revision: every recipe of the catalog is planned"))
    if catalog.inferencex is not None:
        _plan_inferencex(plan, catalog, base, changed, filters, planner)
    return plan


def _plan_inferencex(plan: Plan, catalog: Catalog, base: Source | None, changed: set[str], filters: PlanFilters,
                     planner: PlannerGrant | None) -> None:
    """The InferenceX rows, by the base's tools or, for a head whose own planner is approved, the head's."""
    change = whose_tools(plan, base, catalog.source, planner)
    failure = None
    try:
        plan_inferencex(plan, catalog.inferencex, catalog.source, base, changed, filters, catalog.runners,
                        tools=change.tools)
    except RecipeError as exc:
        # the base's tools may refuse what the head's planner adds (a new changelog field): the rows wait
        if not change.waits or not all(p.file in TOOLS for p in exc.problems):
            raise
        failure = exc
        plan.inferencex = InferenceXPlan()
    settle(plan, change, failure)


def plan_change(
    repo_dir: Path | str,
    base: str | None = None,
    head: str | None = None,
    filters: PlanFilters | None = None,
    planner: PlannerGrant | None = None,
) -> Plan:
    """Which recipes `base..head` touches and the jobs they need (head None: the working tree).

    Raises RecipeError for a broken recipe or config at head, PlanError for an impossible request.
    """
    repo = Path(repo_dir)
    if not repo.is_dir():
        raise PlanError(msg("--repo %(repo)s: no such directory; give the root of a repository that has a recipes/ "
                            "folder", repo=str(repo)))
    try:
        head_source = open_source(repo, head)
        base_source = open_source(repo, base) if base is not None else None
    except SourceError as exc:
        raise PlanError(exc.args[0] if exc.args and isinstance(exc.args[0], Message) else str(exc)) from None
    catalog = load_catalog(head_source)
    if not catalog.entries and catalog.inferencex is None:
        raise PlanError(msg("--repo %(repo)s: no recipes here (no recipes/*.yaml and no InferenceX configs); give the "
                            "root of a repository that has a recipes/ folder", repo=str(repo)))
    return plan_change_sources(catalog, base_source, filters or PlanFilters(), planner)
