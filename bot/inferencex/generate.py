"""InferenceX's matrix rows, as its `generate_sweep_configs.py test-config` makes them from the configs."""
from __future__ import annotations

import fnmatch
from collections import defaultdict
from decimal import Decimal
from typing import Literal

from bot.core.messages import msg
from bot.core.validation import Invalid

MIN_EVAL_CONC = 16
AGENTIC_DURATION_S = 3600
MAX_AGENTIC_CPU_DRAM_MIB = 2_861_022  # 3 TB (decimal) in MiB, before utilisation scaling
BYTES_PER_MIB = 1024 * 1024
BYTES_PER_GB = 1_000_000_000
SEQ_LEN_NAMES = {(1024, 1024): "1k1k", (8192, 1024): "8k1k"}
EVAL_SEQ = (8192, 1024)
Mode = Literal["default", "no-evals", "evals-only"]
# Row fields that vary between points of one server configuration.
POINT_FIELDS = frozenset({"conc", "exp-name", "run-eval", "eval-only", "eval-conc", "eval-all-concs"})


class ConfigKeyError(Invalid):
    """A config key or wildcard that matches nothing."""

    def __init__(self, key: str, available: list[str]) -> None:
        self.key = key
        self.available = sorted(available)
        if any(ch in key for ch in "*?"):
            super().__init__(msg("pattern %(key)s matches no config key", key=repr(key)))
        else:
            super().__init__(msg("config key %(key)s matches no config key", key=repr(key)))


def expand_config_keys(patterns: list[str], available: list[str]) -> list[str]:
    """Exact keys must exist; `*` and `?` are wildcards that must match at least one key."""
    seen: dict[str, None] = {}
    for pattern in patterns:
        if "*" in pattern or "?" in pattern:
            matches = fnmatch.filter(available, pattern)
            if not matches:
                raise ConfigKeyError(pattern, available)
            seen.update(dict.fromkeys(matches))
        elif pattern in available:
            seen.setdefault(pattern, None)
        else:
            raise ConfigKeyError(pattern, available)
    return list(seen)


def conc_values(bmk: dict, step: int = 2) -> list[int]:
    if "conc-list" in bmk:
        return list(bmk["conc-list"])
    conc, end, values = bmk["conc-start"], bmk["conc-end"], []
    while conc <= end:
        values.append(conc)
        if conc == end:
            break
        conc = min(conc * step, end)
    return values


def seq_len_name(isl: int, osl: int) -> str:
    return SEQ_LEN_NAMES.get((isl, osl), f"{isl}_{osl}")


def _components(bmk: dict, config: dict) -> dict:
    """router and kv-p2p-transfer, from the search-space entry or else from the config."""
    found = {f: bmk.get(f, config.get(f)) for f in ("router", "kv-p2p-transfer")}
    return {f: v for f, v in found.items() if v is not None}


def _with_defaults(worker: dict) -> dict:
    defaults = {f: worker.get(f, 1) for f in ("pp", "dcp-size", "pcp-size")}
    return {**worker, **defaults}


def worker_pair(bmk: dict, disagg: bool) -> tuple[dict, dict]:
    if disagg or "worker" not in bmk:
        return _with_defaults(bmk["prefill"]), _with_defaults(bmk["decode"])
    worker = _with_defaults(bmk["worker"])
    decode = {k: v for k, v in worker.items() if k not in ("num-worker", "additional-settings")}
    return {"num-worker": 1, **worker}, {"num-worker": 0, **decode}


def _hardware(runners: dict, runner: str) -> dict:
    facts = runners.get("hardware", {}).get(runner)
    if facts is None:
        known = ", ".join(sorted(runners.get("hardware", {})))
        raise Invalid(msg("runner %(runner)s has no hardware facts in runners.yaml (known: %(known)s)",
                          runner=repr(runner), known=known))
    return facts


def _replica_gpus(worker: dict, gpus_per_node: int) -> int:
    gpus = worker["tp"] * worker.get("pp", 1) * worker.get("pcp-size", 1)
    return gpus_per_node if gpus > gpus_per_node else gpus


def dram_offload_gb(agentic: dict, bmk: dict, runner: str, runners: dict) -> int:
    """The KV-offload DRAM budget of one server: the node's capped DRAM × utilisation × its GPU share."""
    if bmk.get("kv-offloading", "none") != "dram":
        return 0
    facts = _hardware(runners, runner)
    available = min(facts["available-cpu-dram-mib"], MAX_AGENTIC_CPU_DRAM_MIB)
    per_node = facts["gpus-per-node"]
    if "worker" in bmk:
        gpus = _replica_gpus(bmk["worker"], per_node)
    elif "prefill" in bmk:
        gpus = _replica_gpus(bmk["prefill"], per_node)
    else:
        gpus = bmk["tp"] * bmk.get("pp", 1) * bmk.get("pcp-size", 1)

    budget = Decimal(available) * BYTES_PER_MIB * Decimal(str(agentic["dram-utilization"])) * gpus / per_node
    return int(budget / BYTES_PER_GB)


