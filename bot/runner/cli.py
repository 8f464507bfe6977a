"""`recipe-bot run --job F --out DIR [--backend local|slurm] [--repo DIR]`: write result.json."""
from __future__ import annotations

import importlib
import json
import os
import sys
import tempfile
from pathlib import Path

import click
import yaml
from pydantic import ValidationError
from rich.console import Console

from bot import engines
from bot.core.cli_guard import HELP_OPTIONS
from bot.core.failure_classes import annotate
from bot.core.jobs import Job
from bot.core.messages import Message, msg, Refusal
from bot.core.results import JobResult, joined, listed, with_duty_cycle
from bot.core.validation import error_message
from bot.core.settings import load_settings
from bot.runner import hygiene
from bot.recipes.errors import RecipeError
from bot.runner.ix_row import RowJob, is_row_job, proxy_job, run_row_job
from bot.runner.local import run_job_local

RESULT_FILE = "result.json"


class JobFileError(Refusal):
    """A job file that cannot be run; exit code 2 tells it apart from a job that ran and failed."""

    exit_code = 2


def load_job(path: Path) -> Job:
    """The job file (JSON, or YAML by suffix); one error naming the file and field otherwise."""
    try:
        text = path.read_text(encoding="utf-8")
        data = yaml.safe_load(text) if path.suffix in (".yaml", ".yml") else json.loads(text)
    except yaml.MarkedYAMLError as exc:  # one line naming where, not PyYAML's multi-line excerpt
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = " ".join(part for part in (exc.context, exc.problem) if part)
        raise JobFileError(msg("job file %(file)s: cannot read it as %(format)s: %(why)s", file=where, format="YAML",
                                why=problem)) from exc
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise JobFileError(msg("job file %(file)s: cannot read it as %(format)s: %(why)s", file=path,
                                format="YAML" if path.suffix in (".yaml", ".yml") else "JSON", why=exc)) from exc
    if isinstance(data, dict) and "matrices" in data and "job_id" not in data:
        ids = [j.get("job_id") for j in data.get("jobs") or [] if isinstance(j, dict)]
        hint = msg("%(path)s is a plan, not a job; pick a job with `recipe-bot plan ... --jobs-dir DIR` and run "
                   "`recipe-bot run --job DIR/<job_id>.json`", path=path)
        raise JobFileError(msg("%(problem)s (job ids in this plan: %(ids)s)", problem=hint, ids=", ".join(ids[:10]))
                           if ids else hint)
    try:
        job = Job.model_validate(data)
    except ValidationError as exc:
        problems = joined([_problem(".".join(str(part) for part in error["loc"]) or "(top level)", error)
                           for error in exc.errors()])
        raise JobFileError(msg("job file %(file)s is not a valid job: %(problems)s", file=path, problems=problems)) from exc
    unknown = unknown_engines(job)
    if unknown:
        raise JobFileError(msg("job file %(file)s is not a valid job: %(problems)s", file=path, problems=joined(unknown)))
    return job


def _problem(where: str, error: dict) -> Message:
    """`where: what pydantic found`, pydantic's wording as a catalogue message where the catalogue has it."""
    problem = error_message(error)
    if str(problem) != error["msg"]:  # pydantic wrote a validator's refusal as "Value error, ...": kept so
        problem = msg("Value error, %(problem)s", problem=problem)
    return msg("%(where)s: %(problem)s", where=where, problem=problem)


def unknown_engines(job: Job) -> list[Message]:
    """`where: Input should be ...` for each engine name the registry (bot.engines) does not know."""
    known = set(engines.names())
    names = [repr(name) for name in engines.names()]  # pydantic's wording: 'a', 'b' or 'c'
    choices = msg("%(first)s or %(last)s", first=listed(names[:-1]), last=names[-1]) if len(names) > 1 else names[0]
    expected = msg("Input should be %(expected)s", expected=choices)
    found = []
    for c, case in enumerate(job.cases):
        found += [msg("%(where)s: %(problem)s", where=f"cases.{c}.servers.{s}.engine", problem=expected)
                  for s, server in enumerate(case.servers) if server.engine not in known]
        found += [msg("%(where)s: %(problem)s", where=f"cases.{c}.points.{p}.client", problem=expected)
                  for p, point in enumerate(case.points) if point.client not in known | {None}]
    return found


