"""The GPU workflow's plan outputs (GitHub Actions matrices and job files), built from the typed plan."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from bot.inferencex.jobfiles import row_job
from bot.inferencex.templates import KIND_MULTI, KIND_SINGLE, Templates, row_inputs
from bot.plan.model import MAX_MATRIX_JOBS, MatrixEntry, Plan, PlanError

_JOB_ID = re.compile(r"[A-Za-z0-9._-]{1,200}")  # a job id names a file under the jobs folder


class PlanTooLarge(PlanError):
    """More jobs than one GitHub Actions matrix can hold."""


@dataclass(frozen=True)
class ActionsOutputs:
    outputs: dict[str, str]  # name → value, as the plan job's `$GITHUB_OUTPUT` lines
    # job id → the job file `recipe-bot run --job` reads, for each InferenceX row (native jobs are the
    # plan's own `jobs`, written by bot.plan.render.write_jobs)
    row_files: dict[str, dict] = field(default_factory=dict)


RECIPE_BOT = "recipe-bot"  # a label matrix's kind: `recipe-bot run` runs its jobs (the others: a template)


def actions_outputs(plan: Plan, templates: Templates | None = None) -> ActionsOutputs:
    """The canary (if any), one matrix per runner label and kind (and per 256 jobs), and each row's job file.

    The matrices carry ids, labels and backends, and for a row that runs through one of the repository's
    benchmark templates (bot/plan/ix_templates.py) the template's inputs for it; well under GitHub's 1 MiB
    output limit for the plans a PR makes.
    """
    files: dict[str, dict] = {}

    def native(entry: MatrixEntry) -> dict[str, str] | None:
        if entry.job is None or not _JOB_ID.fullmatch(entry.job_id):
            return None
        made = {"job_id": entry.job_id, "runner_label": entry.runner_label, "recipe": entry.recipe}
        if entry.job.slurm:
            made["backend"] = "slurm"  # its runner label names a Slurm cluster (recipes/_runners.yaml)
        return made

    ix = plan.inferencex
    agentx_fast = bool(plan.filters.agentx_fast)

    def row(entry: MatrixEntry) -> dict[str, str] | None:
        if not _JOB_ID.fullmatch(entry.job_id) or not isinstance(entry.row, dict):
            return None
        files[entry.job_id] = _row_file(entry, agentx_fast, ix.templates if ix is not None else {})
        made = {"job_id": entry.job_id, "runner_label": entry.runner_label, "recipe": entry.recipe,
                "backend": entry.backend or "local", "limit_s": str(entry.limit_s or "")}
        template = templates.for_kind(entry.backend) if templates and entry.backend in (KIND_SINGLE, KIND_MULTI) \
            else None
        if template is not None:
            made["inputs"] = template.typed(row_inputs(entry.row, agentx_fast=agentx_fast)[1])
        return made

    def kind(made: list[dict]) -> str:
        backend = made[0].get("backend")
        return backend if backend in (KIND_SINGLE, KIND_MULTI) else RECIPE_BOT

    canary = native(plan.canary) if plan.canary else None
    include: list[dict] = []
    per_label: list[tuple[dict, list[dict]]] = []
    for matrix in plan.matrices:
        made_here = [m for m in (native(e) for e in matrix.include) if m is not None and m != canary]
        include += made_here
        if made_here:
            per_label.append(({"runner_label": matrix.runner_label, "index": matrix.index,
                               "fail_fast": bool(matrix.fail_fast)}, made_here))
    # InferenceX rows: one job file per row, run by `recipe-bot run` through the repository's own launcher
    ix_canary = row(ix.canary) if ix is not None and ix.canary else None
    ix_matrices = []
    for matrix in ix.matrices if ix is not None else []:
        made = [m for m in (row(e) for e in matrix.include) if m is not None]
        # a label's rows split by what runs them: recipe-bot, the single-node or the multi-node template
        for group in ({kind([m]): None for m in made}):
            mine = [m for m in made if kind([m]) == group]
            ix_matrices.append(({"runner_label": matrix.runner_label, "index": matrix.index,
                                 "fail_fast": bool(matrix.fail_fast), **_kind(group)}, mine))
    if ix_canary is not None and (canary is not None or kind([ix_canary]) != RECIPE_BOT):
        # One canary runs first (the canary job runs `recipe-bot run`); an InferenceX canary row that another
        # canary precedes, or that runs through a template, runs with its label's rows instead.
        ix_matrices.append(({"runner_label": ix_canary["runner_label"], "index": len(ix_matrices),
                             "fail_fast": False, **_kind(kind([ix_canary]))}, [ix_canary]))
        if canary is None:
            ix_canary = None
    canary = canary or ix_canary
    for meta, made in ix_matrices:
        include += [m for m in made if m != canary]
        per_label.append((meta, [m for m in made if m != canary]))
    if any(len(made) > MAX_MATRIX_JOBS for _, made in per_label):
        # The GPU workflow's run job has one matrix per label, and GitHub runs at most 256 jobs per
        # matrix: refuse the whole plan rather than silently dropping jobs.
        raise PlanTooLarge(
            f"one runner label's matrix has more than the {MAX_MATRIX_JOBS} jobs GitHub Actions runs in one "
            "matrix; narrow the command (a recipe glob, --conc, --scope lowest)")
    labels = [{**meta, "backend": "slurm" if any(m.get("backend") == "slurm" for m in made) else "local",
               "include": json.dumps({"include": made})}
              for meta, made in per_label if made]
    fail_fast = any(m.fail_fast for m in plan.matrices) or bool(plan.filters.fail_fast)
    return ActionsOutputs({
        "canary": json.dumps({"include": [canary]} if canary else {"include": []}),
        "has_canary": "true" if canary else "false",
        "matrix": json.dumps({"include": include}),
        # one matrix per runner label (and per 256 jobs): its own job limit and its own fail-fast
        "labels": json.dumps({"include": labels}),
        "jobs": str(len(include) + (1 if canary else 0)),
        "fail_fast": "true" if fail_fast else "false",
    }, files)


def _kind(kind: str) -> dict[str, str]:
    """A label matrix's `kind` for gpu.yml's run job (absent: recipe-bot runs its jobs, as before templates)."""
    return {} if kind == RECIPE_BOT else {"kind": kind}


def _row_file(entry: MatrixEntry, agentx_fast: bool, templates: dict[str, dict]) -> dict:
    """A row's job file, for `recipe-bot run --job F`: a row gpu.yml sends to a template runs its launcher
    here when run by hand."""
    dumped = entry.model_dump(mode="json")
    if dumped.get("backend") in (KIND_SINGLE, KIND_MULTI):
        dumped["backend"] = "local"
    return row_job(dumped, agentx_fast, templates)


def row_files(plan: Plan) -> dict[str, dict]:
    """Every InferenceX row's job file (job id → file), the canary's too: what `recipe-bot plan --jobs-dir`
    writes beside the native jobs, with or without the matrices of --actions-outputs."""
    ix = plan.inferencex
    if ix is None:
        return {}
    agentx_fast = bool(plan.filters.agentx_fast)
    entries = [*([ix.canary] if ix.canary else []), *(e for m in ix.matrices for e in m.include)]
    return {e.job_id: _row_file(e, agentx_fast, ix.templates) for e in entries
            if _JOB_ID.fullmatch(e.job_id) and isinstance(e.row, dict)}


def write_row_files(outputs: ActionsOutputs | dict[str, dict], jobs_dir: Path) -> None:
    """Each InferenceX row's job as <jobs_dir>/<job_id>.json, for `recipe-bot run --job` on the runner."""
    jobs_dir.mkdir(parents=True, exist_ok=True)
    files = outputs.row_files if isinstance(outputs, ActionsOutputs) else outputs
    for job_id, job in files.items():
        (jobs_dir / f"{job_id}.json").write_text(json.dumps(job, indent=1) + "\n", encoding="utf-8")


def output_lines(outputs: ActionsOutputs) -> str:
    return "".join(f"{name}={value}\n" for name, value in outputs.outputs.items())
