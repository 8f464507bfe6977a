"""The cost of a GPU command before it starts: plan the authorized head commit's recipes as data, sum the GPU-hours.

The control plane never runs PR code: it reads the head commit's files (from the local checkout's git
objects, or through the contents API) and plans them exactly as the GPU workflow's plan job does
(`recipe-bot plan --base <merge-base> --head <sha> --command <line>`). The GPU-hours are the planner's:
per job, GPUs × (start-up + points × seconds a point + accuracy), from each recipe's `estimate:` (or its
workload's `duration_s`); InferenceX rows use bot/inferencex/launches.py's planning assumptions.
Only the default branch's recipe is believed about its own speed: a recipe whose estimate the PR sets
(a new recipe, or a changed `estimate:` / `duration_s`) counts at least the time limits of its jobs.
"""
from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the handler imports the budget, which imports this module: annotations only
    from bot.core.events import Pull
    from bot.control.handler import Handler

from bot.control import checkout as local
from bot.core.commands import UsageError, parse_single
from bot.core import markers
from bot.inferencex.catalog import load_catalog
from bot.plan.allowed import allowed_in
from bot.plan.held import approvers_at, hold_new_labels, runner_labels
from bot.plan.model import PlanError, PlanFilters
from bot.plan.planner import plan_change_sources
from bot.recipes.errors import RecipeError
from bot.recipes.sources import SourceError

@dataclasses.dataclass(frozen=True)
class Estimate:
    """What one command plans: the figures the acknowledgement shows, and what they rest on."""

    jobs: int
    points: int
    launches: int  # server launches this plan starts
    packed_launches: int  # with every point that may share a launch packed
    unpacked_launches: int  # one launch per point
    gpu_hours: float
    bound_gpu_hours: float | None  # every job running to its time limit (None: not known for every job)
    recipes: tuple[tuple[str, int, int, float], ...]  # (recipe, jobs, launches, GPU-hours), costliest first
    inferencex_rows: int = 0
    # the plan's note on rows held for a runner label the PR adds (bot/plan/held.py), a catalogue message
    held: Any = None
    # Recipes whose `estimate:` this PR sets (new, or changed from the default branch's): each counts
    # at least its jobs' time limits, as (recipe, GPU-hours counted), since a PR may claim any speed.
    at_limit: tuple[tuple[str, float], ...] = ()

    def context(self) -> dict[str, Any]:
        """The template context (bot/templates/*/control/estimate.md.j2)."""
        return {"jobs": self.jobs, "points": self.points, "launches": self.launches,
                "packed": self.packed_launches, "unpacked": self.unpacked_launches,
                "gpu_hours": _hours(self.gpu_hours),
                "bound": None if self.bound_gpu_hours is None else _hours(self.bound_gpu_hours),
                "recipes": [{"name": n, "jobs": j, "launches": la, "gpu_hours": _hours(g)}
                            for n, j, la, g in self.recipes[:10]],
                "more": max(0, len(self.recipes) - 10), "inferencex_rows": self.inferencex_rows,
                "at_limit": [{"name": n, "gpu_hours": _hours(g)} for n, g in self.at_limit], "held": self.held}


def _hours(value: float) -> str:
    return f"{value:,.2f}" if value < 100 else f"{value:,.0f}"


def from_plan(plan: Any, own_estimates: frozenset[str] = frozenset()) -> Estimate:
    """The figures of a bot.plan.model.Plan (pure). `own_estimates`: the recipes whose estimate the PR
    itself sets; each counts max(its estimate, GPUs × time limit of its jobs)."""
    summary = plan.summary()
    bound: float | None = sum(job.gpus * job.timeout_s for job in plan.jobs) / 3600.0
    ix_rows = 0
    if plan.inferencex is not None:
        entries = [e for m in plan.inferencex.matrices for e in m.include]
        ix_rows = len(entries) + (1 if plan.inferencex.canary else 0)
        bound = None if ix_rows else bound
    limits: dict[str, float] = {}
    for job in plan.jobs:
        limits[job.recipe] = limits.get(job.recipe, 0.0) + job.gpus * job.timeout_s / 3600.0
    at_limit, extra, rows = [], 0.0, []
    for r in plan.recipes:
        hours = r.gpu_hours
        if r.recipe in own_estimates and limits.get(r.recipe, 0.0) > hours:
            extra += limits[r.recipe] - hours
            hours = round(limits[r.recipe], 4)
            at_limit.append((r.recipe, hours))
        rows.append((r.recipe, r.jobs, r.server_launches, hours))
    rows.sort(key=lambda row: (-row[3], row[0]))
    return Estimate(jobs=summary["jobs"], points=summary["points"], launches=summary["server_launches"],
                    packed_launches=summary["packed_launches"], unpacked_launches=summary["unpacked_launches"],
                    gpu_hours=round(plan.gpu_hours + extra, 2),
                    bound_gpu_hours=None if bound is None else round(bound, 2),
                    recipes=tuple(rows), inferencex_rows=ix_rows, at_limit=tuple(sorted(at_limit)))


