"""The typed result of one job: what `recipe-bot run` writes as DIR/result.json and the report reads."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bot.core.messages import Message, Text, msg

RESULT_SCHEMA_VERSION = 1

# passed/failed: the job ran and was judged. cancelled: stopped by /cancel, a push or Slurm.
# lost: no result came back (runner lost); written by the report's collector, never by a runner.
# skipped: not run (fail-fast after an earlier failure, filtered); never shown as passed.
JobStatus = Literal["passed", "failed", "cancelled", "lost", "skipped"]


# No real benchmark measures a billion tokens/s per request or waits 11 days for a token: a value
# past this is a broken file (1e308, Infinity), and it never reaches a comparison or the chart.
METRIC_LIMIT = 1e9


JOINED = "%(first)s; %(rest)s"  # the message joined() makes (bot/core/failure_classes.py takes it apart)


def joined(reasons: Sequence[Message | str]) -> Message | str | None:
    """Several reasons as one (`a; b; c`), each in the reader's language; None when there are none.

    Halved rather than chained, so a case with many failing points nests a few levels, not one per point."""
    if not reasons:
        return None
    if len(reasons) == 1:
        return reasons[0]
    half = len(reasons) // 2
    return msg("%(first)s; %(rest)s", first=joined(reasons[:half]), rest=joined(reasons[half:]))


def listed(parts: Sequence[Message | str]) -> Message | str:
    """Items named one after another (`a, b, c`; `a、b、c` in Chinese), halved as joined() is."""
    if len(parts) == 1:
        return parts[0]
    half = len(parts) // 2
    return msg("%(first)s, %(rest)s", first=listed(parts[:half]), rest=listed(parts[half:]))


def reason_of(exc: BaseException) -> Message | str:
    """What an error says: the catalogue message it was raised with, else its English text."""
    first = exc.args[0] if len(exc.args) == 1 else None
    return first if isinstance(first, Message) else str(exc)


class Model(BaseModel):
    # NaN and Infinity are refused everywhere (JSON has no such numbers; Python writes them anyway).
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class RequestSamples(Model):
    """Per-request figures from the client's detailed file (`vllm bench serve --save-detailed`):
    what the report bootstraps its intervals from. Successful requests only, all lists aligned."""

    ttft_ms: list[float] = Field(default_factory=list)
    tpot_ms: list[float] = Field(default_factory=list)  # (e2el - ttft) / (output tokens - 1)
    e2el_ms: list[float] = Field(default_factory=list)
    input_tokens: list[int] = Field(default_factory=list)
    output_tokens: list[int] = Field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.e2el_ms)


_SCALARS = ("completed", "failed", "duration_s", "request_throughput", "output_throughput",
            "total_token_throughput", "tput_per_gpu", "output_tput_per_gpu", "input_tput_per_gpu",
            "interactivity")
_DISTRIBUTIONS = ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms")


def _within_limits(fields: dict) -> bool:
    for name in _SCALARS:
        value = fields[name]
        if value is not None and not 0 <= value <= METRIC_LIMIT:
            return False
    for name in _DISTRIBUTIONS:
        for value in fields[name].values():
            if not 0 <= value <= METRIC_LIMIT:
                return False
    return True


class PointMetrics(Model):
    """InferenceX's aggregate fields plus the latency distribution, all from the client's raw file."""

    completed: int
    failed: int
    duration_s: float
    request_throughput: float
    output_throughput: float
    total_token_throughput: float
    tput_per_gpu: float
    output_tput_per_gpu: float
    input_tput_per_gpu: float
    interactivity: float | None  # 1000 / median TPOT (tokens/s seen by one user)
    ttft_ms: dict[str, float] = Field(default_factory=dict)  # keys: mean, median, p90, p99
    tpot_ms: dict[str, float] = Field(default_factory=dict)
    itl_ms: dict[str, float] = Field(default_factory=dict)
    e2el_ms: dict[str, float] = Field(default_factory=dict)
    # Present when the client kept per-request data; older results (and SGLang's client) lack it.
    requests: RequestSamples | None = None
    # Every figure InferenceX's process_result.py derives from the raw file, under its names
    # (seconds for *_ms fields, *_intvty = 1000 / TPOT, std devs included); see inferencex_figures.
    # With InferenceX's power fields where recipe-bot sampled power (power_metric_schema_version, power_valid
    # 1/0, and when valid its 7 figures: bot/runner/power_rule.py), integers kept as InferenceX writes them.
    inferencex: dict[str, int | float | None] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _plausible(self) -> "PointMetrics":
        # Every point of every result file passes here: first the bounds of all figures at once
        # (nearly always within), then, only when one is not, which one, in field order.
        if _within_limits(self.__dict__):
            return self
        values = [(name, getattr(self, name)) for name in _SCALARS]
        values += [(f"{name}.{key}", value) for name in _DISTRIBUTIONS
                   for key, value in getattr(self, name).items()]
        for name, value in values:
            if value is not None and not 0 <= value <= METRIC_LIMIT:
                raise ValueError(f"{name} = {value!r} is not a plausible measurement (0 to {METRIC_LIMIT:g})")
        return self


class PowerResult(Model):
    """How a point's GPU power was sampled and judged (InferenceX's rule; the figures are in metrics.inferencex)."""

    valid: bool
    reasons: list[str] = Field(default_factory=list)  # InferenceX's reason codes (aggregate_power.py); [] when valid
    problem: Text | None = None  # why there was no telemetry to judge (no NVML here, a case without GPUs)
    interval_s: float | None = None  # the sampler's interval
    gpus: list[str] = Field(default_factory=list)  # the case's host GPUs sampled (CUDA_VISIBLE_DEVICES entries)
    telemetry_file: str | None = None  # gpu_metrics.csv, relative to the result directory
    validation_file: str | None = None  # power_validation_<point>.json, relative to the result directory
    tokens_per_joule: float | None = None  # total tok/s per W of the case's GPUs, where valid


class PointResult(Model):
    point_id: str
    concurrency: int
    isl: int | None = None
    osl: int | None = None
    status: Literal["passed", "failed", "skipped"]
    reason: Text | None = None  # a catalogue message (English text in older files)
    metrics: PointMetrics | None = None
    raw_result_file: str | None = None  # relative to the result directory
    client: str | None = None  # "vllm bench serve" or "sglang.bench_serving"
    # One client process for the whole case (vLLM's library in process) or one a point: on the H200
    # the two differ by 4-10 % in throughput (docs/gpu-runs/2026-12-01-clients), so a comparison
    # across them is flagged. "mixed" when the case's process died and later repeats ran alone.
    client_process: Literal["case", "point", "mixed"] | None = None
    # Every repeat's metrics when the recipe asked for repeats; `metrics` is then the repeat with
    # the median throughput per GPU (a measured run, never an average of runs).
    repeats: list[PointMetrics] = Field(default_factory=list)
    raw_result_files: list[str] = Field(default_factory=list)  # one per repeat
    power: PowerResult | None = None  # None: power was not sampled (older results, a harness's own command)


class AccuracyResult(Model):
    task: str
    num_samples: int
    num_shots: int
    strict_match: float
    flexible_extract: float
    metric: str
    threshold: float
    passed: bool
    samples_file: str | None = None
    source: str | None = None  # the data that scored the gate (bot/runner/gsm8k.py load_docs); None: older results
    gsm8k: bool | None = None  # False: recipe-bot's own sample problems, not GSM8K


class GpuMemory(Model):
    index: int
    before_mib: float
    after_mib: float
    back_to_baseline: bool


class CleanupProof(Model):
    process_groups: list[int] = Field(default_factory=list)
    leftover_pids: list[int] = Field(default_factory=list)
    groups_gone: bool
    ports: list[int] = Field(default_factory=list)
    busy_ports: list[int] = Field(default_factory=list)
    ports_free: bool
    gpu: Literal["checked", "no GPU"] = "no GPU"
    gpu_memory: list[GpuMemory] = Field(default_factory=list)
    gpu_memory_back: bool | None = None  # None: no GPU to check
    sigkill_escalated: bool = False
    teardown_s: float = 0.0

    @property
    def clean(self) -> bool:
        return (self.groups_gone and self.ports_free and not self.sigkill_escalated
                and self.gpu_memory_back is not False)


class FailureClass(Model):
    """Why a job or case failed (bot/core/failure_classes.py): whom to call, and the lines that say so."""

    kind: Literal["infrastructure", "recipe"]
    rule: str  # a rule id of bot.core.failure_classes.RULES, or "unclassified"
    evidence: list[Text] = Field(default_factory=list)  # the last lines that decided it (a reason's, a log's)


class SearchChoice(Model):
    concurrency: int
    why: str  # e.g. "log-spaced bracket", "bisect below the knee"


class SearchTrace(Model):
    """What an adaptive search chose and why it stopped (bot/runner/search.py); each chosen point's
    result, raw files included, is in the case's `points` like any other point."""

    target: str
    range: tuple[int, int]
    budget: int
    tolerance: float
    bound: dict | None = None
    choices: list[SearchChoice] = Field(default_factory=list)
    stop: str | None = None  # "budget", "resolved", "bound crossed", "no data"; None: interrupted
    stop_why: str | None = None
    answer: int | None = None  # the knee / cliff / highest concurrency meeting the bound
    suggested: list[int] = Field(default_factory=list)  # the concurrency list to commit to the recipe


