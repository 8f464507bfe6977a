"""Turn collected results, the baseline and the thresholds into one Report and its verdict."""
from __future__ import annotations

import re
from collections.abc import Mapping

from bot.core.i18n import inline_code
from bot.core.jobs import Job
from bot.core.messages import Message, msg
from bot.report.collect import Collection, CollectedJob
from bot.report import failure_groups
from bot.report.compare import Baseline, compare_point
from bot.report.model import (
    STATUSES,
    CleanupView,
    Counts,
    E2ERow,
    Failure,
    Meta,
    PointRow,
    Reason,
    RecipeSection,
    Report,
    Verdict,
)
from bot.report.power_view import power_lines
from bot.report.sources import reproduce, source_of
from bot.core.results import CaseResult, CleanupProof, JobResult

# A case of an unpacked sweep carries its concurrency in its name; the arm is the rest.
_CONCURRENCY_SUFFIX = re.compile(r"[-_.](?:c|conc|concurrency)[-_]?\d+$", re.IGNORECASE)


def arm_name(case_name: str) -> str:
    """The server configuration a point belongs to: its case name without a concurrency suffix."""
    return _CONCURRENCY_SUFFIX.sub("", case_name) or case_name


def cleanup_view(proof: CleanupProof | None) -> CleanupView:
    if proof is None:
        return CleanupView("none")
    state = "sigkill" if proof.sigkill_escalated else ("clean" if proof.clean else "dirty")
    return CleanupView(state, tuple(proof.leftover_pids), tuple(proof.busy_ports),
                       proof.gpu_memory_back, proof.teardown_s)


def _planned_cases(job: CollectedJob) -> list[tuple[str, list[tuple[str, int]]]]:
    plan: Job | None = job.plan
    if plan is None:
        return []
    return [(case.name, [(p.point_id, p.concurrency) for p in case.points]) for case in plan.cases]


def _point_rows(job: CollectedJob, baseline: Baseline,
                thresholds: Mapping[str, float], head_sha: str | None = None) -> list[PointRow]:
    result = job.result
    base = {"job_id": result.job_id, "recipe": result.recipe,
            "fingerprint": result.recipe_fingerprint}
    command = reproduce(job, head_sha)
    gpus = tuple(result.hardware.gpus) if result.hardware else ()
    rows: list[PointRow] = []
    for case in result.cases:
        arm = arm_name(case.name)
        for point in case.points:
            metrics = point.metrics
            if metrics is None:
                rows.append(PointRow(**base, arm=arm, case=case.name, point_id=point.point_id,
                                     concurrency=point.concurrency, status=point.status,
                                     reason=point.reason, isl=point.isl, osl=point.osl,
                                     reproduce=command))
                continue
            comparison = None
            if point.status == "passed":
                comparison = compare_point(
                    metrics, baseline.lookup(result.recipe_fingerprint, point.point_id),
                    thresholds, engine_version=result.engine_version, gpus=gpus,
                    head_repeats=tuple(point.repeats), client_process=point.client_process)
            rows.append(PointRow(
                **base, arm=arm, case=case.name, point_id=point.point_id, concurrency=point.concurrency,
                status=point.status, reason=point.reason, isl=point.isl, osl=point.osl,
                tput_per_gpu=metrics.tput_per_gpu, interactivity=metrics.interactivity,
                ttft_p50=metrics.ttft_ms.get("median"), ttft_p99=metrics.ttft_ms.get("p99"),
                tpot_p50=metrics.tpot_ms.get("median"), comparison=comparison,
                requests=metrics.completed, reproduce=command))
    # Planned points with no result (a lost or cancelled job, a runner that stopped early) still
    # show, as lost, cancelled or skipped: never silently dropped, never passed.
    seen = {row.point_id for row in rows}
    if not result.cases:  # lost, cancelled, skipped or unreadable: every planned point
        missing_status = "skipped" if result.status == "passed" else result.status
    else:
        missing_status = "cancelled" if result.status == "cancelled" else "skipped"
    for case_name, points in _planned_cases(job):
        rows += [PointRow(**base, arm=arm_name(case_name), case=case_name, point_id=point_id,
                          concurrency=conc, status=missing_status, reproduce=command,
                          reason=result.reason if not result.cases else "no result for this point")
                 for point_id, conc in points if point_id not in seen]
    return rows


