"""Gather every job's result.json next to the plan, so that no job is ever silently dropped.

A planned job without a result becomes `lost`; a result.json that does not parse becomes a
`failed` job whose reason names the file and the field; a result for another commit than the
head SHA is `failed` too (its numbers describe other code). Reruns leave several results for one
job id: the latest one counts and the attempts are kept.
"""
from __future__ import annotations

import json
import pathlib
from dataclasses import dataclass

import pydantic

from bot.core.jobs import Job
from bot.core.messages import msg
from bot.core.results import JobResult

RESULT_FILE = "result.json"


class InputError(ValueError):
    """A plan or results location that cannot be read; the message names the file and field."""


@dataclass(frozen=True)
class CollectedJob:
    result: JobResult
    source: str | None  # result.json relative to the results directory; None when lost
    plan: Job | None  # the planned job, when a plan was given and names this job
    attempts: int = 1  # result files seen for this job id (reruns)
    problem: str | None = None  # why the runner's own status was overridden
    earlier: tuple[JobResult, ...] = ()  # the other attempts' results (a retry, a /rerun)


@dataclass(frozen=True)
class Collection:
    jobs: tuple[CollectedJob, ...]
    plan_given: bool
    head_sha: str | None = None  # the commit the report is for

    def by_status(self, status: str) -> list[CollectedJob]:
        return [job for job in self.jobs if job.result.status == status]