class NodeOutcome(Model):
    """One test of the repository's own harness, as its JUnit report gives it."""

    node_id: str
    outcome: Literal["passed", "failed", "error", "skipped", "missing"]
    message: Text | None = None  # the report's own text, or the runner's message where it has none
    seconds: float | None = None


class HarnessRun(Model):
    """What the repository's own command did: exit status, its JUnit verdict, the files it left."""

    argv: list[str]
    cwd: str
    exit_code: int | None = None  # None: it was stopped (time limit, cancel) before it exited
    junit: str | None = None  # the report, relative to the result directory
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    expect_passed: int = 0
    nodes: list[NodeOutcome] = Field(default_factory=list)
    result_files: list[str] = Field(default_factory=list)  # relative to the result directory
    log: str | None = None


class CaseResult(Model):
    name: str
    status: Literal["passed", "failed", "skipped"]
    reason: Text | None = None
    startup_s: float | None = None
    points: list[PointResult] = Field(default_factory=list)
    accuracy: AccuracyResult | None = None
    cleanup: CleanupProof | None = None
    # a multi-node row's nodes, by Slurm node name (bot/runner/slurm/nodeproof.py); `cleanup` is the runner host's
    node_cleanup: dict[str, CleanupProof] = Field(default_factory=dict)
    server_logs: list[str] = Field(default_factory=list)  # relative to the result directory
    log_tail: str | None = None  # last lines of the server log, on failure
    failure: FailureClass | None = None  # set on failed cases
    search: SearchTrace | None = None  # set when the case ran an adaptive concurrency search
    harness: HarnessRun | None = None  # set when the case ran the repository's own command
    gpus: int | None = None  # the GPUs the case held (a compare: arm's GPU-hours)
    duration_s: float | None = None  # wall time of the case, start-up and teardown included


