"""Rows on a runner label the PR itself adds to `configs/runners.yaml`: held until its code owner approves.

A PR's own files never choose where its code runs (bot/plan/allowed.py). A PR that brings a new cluster
adds its label to `configs/runners.yaml` together with the configs that use it; InferenceX would dispatch
them. Here the plan is made, the rows on such a label are held (in `inferencex.held`, not in a matrix),
the other rows run, and a held label runs only once someone entitled to change `configs/runners.yaml`
(its code owner on the default branch, or without one an admin or maintainer) approves the exact head
commit with `/approve-runners <sha>`; the control plane then passes the approved labels
(`--approved-runner-labels`). A label is new when the head's `configs/runners.yaml` lists it, the base's
does not, and the default branch does not allow it: a label the default branch already uses, or one the
PR removes, holds nothing; a label no `configs/runners.yaml` lists stays refused.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from pathlib import Path

from bot.core.codeowners import LOCATIONS, CodeownersError, parse_codeowners
from bot.core.messages import Message, msg
from bot.inferencex.launches import STARTUP_S, point_seconds, row_concurrencies, row_gpus
from bot.inferencex.repo import load_inferencex
from bot.plan.allowed import Allowed, check_plan
from bot.plan.inferencex_plan import pick_canary
from bot.plan.matrix import matrices_for
from bot.plan.model import MatrixEntry, Plan
from bot.recipes.errors import RecipeError
from bot.recipes.sources import GitSource, Source, SourceError, open_source

RUNNERS_YAML = "configs/runners.yaml"
APPROVE_COMMAND = "approve-runners"


@dataclasses.dataclass(frozen=True)
class Approvers:
    """Who may approve a new runner label: the code owners of configs/runners.yaml on the default branch
    (as written: @user, @org/team, email), or nobody named, which means an admin or maintain collaborator."""

    owners: tuple[str, ...]
    source: str | None  # the CODEOWNERS file and line that named them


def runner_labels(source: Source | None) -> frozenset[str]:
    """The labels `configs/runners.yaml` lists at `source` (none when it is not an InferenceX repository)."""
    if source is None:
        return frozenset()
    try:
        repo = load_inferencex(source)
    except (RecipeError, SourceError):
        return frozenset()
    return frozenset(repo.labels) if repo is not None else frozenset()


def approvers_at(source: Source) -> Approvers:
    """The code owners of configs/runners.yaml by the default branch's CODEOWNERS (GitHub reads the first
    file that exists); an unreadable CODEOWNERS names nobody, so only an admin or maintainer may approve."""
    for path in LOCATIONS:
        try:
            raw = source.read(path)
        except SourceError:
            raw = None
        if raw is None:
            continue
        try:
            owners, line = parse_codeowners(raw.decode("utf-8", "replace"), path).of(RUNNERS_YAML)
        except CodeownersError:
            return Approvers((), None)
        return Approvers(owners, f"{path}:{line}" if owners else None)
    return Approvers((), None)


def new_labels(head: frozenset[str], base: frozenset[str], allowed: Allowed) -> frozenset[str]:
    """The labels this PR adds to configs/runners.yaml that the default branch does not allow (pure)."""
    return frozenset(label for label in head - base if label not in allowed.runner_labels)


def entry_hours(entries: Iterable[MatrixEntry]) -> float:
    return sum(row_gpus(e.row) * (STARTUP_S + point_seconds(e.row) * len(row_concurrencies(e.row))) / 3600.0
               for e in entries if e.row is not None)


def approve_line(sha: str) -> str:
    return f"/{APPROVE_COMMAND} {sha}"


def hold_new_labels(plan: Plan, allowed: Allowed, added: frozenset[str], approved: frozenset[str], sha: str,
                    approvers: Approvers, *, check: bool = True) -> Message | None:
    """Hold the InferenceX rows whose label the PR adds (`added`) and nobody approved, then check the rest.

    With `check`, raises PlanError (check_plan)
    for any label that is neither allowed, nor added by the PR, nor approved. Returns the held note.
    """
    note = None
    waiting = added - approved
    if plan.inferencex is not None and waiting:
        held = hold_rows(plan, lambda entry: entry.runner_label in waiting)
        if held:
            plan.inferencex.held_labels = sorted({e.runner_label for e in held})
            note = held_note(held, sha, approvers, allowed.where)
            plan.notes.insert(0, note)
    unlisted = [label for label in approved - added]
    if unlisted:
        plan.notes.append(msg("approved runner label(s) %(labels)s ignored: this pull request does not add them to "
                              "%(file)s", labels=", ".join(sorted(unlisted)), file=RUNNERS_YAML))
    if check:
        check_plan(plan, dataclasses.replace(allowed, runner_labels=allowed.runner_labels | (added & approved)))
    return note


def hold_rows(plan: Plan, waits: Callable[[MatrixEntry], bool]) -> list[MatrixEntry]:
    """Take the InferenceX rows that `waits` out of what runs (into `inferencex.held`) and return them.

    The rows left keep their matrices (and a canary, picked again among them when the canary is held);
    the plan's GPU-hours and recipes count only what runs."""
    ix = plan.inferencex
    entries = [e for m in ix.matrices for e in m.include]
    canary = ix.canary
    held = [e for e in ([canary] if canary else []) + entries if waits(e)]
    if not held:
        return []
    kept = [e for e in entries if not waits(e)]
    fail_fast = any(m.fail_fast for m in ix.matrices)
    if canary is not None and waits(canary):
        again = pick_canary([(e.recipe, e.row) for e in kept])
        ix.canary = next((e for e in kept if again is not None and e.row is again[1]), None)
        kept = [e for e in kept if e is not ix.canary]
    ix.matrices = matrices_for(kept, plan.filters.max_matrix_jobs, {})
    for matrix in ix.matrices:
        matrix.fail_fast = fail_fast
    held_ids = {id(e.row) for e in held}
    ix.rows = {bucket: [r for r in rows if id(r) not in held_ids] for bucket, rows in ix.rows.items()}
    ix.launches -= len(held)
    ix.held = [*ix.held, *held]
    _hold_recipes(plan, {e.recipe for e in held})
    return held


