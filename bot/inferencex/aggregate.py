"""InferenceX's single-node result aggregation (`utils/process_result.py`'s derived fields), as a pure function."""
from __future__ import annotations

import json
import re


class AggregateError(ValueError):
    """A raw result or environment the aggregation cannot use."""


def aggregate(env: dict[str, str], bench: dict) -> dict:
    """The `agg_<RESULT_FILENAME>.json` document: identity, per-GPU throughputs, seconds, interactivity."""
    try:
        disagg = env["DISAGG"].lower() == "true"
        if disagg:
            raise AggregateError("Disaggregated mode requires multinode setup.")
        tp, pp, pcp = int(env["TP"]), int(env.get("PP_SIZE") or 1), int(env.get("PCP_SIZE") or 1)
        dcp = int(env.get("DCP_SIZE") or 1)
        if pp <= 0 or dcp <= 0 or pcp <= 0:
            raise AggregateError("PP_SIZE, DCP_SIZE, and PCP_SIZE must be positive integers.")
        gpus = tp * pp * pcp
        total, output = float(bench["total_token_throughput"]), float(bench["output_throughput"])
        data: dict = {
            "hw": env["RUNNER_TYPE"], "conc": int(bench["max_concurrency"]), "image": env["IMAGE"],
            "model": bench["model_id"], "infmax_model_prefix": env["MODEL_PREFIX"], "framework": env["FRAMEWORK"],
            "precision": env["PRECISION"], "spec_decoding": env["SPEC_DECODING"], "disagg": disagg,
            "recipe_fingerprint": env.get("RECIPE_FINGERPRINT", ""), "isl": int(env["ISL"]), "osl": int(env["OSL"]),
        }
        if env.get("ROUTER_METADATA") not in (None, "", "null"):
            data["router"] = json.loads(env["ROUTER_METADATA"])
        if env.get("KV_P2P_TRANSFER"):
            data["kv_p2p_transfer"] = env["KV_P2P_TRANSFER"]
        data.update({
            "is_multinode": False, "tp": tp, "pp": pp, "dcp_size": dcp, "pcp_size": pcp, "ep": int(env["EP_SIZE"]),
            "dp_attention": env["DP_ATTENTION"], "tput_per_gpu": total / gpus, "output_tput_per_gpu": output / gpus,
            "input_tput_per_gpu": (total - output) / gpus,
        })
        for key, value in bench.items():
            if key.endswith("ms"):
                data[key.replace("_ms", "")] = float(value) / 1000.0
            if "tpot" in key:
                data[key.replace("_ms", "").replace("tpot", "intvty")] = 1000.0 / float(value)
    except KeyError as exc:
        raise AggregateError(f"missing {exc.args[0]!r}") from None
    except (TypeError, ValueError, ZeroDivisionError) as exc:
        if isinstance(exc, AggregateError):
            raise
        raise AggregateError(str(exc)) from None
    return data


def gpus_from_name(name: str) -> tuple[int, int] | None:
    """(prefill GPUs, decode GPUs) from a multi-node result file name (`..._gpus_N_ctx_P_gen_D...`), as the
    multi-node template reads them; a name without `_ctx_`/`_gen_` puts every GPU on the one worker."""

    gpus = re.search(r"_gpus_(\d+)", name)
    if not gpus:
        return None
    ctx, gen = re.search(r"_ctx_(\d+)", name), re.search(r"_gen_(\d+)", name)
    if ctx and gen:
        return int(ctx.group(1)), int(gen.group(1))
    return int(gpus.group(1)), 0


def aggregate_multinode(env: dict[str, str], bench: dict, prefill_gpus: int, decode_gpus: int) -> dict:
    """process_result.py's multi-node fields: per-role parallelism and per-GPU throughputs."""
    single = {**env, "TP": "1", "PP_SIZE": "1", "PCP_SIZE": "1", "DCP_SIZE": "1", "EP_SIZE": "1",
              "DP_ATTENTION": "false", "DISAGG": "false"}
    data = {k: v for k, v in aggregate(single, bench).items()
            if k not in ("is_multinode", "tp", "pp", "dcp_size", "pcp_size", "ep", "dp_attention",
                         "tput_per_gpu", "output_tput_per_gpu", "input_tput_per_gpu")}
    data["disagg"] = env["DISAGG"].lower() == "true"
    total_gpus = prefill_gpus + decode_gpus
    if total_gpus <= 0 or prefill_gpus <= 0:
        raise AggregateError("Multinode results require at least one prefill GPU.")
    total, output = float(bench["total_token_throughput"]), float(bench["output_throughput"])
    decode = decode_gpus > 0

    def n(name: str, default: str = "1") -> int:
        return int(env.get(name) or default)

    data.update({
        "is_multinode": True, "prefill_tp": n("PREFILL_TP"), "prefill_pp": n("PREFILL_PP_SIZE"),
        "prefill_dcp_size": n("PREFILL_DCP_SIZE"), "prefill_pcp_size": n("PREFILL_PCP_SIZE"),
        "prefill_ep": n("PREFILL_EP"), "prefill_dp_attention": env["PREFILL_DP_ATTN"],
        "prefill_num_workers": n("PREFILL_NUM_WORKERS"),
        "decode_tp": n("DECODE_TP") if decode else 0, "decode_pp": n("DECODE_PP_SIZE") if decode else 1,
        "decode_dcp_size": n("DECODE_DCP_SIZE") if decode else 1,
        "decode_pcp_size": n("DECODE_PCP_SIZE") if decode else 1,
        "decode_ep": n("DECODE_EP") if decode else 0, "decode_dp_attention": env["DECODE_DP_ATTN"],
        "decode_num_workers": n("DECODE_NUM_WORKERS"), "num_prefill_gpu": prefill_gpus, "num_decode_gpu": decode_gpus,
        "tput_per_gpu": total / total_gpus, "output_tput_per_gpu": output / (decode_gpus if decode else total_gpus),
        "input_tput_per_gpu": (total - output) / prefill_gpus,
    })
    if env.get("PREFILL_HARDWARE"):
        data["prefill_hw"], data["decode_hw"] = env["PREFILL_HARDWARE"], env["DECODE_HARDWARE"]
    return data