def _e2e_rows(job: CollectedJob) -> list[E2ERow]:
    result = job.result
    if result.kind != "e2e":
        return []
    rows = [E2ERow(result.job_id, result.recipe, case.name, case.status, case.reason,
                   case.accuracy, cleanup_view(case.cleanup)) for case in result.cases]
    if not result.cases:
        names = [name for name, _ in _planned_cases(job)] or ["—"]
        rows = [E2ERow(result.job_id, result.recipe, name, result.status, result.reason, None,
                       CleanupView("none")) for name in names]
    return rows


def _slurm(result: JobResult) -> str | None:
    if result.slurm is None:
        return None
    slurm = result.slurm
    parts = [f"job {slurm.job_id}", slurm.state]
    parts += [p for p in (slurm.node, slurm.exit_code and f"exit {slurm.exit_code}",
                          slurm.reason) if p]
    return ", ".join(parts)


def _case_failed(case: CaseResult) -> bool:
    return case.status == "failed" or (case.cleanup is not None and not case.cleanup.clean)


def _failures(job: CollectedJob) -> list[Failure]:
    result = job.result
    common = {"job_id": result.job_id, "recipe": result.recipe,
              "runner_label": result.runner_label, "source": job.source,
              "slurm": _slurm(result), "attempts": job.attempts}
    items = []
    for case in result.cases:
        if _case_failed(case):
            reason = case.reason
            if reason is None and case.cleanup is not None and not case.cleanup.clean:
                reason = "cleanup proof failed"
            items.append(Failure(**common, status="failed", reason=reason, case=case.name,
                                 log_tail=case.log_tail))
        elif case.status == "skipped" and result.status != "skipped":
            items.append(Failure(**common, status="skipped", reason=case.reason, case=case.name))
    if result.status != "passed" and not any(i.status == "failed" for i in items):
        items.insert(0, Failure(**common, status=result.status, reason=result.reason))
    return items


def _counts(jobs: list[CollectedJob], rows: list[PointRow]) -> Counts:
    job_counts = dict.fromkeys(STATUSES, 0)
    for job in jobs:
        job_counts[job.result.status] += 1
    point_counts = dict.fromkeys(STATUSES, 0)
    for row in rows:
        point_counts[row.status] += 1
    compared = [r for r in rows if r.status == "passed" and r.comparison is not None]
    regressions = sum(1 for r in compared if r.regressed)
    improvements = sum(1 for r in compared if not r.regressed and r.comparison.improvements)
    no_baseline = sum(1 for r in rows if r.status == "passed" and r.comparison is None)
    return Counts(job_counts, point_counts, regressions, improvements,
                  len(compared) - regressions - improvements, no_baseline)


