"""Which jobs of a workflow run get their one automatic retry: infrastructure failures only.

gpu.yml's `retry` job runs `recipe-bot ci retry-matrix RESULTS PLAN_JOBS [--fail-fast]` after the
`run` jobs: it prints GitHub step outputs (`matrix=` and `has_retry=`) naming every planned job
whose only result is a first attempt that failed for an infrastructure reason
(bot/core/failure_classes.py), or that left no result at all (a lost runner). The `retry-run` job then
runs each once more with `--attempt 2`, on whichever runner of the label takes it. A job that
already has a second attempt (the Slurm backend retries on its own, without the failed node) is
never retried again; a recipe failure never is.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import click
from pydantic import ValidationError

from bot.core.cli_guard import HELP_OPTIONS
from bot.core.messages import bilingual, msg
from bot.core.failure_classes import INFRASTRUCTURE, classify_job
from bot.core.jobs import Job
from bot.core.results import JobResult
from bot.runner.ix_row import is_row_job

RESULT_FILE = "result.json"


@dataclass(frozen=True)
class RetryDecision:
    job_id: str
    runner_label: str
    retry: bool
    why: str  # the rule that decided, or why not


def load_results(results_dir: Path) -> dict[str, list[JobResult]]:
    found: dict[str, list[JobResult]] = {}
    if not results_dir.is_dir():
        return found
    for file in sorted(results_dir.rglob(RESULT_FILE)):
        try:
            result = JobResult.model_validate_json(file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValidationError):
            continue  # the report names an unreadable result; it is not retried blindly
        found.setdefault(result.job_id, []).append(result)
    return found


def decide(plan: list[Job], results: dict[str, list[JobResult]], *,
           fail_fast: bool = False) -> list[RetryDecision]:
    """One decision per planned job, in plan order."""
    recipe_failed = any((r.failure or classify_job(r)) is not None
                        and (r.failure or classify_job(r)).kind != INFRASTRUCTURE
                        for attempts in results.values() for r in attempts
                        if r.status == "failed")
    decisions = []
    for job in plan:
        attempts = results.get(job.job_id, [])
        if not attempts:
            # With fail-fast, GitHub cancels the rest of the matrix after a recipe failure:
            # those jobs are not lost to the infrastructure, and stay not run.
            lost_ok = not (fail_fast and recipe_failed)
            decisions.append(RetryDecision(job.job_id, job.runner_label, lost_ok,
                                           "runner-lost" if lost_ok else "fail-fast"))
            continue
        if any(r.attempt > 1 for r in attempts):
            decisions.append(RetryDecision(job.job_id, job.runner_label, False, "already retried"))
            continue
        latest = max(attempts, key=lambda r: r.finished_at or "")
        failure = latest.failure or classify_job(latest)
        if failure is None:
            decisions.append(RetryDecision(job.job_id, job.runner_label, False, latest.status))
        else:
            decisions.append(RetryDecision(job.job_id, job.runner_label,
                                           failure.kind == INFRASTRUCTURE, failure.rule))
    return decisions


def load_plan(plan_dir: Path) -> list[Job]:
    files = sorted(plan_dir.glob("*.json")) if plan_dir.is_dir() else [plan_dir]
    jobs = []
    for file in files:
        data = json.loads(file.read_text(encoding="utf-8"))
        if is_row_job(data):
            # An InferenceX row's job file: not retried here (a template's row is the template's job on the
            # run's page, re-run there; the retry-run job runs only recipe-bot's own jobs).
            continue
        if isinstance(data, dict) and isinstance(data.get("jobs"), list):
            jobs += [Job.model_validate(entry) for entry in data["jobs"]]
        else:
            jobs.append(Job.model_validate(data))
    return list({job.job_id: job for job in jobs}.values())


def outputs(decisions: list[RetryDecision]) -> str:
    include = [{"job_id": d.job_id, "runner_label": d.runner_label, "why": d.why}
               for d in decisions if d.retry]
    return (f"matrix={json.dumps({'include': include}, separators=(',', ':'))}\n"
            f"has_retry={'true' if include else 'false'}\n")


@click.command("retry-matrix", context_settings=HELP_OPTIONS)
@click.argument("results_dir", type=click.Path(file_okay=False, path_type=Path))
@click.argument("plan_jobs", type=click.Path(path_type=Path))
@click.option("--fail-fast", is_flag=True, help="The plan stops a matrix at its first failure: its cancelled jobs are not retried.")
def retry_matrix_cmd(results_dir: Path, plan_jobs: Path, fail_fast: bool) -> None:
    """Print the retry job's GitHub outputs (matrix=, has_retry=): the infrastructure failures among RESULTS_DIR."""
    try:
        plan = load_plan(plan_jobs)
    except (OSError, ValueError) as exc:
        click.echo(bilingual(msg("%(path)s: not a readable plan: %(reason)s", path=str(plan_jobs), reason=str(exc))),
                   err=True)
        raise SystemExit(2) from None
    decisions = decide(plan, load_results(results_dir), fail_fast=fail_fast)
    for d in decisions:
        click.echo(f"{d.job_id}: {'retry' if d.retry else 'no retry'} ({d.why})", err=True)
    click.echo(outputs(decisions), nl=False)