def _pydantic_problem(error: pydantic.ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "(top level)"
    more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
    return f"field {where}: {first['msg']}{more}"


def load_plan(path: pathlib.Path) -> list[Job]:
    """Jobs from a plan: a directory of job JSON files, or one file holding a job, a list of
    jobs, or an object with a "jobs" list (what `recipe-bot plan --format json` prints)."""
    if not path.exists():
        raise InputError(msg("%(path)s: no such plan file or directory", path=path))
    files = sorted(path.rglob("*.json")) if path.is_dir() else [path]
    jobs: list[Job] = []
    for file in files:
        try:
            data = json.loads(file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise InputError(msg("%(file)s: not a readable JSON plan: %(why)s", file=file, why=exc)) from exc
        except RecursionError:  # json's parser recurses once per nesting level
            raise InputError(msg("%(file)s: not a readable JSON plan: %(why)s", file=file, why="nested too deeply")) from None
        if isinstance(data, dict) and isinstance(data.get("jobs"), list):
            data = data["jobs"]
        entries = data if isinstance(data, list) else [data]
        for index, entry in enumerate(entries):
            try:
                jobs.append(Job.model_validate(entry))
            except pydantic.ValidationError as exc:
                where = f"job {index}" if isinstance(data, list) else "job"
                raise InputError(msg(
                    '%(file)s: %(where)s is not a recipe-bot Job: %(problem)s; expected a Job, a list of Jobs or '
                    '{"jobs": [...]}', file=file, where=where, problem=_pydantic_problem(exc))) from exc
    # A plan folder may hold plan.json next to jobs/<id>.json: the same job twice is one job,
    # two different jobs under one id are a broken plan.
    unique: dict[str, Job] = {}
    for job in jobs:
        if job.job_id in unique and unique[job.job_id] != job:
            raise InputError(msg("%(path)s: job id %(job)s is planned twice, differently", path=path, job=repr(job.job_id)))
        unique.setdefault(job.job_id, job)
    return list(unique.values())


def _invalid_result(file: pathlib.Path, root: pathlib.Path, problem: str,
                    plan_by_id: dict[str, Job]) -> JobResult:
    relative = file.relative_to(root).as_posix()
    raw: dict = {}
    try:
        loaded = json.loads(file.read_text(encoding="utf-8"))
        raw = loaded if isinstance(loaded, dict) else {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError):
        pass  # nested past json's recursion limit: pydantic's parser already said so, in `problem`
    job_id = raw.get("job_id") if isinstance(raw.get("job_id"), str) else None
    # Unreadable through and through: the runner writes it under results/<job id>/, so the folder names the job.
    job_id = job_id or next((part for part in reversed(pathlib.PurePosixPath(relative).parent.parts)
                             if part in plan_by_id), None)
    planned = plan_by_id.get(job_id or "")
    fields = {"kind": "sweep", "recipe": "?", "recipe_fingerprint": "?", "runner_label": "?"}
    if planned is not None:
        fields = {name: getattr(planned, name) for name in fields}
    else:
        for name in fields:
            if isinstance(raw.get(name), str):
                fields[name] = raw[name]
        if fields["kind"] not in ("sweep", "e2e"):
            fields["kind"] = "sweep"
    return JobResult(job_id=job_id or f"unreadable:{relative}", status="failed",
                     reason=f"{relative} is not a valid result: {problem}", **fields)


def _read_result(file: pathlib.Path, root: pathlib.Path,
                 plan_by_id: dict[str, Job]) -> tuple[JobResult, str | None]:
    try:
        text = file.read_text(encoding="utf-8")
        return JobResult.model_validate_json(text), None
    except (OSError, UnicodeDecodeError) as exc:
        problem = f"cannot be read: {exc}"
    except pydantic.ValidationError as exc:
        problem = _pydantic_problem(exc)
    return _invalid_result(file, root, problem, plan_by_id), "invalid result.json"


RUNNER_LOG = "runner.log"  # the runner's own lines (bot/runner/progress.py), written as it goes
LOG_TAIL_LINES = 3
LOG_LINE_WIDTH = 200


def runner_log_tail(results_dir: pathlib.Path, job_id: str) -> str | None:
    """The last lines of the runner.log a job left without a result.json (its runner was killed, say
    by SIGKILL or an out-of-memory kill), found in a folder named after the job; None when none."""
    for log in sorted(results_dir.rglob(RUNNER_LOG)):
        if (log.parent / RESULT_FILE).exists() or job_id not in log.relative_to(results_dir).parts:
            continue
        try:
            lines = [line.strip() for line in log.read_text(encoding="utf-8", errors="replace").splitlines()]
        except OSError:
            continue
        kept = [line[:LOG_LINE_WIDTH] for line in lines if line][-LOG_TAIL_LINES:]
        if kept:
            return " / ".join(kept)
    return None


def lost_result(job: Job, log_tail: str | None = None) -> JobResult:
    reason = f"no {RESULT_FILE} came back: the runner was lost, timed out or never started the job"
    if log_tail:
        reason += f"; its {RUNNER_LOG} ends: {log_tail}"
    return JobResult(
        job_id=job.job_id, kind=job.kind, recipe=job.recipe,
        recipe_fingerprint=job.recipe_fingerprint, runner_label=job.runner_label,
        status="lost", gpus=job.gpus, repository=job.repository, pr=job.pr, sha=job.sha,
        command=job.command, reason=reason)


def _stale(result: JobResult, head_sha: str | None) -> JobResult | None:
    if not head_sha or not result.sha or result.sha == head_sha:
        return None
    # Its numbers describe other code: keep the job, drop the cases so that no row shows them.
    return result.model_copy(update={
        "status": "failed", "cases": [],
        "reason": f"this result is for commit {result.sha[:12]}, not the head {head_sha[:12]}",
    })


def _majority(values: list[str | None]) -> str | None:
    present = [v for v in values if v]
    return max(sorted(set(present)), key=present.count) if present else None


def collect(results_dir: pathlib.Path, plan: list[Job] | None = None,
            head_sha: str | None = None) -> Collection:
    """Every planned job once (its latest result, else `lost`), then every unplanned result.

    Without `head_sha`, the head is the commit the plan names, else the one most results name."""
    if not results_dir.is_dir():
        raise InputError(msg("%(path)s: the results directory does not exist", path=results_dir))
    plan = plan or []
    plan_by_id = {job.job_id: job for job in plan}
    found: dict[str, list[tuple[JobResult, str, str | None]]] = {}
    for file in sorted(results_dir.rglob(RESULT_FILE)):
        result, problem = _read_result(file, results_dir, plan_by_id)
        found.setdefault(result.job_id, []).append(
            (result, file.relative_to(results_dir).as_posix(), problem))

    head_sha = head_sha or _majority([job.sha for job in plan]) or _majority(
        [attempt[0].sha for attempts in found.values() for attempt in attempts])

    def pick(job_id: str) -> CollectedJob:
        attempts = found[job_id]
        # Latest finished attempt wins; a result without a time sorts first, the path breaks ties.
        result, source, problem = max(attempts, key=lambda a: (a[0].finished_at or "", a[1]))
        stale = _stale(result, head_sha)
        if stale is not None:
            result, problem = stale, "stale result"
        earlier = tuple(a[0] for a in attempts if a[1] != source)
        return CollectedJob(result=result, source=source, plan=plan_by_id.get(job_id),
                            attempts=len(attempts), problem=problem, earlier=earlier)

    jobs = [pick(job.job_id) if job.job_id in found
            else CollectedJob(result=lost_result(job, runner_log_tail(results_dir, job.job_id)), source=None,
                              plan=job, attempts=0)
            for job in plan]
    jobs += [pick(job_id) for job_id in sorted(found) if job_id not in plan_by_id]
    return Collection(jobs=tuple(jobs), plan_given=bool(plan), head_sha=head_sha)
