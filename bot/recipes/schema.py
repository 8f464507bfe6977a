"""The native recipe format: strict pydantic schemas for sweeps, E2E suites and the runner table."""
from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from bot.core.jobs import SlurmSpec
from bot.core.messages import Message, msg
from bot.core.validation import Invalid
from bot.engines import EngineName

NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]*$"
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# The largest value each kind of count accepts: far beyond any real run, small enough that no figure
# derived from it (prompts x concurrency, GPU-hours) leaves a 64-bit integer or loses float precision.
MAX_CONCURRENCY = 100_000
MAX_COUNT = 10_000_000  # prompts, warm-ups, tokens, samples
MAX_PARALLEL = 4_096  # tp, ep, dp, pp: GPUs of one server
MAX_SECONDS = 30 * 86_400.0  # timeouts and estimates: 30 days
Precision = Literal["bf16", "fp16", "fp8", "fp4", "int8", "int4", "mxfp4", "nvfp4"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


def _check_env_names(names: list[str] | dict[str, str], what: str) -> None:
    for name in names:
        # required_env entries may pin a value: NAME=VALUE (the case fails unless it matches).
        bare = name.split("=", 1)[0] if what == "required_env" else name
        if not ENV_NAME.match(bare):
            raise Invalid(msg("%(name)s is not an environment variable name", name=repr(name)))


def _env(value: dict[str, str]) -> dict[str, str]:
    """Names checked; keys sorted, so that the fingerprint does not depend on their order in YAML."""
    _check_env_names(value, "env")
    return dict(sorted(value.items()))


Env = Annotated[dict[str, str], AfterValidator(_env)]


class Engine(Strict):
    name: EngineName
    version: str
    image: str | None = None


class Model(Strict):
    path: str  # local directory or ${VAR}/...; the runner expands ${VAR}, nothing is downloaded
    served_name: str | None = None
    hf_id: str | None = None  # the checkpoint's public name, for people and reports
    precision: Precision


class Launch(Strict):
    """How one server is started; shared by every arm of a sweep."""

    args: list[str] = Field(default_factory=list)
    env: Env = Field(default_factory=dict)
    script: str | None = None  # a launch script in the repository instead of the engine command
    # False (the default): nothing in the launch changes with the client's concurrency, so points
    # that differ only in concurrency share one server launch (packing). True: one launch per point;
    # then args may use {concurrency}.
    depends_on_concurrency: bool = False
    startup_timeout_s: float = Field(default=600.0, gt=0, le=MAX_SECONDS)
    devices: list[int] | None = None


def _concurrency_list(value: list[int]) -> list[int]:
    """A concurrency list names each point once: 0, negatives and repeats would make unusable or twin points."""
    bad = [c for c in value if not 1 <= c <= MAX_CONCURRENCY]
    if bad:
        raise Invalid(msg("concurrency values must be from 1 to %(limit)s (got %(value)s)", limit=MAX_CONCURRENCY,
                          value=bad[0]))
    repeated = sorted({c for c in value if value.count(c) > 1})
    if repeated:
        raise Invalid(msg("concurrency values must be distinct (%(value)s is listed twice)", value=repeated[0]))
    return value


Concurrencies = Annotated[list[int], Field(min_length=1), AfterValidator(_concurrency_list)]


class SearchBoundSpec(Strict):
    metric: Literal["interactivity", "ttft_ms"]  # interactivity >= value; median TTFT <= value ms
    value: float = Field(gt=0)


class Search(Strict):
    """An adaptive concurrency search instead of (or beside) a list: the runner picks each point
    within one server launch (bot/runner/search.py documents the knee, cliff and bound)."""

    range: tuple[int, int]
    target: Literal["knee", "cliff", "max-conc-under"] = "knee"
    budget: int = Field(default=8, ge=2, le=64)
    tolerance: float = Field(default=0.15, gt=0.0, le=1.0)
    bound: SearchBoundSpec | None = None

    @model_validator(mode="after")
    def _consistent(self) -> "Search":
        lo, hi = self.range
        if lo < 1 or hi <= lo or hi > MAX_CONCURRENCY:
            raise Invalid(msg("search.range must be [lo, hi] with 1 <= lo < hi <= %(limit)s", limit=MAX_CONCURRENCY))
        if (self.target == "max-conc-under") != (self.bound is not None):
            raise Invalid(msg("search.bound is required with target max-conc-under and accepted with no other"))
        return self


class Arm(Strict):
    """One point of the parallelism search space, swept over its concurrency list."""

    name: str | None = Field(default=None, pattern=NAME_PATTERN)
    tp: int = Field(default=1, ge=1, le=MAX_PARALLEL)
    ep: int = Field(default=1, ge=1, le=MAX_PARALLEL)
    dp: int = Field(default=1, ge=1, le=MAX_PARALLEL)
    pp: int = Field(default=1, ge=1, le=MAX_PARALLEL)
    dp_attn: bool = False
    spec_decoding: Literal["none", "mtp", "eagle", "draft_model"] = "none"
    kv_offload: Literal["none", "dram"] = "none"
    args: list[str] = Field(default_factory=list)
    env: Env = Field(default_factory=dict)
    concurrency: Concurrencies | None = None
    # With a list as well, the list runs and `/sweep --search` runs the search instead.
    search: Search | None = None

    def default_name(self) -> str:
        parts = [f"tp{self.tp}"]
        if self.pp > 1:
            parts.append(f"pp{self.pp}")
        if self.dp > 1:
            parts.append(f"dp{self.dp}")
        if self.ep > 1:
            parts.append(f"ep{self.ep}")
        if self.dp_attn:
            parts.append("dpa")
        if self.spec_decoding != "none":
            parts.append(self.spec_decoding.replace("_", "-"))
        if self.kv_offload != "none":
            parts.append(f"kv{self.kv_offload}")
        return "-".join(parts)

    @property
    def label(self) -> str:
        return self.name or self.default_name()

    @property
    def gpus(self) -> int:
        replicas = 1 if self.dp_attn else self.dp
        return self.tp * self.pp * replicas


class Workload(Strict):
    dataset: Literal["random", "trace"] = "random"
    isl: int | None = Field(default=None, ge=1, le=MAX_COUNT)
    osl: int | None = Field(default=None, ge=1, le=MAX_COUNT)
    random_range_ratio: float = Field(default=0.0, ge=0.0, le=1.0)
    trace: str | None = None
    num_prompts: int | None = Field(default=None, ge=1, le=MAX_COUNT)
    prompts_per_concurrency: int | None = Field(default=None, ge=1, le=MAX_COUNT)
    min_prompts: int = Field(default=1, ge=1, le=MAX_COUNT)  # the fewest requests a point sends (p99: 100)
    # Runs of each point on the same launch (a fresh seed each): the report's interval then sees
    # run-to-run spread, not only the spread between requests of one run.
    repeats: int = Field(default=1, ge=1, le=10)
    num_warmups: int = Field(default=0, ge=0, le=MAX_COUNT)
    warmups_per_concurrency: int | None = Field(default=None, ge=0, le=MAX_COUNT)
    duration_s: float | None = Field(default=None, gt=0, le=MAX_SECONDS)  # trace replay: wall time of one point
    client_args: list[str] = Field(default_factory=list)
    # The benchmark client; by default the engine's own (SGLang: sglang.bench_serving).
    client: EngineName | None = None

    @model_validator(mode="after")
    def _consistent(self) -> "Workload":
        if self.dataset == "random" and (self.isl is None or self.osl is None):
            raise Invalid(msg("a random workload needs isl and osl"))
        if self.dataset == "trace" and not self.trace:
            raise Invalid(msg("a trace workload needs trace (dataset name or path)"))
        if (self.num_prompts is None) == (self.prompts_per_concurrency is None):
            raise Invalid(msg("give exactly one of num_prompts and prompts_per_concurrency"))
        return self

    def prompts(self, concurrency: int) -> int:
        if self.num_prompts is not None:
            return max(self.min_prompts, self.num_prompts)
        return max(self.min_prompts, self.prompts_per_concurrency * concurrency)

    def warmups(self, concurrency: int) -> int:
        if self.warmups_per_concurrency is not None:
            return self.warmups_per_concurrency * concurrency
        return self.num_warmups


class Accuracy(Strict):
    """A GSM8K gate: N samples, K shots, the strict-match score must reach the threshold."""

    task: Literal["gsm8k"] = "gsm8k"
    num_samples: int = Field(ge=1, le=MAX_COUNT)
    num_shots: int = Field(ge=0, le=MAX_COUNT)
    threshold: float = Field(ge=0.0, le=1.0)
    metric: Literal["strict-match", "flexible-extract"] = "strict-match"
    max_tokens: int = Field(default=256, ge=1, le=MAX_COUNT)
    data_path: str | None = None
    # Sweeps only: which arm runs it ("highest": the arm holding the highest concurrency).
    at: Literal["highest", "every-arm"] = "highest"
    # Sweeps only: run it on a launch of its own, e.g. without synthetic spec-decode acceptance,
    # which would score a real eval at ~0; drop_env names the variables that launch leaves out.
    separate_launch: bool = False
    drop_env: list[str] = Field(default_factory=list)


class Estimate(Strict):
    """What the GPU-hour estimate assumes when the workload does not say."""

    startup_s: float = Field(default=600.0, ge=0, le=MAX_SECONDS)
    point_s: float = Field(default=300.0, ge=0, le=MAX_SECONDS)
    accuracy_s: float = Field(default=300.0, ge=0, le=MAX_SECONDS)


class RecipeCommon(Strict):
    name: str = Field(pattern=NAME_PATTERN)
    kind: Literal["sweep", "e2e"]
    description: str = ""
    runner: str
    engine: Engine
    model: Model
    required_env: list[str] = Field(default_factory=list)
    unset_env: list[str] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)  # other repository files whose change touches it
    timeout_s: float | None = Field(default=None, gt=0, le=MAX_SECONDS)
    fail_fast: bool = False
    estimate: Estimate = Field(default_factory=Estimate)

    @field_validator("required_env")
    @classmethod
    def _required_names(cls, value: list[str]) -> list[str]:
        _check_env_names(value, "required_env")
        return value

    @field_validator("unset_env")
    @classmethod
    def _unset_names(cls, value: list[str]) -> list[str]:
        _check_env_names(value, "unset_env")
        return value


