"""The planned job: what `recipe-bot plan` emits and `recipe-bot run --job F` executes (a contract)."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bot.core.messages import msg
from bot.core.validation import Invalid

JOB_SCHEMA_VERSION = 1


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ServerSpec(Strict):
    """One engine server process. Several in one case run side by side (e.g. one per GPU)."""

    name: str = "server"
    engine: str  # a name in bot.engines' registry, checked when the runner loads the job
    model: str
    served_model_name: str | None = None
    # Engine arguments already resolved from the recipe (tp, ep, dp-attention, spec decoding...).
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    # A recipe may name its own launch script (path relative to the repository root) instead of
    # the engine command that recipe-bot builds; it receives PORT, MODEL and the args via env.
    launch_script: str | None = None
    devices: list[int] | None = None  # becomes CUDA_VISIBLE_DEVICES
    port: int | None = None  # None: the runner picks a free port
    startup_timeout_s: float = 600.0
    image: str | None = None  # container image; used by the Slurm backend through pyxis
    # False: neither polled for readiness nor the client's target; its readiness shows through another
    # server of the case (afd-plugin polls only Attention; the FFN role is started first, not polled).
    ready_check: bool = True


class LoadPoint(Strict):
    """One benchmark point: a concurrency and a workload, run against an already-ready server."""

    point_id: str
    concurrency: int = Field(ge=1)
    dataset: Literal["random", "trace"] = "random"
    isl: int | None = Field(default=None, ge=1)
    osl: int | None = Field(default=None, ge=1)
    trace: str | None = None  # trace dataset name or path when dataset == "trace"
    num_prompts: int = Field(ge=1)
    num_warmups: int = Field(default=0, ge=0)
    random_range_ratio: float = 0.0
    extra_args: list[str] = Field(default_factory=list)
    repeats: int = Field(default=1, ge=1)  # run the point this many times on the same launch
    client: str | None = None  # an engine's name (bot.engines); None: the servers' own engine's client


class AccuracySpec(Strict):
    task: Literal["gsm8k"] = "gsm8k"
    num_samples: int = Field(ge=1)
    num_shots: int = Field(ge=0)
    threshold: float = Field(ge=0.0, le=1.0)
    metric: Literal["strict-match", "flexible-extract"] = "strict-match"
    max_tokens: int = 256
    data_path: str | None = None  # local JSONL; None: RECIPE_BOT_GSM8K_DIR, else openai/gsm8k from the hub


class SearchBound(Strict):
    """`max-conc-under`: the bound every chosen point must meet."""

    metric: Literal["interactivity", "ttft_ms"]  # interactivity >= value; TTFT median <= value ms
    value: float = Field(gt=0)


class SearchSpec(Strict):
    """An adaptive concurrency search (bot/runner/search.py): the runner picks each next point."""

    range: tuple[int, int]
    target: Literal["knee", "cliff", "max-conc-under"] = "knee"
    budget: int = Field(default=8, ge=2, le=64)
    tolerance: float = Field(default=0.15, gt=0.0, le=1.0)
    bound: SearchBound | None = None
    # The workload's per-point rules, so the runner sizes each point it chooses like the planner would.
    prompts_per_concurrency: int | None = Field(default=None, ge=1)
    min_prompts: int = Field(default=1, ge=1)
    warmups_per_concurrency: int | None = Field(default=None, ge=0)
    # The case's points after the template are a fixed list run on the same launch, spread between
    # the search's points (bot/runner/search_run.py), so that drift in a shared host's load hits both
    # alike (bench/bench_search.py). The search still reads only its own points.
    interleave: bool = False

    @model_validator(mode="after")
    def _consistent(self) -> "SearchSpec":
        lo, hi = self.range
        if lo < 1 or hi <= lo:
            raise Invalid(msg("range must be [lo, hi] with 1 <= lo < hi"))
        if (self.target == "max-conc-under") != (self.bound is not None):
            raise Invalid(msg("bound is required with target max-conc-under and accepted with no other"))
        return self


class CommandSpec(Strict):
    """The repository's own E2E command for one case (afd-plugin: a pytest node id calling its runner).

    It passes only on exit 0 and, with `pytest`, on a JUnit report showing `expect_passed` tests passed
    and none skipped, errored or failed."""

    argv: list[str] = Field(min_length=1)
    cwd: str = "."  # relative to the checkout
    env: dict[str, str] = Field(default_factory=dict)
    pythonpath: bool = True  # the checkout first on PYTHONPATH
    pytest: bool = True
    nodes: list[str] = Field(default_factory=list)  # node ids in argv, for the verdict
    expect_passed: int = Field(default=1, ge=0)
    setup: list[list[str]] = Field(default_factory=list)  # run once per job before its first case
    ports: list[int] = Field(default_factory=list)  # named ports: free before, proven free after
    keep: list[str] = Field(default_factory=list)  # globs under cwd copied into the result
    plugin: str | None = None
    devices: list[int] = Field(default_factory=list)  # the GPUs it holds (positions the runner was given)
    opt_in: dict | None = None  # the harness's own checks (model dir, device count, roles)
    timeout_s: float | None = Field(default=None, gt=0)


class Case(Strict):
    """One server launch: its servers, the load points it runs in order, and its accuracy gate."""

    name: str
    servers: list[ServerSpec] = Field(default_factory=list)
    command: CommandSpec | None = None  # set: the case runs this instead of starting servers
    points: list[LoadPoint] = Field(default_factory=list)
    accuracy: AccuracySpec | None = None
    # Opt-in variables (afd-plugin rule): a missing one fails the case, never skips it.
    required_env: list[str] = Field(default_factory=list)
    unset_env: list[str] = Field(default_factory=list)  # removed from the servers' environment
    reset_prefix_cache_between_points: bool = True
    # A variable listing the GPUs that the servers' `devices` index into (afd-plugin's AFD_E2E_DEVICES):
    # devices [0, 1, 2, 3] then mean its first four entries, so the opt-in's value decides the mapping.
    devices_env: str | None = None
    # Set: `points` holds one template point; the runner chooses each concurrency (bot/runner/search.py).
    # With search.interleave, the points after the template run spread between the search's.
    search: SearchSpec | None = None

    @model_validator(mode="after")
    def _search_points_distinct(self) -> "Case":
        if not self.servers and self.command is None:
            raise Invalid(msg("a case starts servers or runs a command; this one has neither"))
        # The search's points are named <template label>-c<concurrency>; a fixed point of that
        # name would be read as the search's own.
        if self.search is not None and self.points:
            label = self.points[0].point_id.removesuffix("-search")
            clash = [p.point_id for p in self.points[1:] if p.point_id.startswith(f"{label}-c")]
            if clash:
                raise Invalid(msg("points %(points)s are named like the search's own (%(label)s-c<concurrency>)",
                                  points=str(clash), label=label))
        return self


class SlurmSpec(Strict):
    partition: str | None = None
    time_limit: str = "01:00:00"
    gres: str | None = None  # e.g. "gpu:2"
    account: str | None = None
    extra_args: list[str] = Field(default_factory=list)


class Job(Strict):
    schema_version: int = JOB_SCHEMA_VERSION
    job_id: str
    kind: Literal["sweep", "e2e"]
    recipe: str
    recipe_fingerprint: str
    runner_label: str
    gpus: int = Field(default=0, ge=0)
    cases: list[Case] = Field(min_length=1)
    estimated_gpu_hours: float = 0.0
    timeout_s: float = 3600.0
    estimate_s: float | None = None  # the planner's estimate of the job's wall time
    limit_s: float | None = None  # the limit the plan held it to (workflow timeout or cluster limit)
    limit_source: str | None = None
    fail_fast: bool = False
    slurm: SlurmSpec | None = None
    # Where the job came from: filled by dispatch, carried into the result for the report.
    repository: str | None = None
    pr: int | None = None
    sha: str | None = None
    command: str | None = None
    # A `compare:` job: its two arms' case names, run on this one host with the same points and repeats.
    compare_arms: list[str] = Field(default_factory=list)
    manual: str | None = None  # a manual suite's reason: run on command, never required by the gate

    @property
    def points(self) -> list[LoadPoint]:
        return [point for case in self.cases for point in case.points]

    @property
    def server_launches(self) -> int:
        return len(self.cases)
