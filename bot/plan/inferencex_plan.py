"""The InferenceX half of a plan: its changelog semantics, its exact rows, their launches and matrices."""
from __future__ import annotations

import fnmatch
import hashlib
from typing import TYPE_CHECKING

from bot.core.messages import Message, msg
from bot.inferencex import template as ix_template
from bot.inferencex.canonical import sorted_json
from bot.inferencex.rowenv import template_file
from bot.inferencex.changelog import AppendedEntry, ChangelogRows, appended_entries, changelog_rows, default_rows
from bot.inferencex.launches import (
    STARTUP_S, LaunchGroup, is_eval, launch_groups, point_seconds, points_run, row_concurrencies,
)
from bot.inferencex.own_tools import ToolInputs
from bot.inferencex.repo import InferenceXRepo
from bot.plan.ids import job_id, slurm_spec
from bot.plan.inferencex_infra import infra_notes, infra_rule
from bot.plan.limits import limit_for
from bot.plan.matrix import matrices_for
from bot.plan.model import ChangelogSummary, InferenceXPlan, MatrixEntry, Plan, PlanFilters, RecipePlan, TouchedRecipe
from bot.plan.touched import SHARED_NOTES, touched_inferencex
from bot.recipes.errors import RecipeError
from bot.recipes.sources import Source

if TYPE_CHECKING:
    from bot.recipes.schema import RunnerTable

Keyed = list[tuple[str, dict]]
_SORTED_JSON = sorted_json()  # json.dumps(row, sort_keys=True), its encoder built once


def row_id(key: str, row: dict) -> str:
    """A readable, unique id for one InferenceX row (its shape, concurrency and a content hash)."""
    digest = hashlib.sha1(_SORTED_JSON(row).encode()).hexdigest()[:6]
    if "tp" in row:
        shape = f"tp{row['tp']}-ep{row['ep']}" + ("-dpa" if row.get("dp-attn") else "")
    else:
        prefill, decode = row["prefill"], row["decode"]
        shape = f"p{prefill['num-worker']}x{prefill['tp']}-d{decode['num-worker']}x{decode['tp']}"
    concs = "-".join(map(str, row_concurrencies(row)))
    if is_eval(row):
        kind = "eval"
    else:
        kind = "agentic" if row.get("scenario-type") else f"{row.get('isl')}-{row.get('osl')}"
    return job_id(key, f"{kind}-{shape}-c{concs}", digest)


def _filter_conc(pairs: Keyed, wanted: tuple[int, ...]) -> Keyed:
    if not wanted:
        return pairs
    out = []
    for key, row in pairs:
        if isinstance(row["conc"], list):
            kept = [c for c in row["conc"] if c in wanted]
            if kept:
                out.append((key, {**row, "conc": kept}))
        elif row["conc"] in wanted:
            out.append((key, row))
    return out


def pick_canary(pairs: Keyed) -> tuple[str, dict] | None:
    """InferenceX's canary-select: of the single-node 1k1k rows, then the 8k1k rows, the first one with
    the lowest concurrency that does not run an eval."""
    fixed = [(k, r) for seq in ((1024, 1024), (8192, 1024)) for k, r in pairs
             if "tp" in r and r.get("scenario-type") != "agentic-coding" and (r.get("isl"), r.get("osl")) == seq
             and r.get("run-eval") is not True]
    return min(fixed, key=lambda pair: pair[1]["conc"]) if fixed else None


def _touched_keys(plan: Plan, repo: InferenceXRepo, inputs: ToolInputs, changed: set[str]
                  ) -> tuple[dict[str, list[Message]], list[AppendedEntry]]:
    head, base = inputs.head, inputs.base
    touched, _ = touched_inferencex(repo, base, changed)
    reasons = {k: list(v) for k, v in touched.reasons.items()}
    entries: list[AppendedEntry] = []
    if repo.changelog_path in changed:
        entries = appended_entries(repo, base.read(repo.changelog_path), head.read(repo.changelog_path))
        for appended in entries:
            for key in appended.keys:
                reasons.setdefault(key, []).insert(0, msg("%(changelog)s entry appended (line %(line)s)",
                                                          changelog=repo.changelog_path, line=appended.line))
    logged = {k for e in entries for k in e.keys}
    if infra_rule(base) == "note":  # the changelog declares what runs; other changes are named, not run
        plan.notes.extend(infra_notes(inputs, changed, logged))
        plan.notes.extend(n for n in touched.notes if n.id not in SHARED_NOTES)
        reasons = {k: v for k, v in reasons.items() if k in logged}
    else:
        plan.notes.extend(touched.notes)
    for key in sorted(k for k in touched.reasons if k not in logged):
        plan.notes.append(msg("%(key)s: changed without a %(changelog)s entry (InferenceX itself would not run it "
                              "until one is appended)", key=key, changelog=repo.changelog_path))
    return reasons, entries