def _offload_suffix(kv: str, backend: dict | None) -> str:
    return "kvnone" if kv == "none" else f"kv{kv}-{backend['name']}"


def _mn_agentic_name(prefix: str, prefill: dict, decode: dict, concs: list[int], suffix: str) -> str:
    def tag(worker: dict, role: str) -> str:
        text = f"{role}{worker['num-worker']}x{worker['tp']}"
        text += f"ep{worker['ep']}" if worker.get("ep", 1) != 1 else ""
        return text + ("dpa" if worker.get("dp-attn", False) else "")

    return f"{prefix}_{tag(prefill, 'p')}_{tag(decode, 'd')}_conc{'x'.join(map(str, concs))}{suffix}"


def _identity(config: dict) -> dict:
    return {
        "image": config["image"], "model": config["model"], "model-prefix": config["model-prefix"],
        "precision": config["precision"], "framework": config["framework"], "runner": config["runner"],
    }


def _single_node(ident: dict, bmk: dict) -> dict:
    return {
        **ident, "tp": bmk["tp"], "pp": bmk.get("pp", 1), "dcp-size": bmk.get("dcp-size", 1),
        "pcp-size": bmk.get("pcp-size", 1),
    }


def _fixed_rows(config: dict, ident: dict, conc: set[int] | None) -> list[dict]:
    rows = []
    multinode, disagg = config.get("multinode", False), config.get("disagg", False)
    for seq in config["scenarios"].get("fixed-seq-len") or []:
        isl, osl = seq["isl"], seq["osl"]
        common = {"isl": isl, "osl": osl}
        name = f"{config['model-prefix']}_{seq_len_name(isl, osl)}"
        for bmk in seq["search-space"]:
            values = [c for c in conc_values(bmk) if not conc or c in conc]
            if not values:
                continue
            spec = bmk.get("spec-decoding", "none")
            components = _components(bmk, config)  # the same for every point of this entry
            if multinode:
                prefill, decode = worker_pair(bmk, disagg)
                row = {**ident, **common, "spec-decoding": spec, "prefill": prefill, "decode": decode,
                       "conc": values, "max-model-len": isl + osl + 256, "exp-name": name,
                       "disagg": disagg, "run-eval": False}
                rows.append({**row, **components})
                continue
            # the fields before and after `conc`, the same for every point of this entry (field order kept)
            before = {**_single_node(ident, bmk), **common}
            after = {"max-model-len": isl + osl + 256, "ep": bmk.get("ep") or 1,
                     "dp-attn": bool(bmk.get("dp-attn", False)), "spec-decoding": spec, "exp-name": name,
                     "disagg": disagg, "run-eval": False, **components}
            rows.extend([{**before, "conc": c, **after} for c in values])
    return rows


def _agentic_rows(config: dict, ident: dict, runners: dict, conc: set[int] | None) -> list[dict]:
    rows = []
    multinode, disagg = config.get("multinode", False), config.get("disagg", False)
    prefix = config["model-prefix"]
    for agentic in config["scenarios"].get("agentic-coding") or []:
        for bmk in agentic["search-space"]:
            values = [c for c in conc_values(bmk) if not conc or c in conc]
            if not values:
                continue
            spec = bmk.get("spec-decoding", "none")
            kv = bmk.get("kv-offloading", "none")
            backend = bmk.get("kv-offload-backend")
            dram = dram_offload_gb(agentic, bmk, config["runner"], runners)
            extra = {"kv-offload-backend": backend} if backend is not None else {}
            if multinode:
                prefill, decode = worker_pair(bmk, disagg)
                suffix = f"_{_offload_suffix(kv, backend)}" if kv != "none" else ""
                for c in values:  # one allocation per concurrency, as single-node agentic
                    row = {**ident, "spec-decoding": spec, "prefill": prefill, "decode": decode, "conc": [c],
                           "kv-offloading": kv, "total-cpu-dram-gb": dram, "duration": AGENTIC_DURATION_S,
                           "exp-name": _mn_agentic_name(prefix, prefill, decode, [c], suffix),
                           "disagg": disagg, "scenario-type": "agentic-coding"}
                    rows.append({**row, **extra, **_components(bmk, config)})
                continue
            for c in values:
                name = f"{prefix}_tp{bmk['tp']}_conc{c}_{_offload_suffix(kv, backend)}"
                name += f"_spec-{spec}" if spec != "none" else ""
                row = {**_single_node(ident, bmk), "ep": bmk.get("ep") or 1,
                       "dp-attn": bool(bmk.get("dp-attn", False)), "spec-decoding": spec, "conc": c,
                       "kv-offloading": kv, "total-cpu-dram-gb": dram, "duration": AGENTIC_DURATION_S,
                       "exp-name": name, "scenario-type": "agentic-coding"}
                rows.append({**row, **extra, **_components(bmk, config)})
    return rows


