"""A plan as the GPU workflow reads it (JSON, job files) and as people read it (table, Markdown)."""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import orjson
from rich.table import Table

from bot.core.i18n import render_bilingual
from bot.core.messages import to_data
from bot.plan.expand import NO_POINT_MATCHES
from bot.plan.model import MatrixEntry, Plan
from bot.recipes.errors import RecipeProblem

if TYPE_CHECKING:
    from rich.console import Console


def _entry_json(entry: MatrixEntry, job_files: dict[str, str] | None) -> dict:
    data = entry.model_dump(mode="json", exclude_none=True)
    if job_files is not None and entry.job is not None:
        data.pop("job")
        data["job_file"] = job_files[entry.job_id]
    return data


def plan_document(plan: Plan, job_files: dict[str, str] | None = None, row_files: dict[str, str] | None = None) -> dict:
    """The JSON the GPU workflow consumes: matrices per runner label, each entry a job id and its job
    (`row_files`: each InferenceX row's job file under --jobs-dir, by job id)."""
    ix = plan.inferencex
    return {
        "schema_version": plan.schema_version,
        "base": plan.base,
        "head": plan.head,
        "filters": plan.filters.model_dump(mode="json"),
        "summary": plan.summary(),
        "touched": [t.model_dump(mode="json") for t in plan.touched],
        "recipes": [r.model_dump(mode="json") for r in plan.recipes],
        "notes": [to_data(note) for note in plan.notes],  # read back with bot.core.messages.from_data
        "warnings": plan.warnings,
        # Every job once, the canary first: what `recipe-bot report --plan` reads back.
        "jobs": [job.model_dump(mode="json") for job in plan.jobs],
        "canary": _entry_json(plan.canary, job_files) if plan.canary else None,
        "matrices": [
            {**m.model_dump(mode="json", exclude={"include"}),
             "include": [_entry_json(e, job_files) for e in m.include]}
            for m in plan.matrices
        ],
        "inferencex": None if ix is None else {
            "changelog": [c.model_dump(mode="json") for c in ix.changelog],
            "rows": ix.rows,
            "launches": ix.launches,
            "packed_launches": ix.packed_launches,
            "packing": [{**p, "why": to_data(p["why"])} for p in ix.packing],  # why: a message, as its data
            "canary": _entry_json(ix.canary, None) if ix.canary else None,
            "matrices": [m.model_dump(mode="json", exclude_none=True) for m in ix.matrices],
            # not dispatched: on a runner label the PR adds, until its code owner approves (bot/plan/held.py)
            "held": [_entry_json(e, None) for e in ix.held],
            "held_labels": ix.held_labels,
            "planner": None if ix.planner is None else {**ix.planner, "note": to_data(ix.planner["note"])},
            "templates": ix.templates,
            **({"job_files": row_files} if row_files is not None else {}),
        },
    }


def write_jobs(plan: Plan, jobs_dir: Path) -> dict[str, str]:
    """Write every job as <jobs_dir>/<job_id>.json, all or nothing; returns job id → file path."""

    jobs_dir = Path(jobs_dir)
    jobs_dir.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".plan-jobs-", dir=jobs_dir.parent))
    try:
        files = {}
        for job in plan.jobs:
            (staging / f"{job.job_id}.json").write_text(job.model_dump_json(indent=2) + "\n")
            files[job.job_id] = str(jobs_dir / f"{job.job_id}.json")
        jobs_dir.mkdir(parents=True, exist_ok=True)
        for name in os.listdir(staging):
            os.replace(staging / name, jobs_dir / name)
        return files
    finally:
        shutil.rmtree(staging, ignore_errors=True)


NOTHING_TO_RUN = {
    "untouched": "Nothing to run: no recipe is touched by this change.",
    "conc": "Nothing to run: no point matches --conc {conc} (see the notes for each recipe's concurrencies).",
    "filtered": "Nothing to run: no recipe or case matches the filters.",
    "held": "Nothing runs yet: every row is held until it is approved (see the notes).",
}


def nothing_reason(plan: Plan) -> str:
    """Why a plan is empty, so a narrowing filter is never mistaken for an untouched change."""
    filters = plan.filters
    if plan.inferencex is not None and plan.inferencex.held:
        return "held"
    if filters.conc and any(getattr(note, "id", None) == NO_POINT_MATCHES for note in plan.notes):
        return "conc"
    if plan.base is None or filters.cases or filters.kind != "all" or filters.evals_only:
        return "filtered"
    return "untouched"


