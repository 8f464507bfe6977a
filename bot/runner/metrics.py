"""Turn a benchmark client's raw result file into PointMetrics (InferenceX's aggregate fields)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pydantic

from bot.results import PointMetrics

DISTRIBUTIONS = ("ttft", "tpot", "itl", "e2el")
STATS = ("mean", "median", "p90", "p99")
# sglang.bench_serving names end-to-end latency "e2e_latency" where vLLM says "e2el".
_SGLANG_NAMES = {"e2el": "e2e_latency"}


class BenchResultError(ValueError):
    """The raw file is not a benchmark result we can read; the message names the file and key."""


def load_raw(path: Path) -> dict[str, Any]:
    """A vLLM result is one JSON object; sglang.bench_serving appends JSON lines (take the last)."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise BenchResultError(f"{path}: cannot read the client's result file ({exc})") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        lines = [line for line in text.splitlines() if line.strip()]
        try:
            data = json.loads(lines[-1]) if lines else None
        except json.JSONDecodeError as exc:
            raise BenchResultError(f"{path}: not JSON or JSON lines ({exc})") from exc
    if not isinstance(data, dict):
        raise BenchResultError(f"{path}: expected a JSON object with the client's metrics")
    return data


def _number(raw: dict[str, Any], key: str, source: str) -> float:
    value = raw.get(key)
    if isinstance(value, str) and value in ("inf", "-inf", "nan"):
        return float(value)  # vLLM's InfEncoder writes infinities as strings
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise BenchResultError(f"{source}: missing or non-numeric {key!r} (got {value!r})")
    return float(value)


def _distribution(raw: dict[str, Any], metric: str) -> dict[str, float]:
    names = [metric] + ([_SGLANG_NAMES[metric]] if metric in _SGLANG_NAMES else [])
    dist: dict[str, float] = {}
    for stat in STATS:
        for name in names:
            value = raw.get(f"{stat}_{name}_ms")
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                dist[stat] = float(value)
                break
    return dist


def parse_bench_result(raw: dict[str, Any], *, gpus: int, expected_requests: int | None = None,
                       source: str = "result") -> PointMetrics:
    """PointMetrics from one raw result of `vllm bench serve` or `sglang.bench_serving`.

    tput_per_gpu = total_token_throughput / gpus (InferenceX: total / (tp*pp*pcp)); the output
    and input figures likewise; interactivity = 1000 / median TPOT (tokens/s one user sees).
    `gpus` below 1 (a CPU engine) counts as one: the per-GPU fields are then per host.
    """
    per = max(1, gpus)
    completed = int(_number(raw, "completed", source))
    if "failed" in raw:
        failed = int(_number(raw, "failed", source))
    elif expected_requests is not None:
        failed = max(0, expected_requests - completed)
    else:
        failed = 0
    duration = _number(raw, "duration", source)
    output_tput = _number(raw, "output_throughput", source)
    if "total_token_throughput" in raw:
        total_tput = _number(raw, "total_token_throughput", source)
    elif "total_throughput" in raw:
        total_tput = _number(raw, "total_throughput", source)
    else:
        total_tput = _number(raw, "input_throughput", source) + output_tput
    if "input_throughput" in raw:
        input_tput = _number(raw, "input_throughput", source)
    elif "total_input_tokens" in raw and duration > 0:
        input_tput = _number(raw, "total_input_tokens", source) / duration
    else:
        input_tput = total_tput - output_tput
    dists = {metric: _distribution(raw, metric) for metric in DISTRIBUTIONS}
    median_tpot = dists["tpot"].get("median")
    try:
        return PointMetrics(
            completed=completed,
            failed=failed,
            duration_s=duration,
            request_throughput=_number(raw, "request_throughput", source),
            output_throughput=output_tput,
            total_token_throughput=total_tput,
            tput_per_gpu=total_tput / per,
            output_tput_per_gpu=output_tput / per,
            input_tput_per_gpu=input_tput / per,
            interactivity=1000.0 / median_tpot if median_tpot else None,
            ttft_ms=dists["ttft"],
            tpot_ms=dists["tpot"],
            itl_ms=dists["itl"],
            e2el_ms=dists["e2el"],
        )
    except pydantic.ValidationError as exc:  # inf, NaN or an absurd value: refused, never written
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "metrics"
        raise BenchResultError(f"{source}: {where}: {first['msg']} (got {first.get('input')!r})") from None
