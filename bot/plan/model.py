"""The planner's typed input (filters) and output (the plan the GPU workflow consumes)."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.jobs import Job, SlurmSpec

PLAN_SCHEMA_VERSION = 1
MAX_MATRIX_JOBS = 256  # GitHub Actions' limit of jobs per matrix


class Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PlanFilters(Model):
    """What a command narrows the plan to (`/sweep [glob ...] [--conc ...] [--scope ...]`, labels)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    recipes: tuple[str, ...] = ()  # globs; given: chosen from the whole catalog, touched or not
    cases: tuple[str, ...] = ()  # globs on E2E case names
    conc: tuple[int, ...] = ()
    scope: Literal["lowest", "full"] = "full"  # lowest: the lowest concurrency of each arm
    kind: Literal["all", "sweep", "e2e"] = "all"
    canary: bool | None = None  # None: a canary when the scope is full and there are 2+ sweep jobs
    fail_fast: bool = False
    evals_only: bool = False  # only the accuracy gates (InferenceX's `evals-only` label)
    all_evals: bool = False  # a gate on every arm (InferenceX's `all-evals` label)
    agentx_fast: bool = False  # InferenceX's `agentx-fast` label: AIPERF_EXPERIMENTAL_FAST=1 for its rows
    accuracy: bool = True
    pack: bool = True  # False: one launch per point even where the recipe allows packing
    search: bool = False  # `/sweep --search`: arms with a `search:` run it even where they list points
    max_matrix_jobs: int = Field(default=MAX_MATRIX_JOBS, ge=1, le=MAX_MATRIX_JOBS)


class TouchedRecipe(Model):
    name: str
    source: Literal["recipe", "inferencex"]
    runner_label: str
    reasons: list[str]
    fingerprint: str | None = None
    base_fingerprint: str | None = None


class RecipePlan(Model):
    """One row of the plan table."""

    recipe: str
    source: Literal["recipe", "inferencex"]
    kind: str
    runner_label: str
    jobs: int
    points: int
    server_launches: int  # what this plan starts
    packed_launches: int  # with every point that may share a launch packed
    unpacked_launches: int  # with one launch per point
    gpu_hours: float
    fingerprint: str | None = None


class MatrixEntry(Model):
    job_id: str
    recipe: str
    runner_label: str
    job: Job | None = None  # inline, or
    job_file: str | None = None  # written under --jobs-dir for `recipe-bot run --job F`
    row: dict | None = None  # an InferenceX matrix row, exactly as its generator makes it
    backend: Literal["local", "slurm"] | None = None  # how `recipe-bot run` runs it on its runner label
    estimate_s: float | None = None  # the plan's estimate of its wall time
    limit_s: float | None = None  # the limit it is held to (gpu.yml timeout or the cluster's limit)
    limit_source: str | None = None
    slurm: SlurmSpec | None = None  # the allocation an InferenceX row runs in (backend slurm)


class Matrix(Model):
    """One GitHub Actions matrix: at most 256 entries, all for one runner label."""

    runner_label: str
    index: int
    fail_fast: bool
    include: list[MatrixEntry]


class ChangelogSummary(Model):
    line: int
    config_keys: list[str]
    evals_only: bool
    all_evals: bool
    append_only: bool
    pr_link: str


class InferenceXPlan(Model):
    changelog: list[ChangelogSummary] = Field(default_factory=list)
    rows: dict[str, list[dict]] = Field(default_factory=dict)  # bucket → rows
    canary: MatrixEntry | None = None
    matrices: list[Matrix] = Field(default_factory=list)
    launches: int = 0
    packed_launches: int = 0  # counting only the groups that may honestly share a launch
    # one line per server configuration of 2+ rows: whether its rows may share a launch, and why
    packing: list[dict] = Field(default_factory=list)


class Plan(Model):
    schema_version: int = PLAN_SCHEMA_VERSION
    base: str | None
    head: str
    filters: PlanFilters
    touched: list[TouchedRecipe] = Field(default_factory=list)
    recipes: list[RecipePlan] = Field(default_factory=list)
    jobs: list[Job] = Field(default_factory=list)  # every native job, the canary first when there is one
    canary: MatrixEntry | None = None
    matrices: list[Matrix] = Field(default_factory=list)
    inferencex: InferenceXPlan | None = None
    gpu_hours: float = 0.0
    notes: list[str] = Field(default_factory=list)
    # Problems in configs this change does not touch: listed, never a reason to stop the plan.
    warnings: list[dict] = Field(default_factory=list)

    @property
    def server_launches(self) -> int:
        return sum(r.server_launches for r in self.recipes)

    @property
    def points(self) -> int:
        return sum(r.points for r in self.recipes)

    def summary(self) -> dict:
        return {
            "recipes": len(self.recipes),
            "jobs": sum(r.jobs for r in self.recipes),
            "points": self.points,
            "server_launches": self.server_launches,
            "packed_launches": sum(r.packed_launches for r in self.recipes),
            "unpacked_launches": sum(r.unpacked_launches for r in self.recipes),
            "gpu_hours": round(self.gpu_hours, 2),
        }


class PlanError(Exception):
    """A plan request that cannot be satisfied (unknown revision, a glob that matches nothing...)."""

    def __init__(self, message: str, accepted: list[str] | None = None) -> None:
        self.accepted = accepted or []
        text = message
        if self.accepted:
            shown = self.accepted[:20] + ([f"... {len(self.accepted) - 20} more"] if len(self.accepted) > 20 else [])
            text += f" (accepted: {', '.join(shown)})"
        super().__init__(text)