def _conc_text(plan: Plan) -> str:
    return ",".join(map(str, plan.filters.conc))


def print_table(plan: Plan, console: Console) -> None:
    summary = plan.summary()
    title = f"recipe-bot plan: {plan.head}" + (f" against {plan.base}" if plan.base else "")
    table = Table(title=title, title_justify="left")
    for name, justify in (("Recipe", "left"), ("Kind", "left"), ("Runner", "left"), ("Points", "right"),
                          ("Launches", "right"), ("Packed / unpacked", "right"), ("GPU-h", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for row in plan.recipes:
        table.add_row(row.recipe, row.kind, row.runner_label, str(row.points), str(row.server_launches),
                      f"{row.packed_launches} / {row.unpacked_launches}", f"{row.gpu_hours:.2f}")
    if plan.recipes:
        table.add_section()
        table.add_row("total", "", "", str(summary["points"]), str(summary["server_launches"]),
                      f"{summary['packed_launches']} / {summary['unpacked_launches']}",
                      f"{summary['gpu_hours']:.2f}", style="bold")
        console.print(table)
    else:
        reason = NOTHING_TO_RUN[nothing_reason(plan)].format(conc=_conc_text(plan))
        console.print(f"{title}\n{reason}", highlight=False)
    for touched in plan.touched:
        console.print(f"touched [bold]{touched.name}[/bold]: " + "; ".join(map(str, touched.reasons)), highlight=False)
    for note in plan.notes:
        console.print(f"note: {note}", highlight=False)
    for warning in map(RecipeProblem.from_dict, plan.warnings):
        field = f" `{warning.field}`" if warning.field else ""
        console.print(f"warning (untouched config, not planned): {warning.location()}{field}: {warning.message}",
                      highlight=False, markup=False)
    _print_limits(plan, console)
    if plan.matrices or (plan.inferencex and plan.inferencex.matrices):
        sizes = [f"{m.runner_label}[{m.index}]={len(m.include)}" for m in plan.matrices]
        if plan.inferencex:
            sizes += [f"inferencex {m.runner_label}[{m.index}]={len(m.include)}" for m in plan.inferencex.matrices]
        console.print("matrices: " + ", ".join(sizes), highlight=False)


def job_limits(plan: Plan) -> list[tuple[str, float, float, str]]:
    """(job id, estimate s, limit s, where the limit comes from) of every job and InferenceX row."""
    out = [(j.job_id, j.estimate_s, j.limit_s, j.limit_source or "") for j in plan.jobs
           if j.estimate_s is not None and j.limit_s is not None]
    ix = plan.inferencex
    if ix is not None:
        entries = [*([ix.canary] if ix.canary else []), *(e for m in ix.matrices for e in m.include)]
        out += [(e.job_id, e.estimate_s, e.limit_s, e.limit_source or "") for e in entries
                if e.estimate_s is not None and e.limit_s is not None]
    return out


def _print_limits(plan: Plan, console: Console, shown: int = 20) -> None:
    limits = job_limits(plan)
    for job_id, estimate, limit, source in limits[:shown]:
        mark = "over" if estimate > limit else "fits"
        console.print(f"job {job_id}: ~{estimate:.0f} s, {mark} {limit:.0f} s ({source})", highlight=False,
                      markup=False)
    if len(limits) > shown:
        over = sum(1 for _, e, lim, _ in limits if e > lim)
        console.print(f"... {len(limits) - shown} more jobs ({over} over their limit); every estimate and limit "
                      "is in --format json", highlight=False)


def plan_markdown(plan: Plan) -> str:
    """The bilingual Markdown summary (for a job summary or a comment)."""

    return render_bilingual(
        "plan/summary", head=plan.head, base=plan.base, summary=plan.summary(),
        rows=[r.model_dump() for r in plan.recipes], touched=[t.model_dump() for t in plan.touched],
        notes=plan.notes, warnings=[RecipeProblem.from_dict(w) for w in plan.warnings],
        nothing=nothing_reason(plan), conc=_conc_text(plan),
    )


def errors_markdown(problems: list[RecipeProblem]) -> str:
    return render_bilingual("plan/recipe-error", problems=problems)


_PLAN_JSON = orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE


def dump_json(document: dict) -> bytes:
    """The plan as the workflow reads it: UTF-8 JSON laid out as json.dumps(indent=2) lays it out.

    A whole catalogue's plan is megabytes; orjson writes it in a tenth of the standard library's time.
    """
    return orjson.dumps(document, option=_PLAN_JSON)