class Hardware(Model):
    host: str
    cpu: str
    cpu_count: int
    gpu_count: int = 0
    gpus: list[str] = Field(default_factory=list)


class SlurmInfo(Model):
    job_id: str
    node: str | None = None
    state: str
    exit_code: str | None = None
    reason: str | None = None


class Provenance(Model):
    """Where the figures come from: what a reader needs to judge and reproduce them."""

    authorized_sha: str | None = None  # the job's SHA, as the control plane authorized it
    checkout_sha: str | None = None  # what `git rev-parse HEAD` said in the job's own checkout
    sha_checked: bool = False  # both known and equal (a mismatch fails the job)
    model: str | None = None  # the model path or id (the first server's), ${VAR}s expanded as it ran
    # What `recipe-bot run` needed from the runner's environment, as set: the model path's ${VAR}s, and
    # RECIPE_BOT_VLLM where it named the engine; the report's Reproduce line sets them.
    run_env: dict[str, str] = Field(default_factory=dict)
    weights: Literal["real", "dummy", "unknown"] = "unknown"
    dataset: Literal["real", "synthetic", "sample", "mixed", "none"] = "none"  # sample: recipe-bot's own problems
    job_file: str | None = None  # the job file, relative to the result directory


class DutyCycle(Model):
    """What the job's GPU time bought: seconds the servers were under measured load, against the job's wall time."""

    load_s: float = Field(ge=0)  # every measured point's load (each repeat's duration_s, the client's own clock)
    wall_s: float = Field(gt=0)  # the job's wall time (duration_s: its start to its end)
    ratio: float = Field(ge=0)  # load_s / wall_s


