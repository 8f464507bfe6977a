"""A quick, strict test that an InferenceX config certainly passes its schema (bot/inferencex/schema.py).

Validating 200 master-config entries through pydantic costs importing pydantic and building the models
(about 0.1 s) in a plan that should take less than twice that. These checks accept only what plainly
passes (exact types, the bounds and rules of the schema); anything else, valid in pydantic's lax mode or
not, goes to the pydantic models, which give the verdict and word the error (file, line, field, what is
accepted). So a quick "yes" never lets through what the schema refuses, and every error reads as before.
"""
from __future__ import annotations

from typing import Any, Callable

from bot.inferencex.scope_rules import component_scope_problem

Check = Callable[[Any], bool]


def _str(value: Any) -> bool:
    return type(value) is str


def _bool(value: Any) -> bool:
    return type(value) is bool


def _int(minimum: int) -> Check:
    return lambda value: type(value) is int and value >= minimum


def _fraction(value: Any) -> bool:  # float in (0, 1]
    return type(value) in (int, float) and 0 < value <= 1


def _literal(*accepted: str) -> Check:
    return lambda value: type(value) is str and value in accepted


def _str_list(value: Any) -> bool:
    return type(value) is list and all(type(v) is str for v in value)


def _list(item: Check, min_length: int = 0) -> Check:
    return lambda value: type(value) is list and len(value) >= min_length and all(item(v) for v in value)


def _model(fields: dict[str, tuple[Check, bool]], *rules: Check) -> Check:
    """A mapping with only these keys (`extra="forbid"`), the required ones present; an optional key may be
    null (its default), a required one may not. Then the model's own rules."""
    required = [k for k, (_, needed) in fields.items() if needed]

    def check(value: Any) -> bool:
        if type(value) is not dict:
            return False
        for key, item in value.items():
            spec = fields.get(key) if type(key) is str else None
            if spec is None:
                return False
            if item is None:
                if spec[1]:
                    return False
                continue
            if not spec[0](item):
                return False
        return all(k in value for k in required) and all(rule(value) for rule in rules)

    return check


def _given(entry: dict, key: str) -> bool:
    return entry.get(key) is not None


def _one_way(entry: dict) -> bool:
    has_range = _given(entry, "conc-start") or _given(entry, "conc-end")
    if _given(entry, "conc-list") == has_range:
        return False
    if has_range:
        return _given(entry, "conc-start") and _given(entry, "conc-end") and entry["conc-start"] <= entry["conc-end"]
    return True


def _backend(entry: dict) -> bool:
    return entry.get("kv-offloading") != "dram" or _given(entry, "kv-offload-backend")


_COMPONENT = _model({"name": (_str, True), "version": (_str, False)})
_OPTIONAL_INT = (_int(1), False)
_CONCURRENCY = {"conc-list": (_list(lambda v: type(v) is int, 1), False), "conc-start": _OPTIONAL_INT,
                "conc-end": _OPTIONAL_INT, "kv-offloading": (_literal("none", "dram"), False),
                "kv-offload-backend": (_COMPONENT, False)}
_SPEC_DECODING = (_literal("mtp", "draft_model", "none"), False)
_SINGLE_SEARCH = _model({
    **_CONCURRENCY, "tp": (_int(1), True), "ep": _OPTIONAL_INT, "pp": _OPTIONAL_INT, "dcp-size": _OPTIONAL_INT,
    "pcp-size": _OPTIONAL_INT, "dp-attn": (_bool, False), "spec-decoding": _SPEC_DECODING,
    "router": (_COMPONENT, False),
}, _one_way, _backend)
_WORKER = _model({
    "num-worker": (_int(0), True), "tp": (_int(1), True), "pp": _OPTIONAL_INT, "dcp-size": _OPTIONAL_INT,
    "pcp-size": _OPTIONAL_INT, "ep": _OPTIONAL_INT, "dp-attn": (_bool, False), "hardware": (_str, False),
    "additional-settings": (_str_list, False),
})
_MULTI_SEARCH = _model({
    **_CONCURRENCY, "spec-decoding": _SPEC_DECODING, "prefill": (_WORKER, False), "decode": (_WORKER, False),
    "worker": (_WORKER, False), "num-nodes": _OPTIONAL_INT, "router": (_COMPONENT, False),
    "kv-p2p-transfer": (_str, False),
}, _one_way, _backend, lambda e: _given(e, "worker") or (_given(e, "prefill") and _given(e, "decode")))


def _agentic_offload(entry: dict) -> bool:
    spaces = entry["search-space"]
    if any(not _given(space, "kv-offloading") for space in spaces):
        return False
    return not any(space["kv-offloading"] == "dram" for space in spaces) or _given(entry, "dram-utilization")


