"""The report as data: every row, count and reason that the comment, the check and the JSON show."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from bot.report.compare import Comparison
from bot.report.failure_groups import FailureGroup
from bot.report.sources import Source
from bot.core.messages import Message
from bot.core.results import AccuracyResult, SearchTrace

Conclusion = Literal["success", "failure", "neutral"]
# A point row's status: the point's own, or its job's when the job left no point results.
RowStatus = Literal["passed", "failed", "skipped", "cancelled", "lost"]
STATUSES = ("passed", "failed", "lost", "cancelled", "skipped")


@dataclass(frozen=True)
class PointRow:
    job_id: str
    recipe: str
    fingerprint: str
    arm: str
    case: str
    point_id: str
    concurrency: int
    status: RowStatus
    reason: str | None = None
    isl: int | None = None
    osl: int | None = None
    tput_per_gpu: float | None = None
    interactivity: float | None = None
    ttft_p50: float | None = None
    ttft_p99: float | None = None
    tpot_p50: float | None = None
    comparison: Comparison | None = None  # None: no baseline for this point
    requests: int | None = None  # completed requests behind the figures (one run)
    reproduce: str | None = None  # the `recipe-bot run` line that measures this point again

    @property
    def regressed(self) -> bool:
        return self.comparison is not None and bool(self.comparison.regressions)

    @property
    def needs_attention(self) -> bool:
        return self.status != "passed" or self.regressed


@dataclass(frozen=True)
class RecipeSection:
    recipe: str
    fingerprint: str
    runner_labels: tuple[str, ...]
    engines: tuple[str, ...]
    gpus: int
    rows: tuple[PointRow, ...]
    env_changes: tuple[str, ...] = ()
    source: Source | None = None  # hosts, model and data sources of the figures
    reproduce: tuple[tuple[str, str, str], ...] = ()  # (job id, runner label, command)
    searches: tuple[tuple[str, SearchTrace], ...] = ()  # (case name, what its adaptive search chose)
    duty: tuple[Message, ...] = ()  # one line a job whose result records its measurement duty cycle
    power: tuple[Message, ...] = ()  # each job's power: tok/s/W where valid, InferenceX's reasons where not


@dataclass(frozen=True)
class CleanupView:
    state: Literal["clean", "sigkill", "dirty", "none"]
    leftover_pids: tuple[int, ...] = ()
    busy_ports: tuple[int, ...] = ()
    gpu_memory_back: bool | None = None
    teardown_s: float | None = None


@dataclass(frozen=True)
class E2ERow:
    job_id: str
    suite: str
    case: str
    status: RowStatus
    reason: str | None
    accuracy: AccuracyResult | None
    cleanup: CleanupView


@dataclass(frozen=True)
class Failure:
    job_id: str
    recipe: str
    runner_label: str
    status: RowStatus
    reason: str | None
    case: str | None = None
    log_tail: str | None = None
    source: str | None = None  # the result.json it came from
    slurm: str | None = None
    attempts: int = 1

    @property
    def key(self) -> str:
        """What makes a failure 'new' between two reports of one head SHA."""
        return f"{self.job_id}/{self.case or ''}/{self.status}"


@dataclass(frozen=True)
class Reason:
    code: str  # failed_jobs, lost_jobs, invalid_results, stale_results, accuracy, sigkill,
    #            cleanup, regressions, nothing_ran, incomplete, all_passed
    count: int


@dataclass(frozen=True)
class Verdict:
    conclusion: Conclusion
    reasons: tuple[Reason, ...]


@dataclass(frozen=True)
class Counts:
    jobs: dict[str, int]
    points: dict[str, int]
    regressions: int  # points with at least one metric regressed beyond its threshold
    improvements: int
    within: int  # compared points with neither
    no_baseline: int  # passed points the base branch has no result for

    @property
    def jobs_total(self) -> int:
        return sum(self.jobs.values())

    @property
    def points_total(self) -> int:
        return sum(self.points.values())


@dataclass(frozen=True)
class Meta:
    sha: str | None = None
    repository: str | None = None
    pr: int | None = None
    command: str | None = None
    run_url: str | None = None
    base_shas: tuple[str, ...] = ()
    thresholds: dict[str, float] = field(default_factory=dict)
    unreadable_baseline: tuple[str, ...] = ()
    e2e_source: Source | None = None  # the E2E jobs' model and data sources

    @property
    def artifacts_url(self) -> str | None:
        return f"{self.run_url}#artifacts" if self.run_url else None


@dataclass(frozen=True)
class Report:
    meta: Meta
    verdict: Verdict
    counts: Counts
    recipes: tuple[RecipeSection, ...]
    e2e: tuple[E2ERow, ...]
    failures: tuple[Failure, ...]
    failure_groups: tuple[FailureGroup, ...] = ()  # by class: infrastructure first, then recipe

    @property
    def failure_keys(self) -> list[str]:
        """Failed or lost jobs and cases, and regressed points: a new one earns a new comment."""
        keys = {f.key for f in self.failures if f.status in ("failed", "lost")}
        keys |= {f"{row.job_id}/{row.point_id}/regressed" for section in self.recipes
                 for row in section.rows if row.regressed}
        return sorted(keys)
