"""InferenceX's file formats (master configs, runners.yaml, perf-changelog.yaml) as strict schemas."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bot.core.messages import Message, msg
from bot.core.validation import Invalid


class M(BaseModel):
    # strict: the planner reads the YAML's own values, so a value pydantic would convert (a quoted
    # integer, 1 for a bool) must be refused with its field named, not passed on unconverted.
    model_config = ConfigDict(extra="forbid", populate_by_name=False, defer_build=True, strict=True)


class Component(M):
    name: str
    version: str | None = None


class _Concurrency(M):
    conc_list: list[int] | None = Field(default=None, alias="conc-list", min_length=1)
    conc_start: int | None = Field(default=None, alias="conc-start", ge=1)
    conc_end: int | None = Field(default=None, alias="conc-end", ge=1)

    @model_validator(mode="after")
    def _one_way(self):  # noqa: ANN202
        has_range = self.conc_start is not None or self.conc_end is not None
        if (self.conc_list is not None) == has_range:
            raise Invalid(msg("give conc-list, or conc-start with conc-end (not both)"))
        if has_range and (self.conc_start is None or self.conc_end is None):
            raise Invalid(msg("conc-start and conc-end go together"))
        if has_range and self.conc_start > self.conc_end:
            raise Invalid(msg("conc-start must not exceed conc-end"))
        return self


class _Offload(M):
    kv_offloading: Literal["none", "dram"] | None = Field(default=None, alias="kv-offloading")
    kv_offload_backend: Component | None = Field(default=None, alias="kv-offload-backend")

    @model_validator(mode="after")
    def _backend(self):  # noqa: ANN202
        if self.kv_offloading == "dram" and self.kv_offload_backend is None:
            raise Invalid(msg("kv-offloading: dram needs kv-offload-backend with a name"))
        return self


SpecDecoding = Literal["mtp", "draft_model", "none"]


class SingleNodeSearch(_Concurrency, _Offload):
    tp: int = Field(ge=1)
    ep: int | None = Field(default=None, ge=1)
    pp: int | None = Field(default=None, ge=1)
    dcp_size: int | None = Field(default=None, alias="dcp-size", ge=1)
    pcp_size: int | None = Field(default=None, alias="pcp-size", ge=1)
    dp_attn: bool | None = Field(default=None, alias="dp-attn")
    spec_decoding: SpecDecoding | None = Field(default=None, alias="spec-decoding")
    router: Component | None = None


class Worker(M):
    num_worker: int = Field(alias="num-worker", ge=0)
    tp: int = Field(ge=1)
    pp: int | None = Field(default=None, ge=1)
    dcp_size: int | None = Field(default=None, alias="dcp-size", ge=1)
    pcp_size: int | None = Field(default=None, alias="pcp-size", ge=1)
    ep: int | None = Field(default=None, ge=1)
    dp_attn: bool | None = Field(default=None, alias="dp-attn")
    hardware: str | None = None
    additional_settings: list[str] | None = Field(default=None, alias="additional-settings")


class MultiNodeSearch(_Concurrency, _Offload):
    spec_decoding: SpecDecoding | None = Field(default=None, alias="spec-decoding")
    prefill: Worker | None = None
    decode: Worker | None = None
    worker: Worker | None = None
    num_nodes: int | None = Field(default=None, alias="num-nodes", ge=1)
    router: Component | None = None
    kv_p2p_transfer: str | None = Field(default=None, alias="kv-p2p-transfer")

    @model_validator(mode="after")
    def _workers(self):  # noqa: ANN202
        if self.worker is None and (self.prefill is None or self.decode is None):
            raise Invalid(msg("a multi-node search-space entry needs prefill and decode (or worker)"))
        return self


class FixedSeqLenSN(M):
    isl: int = Field(ge=1)
    osl: int = Field(ge=1)
    search_space: list[SingleNodeSearch] = Field(alias="search-space", min_length=1)


class FixedSeqLenMN(M):
    isl: int = Field(ge=1)
    osl: int = Field(ge=1)
    search_space: list[MultiNodeSearch] = Field(alias="search-space", min_length=1)


class AgenticSN(M):
    dram_utilization: float | None = Field(default=None, alias="dram-utilization", gt=0, le=1)
    search_space: list[SingleNodeSearch] = Field(alias="search-space", min_length=1)

    @model_validator(mode="after")
    def _offload(self):  # noqa: ANN202
        for index, entry in enumerate(self.search_space):
            if entry.kv_offloading is None:
                raise Invalid(msg("search-space[%(index)s]: agentic entries must give kv-offloading", index=index))
        if any(e.kv_offloading == "dram" for e in self.search_space) and self.dram_utilization is None:
            raise Invalid(msg("dram-utilization is required when an entry uses kv-offloading: dram"))
        return self


class AgenticMN(M):
    dram_utilization: float | None = Field(default=None, alias="dram-utilization", gt=0, le=1)
    search_space: list[MultiNodeSearch] = Field(alias="search-space", min_length=1)


class ScenariosSN(M):
    fixed_seq_len: list[FixedSeqLenSN] | None = Field(default=None, alias="fixed-seq-len")
    agentic_coding: list[AgenticSN] | None = Field(default=None, alias="agentic-coding")


class ScenariosMN(M):
    fixed_seq_len: list[FixedSeqLenMN] | None = Field(default=None, alias="fixed-seq-len")
    agentic_coding: list[AgenticMN] | None = Field(default=None, alias="agentic-coding")


class _Entry(M):
    image: str
    model: str
    model_prefix: str = Field(alias="model-prefix")
    runner: str
    precision: str
    framework: str
    disagg: bool = False
    router: Component | None = None
    kv_p2p_transfer: str | None = Field(default=None, alias="kv-p2p-transfer")


def component_scope_problem(entry: dict) -> Message | None:
    """InferenceX's rules for where `router` and `kv-p2p-transfer` go, on a raw master-config entry
    (its generator refuses the whole run for one entry that breaks them), in its words."""
    scenarios = entry.get("scenarios") if isinstance(entry.get("scenarios"), dict) else {}
    spaces = [e for blocks in scenarios.values() if isinstance(blocks, list) for block in blocks
              if isinstance(block, dict) for e in block.get("search-space") or [] if isinstance(e, dict)]
    if not any(scenarios.get(k) for k in ("fixed-seq-len", "agentic-coding")):
        return msg("At least one scenario type must be specified")
    for name in ("router", "kv-p2p-transfer"):
        if entry.get(name) is not None and any(e.get(name) is not None for e in spaces):
            return msg("%(name)s must be declared either at the top level or in search-space entries, not both", name=name)
    if entry.get("multinode") is not True and any(e.get("kv-p2p-transfer") is not None for e in spaces):
        return msg("kv-p2p-transfer is only valid when multinode=true")
    if entry.get("disagg") is True and entry.get("kv-p2p-transfer") is None and (
            not spaces or any(e.get("kv-p2p-transfer") is None for e in spaces)):
        return msg("disagg=true requires kv-p2p-transfer at the top level or in every search-space entry")
    return None


class _ScopedEntry(_Entry):
    @model_validator(mode="before")
    @classmethod
    def _scope(cls, data):  # noqa: ANN001, ANN206
        problem = component_scope_problem(data) if isinstance(data, dict) else None
        if problem:
            raise Invalid(problem)
        return data


class SingleNodeEntry(_ScopedEntry):
    multinode: Literal[False] = False
    scenarios: ScenariosSN


class MultiNodeEntry(_ScopedEntry):
    multinode: Literal[True]
    scenarios: ScenariosMN


class Hardware(M):
    available_cpu_dram_mib: int = Field(alias="available-cpu-dram-mib", ge=0)
    gpus_per_node: int = Field(alias="gpus-per-node", ge=1)


class RunnersFile(M):
    labels: dict[str, list[str]]
    hardware: dict[str, Hardware] = Field(default_factory=dict)


class ChangelogEntry(M):
    config_keys: list[str] = Field(alias="config-keys", min_length=1)
    scenario_type: list[Literal["fixed-seq-len", "agentic-coding"]] | None = Field(
        default=None, alias="scenario-type", min_length=1
    )
    description: list[str] = Field(min_length=1)
    pr_link: str = Field(alias="pr-link")
    evals_only: bool = Field(default=False, alias="evals-only")
    all_evals: bool = Field(default=False, alias="all-evals")
    append_only: bool = Field(default=False, alias="append-only")
    eval_min_prefill_ep: int | None = Field(default=None, alias="eval-min-prefill-ep", ge=1)

    @model_validator(mode="after")
    def _modes(self):  # noqa: ANN202
        if self.append_only and (self.evals_only or self.all_evals or self.eval_min_prefill_ep is not None):
            raise Invalid(msg("append-only cannot be combined with eval selection fields "
                              "(evals-only, all-evals, eval-min-prefill-ep)"))
        return self