class SweepRecipe(RecipeCommon):
    kind: Literal["sweep"]
    launch: Launch = Field(default_factory=Launch)
    concurrency: Concurrencies | None = None
    search_space: list[Arm] = Field(min_length=1)
    workload: Workload
    accuracy: Accuracy | None = None

    def rule_violations(self) -> list[tuple[tuple, Message]]:
        """Rules across fields, each with the path of the value that breaks it (the catalog locates it)."""
        found: list[tuple[tuple, Message]] = []
        seen: set[str] = set()
        for index, arm in enumerate(self.search_space):
            if arm.label in seen:
                found.append((("search_space", index), msg("arm name %(name)s is used twice; names must be unique",
                                                             name=repr(arm.label))))
            seen.add(arm.label)
            if arm.search is not None and self.launch.depends_on_concurrency:
                found.append((("search_space", index, "search"), msg(
                    "a search runs its points on one launch; it cannot be used with launch.depends_on_concurrency")))
            if arm.concurrency is None and not self.concurrency and arm.search is None:
                found.append((("search_space", index), msg("this arm has no concurrency list and the recipe has none")))
        if not self.launch.depends_on_concurrency:
            places = [(("launch", "args", i), a) for i, a in enumerate(self.launch.args)]
            places += [(("search_space", n, "args", i), a)
                       for n, arm in enumerate(self.search_space) for i, a in enumerate(arm.args)]
            for loc, text in places:
                if "{concurrency}" in text:
                    found.append((loc, msg("uses {concurrency} but launch.depends_on_concurrency is false: set it "
                                           "to true (one launch per point) or use a fixed value")))
                    break
        return found

    def arm_concurrency(self, arm: Arm) -> list[int]:
        return sorted(arm.concurrency or ([] if arm.search else self.concurrency) or [])