def _hold_recipes(plan: Plan, keys: set[str]) -> None:
    """A config has one runner label, so its rows are held together: its GPU-hours leave the plan's total."""
    for recipe in [r for r in plan.recipes if r.source == "inferencex" and r.recipe in keys]:
        plan.recipes.remove(recipe)
        plan.gpu_hours = round(plan.gpu_hours - recipe.gpu_hours, 4)


def who_approves(approvers: Approvers) -> Message:
    if approvers.owners:
        return msg("a code owner of %(file)s (%(owners)s, %(where)s on the default branch)", file=RUNNERS_YAML,
                   owners=", ".join(approvers.owners), where=approvers.source)
    return msg("an admin or maintainer (the default branch's CODEOWNERS names no owner of %(file)s)",
               file=RUNNERS_YAML)


def held_note(held: list[MatrixEntry], sha: str, approvers: Approvers, where: str) -> Message:
    """The plan's note: which labels are new, which rows wait, who may approve and the exact command."""
    labels = sorted({e.runner_label for e in held})
    keys = sorted({e.recipe for e in held})
    shown = ", ".join(keys[:6]) + (f", ... ({len(keys) - 6} more)" if len(keys) > 6 else "")
    return msg("held for a new runner label: this pull request adds %(labels)s to %(file)s, which %(where)s does "
               "not list; %(rows)s row(s) on it (%(configs)s; about %(gpu_hours)s GPU-hours) wait until %(approvers)s "
               "approves this exact commit with `%(command)s`. The other rows run now; a later push needs a new "
               "approval",
               labels=", ".join(labels), file=RUNNERS_YAML, where=where, rows=len(held), configs=shown,
               gpu_hours=f"{entry_hours(held):,.1f}", approvers=who_approves(approvers), command=approve_line(sha))


def hold_for_approval(plan: Plan, repo: Path, base: str | None, head: str | None, allowed: Allowed,
                      default_rev: str, approved: frozenset[str]) -> None:
    """`recipe-bot plan --allowed-from`: the labels the PR adds (head's configs/runners.yaml against the
    base's), their approvers on the default branch, then hold_new_labels()."""
    head_source = open_source(repo, head)
    added = new_labels(runner_labels(head_source), runner_labels(open_source(repo, base) if base else None),
                       allowed) if base is not None else frozenset()
    sha = head_source.sha if isinstance(head_source, GitSource) else plan.head
    hold_new_labels(plan, allowed, added, approved, sha, approvers_at(GitSource(repo, default_rev)))