def check_problems(plan: Plan, repo: InferenceXRepo, selected: list[str], changed: set[str], strict: bool
                   ) -> list[str]:
    """Strict where InferenceX refuses, tolerant where it plans.

    Strict (a PR's plan): a master-config entry that fails its schema, touched or not (InferenceX's
    processor validates every entry before it plans anything), or a master config file the change
    edits that cannot be read, is a RecipeError naming file, line and field. What InferenceX's
    generator reads past (an unlisted runner label, a duplicate key) is listed in `plan.warnings` and
    the config keeps its rows. Without a base every problem is a warning and a broken config is left out.
    """
    fatal = [p for k in sorted(repo.invalid) for p in repo.problems.get(k, [])] if strict else []
    fatal += [p for f, problems in repo.file_problems.items() if f in changed for p in problems]
    if fatal:
        raise RecipeError(fatal)
    plan.warnings.extend(p.as_dict() for p in repo.all_problems())
    if plan.warnings:
        plan.notes.append(msg("InferenceX: %(problems)s problem(s) that InferenceX's generator reads past are listed "
                              "as warnings; they do not stop the plan", problems=len(plan.warnings)))
    return [k for k in selected if k in repo.configs]


_NO_SLURM_LIMIT = limit_for(None)


def _row_entry(key: str, row: dict, runners: RunnerTable | None) -> MatrixEntry:
    """One row as a matrix entry: its backend (Slurm when recipes/_runners.yaml says so), estimate and limit."""
    spec = runners.runners.get(row["runner"]) if runners is not None else None
    slurm = spec.slurm if spec is not None else None
    limit_s, source = limit_for(slurm.time_limit) if slurm else _NO_SLURM_LIMIT
    estimate = STARTUP_S + point_seconds(row) * points_run(row)
    return MatrixEntry.for_row(row_id(key, row), key, row, "slurm" if slurm else "local", estimate, limit_s, source,
                               slurm_spec(spec, 0) if slurm else None)


def plan_inferencex(plan: Plan, repo: InferenceXRepo, head: Source, base: Source | None, changed: set[str],
                    filters: PlanFilters, runners: RunnerTable | None = None, tools: Source | None = None) -> None:
    """Add the InferenceX rows a change needs to `plan`: exact rows, launches, matrices, GPU-hours.

    `tools`: whose InferenceX tools plan; by default the revision the plan is made against, never the
    head's (the head's only once its planner is approved: bot/plan/own_planner.py)."""
    reasons: dict[str, list[Message]] = {}
    entries: list[AppendedEntry] = []
    # InferenceX's own tools, on the head's data
    inputs = ToolInputs(tools=tools or (base if base is not None else head), head=head, base=base, repo=repo)
    if filters.recipes:
        selected = [k for k in sorted(repo.configs) if any(fnmatch.fnmatchcase(k, g) for g in filters.recipes)]
    elif base is None:
        selected = sorted(repo.configs)
    else:
        reasons, entries = _touched_keys(plan, repo, inputs, changed)
        selected = sorted(reasons)
    if filters.kind == "e2e":
        selected = []
    strict = base is not None and not filters.recipes
    selected = check_problems(plan, repo, selected, changed if strict else set(), strict)
    logged = [e for e in entries if any(k in selected for k in e.keys)]
    modifiers = {"all_evals": filters.all_evals, "evals_only": filters.evals_only, "trim": filters.scope == "lowest"}
    from_log = changelog_rows(inputs, logged, **modifiers) if logged else ChangelogRows()
    logged_keys = {k for e in logged for k in e.keys}
    rest = default_rows(inputs, [k for k in selected if k not in logged_keys], **modifiers)
    throughput = _filter_conc([*from_log.throughput, *rest.throughput], filters.conc)
    evals = _filter_conc([*from_log.evals, *rest.evals], filters.conc)
    if not filters.accuracy:
        evals = []
    ix = InferenceXPlan(changelog=[ChangelogSummary(
        line=e.line, config_keys=e.keys, evals_only=e.entry.evals_only, all_evals=e.entry.all_evals,
        append_only=e.entry.append_only, pr_link=e.entry.pr_link) for e in logged])
    use_canary = filters.canary if filters.canary is not None else filters.scope == "full"
    canary = pick_canary(throughput) if use_canary else None
    if canary is not None:
        throughput = [pair for pair in throughput if pair[1] is not canary[1]]
        key, row = canary
        ix.canary = _row_entry(key, row, runners)
        plan.notes.append(msg("InferenceX canary: %(job)s runs first", job=ix.canary.job_id))
    pairs = [*throughput, *evals]
    ix.rows = ChangelogRows(throughput=throughput, evals=evals).buckets()
    groups = launch_groups([r for _, r in pairs], {i: k for i, (k, _) in enumerate(pairs)}, repo)
    ix.launches = len(pairs) + (1 if canary else 0)
    ix.packed_launches = sum(1 if g.packs else len(g.rows) for g in groups) + (1 if canary else 0)
    ix.packing = [{"config_key": g.config_key, "runner_label": g.runner, "rows": len(g.rows), "packs": g.packs,
                   "why": g.why} for g in groups if len(g.rows) > 1]
    _packing_notes(plan, ix.packing)
    matrix_entries = [_row_entry(k, r, runners) for k, r in pairs]
    over = [e for e in [*matrix_entries, *([ix.canary] if ix.canary else [])] if e.estimate_s > e.limit_s]
    for entry in over[:5]:
        plan.notes.append(msg("InferenceX row %(job)s needs about %(seconds)s s, over its %(limit)s s limit "
                              "(%(source)s); one row is one launch and cannot be split", job=entry.job_id,
                              seconds=f"{entry.estimate_s:.0f}", limit=f"{entry.limit_s:.0f}",
                              source=entry.limit_source))
    ix.matrices = matrices_for(matrix_entries, filters.max_matrix_jobs, {})
    for matrix in ix.matrices:
        matrix.fail_fast = filters.fail_fast
    _summarise(plan, repo, selected, groups, canary, reasons)
    if pairs:
        plan.notes.append(msg(
            "InferenceX: %(launches)s server launches as its workflow runs them (one per row); %(packed)s if each "
            "server configuration served all of its points in one launch", launches=ix.launches,
            packed=ix.packed_launches)
        )
        ix.templates = _templates(plan, base or head, {template_file(r) for _, r in pairs})
    plan.inferencex = ix


