"""The report's failures grouped by class (bot/core/failure_classes.py), every attempt of a job shown.

Whom to call: an infrastructure failure goes to whoever runs the hosts (and was retried once
automatically), a recipe failure to the PR's author. Each group names its rule in both
languages and quotes the last lines that decided it; the record per runner host feeds `/status`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from bot.core.failure_classes import INFRASTRUCTURE, annotate, rule
from bot.core.i18n import LANGUAGES
from bot.core.messages import Message, render
from bot.report.collect import CollectedJob
from bot.core.results import FailureClass, JobResult

_HOST_SAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass(frozen=True)
class FailedAttempt:
    job_id: str
    recipe: str
    runner_label: str
    host: str  # the Slurm node or the runner's host name, else the runner label
    attempt: int
    case: str | None
    failure: FailureClass
    retry: str | None = None  # infrastructure, first attempt: the retry's status, or "none yet"


@dataclass(frozen=True)
class FailureGroup:
    kind: str
    rule: str
    sentence: Message
    attempts: tuple[FailedAttempt, ...]


def host_of(result: JobResult) -> str:
    if result.slurm is not None and result.slurm.node:
        return result.slurm.node
    if result.hardware is not None and result.hardware.host:
        return result.hardware.host
    return result.runner_label


def _attempts(job: CollectedJob) -> list[JobResult]:
    return sorted([*job.earlier, job.result], key=lambda r: (r.attempt, r.finished_at or ""))


def failed_attempts(job: CollectedJob) -> list[FailedAttempt]:
    """Every failed or lost attempt of one job, oldest first, with its class."""
    attempts = _attempts(job)
    found = []
    latest = attempts[-1]
    if latest.attempt > 1 and all(r.attempt > 1 for r in attempts):
        # The retry came back, the first attempt did not: its runner was lost.
        found.append(FailedAttempt(
            latest.job_id, latest.recipe, latest.runner_label, latest.runner_label, 1, None,
            FailureClass(kind=INFRASTRUCTURE, rule="runner-lost",
                         evidence=["no result.json came back from the first attempt"]),
            retry=latest.status))
    for result in attempts:
        classified = annotate(result)
        if classified.failure is None:
            continue
        later = [r for r in attempts if r.attempt > result.attempt]
        retry = None
        if classified.failure.kind == INFRASTRUCTURE and result.attempt == 1:
            retry = later[-1].status if later else "none yet"
        failed_cases = [c for c in classified.cases
                        if c.failure is not None and c.failure.rule == classified.failure.rule]
        found.append(FailedAttempt(
            result.job_id, result.recipe, result.runner_label, host_of(result), result.attempt,
            failed_cases[0].name if failed_cases else None, classified.failure, retry))
    return found


def groups(jobs: list[CollectedJob]) -> tuple[FailureGroup, ...]:
    """Infrastructure groups first (they say "not the PR"), then recipe; table order within."""
    by_rule: dict[str, list[FailedAttempt]] = {}
    for job in jobs:
        for attempt in failed_attempts(job):
            by_rule.setdefault(attempt.failure.rule, []).append(attempt)
    made = []
    for rule_id, attempts in by_rule.items():
        known = rule(rule_id)
        made.append(FailureGroup(attempts[0].failure.kind, rule_id, known.sentence,
                                 tuple(attempts)))
    return tuple(sorted(made, key=lambda g: (g.kind != INFRASTRUCTURE, g.rule)))


def whom_to_call(failure_groups: tuple[FailureGroup, ...]) -> list[dict]:
    """What the check's title says: "infrastructure, retried" and/or "recipe", with counts."""
    infra = [a for g in failure_groups if g.kind == INFRASTRUCTURE for a in g.attempts
             if a.attempt == 1]
    recipe = [a for g in failure_groups if g.kind != INFRASTRUCTURE for a in g.attempts]
    calls = []
    if infra:
        retried = all(a.retry not in (None, "none yet") for a in infra)
        calls.append({"kind": "infrastructure", "retried": retried, "count": len(infra)})
    if recipe:
        calls.append({"kind": "recipe", "retried": False, "count": len(recipe)})
    return calls


def runner_record(failure_groups: tuple[FailureGroup, ...]) -> dict[str, int]:
    """Infrastructure failures per runner host, from the results themselves."""
    record: dict[str, int] = {}
    for group in failure_groups:
        if group.kind == INFRASTRUCTURE:
            for attempt in group.attempts:
                host = _HOST_SAFE.sub("_", attempt.host)[:80] or "unknown"
                record[host] = record.get(host, 0) + 1
    return dict(sorted(record.items()))


def view(failure_groups: tuple[FailureGroup, ...], fenced, log_lines: int = 40) -> list[dict]:
    """The groups as the templates show them; evidence inside code blocks (it is log text)."""
    shown = []
    for group in failure_groups:
        items = []
        for a in group.attempts:
            lines = a.failure.evidence[-max(1, min(log_lines, 5)):]
            # A line may be a catalogue message (a runner's reason): each language reads its own.
            evidence = {lang: "\n".join(render(line, lang) for line in lines) for lang in LANGUAGES}
            items.append({"job": a.job_id, "case": a.case, "runner": a.runner_label,
                          "host": a.host, "attempt": a.attempt, "retry": a.retry,
                          "evidence": {lang: fenced(text) for lang, text in evidence.items()}
                          if evidence["en"] and log_lines else None})
        shown.append({"kind": group.kind, "rule": group.rule, "sentence": group.sentence,
                      "attempts": items})
    return shown