class ServerTemplate(Strict):
    name: str = Field(default="server", pattern=NAME_PATTERN)
    args: list[str] = Field(default_factory=list)
    env: Env = Field(default_factory=dict)
    devices: list[int] | None = None
    port: int | None = Field(default=None, ge=1, le=65535)
    launch_script: str | None = None
    ready_check: bool = True  # False: its readiness shows through another server (AFD's FFN role)
    startup_timeout_s: float | None = Field(default=None, gt=0)

    @field_validator("devices")
    @classmethod
    def _devices(cls, value: list[int] | None) -> list[int] | None:
        if value is not None and (len(set(value)) != len(value) or any(d < 0 for d in value)):
            raise Invalid(msg("devices must be distinct non-negative GPU indices"))
        return value


class OptIn(Strict):
    """The opt-in checks the harness itself makes, made before it starts (afd-plugin's
    `_prepare_e2e_assets`): an existing model directory, an exact, unique device list, disjoint roles."""

    model_dir_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    devices_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    device_count: int | None = Field(default=None, ge=1)
    # Positions in the device list each role takes (afd-plugin: 0-3 native/Attention, 4-7 FFN).
    roles: dict[str, list[int]] = Field(default_factory=dict)


class Harness(Strict):
    """How the repository runs a case itself: argv (the case's node id appended), working directory,
    environment. A case passes only on exit 0 and, with `pytest`, on a JUnit report with every node
    passed and none skipped, errored or failed."""

    argv: list[str] = Field(default_factory=lambda: ["python", "-m", "pytest", "-q"], min_length=1)
    pytest: bool = True  # add --junitxml and --basetemp (the harness's own files land in the result)
    cwd: str = "."
    env: Env = Field(default_factory=dict)
    pythonpath: bool = True  # the checkout first on PYTHONPATH (afd-plugin's runner relies on it)
    # Run once before the suite's first case, in the job's environment: install the PR checkout and
    # the harness's pinned extras (e.g. [python, -m, pip, install, -e, ., "lm_eval[api]==0.4.12"]).
    setup: list[list[str]] = Field(default_factory=list)
    files: list[str] = Field(default_factory=list)  # harness files: their contents are fingerprinted
    ports: list[int] = Field(default_factory=list)  # named ports, free before and after (8000, 8001, 1239)
    keep: list[str] = Field(default_factory=list)  # globs under cwd: result files the harness writes
    plugin: str | None = None  # the installed distribution whose path and version result.json records
    devices: int = Field(default=0, ge=0)  # GPUs each case holds (GPU-hours, teardown's memory check)
    opt_in: OptIn | None = None

    @model_validator(mode="after")
    def _consistent(self) -> "Harness":
        bad = [p for p in self.ports if not 1 <= p <= 65535]
        if bad:
            raise Invalid(msg("port %(port)s is not between 1 and 65535", port=bad[0]))
        if any(not argv for argv in self.setup):
            raise Invalid(msg("every setup step is a non-empty argv list"))
        for path in [self.cwd, *self.keep, *self.files]:
            if path.startswith("/") or ".." in path.split("/"):
                raise Invalid(msg("%(path)s must be a path inside the repository (relative, no '..')", path=repr(path)))
        return self


