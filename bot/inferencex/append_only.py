"""`append-only` changelog entries as InferenceX checks them: only new points run, anything else is refused."""
from __future__ import annotations

import copy
import hashlib
from collections import defaultdict

from bot.core.messages import msg
from bot.core.validation import Invalid
from bot.inferencex.canonical import sorted_json
from bot.inferencex.generate import freeze

SCENARIO_TYPES = ("fixed-seq-len", "agentic-coding")
_CURVE_IGNORED = frozenset({"conc", "exp-name", "recipe-fingerprint"})
# json.dumps(recipe, sort_keys=True, separators=(",", ":"), ensure_ascii=True), its encoder built once
_CANONICAL_JSON = sorted_json(",", ":")


class AppendOnlyError(Invalid):
    """An append-only entry that InferenceX's changelog processor refuses (same wording)."""


def curve_key(row: dict) -> tuple:
    """One curve: every field except the point-level ones."""
    return tuple(sorted((k, freeze(v)) for k, v in row.items() if k not in _CURVE_IGNORED))


def recipe_fingerprint(row: dict) -> str:
    """InferenceX's `recipe-fingerprint`: SHA-256 of the row without its point-level fields."""
    recipe = {k: v for k, v in row.items() if k not in _CURVE_IGNORED}
    canonical = _CANONICAL_JSON(recipe)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


_KEYABLE = frozenset({str, int, bool, type(None)})  # exact types whose equality is JSON equality


def recipe_fingerprint_once(row: dict, seen: dict[tuple, str]) -> str:
    """`recipe_fingerprint(row)`, computed once per curve: a curve's points differ only in the fields
    the fingerprint leaves out. Rows are keyed by their other fields, each with its type (True is not
    1); a row with a float or a nested value is fingerprinted as it is."""
    key = []
    for name, value in row.items():
        if name in _CURVE_IGNORED:
            continue
        kind = value.__class__
        if kind not in _KEYABLE:
            return recipe_fingerprint(row)
        key.append((name, kind, value))
    frozen = tuple(key)
    found = seen.get(frozen)
    if found is None:
        found = seen[frozen] = recipe_fingerprint(row)
    return found


def _series_key(row: dict) -> tuple:
    agentic = row.get("scenario-type") == "agentic-coding"
    offload = "off" if row.get("kv-offloading", "none") in (None, "", "none") else "on"
    prefill, decode = row.get("prefill") or {}, row.get("decode") or {}
    return (
        row.get("model"), row.get("model-prefix"), row.get("precision"), row.get("framework"), row.get("runner"),
        bool(row.get("disagg", False)), "agentic_traces" if agentic else "single_turn",
        None if agentic else row.get("isl"), None if agentic else row.get("osl"), offload,
        "" if agentic else row.get("spec-decoding", "none"), prefill.get("hardware"), decode.get("hardware"),
    )


def _concs(row: dict) -> tuple[int, ...]:
    conc = row.get("conc")
    if isinstance(conc, int):
        return (conc,)
    if isinstance(conc, list) and conc and all(isinstance(v, int) for v in conc):
        return tuple(conc)
    raise AppendOnlyError(msg("append-only matrix entry has invalid concurrency value: %(value)s", value=repr(conc)))


def append_only_delta(base: list[tuple[str, dict]], head: list[tuple[str, dict]]) -> list[tuple[str, dict]]:
    """Only the points the head adds to the base's rows; removing or changing a point is refused."""
    base_groups: dict[tuple, set[int]] = defaultdict(set)
    head_groups: dict[tuple, set[int]] = defaultdict(set)
    for _, row in base:
        base_groups[curve_key(row)].update(_concs(row))
    for _, row in head:
        head_groups[curve_key(row)].update(_concs(row))
    if not base_groups:
        raise AppendOnlyError(msg("append-only requires an existing curve in the base revision"))
    if base_groups.keys() - head_groups.keys():
        raise AppendOnlyError(msg("append-only may not remove or modify existing generated recipes"))
    for key, concs in base_groups.items():
        removed = concs - head_groups[key]
        if removed:
            raise AppendOnlyError(msg("append-only may not remove existing concurrency points: %(points)s",
                                       points=str(sorted(removed))))
    delta: list[tuple[str, dict]] = []
    emitted: dict[tuple, set[int]] = defaultdict(set)
    for owner, row in head:
        key = curve_key(row)
        added = head_groups[key] - base_groups.get(key, set())
        conc = row.get("conc")
        if isinstance(conc, int):
            if conc in added and conc not in emitted[key]:
                delta.append((owner, row))
                emitted[key].add(conc)
            continue
        kept = []
        for value in conc:
            if value in added and value not in emitted[key]:
                kept.append(value)
                emitted[key].add(value)
        if kept:
            delta.append((owner, {**copy.deepcopy(row), "conc": kept}))
    if not delta:
        raise AppendOnlyError(msg("append-only did not add any generated points"))
    images: dict[tuple, set] = defaultdict(set)
    for _, row in base:
        images[_series_key(row)].add(row.get("image"))
    for _, row in delta:
        image = row.get("image")
        if image is None or images.get(_series_key(row), set()) != {image}:
            raise AppendOnlyError(msg("append-only additions must belong to an existing visual curve "
                                      "with one unchanged non-null image"))
    return delta


def check_scope(base_master: dict, head_master: dict, selected: dict[str, set[str]]) -> None:
    """Refuse edits outside the configs and scenarios the append-only entries select."""
    unrelated = [k for k in base_master.keys() | head_master.keys()
                 if k not in selected and base_master.get(k) != head_master.get(k)]
    if unrelated:
        raise AppendOnlyError(msg("append-only PR changed configs not selected by its changelog entry: %(configs)s",
                                   configs=str(sorted(unrelated))))
    for config, allowed in selected.items():
        base_config, head_config = base_master[config], head_master[config]
        base_scenarios, head_scenarios = base_config.get("scenarios", {}), head_config.get("scenarios", {})
        if base_scenarios.keys() != head_scenarios.keys():
            raise AppendOnlyError(msg("append-only added or removed a scenario in config %(config)s", config=repr(config)))
        unselected = base_scenarios.keys() - allowed
        top_base = {k: v for k, v in base_config.items() if k != "scenarios"}
        top_head = {k: v for k, v in head_config.items() if k != "scenarios"}
        if unselected and top_base != top_head:
            raise AppendOnlyError(msg("append-only changed config-wide fields that can affect scenarios "
                                      "outside its changelog scope: %(config)s", config=repr(config)))
        for scenario in base_scenarios:
            if scenario not in allowed and base_scenarios[scenario] != head_scenarios[scenario]:
                raise AppendOnlyError(msg("append-only changed a scenario outside its changelog scope: %(config)s / "
                                          "%(scenario)s", config=repr(config), scenario=repr(scenario)))