class JobResult(Model):
    schema_version: int = RESULT_SCHEMA_VERSION
    job_id: str
    kind: Literal["sweep", "e2e"]
    recipe: str
    recipe_fingerprint: str
    runner_label: str
    status: JobStatus
    reason: Text | None = None
    gpus: int = 0
    repository: str | None = None
    pr: int | None = None
    sha: str | None = None
    command: str | None = None
    engine: str | None = None
    engine_version: str | None = None
    hardware: Hardware | None = None
    started_at: str | None = None
    finished_at: str | None = None
    duration_s: float | None = None
    server_launches: int = 0
    cases: list[CaseResult] = Field(default_factory=list)
    slurm: SlurmInfo | None = None
    provenance: Provenance | None = None
    # An InferenceX row's run: the row, its template environment, raw files and process_result's fields
    inferencex: dict | None = None
    failure: FailureClass | None = None  # set on failed and lost jobs
    attempt: int = 1  # 2 for the one automatic retry of an infrastructure failure
    excluded_nodes: list[str] = Field(default_factory=list)  # Slurm nodes the retry avoided
    # What ran: the installed plugin's path and version, driver, CUDA, torch, transformers; a value
    # the host could not give is None (recorded as absent, never guessed).
    software: dict[str, str | None] = Field(default_factory=dict)
    setup: list[dict] = Field(default_factory=list)  # the suite's setup steps: argv, exit code, log
    compare_arms: list[str] = Field(default_factory=list)  # a compare: job, its two arms' case names
    manual: str | None = None  # the suite is manual (this reason): run on command, not required by the gate
    # Seconds under load / job wall (duty_cycle_of); None in results written before it was recorded
    duty_cycle: DutyCycle | None = None


def duty_cycle_of(result: JobResult) -> DutyCycle | None:
    """The job's measurement duty cycle from what its result records (pure): the load is the sum over every
    case's points of each measured run's `duration_s` (the benchmark client's time from its first request
    sent to its last answer; every repeat counts), the wall is the job's `duration_s`. None when the job has
    no wall time or measured no point (an e2e suite, a job that failed before its first point)."""
    if not result.duration_s:
        return None
    runs = [m for case in result.cases for point in case.points
            for m in (point.repeats or ([point.metrics] if point.metrics is not None else []))]
    if not runs:
        return None
    load = sum(m.duration_s for m in runs)
    return DutyCycle(load_s=round(load, 3), wall_s=result.duration_s, ratio=round(load / result.duration_s, 4))


def with_duty_cycle(result: JobResult) -> JobResult:
    """The result as written: with its duty cycle worked out again from the figures it holds now (a backend
    that rewrites a node's result may have changed its wall time)."""
    return result.model_copy(update={"duty_cycle": duty_cycle_of(result)})