def _templates(plan: Plan, source: Source, paths: set[str]) -> dict[str, dict]:
    """The benchmark templates the rows' environments are read from (at the base commit: the trusted
    one) and the secrets they name, which the job files list and the runner supplies."""
    found: dict[str, dict] = {}
    for path in sorted(paths):
        raw = source.read(path)
        if raw is None:
            continue
        try:
            secrets = ix_template.load(raw, path).secrets
        except RecipeError as exc:
            plan.warnings.extend(p.as_dict() for p in exc.problems)
            continue
        commit = getattr(source, "sha", None)
        found[path] = {"commit": commit, "secrets": secrets}
        plan.notes.append(msg(
            "InferenceX rows get the environment of %(template)s (%(commit)s); the runner supplies the secrets it "
            "names: %(secrets)s", template=path, commit=commit[:12] if commit else "working tree",
            secrets=", ".join(f"{env} ({' '.join(names)})" for env, names in sorted(secrets.items())) or "-"))
    return found


def _packing_notes(plan: Plan, packing: list[dict]) -> None:
    packs = [p for p in packing if p["packs"]]
    not_packs = [p for p in packing if not p["packs"]]
    if not packing:
        return
    plan.notes.append(msg("InferenceX packing: %(packs)s server configuration(s) (%(pack_rows)s rows) may share a "
                          "launch; %(not_packs)s (%(not_rows)s rows) may not", packs=len(packs),
                          pack_rows=sum(p["rows"] for p in packs), not_packs=len(not_packs),
                          not_rows=sum(p["rows"] for p in not_packs)))
    for item in not_packs[:5]:
        plan.notes.append(msg("  %(key)s (%(rows)s rows) does not pack: %(why)s", key=item["config_key"],
                              rows=item["rows"], why=item["why"]))
    if len(not_packs) > 5:
        plan.notes.append(msg("  ... %(more)s more configurations that do not pack (see inferencex.packing)",
                              more=len(not_packs) - 5))


def _summarise(plan: Plan, repo: InferenceXRepo, selected: list[str], groups: list[LaunchGroup],
               canary: tuple[str, dict] | None, reasons: dict[str, list[Message]]) -> None:
    by_key: dict[str, list[LaunchGroup]] = {}
    for group in groups:
        by_key.setdefault(group.config_key, []).append(group)
    for key in selected:
        mine = by_key.get(key, [])
        own_canary = canary is not None and canary[0] == key
        rows = [r for g in mine for r in g.rows] + ([canary[1]] if own_canary else [])
        if key in reasons:
            plan.touched.append(TouchedRecipe(
                name=key, source="inferencex", runner_label=repo.configs[key]["runner"], reasons=reasons[key]
            ))
        if not rows:
            continue
        points = sum(len(row_concurrencies(r)) for r in rows if not is_eval(r))
        evals = sum(1 for r in rows if is_eval(r))
        hours = sum(g.gpu_hours(packed=False) for g in mine)
        if own_canary:
            hours += LaunchGroup(key, canary[1]["runner"], [canary[1]]).gpu_hours(packed=False)
        plan.recipes.append(RecipePlan(
            recipe=key, source="inferencex", kind="inferencex", runner_label=repo.configs[key]["runner"],
            jobs=len(rows), points=points, server_launches=len(rows),
            packed_launches=sum(1 if g.packs else len(g.rows) for g in mine) + (1 if own_canary else 0),
            unpacked_launches=points + evals,
            gpu_hours=round(hours, 4),
        ))
        plan.gpu_hours = round(plan.gpu_hours + hours, 4)