class E2ECase(Strict):
    name: str = Field(pattern=NAME_PATTERN)
    description: str = ""
    servers: list[ServerTemplate] = Field(default_factory=list)
    # With the suite's harness: the pytest node id this case runs, and how many tests must pass.
    node: str | None = None
    expect_passed: int | None = Field(default=None, ge=1)
    env: Env = Field(default_factory=dict)
    accuracy: Accuracy | None = None
    required_env: list[str] = Field(default_factory=list)
    unset_env: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _topology(self) -> "E2ECase":
        names = [s.name for s in self.servers]
        if len(set(names)) != len(names):
            raise Invalid(msg("server names within a case must be unique"))
        used: dict[int, str] = {}
        for server in self.servers:
            for device in server.devices or []:
                if device in used:
                    raise Invalid(msg("device %(device)s is given to both %(first)s and %(second)s; servers of one "
                                      "case run side by side and cannot share a device", device=device,
                                      first=repr(used[device]), second=repr(server.name)))
                used[device] = server.name
        return self

    @property
    def gpus(self) -> int:
        return len({d for s in self.servers for d in (s.devices or [])})


class CompareSpec(Strict):
    """Two arms (server cases) on one host with the same load points and repeats, shown side by side."""

    arms: list[E2ECase] = Field(min_length=2, max_length=2)
    concurrency: Concurrencies
    isl: int = Field(ge=1)
    osl: int = Field(ge=1)
    num_prompts: int = Field(ge=1)
    num_warmups: int = Field(default=0, ge=0)
    repeats: int = Field(default=3, ge=1, le=10)
    default: bool = False  # True: a plain /e2e runs the comparison too; otherwise `/e2e --compare`

    @model_validator(mode="after")
    def _arms(self) -> "CompareSpec":
        if self.arms[0].name == self.arms[1].name:
            raise Invalid(msg("the two compare arms need different names"))
        if any(not arm.servers or arm.node for arm in self.arms):
            raise Invalid(msg("a compare arm starts servers (servers:), not a pytest node"))
        return self


