"""The merge gate: one verdict per head SHA, over every run on it, against what the PR requires.

A run's own verdict describes that run; the gate describes the commit. Results of all runs on
the head SHA are merged per (recipe fingerprint, point or case): a later result for the same key
replaces the earlier one (a rerun of a flaky point can pass it), but a run that did not measure a
key leaves that key's earlier result alone, so a narrower passing run never hides a failure.
The check is success only when every required key has a passing result and no key fails. A manual
suite's cases are no keys at all: run on command, its verdict is its report's, never the gate's.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from bot.core.jobs import Job
from bot.core.markers import header_markers
from bot.core.stage_markers import Ack, parse_ack_marker
from bot.report.collect import Collection
from bot.report.model import Report

Key = tuple[str, str]  # (recipe fingerprint, point id | "case:<name>")
Status = Literal["passed", "failed", "regressed"]
Conclusion = Literal["success", "failure", "pending"]

@dataclasses.dataclass(frozen=True)
class Outcome:
    """One measured key of one run: what happened to it, and where."""

    key: Key
    recipe: str
    status: Status
    run_id: int
    sha: str


@dataclasses.dataclass(frozen=True)
class GateVerdict:
    conclusion: Conclusion
    required: int
    passed: int  # required keys with a passing (or acknowledged) result
    failing: tuple[Outcome, ...]
    missing: tuple[tuple[str, Key], ...]  # (recipe, key) of required keys nobody measured yet
    acknowledged: tuple[tuple[Outcome, Ack], ...]
    runs: tuple[int, ...]  # the runs whose results count

    @property
    def reason(self) -> str:
        if self.failing:
            return "failing"
        if self.missing:
            return "incomplete"
        return "nothing-required" if not self.required and not self.runs else "all-passed"


def case_key(name: str) -> str:
    return f"case:{name}"


def required_keys(jobs: Iterable[Job]) -> dict[Key, str]:
    """What a plan measures: every sweep point, every E2E case (key → recipe name)."""
    keys: dict[Key, str] = {}
    for job in jobs:
        for case in job.cases:
            if job.kind == "e2e":
                keys[(job.recipe_fingerprint, case_key(case.name))] = job.recipe
            else:
                for point in case.points:
                    keys[(job.recipe_fingerprint, point.point_id)] = job.recipe
    return keys


def outcomes_of(collection: Collection, report: Report, run_id: int, sha: str) -> list[Outcome]:
    """The keys a run measured. Skipped and cancelled keys say nothing; lost ones failed."""
    out: list[Outcome] = []
    for section in report.recipes:
        for row in section.rows:
            status: Status | None = None
            if row.status == "passed":
                status = "regressed" if row.regressed else "passed"
            elif row.status in ("failed", "lost"):
                status = "failed"
            if status is not None:
                out.append(Outcome((row.fingerprint, row.point_id), row.recipe, status, run_id, sha))
    for job in collection.jobs:
        result = job.result
        if result.manual or (job.plan is not None and job.plan.manual):
            continue  # a manual suite runs on command and is never required: its verdict stays in its report
        for case in result.cases:
            bad = case.status == "failed" or (case.accuracy is not None and not case.accuracy.passed) \
                or (case.cleanup is not None and not case.cleanup.clean)
            if case.status != "skipped" or bad:  # a sweep case's accuracy gate and teardown count too
                out.append(Outcome((result.recipe_fingerprint, case_key(case.name)), result.recipe,
                                   "failed" if bad else "passed", run_id, sha))
        if result.kind == "e2e" and not result.cases and result.status in ("failed", "lost"):
            for case in (job.plan.cases if job.plan else []):
                out.append(Outcome((result.recipe_fingerprint, case_key(case.name)), result.recipe,
                                   "failed", run_id, sha))
    return out


def merge(outcomes: Iterable[Outcome], head_sha: str) -> dict[Key, Outcome]:
    """Per key, the latest result measured on head_sha (runs in id order, which is time order)."""
    merged: dict[Key, Outcome] = {}
    for outcome in sorted((o for o in outcomes if o.sha == head_sha), key=lambda o: o.run_id):
        # A canary and its packed job can both name a key in one run: a failure among them wins.
        same_run = merged.get(outcome.key)
        if same_run is not None and same_run.run_id == outcome.run_id and same_run.status != "passed" \
                and outcome.status == "passed":
            continue
        merged[outcome.key] = outcome
    return merged


def decide(outcomes: Iterable[Outcome], required: Mapping[Key, str], head_sha: str,
           acks: Sequence[Ack] = ()) -> GateVerdict:
    merged = merge(outcomes, head_sha)
    accepted = {ack.recipe: ack for ack in acks if ack.sha == head_sha}
    failing, acknowledged = [], []
    for key in sorted(merged):
        outcome = merged[key]
        if outcome.status == "failed":
            failing.append(outcome)
        elif outcome.status == "regressed":
            if outcome.recipe in accepted:
                acknowledged.append((outcome, accepted[outcome.recipe]))
            else:
                failing.append(outcome)
    missing = tuple((recipe, key) for key, recipe in sorted(required.items()) if key not in merged)
    passed = sum(1 for key in required if key in merged and merged[key] not in failing)
    conclusion: Conclusion = "failure" if failing else "pending" if missing else "success"
    runs = tuple(sorted({o.run_id for o in merged.values()}))
    return GateVerdict(conclusion, len(required), passed, tuple(failing), missing,
                       tuple(acknowledged), runs)


# -- acknowledgements: markers in the bot's own replies ----------------------------------------

def read_acks(comments: Iterable[object], bot_login: str, head_sha: str) -> list[Ack]:
    """Acknowledgements the bot recorded for head_sha; a marker typed by anyone else counts for nothing."""
    acks = []
    for line in header_markers(comments, bot_login):
        ack = parse_ack_marker(line)
        if ack is not None and ack.sha == head_sha:
            acks.append(ack)
    return acks


# -- what people read ------------------------------------------------------------------------------

def context(verdict: GateVerdict, *, sha: str, commands: Sequence[str] = ()) -> dict[str, object]:
    """The template context of the gate's check text and of its section in the report."""
    return {
        "conclusion": verdict.conclusion, "reason": verdict.reason, "sha": sha,
        "required": verdict.required, "passed": verdict.passed, "commands": list(commands),
        "failing": [{"recipe": o.recipe, "item": o.key[1], "status": o.status, "run_id": o.run_id}
                    for o in verdict.failing[:30]],
        "more_failing": max(0, len(verdict.failing) - 30),
        "missing": [{"recipe": r, "item": k[1]} for r, k in verdict.missing[:30]],
        "more_missing": max(0, len(verdict.missing) - 30),
        "acknowledged": [{"recipe": o.recipe, "item": o.key[1], "by": a.by, "reason": a.reason}
                         for o, a in verdict.acknowledged],
        "runs": list(verdict.runs),
    }
