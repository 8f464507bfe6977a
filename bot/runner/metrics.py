"""Turn a benchmark client's raw result file into PointMetrics (InferenceX's aggregate fields)."""
from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pydantic

from bot.core.results import PointMetrics, RequestSamples

DISTRIBUTIONS = ("ttft", "tpot", "itl", "e2el")
STATS = ("mean", "median", "p90", "p99")


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


def _distribution(raw: dict[str, Any], metric: str, client_names: Mapping[str, str]) -> dict[str, float]:
    names = [metric] + ([client_names[metric]] if metric in client_names else [])
    dist: dict[str, float] = {}
    for stat in STATS:
        for name in names:
            value = raw.get(f"{stat}_{name}_ms")
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                dist[stat] = float(value)
                break
    return dist


def _list(raw: dict[str, Any], key: str) -> list | None:
    value = raw.get(key)
    return value if isinstance(value, list) else None


def _finite(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value \
        and abs(value) != float("inf")


def parse_requests(raw: dict[str, Any]) -> RequestSamples | None:
    """Per-request figures from `vllm bench serve --save-detailed` (ttfts, itls, output_lens in
    seconds and tokens); None when the file has none (an older run, or SGLang's client).

    Successful requests with at least two output tokens only (TPOT needs two); e2el is the
    client's latency where it kept one, else TTFT plus the inter-token latencies."""
    ttfts, itls, outs = _list(raw, "ttfts"), _list(raw, "itls"), _list(raw, "output_lens")
    ins = _list(raw, "input_lens")
    if ttfts is None or itls is None or outs is None or not (len(ttfts) == len(itls) == len(outs)):
        return None
    latencies = _list(raw, "latencies")
    errors = _list(raw, "errors")
    samples = RequestSamples()
    for index, (ttft, itl, out) in enumerate(zip(ttfts, itls, outs)):
        if errors is not None and index < len(errors) and errors[index]:
            continue
        if not _finite(ttft) or ttft <= 0 or not isinstance(out, int) or out < 2:
            continue
        if latencies is not None and index < len(latencies) and _finite(latencies[index]):
            e2el = float(latencies[index])
        elif isinstance(itl, list) and all(_finite(v) for v in itl):
            e2el = float(ttft) + float(sum(itl))
        else:
            continue
        samples.ttft_ms.append(round(ttft * 1000, 4))
        samples.e2el_ms.append(round(e2el * 1000, 4))
        samples.tpot_ms.append(round((e2el - ttft) * 1000 / (out - 1), 5))
        samples.output_tokens.append(out)
        in_len = ins[index] if ins is not None and index < len(ins) else 0
        samples.input_tokens.append(in_len if isinstance(in_len, int) else 0)
    return samples if samples.count else None
def inferencex_figures(raw: dict[str, Any], *, gpus: int) -> dict[str, float | None]:
    """Every figure InferenceX's utils/process_result.py derives from one raw client result.

    Its rules, restated: `conc` is max_concurrency; the three per-GPU throughputs divide by the GPU
    count (input = total - output); every `*_ms` field becomes seconds under its name without
    `_ms` (mean_ttft_ms -> mean_ttft), standard deviations included; every TPOT field also gives
    interactivity, 1000 / value, under `intvty` (mean/median/std/p90/p99_tpot_ms -> *_intvty).
    A TPOT of 0 (a one-token output) gives None where InferenceX would divide by zero.
    """
    per = max(1, gpus)
    figures: dict[str, float | None] = {}
    if isinstance(raw.get("max_concurrency"), (int, float)):
        figures["conc"] = float(int(raw["max_concurrency"]))
    total = raw.get("total_token_throughput", raw.get("total_throughput"))
    output = raw.get("output_throughput")
    if _numeric(total) and _numeric(output):
        figures["tput_per_gpu"] = float(total) / per
        figures["output_tput_per_gpu"] = float(output) / per
        figures["input_tput_per_gpu"] = (float(total) - float(output)) / per
    for key, value in raw.items():
        if not _numeric(value):
            continue  # lists (detailed per-request output) and labels carry no aggregate figure
        value = float(value)
        if key.endswith("ms"):
            figures[key.replace("_ms", "")] = value / 1000.0
        if "tpot" in key:
            figures[key.replace("_ms", "").replace("tpot", "intvty")] = (
                1000.0 / value if value else None)
    return figures


def _numeric(value: Any) -> bool:
    if isinstance(value, str):
        return value in ("inf", "-inf", "nan")  # vLLM's InfEncoder writes infinities as strings
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def parse_bench_result(raw: dict[str, Any], *, gpus: int, expected_requests: int | None = None,
                       source: str = "result", client_names: Mapping[str, str] | None = None) -> PointMetrics:
    """PointMetrics from one raw result of an engine's benchmark client (`vllm bench serve`,
    `sglang.bench_serving`); client_names: that engine's names for figures vLLM's client names otherwise
    (Engine.result_names).

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
    dists = {metric: _distribution(raw, metric, client_names or {}) for metric in DISTRIBUTIONS}
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
            requests=parse_requests(raw),
            inferencex=inferencex_figures(raw, gpus=gpus),
        )
    except pydantic.ValidationError as exc:  # inf, NaN or an absurd value: refused, never written
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "metrics"
        raise BenchResultError(f"{source}: {where}: {first['msg']} (got {first.get('input')!r})") from None