def test_config_rows(
    configs: dict[str, dict],
    runners: dict,
    keys: list[str],
    *,
    conc: list[int] | None = None,
    scenario_types: list[str] | None = None,
) -> tuple[list[dict], list[str]]:
    """The rows before eval marking for the given (already expanded) keys, and each row's config key."""
    wanted = set(conc or []) or None
    rows: list[dict] = []
    owners: list[str] = []
    for key in keys:
        config = configs[key]
        ident = _identity(config)
        made: list[dict] = []
        if scenario_types is None or "fixed-seq-len" in scenario_types:
            made += _fixed_rows(config, ident, wanted)
        if scenario_types is None or "agentic-coding" in scenario_types:
            made += _agentic_rows(config, ident, runners, wanted)
        rows += made
        owners += [key] * len(made)
    return rows, owners


def _eligible(row: dict) -> list[int]:
    values = row["conc"] if isinstance(row["conc"], list) else [row["conc"]]
    return sorted(c for c in values if c >= MIN_EVAL_CONC)


def freeze(value: object) -> object:
    """A row value in hashable form (dicts as sorted pairs, lists as tuples), for keys over rows."""
    if isinstance(value, dict):
        return tuple(sorted((k, freeze(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(freeze(v) for v in value)
    return value


def launch_key(row: dict) -> frozenset:
    """A row's server configuration: everything except the concurrency and the fields derived from it.
    A set of (field, value) pairs: equal exactly when the fields are, and hashed without sorting them."""
    return frozenset([(k, freeze(v) if isinstance(v, (dict, list)) else v)
                      for k, v in row.items() if k not in POINT_FIELDS])


def mark_eval_entries(rows: list[dict], include_agentic: bool = False) -> list[dict]:
    """Single-node 8k1k: the highest and the median concurrency >= 16 of each group; multi-node 8k1k:
    the highest eligible concurrency of each configuration; agentic (opt-in): the highest concurrency."""
    marked: set[int] = set()
    eval_conc: dict[int, int] = {}
    single: dict[tuple, list[int]] = defaultdict(list)
    multi: dict[frozenset, list[tuple[int, int]]] = defaultdict(list)
    for i, row in enumerate(rows):
        if (row.get("isl"), row.get("osl")) != EVAL_SEQ or not _eligible(row):
            continue
        if "tp" in row:
            key = tuple(row[f] for f in ("model", "runner", "framework", "precision", "isl", "osl",
                                         "spec-decoding", "dp-attn"))
            single[key].append(i)
        elif "prefill" in row:
            multi[launch_key(row)].append((i, _eligible(row)[-1]))
    for indices in single.values():
        values = sorted({rows[i]["conc"] for i in indices})
        targets = {values[-1], values[len(values) // 2]}
        marked.update(i for i in indices if rows[i]["conc"] in targets)
    for entries in multi.values():
        best, value = max(entries, key=lambda item: item[1])
        marked.add(best)
        eval_conc[best] = value
    if include_agentic:
        agentic_single: dict[tuple, list[tuple[int, int]]] = defaultdict(list)
        agentic_multi: dict[frozenset, list[tuple[int, int]]] = defaultdict(list)
        for i, row in enumerate(rows):
            if row.get("scenario-type") != "agentic-coding":
                continue
            if "prefill" in row:
                if _eligible(row):
                    agentic_multi[launch_key(row)].append((i, _eligible(row)[-1]))
                continue
            key = tuple(row[f] for f in ("model", "runner", "framework", "precision"))
            agentic_single[key].append((i, row["conc"]))
        for entries in agentic_single.values():
            marked.add(max(entries, key=lambda item: item[1])[0])
        for entries in agentic_multi.values():
            best, value = max(entries, key=lambda item: item[1])
            marked.add(best)
            eval_conc[best] = value
    for i, row in enumerate(rows):
        row["run-eval"] = i in marked
        if i in eval_conc:
            row["eval-conc"] = eval_conc[i]
    return rows


def mark_all_eval_entries(rows: list[dict], owners: list[str] | None = None) -> tuple[list[dict], list[str]]:
    """`--all-evals`: every 8k1k row (and every agentic row) runs its eval; multi-node rows of one
    configuration merge into one job that runs all its concurrencies."""
    owners = owners if owners is not None else [""] * len(rows)
    out: list[dict] = []
    out_owners: list[str] = []
    merged: dict[frozenset, int] = {}
    for row, owner in zip(rows, owners, strict=True):
        agentic = row.get("scenario-type") == "agentic-coding"
        if (not agentic and (row.get("isl"), row.get("osl")) != EVAL_SEQ) or "prefill" not in row:
            if agentic or (row.get("isl"), row.get("osl")) == EVAL_SEQ:
                row["run-eval"] = True
            out.append(row)
            out_owners.append(owner)
            continue
        values = row["conc"] if isinstance(row["conc"], list) else [row["conc"]]
        key = launch_key(row)
        if key in merged:
            existing = out[merged[key]]
            existing["conc"] = sorted(set(existing["conc"]) | set(values))
            if agentic:
                existing["eval-conc"] = max(existing["conc"])
            continue
        entry = {**row, "conc": sorted(set(values)), "run-eval": True}
        if agentic:
            entry["eval-conc"] = max(values)
        else:
            entry["eval-all-concs"] = True
            entry.pop("eval-conc", None)
        merged[key] = len(out)
        out.append(entry)
        out_owners.append(owner)
    return out, out_owners


def generate_keyed(
    configs: dict[str, dict],
    runners: dict,
    keys: list[str],
    mode: Mode = "default",
    *,
    all_evals: bool = False,
    conc: list[int] | None = None,
    scenario_types: list[str] | None = None,
) -> list[tuple[str, dict]]:
    """`test-config --config-keys KEYS [--no-evals | --evals-only] [--all-evals]`, each row with its key."""
    if mode == "no-evals" and all_evals:
        raise Invalid(msg("all-evals cannot be combined with no-evals"))
    resolved = expand_config_keys(keys, list(configs))
    rows, owners = test_config_rows(configs, runners, resolved, conc=conc, scenario_types=scenario_types)
    if mode != "no-evals":
        rows = mark_eval_entries(rows, include_agentic=mode == "evals-only" or all_evals)
        if all_evals:
            rows, owners = mark_all_eval_entries(rows, owners)
    pairs = list(zip(owners, rows, strict=True))
    if mode == "evals-only" or all_evals:
        pairs = [(k, row) for k, row in pairs if row.get("run-eval", False)]
        for _, row in pairs:
            row["eval-only"] = True
    return pairs


def generate(
    configs: dict[str, dict],
    runners: dict,
    keys: list[str],
    mode: Mode = "default",
    *,
    all_evals: bool = False,
    conc: list[int] | None = None,
    scenario_types: list[str] | None = None,
) -> list[dict]:
    """The rows InferenceX's generator prints for `test-config` with these arguments."""
    return [row for _, row in generate_keyed(
        configs, runners, keys, mode, all_evals=all_evals, conc=conc, scenario_types=scenario_types
    )]


def trim_conc_keyed(pairs: list[tuple[str, dict]]) -> list[tuple[str, dict]]:
    """`--trim-conc` (the `sweep-enabled` label), as InferenceX's changelog processor does it: a multi-node
    row keeps the lowest of its concurrencies; single-node rows that differ only in `conc`/`exp-name`
    keep the one with the lowest concurrency."""
    groups: dict[tuple, list[int]] = {}
    out: list[tuple[str, dict]] = []
    for owner, row in pairs:
        if row.get("prefill") is not None:
            conc = row.get("conc")
            if isinstance(conc, list) and len(conc) > 1:
                row = {**row, "conc": [min(conc)]}
            out.append((owner, row))
            continue
        key = tuple(sorted((k, freeze(v)) for k, v in row.items() if k not in {"conc", "exp-name"}))
        groups.setdefault(key, []).append(len(out))
        out.append((owner, row))
    drop: set[int] = set()
    for indices in groups.values():
        if len(indices) > 1:
            keep = min(indices, key=lambda i: out[i][1]["conc"])
            drop.update(i for i in indices if i != keep)
    return [pair for i, pair in enumerate(out) if i not in drop]


def trim_conc(rows: list[dict]) -> list[dict]:
    return [row for _, row in trim_conc_keyed([("", row) for row in rows])]
