"""InferenceX's single-node result aggregation (`utils/process_result.py`'s derived fields), as a pure function."""
from __future__ import annotations


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
            import json

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