class E2ESuite(RecipeCommon):
    kind: Literal["e2e"]
    launch: Launch = Field(default_factory=Launch)  # args, env and timeout shared by every server
    accuracy: Accuracy | None = None  # the gate of every case that does not set its own
    cases: list[E2ECase] = Field(min_length=1)  # run in order: cases may share devices
    # The variable whose value lists the GPUs that servers' devices index into (positions, not ids).
    devices_env: str | None = Field(default=None, pattern=r"^[A-Z_][A-Z0-9_]*$")
    harness: Harness | None = None  # set: every case is a node id of the repository's own harness
    manual: str | None = None  # the reason it runs only on command, never in the required gate
    compare: CompareSpec | None = None

    @model_validator(mode="after")
    def _cases(self) -> "E2ESuite":
        names = [c.name for c in self.cases]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise Invalid(msg("case names must be unique; repeated: %(names)s", names=", ".join(duplicates)))
        if self.launch.devices is not None:
            raise Invalid(msg("an E2E suite gives devices per server (cases[].servers[].devices), not in launch"))
        if self.launch.depends_on_concurrency:
            raise Invalid(msg("launch.depends_on_concurrency has no meaning for an E2E suite"))
        for case in self.cases:
            if self.harness is not None and (case.node is None or case.servers):
                raise Invalid(msg("case %(case)s: a suite with a harness runs node ids: give node "
                                  "(e.g. tests/e2e/test_x.py::test_x[case]) and no servers", case=repr(case.name)))
            if self.harness is None and (case.node is not None or not case.servers):
                raise Invalid(msg("case %(case)s: give servers, or a harness: section to run node ids",
                                  case=repr(case.name)))
        if self.manual is not None and not self.manual.strip():
            raise Invalid(msg("manual: give the reason it runs only on command"))
        return self


Recipe = SweepRecipe | E2ESuite
KINDS: dict[str, type[RecipeCommon]] = {"sweep": SweepRecipe, "e2e": E2ESuite}


class RunnerSpec(Strict):
    """One runner label: what its hosts offer and which repository files all its recipes share."""

    gpus: int = Field(ge=0, le=MAX_PARALLEL)  # GPUs per host (0: CPU only)
    gpu: str | None = None  # e.g. "H200", for reports
    shared: list[str] = Field(default_factory=list)  # globs: a change here touches every recipe
    slurm: SlurmSpec | None = None
    description: str = ""


class RunnerTable(Strict):
    runners: dict[str, RunnerSpec]
    shared_by_all: list[str] = Field(default_factory=list)
