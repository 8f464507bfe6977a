"""An InferenceX row as its benchmark template runs it: its inputs, the launcher, and the environment.

`recipe-bot run` reads a row's environment from the repository's template (`environment`, below). The
hand-written environment (`template_env`, `server_envs`) is still what honest packing reads while planning,
where the planner does not yet load the templates. Checked once by hand against InferenceX's real templates:
equal on all 1,407 single-node rows of its catalogue; on multi-node rows it lacks the template's defaults
(DURATION 3600, TOTAL_CPU_DRAM_GB 600), toJson's indentation and sets a GPU_COUNT the template does not.
The copy goes once packing reads the template too."""
from __future__ import annotations

import json

from bot.inferencex.expr import to_json  # GitHub's toJson: two-space indented JSON
from bot.inferencex.template import MULTI_NODE, SINGLE_NODE, RowEnv, Template, row_env

# `run-sweep.yml` hands agentic rows to the template with these fixed inputs.
_AGENTIC_FIXED = {"isl": "0", "osl": "0", "max-model-len": "0", "disagg": "false"}


def _text(value: object) -> str:
    """A value as GitHub Actions renders an expression into an input (booleans lower-case)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    return str(value)


def template_inputs(row: dict, *, agentx_fast: bool = False) -> dict[str, str]:
    """The benchmark template's inputs for one row, as run-sweep.yml's jobs fill them."""
    agentic = row.get("scenario-type") == "agentic-coding"
    eval_only = bool(row.get("eval-only"))
    backend = row.get("kv-offload-backend")
    inputs = {
        "exp-name": row["exp-name"], "recipe-fingerprint": row.get("recipe-fingerprint") or "",
        "runner": row["runner"], "image": row["image"], "model": row["model"], "model-prefix": row["model-prefix"],
        "framework": row["framework"], "precision": row["precision"],
        "router": to_json(row["router"]) if row.get("router") else "",
        "kv-p2p-transfer": row.get("kv-p2p-transfer") or "",
        "tp": row.get("tp"), "pp": row.get("pp", 1), "dcp-size": row.get("dcp-size", 1),
        "pcp-size": row.get("pcp-size", 1), "ep": row.get("ep"), "dp-attn": row.get("dp-attn", False),
        "conc": row["conc"], "spec-decoding": row.get("spec-decoding", "none"),
        "run-eval": True if eval_only else row.get("run-eval", False), "eval-only": eval_only,
        "scenario-type": "agentic-coding" if agentic else "fixed-seq-len",
        "random-range-ratio": "0.8", "duration": row.get("duration", 3600),
        "total-cpu-dram-gb": row.get("total-cpu-dram-gb", 0), "agentx-fast": agentx_fast,
    }
    if agentic:
        inputs.update(_AGENTIC_FIXED)
        inputs.update({"kv-offloading": row.get("kv-offloading", ""),
                       "kv-offload-backend": (backend or {}).get("name", ""),
                       "kv-offload-backend-metadata": to_json(backend) if backend else ""})
        if not eval_only:
            inputs["run-eval"] = False
    else:
        inputs.update({"isl": row["isl"], "osl": row["osl"], "max-model-len": row["max-model-len"],
                       "disagg": row.get("disagg", False)})
    # _text(v) inline: this runs for every row of every plan, thirty values a row
    return {k: v if v.__class__ is str else "true" if v is True else "false" if v is False else ""
            if v is None else str(v) for k, v in inputs.items()}


def multinode_inputs(row: dict, *, agentx_fast: bool = False) -> dict[str, str]:
    """The multi-node template's inputs for one row, as run-sweep.yml's multi-node jobs fill them
    (`conc-list: ${{ toJson(matrix.config.conc) }}`, each worker's fields and additional settings)."""
    agentic = row.get("scenario-type") == "agentic-coding"
    eval_only = bool(row.get("eval-only"))
    concs = row["conc"] if isinstance(row["conc"], list) else [row["conc"]]
    backend = row.get("kv-offload-backend")
    inputs: dict = {
        "exp-name": row["exp-name"], "recipe-fingerprint": row.get("recipe-fingerprint") or "",
        "runner": row["runner"], "image": row["image"], "model": row["model"], "model-prefix": row["model-prefix"],
        "framework": row["framework"], "precision": row["precision"],
        "router": to_json(row["router"]) if row.get("router") else "",
        "kv-p2p-transfer": row.get("kv-p2p-transfer") or "", "conc-list": to_json(concs),
        "spec-decoding": row.get("spec-decoding", "none"), "disagg": row.get("disagg", False),
        "prefill-hardware": row["prefill"].get("hardware") or "", "decode-hardware": row["decode"].get("hardware") or "",
        "run-eval": bool(row.get("run-eval") or eval_only) and (eval_only or not agentic), "eval-only": eval_only,
        "eval-conc": " ".join(map(str, concs)) if row.get("eval-all-concs") else row.get("eval-conc"),
        "agentx-fast": agentx_fast,
        "isl": 0 if agentic else row.get("isl", 0), "osl": 0 if agentic else row.get("osl", 0),
        "max-model-len": 0 if agentic else row.get("max-model-len", 0),
    }
    if agentic:
        inputs.update({"scenario-type": "agentic-coding", "conc": row.get("eval-conc") if eval_only else concs[0],
                       "duration": row.get("duration", 3600),
                       "kv-offloading": row.get("kv-offloading", ""), "kv-offload-backend": (backend or {}).get("name", ""),
                       "kv-offload-backend-metadata": to_json(backend) if backend else "",
                       "total-cpu-dram-gb": row.get("total-cpu-dram-gb", 0)})
    for role in ("prefill", "decode"):
        worker = row[role]
        inputs.update({f"{role}-num-worker": worker["num-worker"], f"{role}-tp": worker["tp"],
                       f"{role}-pp": worker.get("pp"), f"{role}-dcp-size": worker.get("dcp-size"),
                       f"{role}-pcp-size": worker.get("pcp-size"), f"{role}-ep": worker.get("ep"),
                       f"{role}-dp-attn": worker.get("dp-attn"),
                       f"{role}-additional-settings": to_json(worker.get("additional-settings"))})
    return {k: _text(v) for k, v in inputs.items() if v is not None}


def _multinode_env(row: dict, runner_name: str, agentx_fast: bool) -> dict[str, str]:
    """benchmark-multinode-tmpl.yml's environment: workers by role, the concurrency list, IS_MULTINODE."""
    agentic = row.get("scenario-type") == "agentic-coding"
    concs = row["conc"] if isinstance(row["conc"], list) else [row["conc"]]
    backend = row.get("kv-offload-backend")
    env = {
        "RANDOM_RANGE_RATIO": "0.8", "EXP_NAME": row["exp-name"], "RECIPE_FINGERPRINT": row.get("recipe-fingerprint") or "",
        "IMAGE": row["image"], "MODEL_PREFIX": row["model-prefix"], "MODEL": row["model"], "FRAMEWORK": row["framework"],
        "PRECISION": row["precision"], "ISL": _text(row.get("isl", 0)), "OSL": _text(row.get("osl", 0)),
        "MAX_MODEL_LEN": _text(row.get("max-model-len", 0)), "CONC_LIST": " ".join(map(str, concs)),
        "SPEC_DECODING": row.get("spec-decoding", "none"), "DISAGG": _text(row.get("disagg", False)),
        "PREFILL_HARDWARE": row["prefill"].get("hardware") or "", "DECODE_HARDWARE": row["decode"].get("hardware") or "",
        "RUN_EVAL": _text(bool(row.get("run-eval") or row.get("eval-only"))), "EVAL_ONLY": _text(bool(row.get("eval-only"))),
        "EVAL_CONC": _text(row.get("eval-conc")), "SCENARIO_TYPE": "agentic-coding" if agentic else "fixed-seq-len",
        "SCENARIO_SUBDIR": "agentic/" if agentic else "fixed_seq_len/", "IS_AGENTIC": "1" if agentic else "0",
        "CONC": _text(concs[0] if agentic else ""), "DURATION": _text(row.get("duration", 3600) if agentic else ""),
        "AIPERF_EXPERIMENTAL_FAST": "1" if agentx_fast else "0", "KV_OFFLOADING": row.get("kv-offloading", ""),
        "KV_OFFLOAD_BACKEND": (backend or {}).get("name", ""),
        "KV_OFFLOAD_BACKEND_METADATA": json.dumps(backend) if backend else "",
        "ROUTER_METADATA": json.dumps(row["router"]) if row.get("router") else "",
        "KV_P2P_TRANSFER": row.get("kv-p2p-transfer") or "", "TOTAL_CPU_DRAM_GB": _text(row.get("total-cpu-dram-gb", 0)),
        "RUNNER_NAME": runner_name, "RUNNER_TYPE": row["runner"], "IS_MULTINODE": "true",
    }
    for role in ("prefill", "decode"):
        worker, up = row[role], role.upper()
        env.update({f"{up}_NUM_WORKERS": _text(worker["num-worker"]), f"{up}_TP": _text(worker["tp"]),
                    f"{up}_PP_SIZE": _text(worker.get("pp", 1)), f"{up}_DCP_SIZE": _text(worker.get("dcp-size", 1)),
                    f"{up}_PCP_SIZE": _text(worker.get("pcp-size", 1)), f"{up}_EP": _text(worker.get("ep", 1)),
                    f"{up}_DP_ATTN": _text(worker.get("dp-attn", False))})
    p, d = "PREFILL", "DECODE"
    base = (f"{env['EXP_NAME']}_{env['PRECISION']}_{env['FRAMEWORK']}_prefill-tp{env[p + '_TP']}-pp{env[p + '_PP_SIZE']}"
            f"-dcp{env[p + '_DCP_SIZE']}-pcp{env[p + '_PCP_SIZE']}-ep{env[p + '_EP']}-dp{env[p + '_DP_ATTN']}"
            f"-nw{env[p + '_NUM_WORKERS']}_decode-tp{env[d + '_TP']}-pp{env[d + '_PP_SIZE']}-dcp{env[d + '_DCP_SIZE']}"
            f"-pcp{env[d + '_PCP_SIZE']}-ep{env[d + '_EP']}-dp{env[d + '_DP_ATTN']}-nw{env[d + '_NUM_WORKERS']}"
            f"_disagg-{env['DISAGG']}_spec-{env['SPEC_DECODING']}_conc{'x'.join(map(str, concs))}_{runner_name}")
    fingerprint = env["RECIPE_FINGERPRINT"]
    env["RESULT_FILENAME"] = f"{base}_recipe-{fingerprint[:16]}" if fingerprint else base
    env["GPU_COUNT"] = "0"
    return env


def template_env(row: dict, runner_name: str, *, agentx_fast: bool = False) -> dict[str, str]:
    """The environment the template's launch step gives `runners/launch_<fleet>.sh` (the multi-node
    template's for a row with prefill/decode workers)."""
    if "prefill" in row:
        return _multinode_env(row, runner_name, agentx_fast)
    if row.get("scenario-type") != "agentic-coding":
        return _fixed_env(row, runner_name, agentx_fast)
    return env_from_inputs(template_inputs(row, agentx_fast=agentx_fast), runner_name, agentx_fast)


def _fixed_env(row: dict, runner_name: str, agentx_fast: bool) -> dict[str, str]:
    """`env_from_inputs(template_inputs(row))` of a single-node fixed-seq-len row, built in one step: honest
    packing makes one per row of every plan (tests/test_inferencex.py checks the two agree)."""
    t = _text
    get = row.get
    eval_only = bool(get("eval-only"))
    router = get("router")
    env = {
        "RANDOM_RANGE_RATIO": "0.8", "EXP_NAME": t(row["exp-name"]), "RECIPE_FINGERPRINT": t(get("recipe-fingerprint") or ""),
        "MODEL": t(row["model"]), "MODEL_PREFIX": t(row["model-prefix"]), "ISL": t(row["isl"]), "OSL": t(row["osl"]),
        "MAX_MODEL_LEN": t(row["max-model-len"]), "IMAGE": t(row["image"]), "FRAMEWORK": t(row["framework"]),
        "PRECISION": t(row["precision"]), "TP": t(get("tp")), "PP_SIZE": t(get("pp", 1)),
        "DCP_SIZE": t(get("dcp-size", 1)), "PCP_SIZE": t(get("pcp-size", 1)), "EP_SIZE": t(get("ep")),
        "DP_ATTENTION": t(get("dp-attn", False)), "CONC": t(row["conc"]), "SPEC_DECODING": t(get("spec-decoding", "none")),
        "DISAGG": t(get("disagg", False)), "RUN_EVAL": "true" if eval_only else t(get("run-eval", False)),
        "EVAL_ONLY": "true" if eval_only else "false", "SCENARIO_TYPE": "fixed-seq-len",
        "SCENARIO_SUBDIR": "fixed_seq_len/", "IS_AGENTIC": "0", "KV_OFFLOADING": "", "KV_OFFLOAD_BACKEND": "",
        "KV_OFFLOAD_BACKEND_METADATA": "", "ROUTER_METADATA": json.dumps(router) if router else "",
        "KV_P2P_TRANSFER": t(get("kv-p2p-transfer") or ""), "TOTAL_CPU_DRAM_GB": t(get("total-cpu-dram-gb", 0)),
        "DURATION": t(get("duration", 3600)), "AIPERF_EXPERIMENTAL_FAST": "1" if agentx_fast else "0",
        "RUNNER_NAME": runner_name, "RUNNER_TYPE": t(row["runner"]),
    }
    env["RESULT_FILENAME"] = result_filename(env)
    env["GPU_COUNT"] = str(int(env["TP"] or 0) * int(env["PP_SIZE"] or 1) * int(env["PCP_SIZE"] or 1))
    return env


# What a point's own fields feed in a fixed-seq-len row's environment (see server_envs).
POINT_ENV = ("EXP_NAME", "CONC", "RUN_EVAL", "EVAL_ONLY", "RESULT_FILENAME")


def server_envs(rows: list[dict], runner_name: str) -> tuple[list[dict[str, str]], tuple[str, ...] | None]:
    """`template_env` of each row of one server configuration: rows equal in every field but the point's
    own (`rowkeys.POINT_FIELDS`: conc, exp-name, run-eval, eval-only, eval-conc, eval-all-concs), as
    `launches.launch_groups` groups them. For fixed-seq-len rows the first row's environment is made in
    full and the others change only what those fields feed, POINT_ENV, which is returned as the only
    keys that can differ (None: any key can). tests/test_ix_strict_rows.py checks every point field
    against the full environment."""
    first = rows[0]
    if "prefill" in first or first.get("scenario-type") == "agentic-coding":
        return [template_env(row, runner_name) for row in rows], None
    base = _fixed_env(first, runner_name, False)
    envs = [base]
    for row in rows[1:]:
        eval_only = bool(row.get("eval-only"))
        env = {**base, "EXP_NAME": _text(row["exp-name"]), "CONC": _text(row["conc"]),
               "RUN_EVAL": "true" if eval_only else _text(row.get("run-eval", False)),
               "EVAL_ONLY": "true" if eval_only else "false"}
        env["RESULT_FILENAME"] = result_filename(env)
        envs.append(env)
    return envs, POINT_ENV


def env_from_inputs(i: dict[str, str], runner_name: str, agentx_fast: bool = False) -> dict[str, str]:
    """The launch step's environment from the template's inputs (a single-node row)."""
    agentic = i["scenario-type"] == "agentic-coding"
    env = {
        "RANDOM_RANGE_RATIO": i["random-range-ratio"], "EXP_NAME": i["exp-name"],
        "RECIPE_FINGERPRINT": i["recipe-fingerprint"], "MODEL": i["model"], "MODEL_PREFIX": i["model-prefix"],
        "ISL": i["isl"], "OSL": i["osl"], "MAX_MODEL_LEN": i["max-model-len"], "IMAGE": i["image"],
        "FRAMEWORK": i["framework"], "PRECISION": i["precision"], "TP": i["tp"], "PP_SIZE": i["pp"],
        "DCP_SIZE": i["dcp-size"], "PCP_SIZE": i["pcp-size"], "EP_SIZE": i["ep"], "DP_ATTENTION": i["dp-attn"],
        "CONC": i["conc"], "SPEC_DECODING": i["spec-decoding"], "DISAGG": i["disagg"], "RUN_EVAL": i["run-eval"],
        "EVAL_ONLY": i["eval-only"], "SCENARIO_TYPE": i["scenario-type"],
        "SCENARIO_SUBDIR": "agentic/" if agentic else "fixed_seq_len/", "IS_AGENTIC": "1" if agentic else "0",
        "KV_OFFLOADING": i.get("kv-offloading", ""), "KV_OFFLOAD_BACKEND": i.get("kv-offload-backend", ""),
        "KV_OFFLOAD_BACKEND_METADATA": i.get("kv-offload-backend-metadata", ""), "ROUTER_METADATA": i["router"],
        "KV_P2P_TRANSFER": i["kv-p2p-transfer"], "TOTAL_CPU_DRAM_GB": i["total-cpu-dram-gb"],
        "DURATION": i["duration"], "AIPERF_EXPERIMENTAL_FAST": "1" if agentx_fast else "0",
        "RUNNER_NAME": runner_name, "RUNNER_TYPE": i["runner"],
    }
    env["RESULT_FILENAME"] = result_filename(env)
    env["GPU_COUNT"] = str(int(env["TP"] or 0) * int(env["PP_SIZE"] or 1) * int(env["PCP_SIZE"] or 1))
    return env


def result_filename(env: dict[str, str]) -> str:
    """`RESULT_FILENAME` as the template builds it, with the first 16 hex of the recipe fingerprint."""
    base = (f"{env['EXP_NAME']}_{env['PRECISION']}_{env['FRAMEWORK']}_tp{env['TP']}-pp{env['PP_SIZE']}"
            f"-dcp{env['DCP_SIZE']}-pcp{env['PCP_SIZE']}-ep{env['EP_SIZE']}-dpa{env['DP_ATTENTION']}"
            f"_disagg-{env['DISAGG']}_spec-{env['SPEC_DECODING']}_conc{env['CONC']}_{env['RUNNER_NAME']}")
    fingerprint = env.get("RECIPE_FINGERPRINT", "")
    return f"{base}_recipe-{fingerprint[:16]}" if fingerprint else base


def benchmark_scripts(env: dict[str, str]) -> list[str]:
    """The single-node scripts a fleet launcher would pick for this environment, preferred first
    (`<prefix>_<precision>_<gpu>_<framework><spec>.sh`, then without the framework)."""
    if env.get("IS_MULTINODE") == "true":
        return []
    gpu = env["RUNNER_TYPE"].removeprefix("cluster:").split("-", 1)[0]
    spec = "_mtp" if env.get("SPEC_DECODING") == "mtp" else ""
    base = f"benchmarks/single_node/{env['SCENARIO_SUBDIR']}{env['MODEL_PREFIX']}_{env['PRECISION']}_{gpu}"
    return [f"{base}_{env['FRAMEWORK']}{spec}.sh", f"{base}{spec}.sh"]


def launcher_for(runner_name: str) -> str:
    """`bash ./runners/launch_${RUNNER_NAME%%_*}.sh`."""
    return f"runners/launch_{runner_name.split('_', 1)[0]}.sh"


# --- the environment, read from the repository's own template ----------------------------------------

def template_file(row: dict) -> str:
    """Which of the repository's benchmark templates runs the row (the multi-node one for workers by role)."""
    return MULTI_NODE if "prefill" in row else SINGLE_NODE


def inputs_for(row: dict, *, agentx_fast: bool = False) -> dict[str, str]:
    return (multinode_inputs if "prefill" in row else template_inputs)(row, agentx_fast=agentx_fast)


def environment(template: Template, row: dict, runner_name: str, *, agentx_fast: bool = False,
                secrets: dict[str, str] | None = None) -> RowEnv:
    """The launch step's environment for the row, evaluated from the template (a RecipeError names the
    template's file and line when it uses an expression outside the subset)."""
    return row_env(template, inputs_for(row, agentx_fast=agentx_fast), runner_name=runner_name, secrets=secrets)