def _fixed(search: Check) -> Check:
    return _model({"isl": (_int(1), True), "osl": (_int(1), True), "search-space": (_list(search, 1), True)})


def _agentic(search: Check, *rules: Check) -> Check:
    return _model({"dram-utilization": (_fraction, False), "search-space": (_list(search, 1), True)}, *rules)


def _scenarios(fixed: Check, agentic: Check) -> Check:
    return _model({"fixed-seq-len": (_list(fixed), False), "agentic-coding": (_list(agentic), False)})


_ENTRY = {"image": (_str, True), "model": (_str, True), "model-prefix": (_str, True), "runner": (_str, True),
          "precision": (_str, True), "framework": (_str, True), "disagg": (_bool, True),
          "router": (_COMPONENT, False), "kv-p2p-transfer": (_str, False)}
# `disagg` has a default but is not optional: absent is fine, null is not (hence required=True and a
# separate presence rule below).
_SINGLE = _model({**_ENTRY, "multinode": (lambda v: v is False, True),
                  "scenarios": (_scenarios(_fixed(_SINGLE_SEARCH), _agentic(_SINGLE_SEARCH, _agentic_offload)), True)})
_MULTI = _model({**_ENTRY, "multinode": (lambda v: v is True, True),
                 "scenarios": (_scenarios(_fixed(_MULTI_SEARCH), _agentic(_MULTI_SEARCH)), True)})
_DEFAULTED = ("disagg", "multinode")  # keys with a default: may be absent, never null


def entry_passes(entry: Any) -> bool:
    """True only when the master-config entry certainly passes SingleNodeEntry or MultiNodeEntry, the
    model `bot.inferencex.repo` picks for it (MultiNodeEntry when `multinode: true`)."""
    if type(entry) is not dict:
        return False
    multi = entry.get("multinode") is True
    filled = {**{k: False for k in _DEFAULTED if k not in entry and not (multi and k == "multinode")}, **entry}
    if not (_MULTI if multi else _SINGLE)(filled):
        return False
    return component_scope_problem(filled) is None


_HARDWARE = _model({"available-cpu-dram-mib": (_int(0), True), "gpus-per-node": (_int(1), True)})


def runners_pass(data: Any) -> bool:
    """True only when runners.yaml certainly passes RunnersFile (labels: name → list of runner names)."""
    if type(data) is not dict or type(data.get("labels")) is not dict:
        return False
    if any(k not in ("labels", "hardware") for k in data):
        return False
    labels, hardware = data["labels"], data.get("hardware", {})
    return (all(type(k) is str and _str_list(v) for k, v in labels.items())
            and type(hardware) is dict and all(type(k) is str and _HARDWARE(v) for k, v in hardware.items()))


class LogEntry:
    """A perf-changelog.yaml entry with ChangelogEntry's attributes, for entries that plainly pass."""

    __slots__ = ("config_keys", "scenario_type", "description", "pr_link", "evals_only", "all_evals",
                 "append_only", "eval_min_prefill_ep")

    def __init__(self, raw: dict) -> None:
        self.config_keys = list(raw["config-keys"])
        self.scenario_type = list(raw["scenario-type"]) if raw.get("scenario-type") is not None else None
        self.description = list(raw["description"])
        self.pr_link = raw["pr-link"]
        self.evals_only = raw.get("evals-only", False)
        self.all_evals = raw.get("all-evals", False)
        self.append_only = raw.get("append-only", False)
        self.eval_min_prefill_ep = raw.get("eval-min-prefill-ep")


def _modes(entry: dict) -> bool:
    if not entry.get("append-only"):
        return True
    return not (entry.get("evals-only") or entry.get("all-evals") or _given(entry, "eval-min-prefill-ep"))


_CHANGELOG = _model({
    "config-keys": (_list(_str, 1), True), "scenario-type": (_list(_literal("fixed-seq-len", "agentic-coding"), 1), False),
    "description": (_list(_str, 1), True), "pr-link": (_str, True), "evals-only": (_bool, True),
    "all-evals": (_bool, True), "append-only": (_bool, True), "eval-min-prefill-ep": _OPTIONAL_INT,
}, _modes)
_LOG_DEFAULTS = {"evals-only": False, "all-evals": False, "append-only": False}


def changelog_entry(raw: Any) -> LogEntry | None:
    """The entry when it certainly passes ChangelogEntry; None sends it to the schema."""
    if type(raw) is not dict or not _CHANGELOG({**_LOG_DEFAULTS, **raw}):
        return None
    return LogEntry(raw)