def estimate_inputs(recipe: Any) -> tuple:
    """What a recipe claims about its own speed: its `estimate:` and its workload's `duration_s`."""
    claimed = getattr(recipe, "estimate", None)
    workload = getattr(recipe, "workload", None)
    return (claimed.model_dump() if claimed is not None else None, getattr(workload, "duration_s", None))


def own_estimates(head: Any, base: Any, names: list[str]) -> frozenset[str]:
    """Which of `names` (recipes of the head catalog) set an estimate the default branch does not have:
    new recipes, and recipes whose estimate inputs the PR changed (pure over two catalogs; base None:
    the default branch's recipes could not be read, so every estimate is the PR's own)."""
    own = set()
    for name in names:
        entry = head.entries.get(name)
        theirs = None if base is None else base.entries.get(name)
        if entry is None or theirs is None or estimate_inputs(entry.recipe) != estimate_inputs(theirs.recipe):
            own.add(name)
    return frozenset(own)


# -- I/O: plan the head commit ------------------------------------------------------------------

class Unavailable(Exception):
    """The estimate cannot be made here (a broken recipe, an unreadable commit): the plan job will say."""


def plan_command(h: Handler, command_line: str, pull: Pull) -> Estimate:
    """Plan `command_line` at the PR's head as the plan job will. Raises Unavailable."""

    try:
        filters = PlanFilters(**parse_single(command_line).plan_filters())
    except (UsageError, ValueError) as exc:
        raise Unavailable(str(exc)) from None
    try:
        head, base = local.sources(h, pull)
        catalog = load_catalog(head)
        plan = plan_change_sources(catalog, base, filters)
        held = _held(h, plan, head, base, pull)
    except (RecipeError, PlanError, SourceError) as exc:
        raise Unavailable(str(exc).splitlines()[0][:300]) from None
    names = [r.recipe for r in plan.recipes if r.recipe in catalog.entries]
    try:  # the default branch's estimates: only its recipes say how long a recipe takes
        base_catalog = load_catalog(base, inferencex=False) if names else None
    except (RecipeError, SourceError) as exc:
        h.log(f"the default branch's recipes cannot be read ({str(exc).splitlines()[0][:200]}); "
              "every estimate counts at its time limit")
        base_catalog = None
    estimate = from_plan(plan, own_estimates(catalog, base_catalog, names))
    return _with_own_planner(h, dataclasses.replace(estimate, held=held), plan, pull)


def _with_own_planner(h: Handler, estimate: Estimate, plan: Any, pull: Pull) -> Estimate:
    """A head that changes InferenceX's own planner (bot/plan/own_planner.py): the control plane never runs
    it, so its rows count at what the approval allows them, and without one the reply says what waits."""
    changed = plan.inferencex.planner if plan.inferencex is not None else None
    if not changed:
        return estimate
    approval = markers.approved_planner(h.state.ledger.planner_approvals, pull.head_sha)
    if approval is None:
        return dataclasses.replace(estimate, held=changed["note"])
    return dataclasses.replace(estimate, gpu_hours=round(estimate.gpu_hours + approval.max_gpu_hours, 2),
                               bound_gpu_hours=None)


def _held(h: Handler, plan: Any, head: Any, base: Any, pull: Pull) -> Any:
    """Hold the rows the plan job will hold (a runner label the PR adds, not approved for this head), so the
    estimate counts what runs and the reply says what waits; the plan job makes the label checks."""
    added = runner_labels(head) - runner_labels(base) if plan.inferencex is not None else frozenset()
    if not added:  # the usual case: nothing of the default branch to read
        return None
    default = local.default_source(h)
    try:
        allowed = allowed_in(default, h.default_branch)
    except PlanError as exc:
        h.log(f"what {h.default_branch} allows cannot be read here ({exc}); the plan job checks it")
        return None
    added = frozenset(label for label in added if label not in allowed.runner_labels)
    approved = frozenset(markers.approved_runner_labels(h.state.ledger.runner_approvals, pull.head_sha))
    return hold_new_labels(plan, allowed, added, approved, pull.head_sha, approvers_at(default), check=False)