def verdict(jobs: list[CollectedJob], counts: Counts, rows: list[PointRow] = ()) -> Verdict:
    """failure beats neutral beats success; every reason that applies is kept, with its count."""
    cases = [case for job in jobs for case in job.result.cases]
    problems = [job.problem for job in jobs]
    failed_jobs = sum(1 for job in jobs if job.problem is None and (
        job.result.status == "failed" or any(_case_failed(c) for c in job.result.cases)
        or any(p.status == "failed" for c in job.result.cases for p in c.points)))
    failing = [
        Reason("failed_jobs", failed_jobs),
        Reason("lost_jobs", counts.jobs["lost"]),
        Reason("invalid_results", problems.count("invalid result.json")),
        Reason("stale_results", problems.count("stale result")),
        Reason("accuracy", sum(1 for c in cases if c.accuracy and not c.accuracy.passed)),
        Reason("sigkill", sum(1 for c in cases if c.cleanup and c.cleanup.sigkill_escalated)),
        Reason("cleanup", sum(1 for c in cases if c.cleanup and not c.cleanup.clean
                              and not c.cleanup.sigkill_escalated)),
        Reason("regressions", counts.regressions),
    ]
    failing = [reason for reason in failing if reason.count]
    if failing:
        return Verdict("failure", tuple(failing))
    if counts.jobs["passed"] == 0:
        return Verdict("neutral", (Reason("nothing_ran", counts.jobs_total),))
    status_of = {job.result.job_id: job.result.status for job in jobs}
    not_run = (counts.jobs["cancelled"] + counts.jobs["skipped"]
               + sum(1 for job in jobs if job.result.status not in ("cancelled", "skipped")
                     for c in job.result.cases if c.status == "skipped")
               + sum(1 for row in rows if row.status in ("skipped", "cancelled")
                     and status_of.get(row.job_id) == "passed"))
    if not_run:
        return Verdict("neutral", (Reason("incomplete", not_run),))
    return Verdict("success", (Reason("all_passed", counts.jobs["passed"]),))


def _sections(rows: list[PointRow], jobs: list[CollectedJob],
              head_sha: str | None = None) -> list[RecipeSection]:
    by_fingerprint: dict[tuple[str, str], list[PointRow]] = {}
    for row in rows:
        by_fingerprint.setdefault((row.recipe, row.fingerprint), []).append(row)
    sections = []
    for (recipe, fingerprint), recipe_rows in by_fingerprint.items():
        mine = [j for j in jobs if j.result.recipe_fingerprint == fingerprint
                and j.result.recipe == recipe]
        results = [j.result for j in mine]
        engines = sorted({f"{r.engine} {r.engine_version or ''}".strip()
                          for r in results if r.engine})
        env = sorted({change for row in recipe_rows if row.comparison
                      for change in row.comparison.env_changes})
        recipe_rows.sort(key=lambda r: (r.arm, r.concurrency, r.point_id))
        sections.append(RecipeSection(
            recipe, fingerprint, tuple(sorted({r.runner_label for r in results})),
            tuple(engines), max((r.gpus for r in results), default=0), tuple(recipe_rows),
            tuple(env), source_of(mine),
            tuple(dict.fromkeys((r.job_id, r.runner_label, reproduce(j, head_sha))
                                for j, r in zip(mine, results))),
            tuple((c.name, c.search) for r in results for c in r.cases if c.search is not None),
            tuple(duty_line(r) for r in results if r.duty_cycle is not None),
            tuple(line for r in results for line in power_lines(r))))
    return sections


def duty_line(result: JobResult) -> Message:
    """What the job's GPU time bought: its seconds under load against its wall time (result.duty_cycle)."""
    duty = result.duty_cycle
    assert duty is not None
    return msg("Duty cycle of %(job)s: %(load)s s under load in %(wall)s s of job wall time (%(percent)s)",
               job=inline_code(result.job_id), load=f"{duty.load_s:,.1f}", wall=f"{duty.wall_s:,.1f}",
               percent=f"{duty.ratio * 100:.1f} %")


def build_report(collection: Collection, baseline: Baseline, thresholds: Mapping[str, float],
                 meta: Meta) -> Report:
    jobs = list(collection.jobs)
    rows = [row for job in jobs for row in _point_rows(job, baseline, thresholds, meta.sha)]
    counts = _counts(jobs, rows)
    meta = Meta(**{**meta.__dict__, "base_shas": meta.base_shas or baseline.shas,
                   "thresholds": dict(thresholds),
                   "unreadable_baseline": baseline.unreadable,
                   "e2e_source": source_of(j for j in jobs if j.result.kind == "e2e")})
    return Report(
        meta=meta, verdict=verdict(jobs, counts, rows), counts=counts,
        recipes=tuple(_sections(rows, jobs, meta.sha)),
        e2e=tuple(row for job in jobs for row in _e2e_rows(job)),
        failures=tuple(f for job in jobs for f in _failures(job)),
        failure_groups=failure_groups.groups(jobs))
