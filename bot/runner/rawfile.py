"""A client's raw result completed with what InferenceX's process_result.py and aggregate_power.py read and the client leaves out.

InferenceX's own client (utils/bench_serving/benchmark_serving.py) writes `model_id`,
`total_token_throughput` and the benchmark's window, `benchmark_start_time_unix` and
`benchmark_end_time_unix`. `vllm bench serve` writes the first two but no window; `sglang.bench_serving`
writes none of them (its model is the server's, its total is `total_throughput`) and appends one JSON line
a run. recipe-bot adds only keys that are absent, never changes the client's own, and lists the ones it
added under `recipe_bot_added` (a name process_result.py's `*ms` and `tpot` rules pass over), so the file
stays the client's measurement, readable by InferenceX's tools as its own client's would be.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ADDED_KEY = "recipe_bot_added"


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def completed_raw(raw: dict[str, Any], *, model_id: str, end_unix: float) -> dict[str, Any]:
    """The raw result with InferenceX's keys filled in where the client left them out.

    model_id: the model the client was told to load (`--model`, the served name), as vLLM's client keeps it.
    total_token_throughput: the client's own total (SGLang's `total_throughput`), else input + output.
    The window ends when the client wrote the file (`end_unix`) and lasts the client's `duration`, the
    span the client measured its figures over (the warm-up requests before it are not in it).
    """
    out = dict(raw)
    added: list[str] = []

    def add(key: str, value: Any) -> None:
        out[key] = value
        added.append(key)

    if not isinstance(out.get("model_id"), str) or not out.get("model_id"):
        add("model_id", model_id)
    if not _number(out.get("total_token_throughput")):
        if _number(out.get("total_throughput")):
            add("total_token_throughput", out["total_throughput"])
        elif _number(out.get("input_throughput")) and _number(out.get("output_throughput")):
            add("total_token_throughput", out["input_throughput"] + out["output_throughput"])
    duration = out.get("duration")
    if "benchmark_end_time_unix" not in out and "benchmark_start_time_unix" not in out and _number(duration):
        add("benchmark_start_time_unix", round(end_unix - float(duration), 6))
        add("benchmark_end_time_unix", round(end_unix, 6))
    if added:
        out[ADDED_KEY] = [*out.get(ADDED_KEY, []), *added] if isinstance(out.get(ADDED_KEY), list) else added
    return out


def complete_raw_file(path: Path, raw: dict[str, Any], *, model_id: str) -> dict[str, Any]:
    """Write the completed raw result back as one JSON object (SGLang's one line of JSON lines becomes
    that line), the window's end taken from when the client wrote the file; returns what was written."""
    done = completed_raw(raw, model_id=model_id, end_unix=path.stat().st_mtime)
    if done != raw:
        path.write_text(json.dumps(done) + "\n")
    return done
