"""`/status` as a queue view: this PR's runs with their jobs' waits, and queued/running jobs per runner label.

GitHub has no "queue" endpoint: the repository's queued and in-progress runs are listed (one page of
each), then each run's jobs, whose `labels` say which runners may take them. The number of requests
is bounded (MAX_PR_RUNS + MAX_QUEUE_RUNS job listings at most, one page each), and the reply says so
when the repository had more active runs than were counted.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only
    from bot.control.client import JobsClient
    from bot.core.markers import PrRun

MAX_PR_RUNS = 5  # this PR's newest runs whose jobs are listed
MAX_QUEUE_RUNS = 20  # the repository's newest active runs whose jobs are counted per label
PAGE = 100  # runs per page GitHub returns; a full page may mean more were left unread
GENERIC_LABELS = frozenset({"self-hosted"})  # every self-hosted job has it: it says nothing of the runner
WAITING_STATES = frozenset({"queued", "waiting", "pending", "requested"})


@dataclasses.dataclass(frozen=True)
class LabelLoad:
    label: str
    queued: int
    running: int


def label_key(labels: Iterable[str]) -> str:
    """The runner a job needs, as one name: its labels without the generic `self-hosted`, joined by +."""
    labels = list(labels)
    specific = [label for label in labels if label not in GENERIC_LABELS]
    return " + ".join(specific) if specific else (labels[0] if labels else "(none)")


def waited(job: Any, now: dt.datetime) -> tuple[int | None, bool]:
    """Seconds from queued to started (to now when still waiting), and whether it is still waiting."""
    if job.created_at is None:
        return None, job.status in WAITING_STATES
    if job.status in WAITING_STATES:
        return max(0, int((now - job.created_at).total_seconds())), True
    if job.started_at is None:
        return None, False
    return max(0, int((job.started_at - job.created_at).total_seconds())), False


def duration(seconds: int | None) -> dict[str, int] | None:
    """Hours, minutes and seconds, for the templates to word in each language."""
    if seconds is None:
        return None
    return {"h": seconds // 3600, "m": seconds % 3600 // 60, "s": seconds % 60}


def count_labels(jobs: Iterable[Any]) -> list[LabelLoad]:
    """Queued and running jobs per runner label; the longest queue first."""
    queued: dict[str, int] = {}
    running: dict[str, int] = {}
    for job in jobs:
        key = label_key(job.labels)
        if job.status in WAITING_STATES:
            queued[key] = queued.get(key, 0) + 1
        elif job.status == "in_progress":
            running[key] = running.get(key, 0) + 1
    labels = set(queued) | set(running)
    loads = [LabelLoad(label, queued.get(label, 0), running.get(label, 0)) for label in labels]
    return sorted(loads, key=lambda load: (-load.queued, -load.running, load.label))


def job_rows(run_id: int, jobs: Sequence[Any], now: dt.datetime) -> list[dict[str, Any]]:
    rows = []
    for job in jobs:
        seconds, waiting = waited(job, now)
        rows.append({"run_id": run_id, "name": job.name, "status": job.status, "conclusion": job.conclusion,
                     "runner": label_key(job.labels), "wait": duration(seconds), "waiting": waiting,
                     "url": job.html_url})
    return rows


def context(pr_jobs: Sequence[tuple[int, Sequence[Any]]], active_jobs: Iterable[Any], *, now: dt.datetime,
            active_runs: int, counted_runs: int, more_pages: bool) -> dict[str, Any]:
    """The template context of the queue view (pure: the records are read by `read`)."""
    return {
        "jobs": [row for run_id, jobs in pr_jobs for row in job_rows(run_id, jobs, now)],
        "queue": [dataclasses.asdict(load) for load in count_labels(active_jobs)],
        "active_runs": active_runs, "counted_runs": counted_runs,
        "capped": more_pages or counted_runs < active_runs, "more_pages": more_pages,
        "max_pr_runs": MAX_PR_RUNS,
    }


def read(client: JobsClient, pr_runs: Sequence[PrRun], now: dt.datetime,
         log: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """Read this PR's newest runs' jobs and the repository's active runs' jobs (bounded), then build the view."""
    listed: dict[int, list[Any]] = {}

    def jobs_of(run_id: int) -> list[Any]:
        if run_id not in listed:  # a PR run that is also active is listed once
            listed[run_id] = client.list_run_jobs(run_id, pages=1)
        return listed[run_id]

    pr_jobs = [(r.run.id, jobs_of(r.run.id)) for r in pr_runs[:MAX_PR_RUNS]]
    pages = [client.list_repo_runs(status, pages=1) for status in ("queued", "in_progress")]
    active = sorted({run.id: run for page in pages for run in page}.values(), key=lambda run: run.id, reverse=True)
    counted = active[:MAX_QUEUE_RUNS]
    active_jobs = [job for run in counted for job in jobs_of(run.id)]
    more_pages = any(len(page) >= PAGE for page in pages)
    log(f"queue view: {len(listed)} job listing(s), {len(counted)} of {len(active)} active run(s) counted")
    return context(pr_jobs, active_jobs, now=now, active_runs=len(active), counted_runs=len(counted),
                   more_pages=more_pages)