def write_result(result: JobResult, out_dir: Path) -> Path:
    """DIR/result.json, written whole or not at all (a reader never sees half a file)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / RESULT_FILE
    fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=".result-", suffix=".json")
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(with_duty_cycle(result).model_dump_json(indent=2))
        handle.write("\n")
    os.replace(tmp, target)
    return target


def _row_job(path: Path):  # noqa: ANN202 - RowJob, imported lazily
    """An InferenceX row job file (`{"inferencex": {...}}`), or None for a native job."""
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.suffix == ".json" else None
    except (OSError, ValueError):
        return None

    if not is_row_job(data):
        return None
    try:
        return RowJob.model_validate(data["inferencex"])
    except ValidationError as exc:
        problems = joined([_problem("inferencex." + ".".join(str(p) for p in e["loc"]), e) for e in exc.errors()])
        raise JobFileError(msg("job file %(file)s is not a valid InferenceX row job: %(problems)s", file=path,
                                problems=problems)) from exc


@click.command(name="run", context_settings=HELP_OPTIONS)
@click.option("--job", "job_file", required=True,
              type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="The job to run, as `recipe-bot plan` wrote it (JSON).")
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Result directory: result.json, server logs, raw client files.")
@click.option("--backend", type=click.Choice(["local", "slurm"]), default="local",
              show_default=True, help="Run here, or through salloc/srun on a Slurm cluster.")
@click.option("--repo", type=click.Path(exists=True, file_okay=False, path_type=Path),
              default=None, help="Repository root for launch scripts and data paths [default: .]")
@click.option("--config", "config_path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The default branch's .github/recipe-bot.yaml (pr_jobs.allow_persistent_runners).")
@click.option("--attempt", type=click.IntRange(1, 2), default=1, show_default=True,
              help="2 for the one automatic retry of an infrastructure failure (gpu.yml sets it).")
def run_cmd(job_file: Path, out_dir: Path, backend: str, repo: Path | None,
            config_path: Path | None = None, attempt: int = 1) -> None:
    """Run one planned job and write DIR/result.json.

    Exit 0 when the job passed, 1 when it failed or was cancelled, 2 when the job file is bad.
    """
    settings = load_settings()  # once, here: the backends get the values, not the environment
    if refusal := hygiene.runner_refusal(os.environ, settings, allow_persistent=hygiene.allows_persistent(config_path)):
        raise JobFileError(refusal)
    console = Console(stderr=True)
    row_job = _row_job(job_file)
    if row_job is not None:
        multinode = importlib.import_module("bot.runner.slurm.multinode") if backend == "slurm" else None
        if multinode is not None and multinode.is_multinode_row(row_job):
            # the row's launcher allocates its nodes itself, from this host, as on InferenceX's fleets
            result = multinode.run_multinode_row(row_job, out_dir, console, repo=repo, settings=settings)
        elif backend == "slurm":  # one allocation per row; inside it this same command runs --backend local
            slurm = importlib.import_module("bot.runner.slurm.backend")
            try:
                proxy = proxy_job(row_job, repo)
            except RecipeError as exc:
                raise JobFileError(msg("job file %(file)s: %(problems)s", file=job_file,
                                       problems=exc.problems[0].as_message())) from None
            result = slurm.run_job_slurm(proxy, job_file, out_dir, console, repo=repo, settings=settings)
        else:
            result = run_row_job(row_job, out_dir, console, repo=repo, backend=backend)
        path = write_result(result, out_dir)
        console.print(f"result: {path} ({result.status})", highlight=False)
        sys.exit(0 if result.status == "passed" else 1)
    job = load_job(job_file)
    if backend == "slurm":
        slurm = importlib.import_module("bot.runner.slurm.backend")
        result = slurm.run_job_slurm(job, job_file, out_dir, console, repo=repo, attempt=attempt,
                                     retry=attempt == 1, settings=settings)
    else:
        result = run_job_local(job, out_dir, console, repo=repo, job_file=str(job_file), settings=settings)
        result = result.model_copy(update={"attempt": attempt})
    result = annotate(result)  # infrastructure or recipe, with the lines that decided it
    path = write_result(result, out_dir)
    failure = f", {result.failure.kind}: {result.failure.rule}" if result.failure else ""
    console.print(f"result: {path} ({result.status}{failure})", highlight=False)
    sys.exit(0 if result.status == "passed" else 1)
