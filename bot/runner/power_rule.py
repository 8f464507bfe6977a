"""InferenceX's power validity rule and energy figures (utils/aggregate_power.py), for the points recipe-bot runs itself.

Mirrored, not imported: a native recipe's runner has no InferenceX checkout to call (an InferenceX row
calls the repository's own `utils/aggregate_power.py`: bot/runner/ix_power.py). The mirror follows
InferenceX 843c625's `integrate_power`, `_load_benchmark_data`, `_derived_metrics` and `_patch_power_result`
reason for reason and digit for digit; bench/bench_power_rule.py replays the real file beside it on the
same telemetry, valid and each way of being invalid. What it checks: the raw result names a window
(`benchmark_start_time_unix`, `benchmark_end_time_unix`) that agrees with its `duration` (within 1 % or
0.5 s) and positive request and token counts; the telemetry file has a time, a power and a GPU column;
every GPU's samples bracket the window with no gap above 3 s inside it; as many GPUs as expected. Each
GPU's energy is the trapezoidal integral over the window, its ends interpolated linearly.
"""
from __future__ import annotations

import bisect
import csv
import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from statistics import mean

POWER_METRIC_SCHEMA_VERSION = 2  # aggregate_power.POWER_METRIC_SCHEMA_VERSION
MAX_SAMPLE_GAP_S = 3.0  # aggregate_power._DEFAULT_MAX_SAMPLE_GAP_S
INTEGRATION_METHOD = "per_device_trapezoidal_with_linear_boundary_interpolation"
METRIC_KEYS = ("avg_power_w", "avg_total_gpu_power_w", "total_gpu_energy_j", "joules_per_successful_query",
               "joules_per_input_token", "joules_per_output_token", "joules_per_total_token")

_POWER_COL = re.compile(r"power", re.IGNORECASE)
_POWER_EXCLUDE = re.compile(r"limit|cap|max|min", re.IGNORECASE)
_TIME_COL = re.compile(r"time", re.IGNORECASE)
_GPU_COL = re.compile(r"^(index|gpu|gpu_id|gpu_index|card|device)$", re.IGNORECASE)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


@dataclass
class Integration:
    reasons: list[str]
    expected_num_gpus: int | None
    observed_gpu_ids: list[str] = field(default_factory=list)
    per_gpu_sample_counts: dict[str, int] = field(default_factory=dict)
    per_gpu_max_sample_gap_s: dict[str, float] = field(default_factory=dict)
    per_gpu_energy_j: dict[str, float] = field(default_factory=dict)
    device_issues: dict[str, list[str]] = field(default_factory=dict)
    total_gpu_energy_j: float | None = None


@dataclass
class Window:
    start: float
    end: float
    duration: float
    completed: int
    total_input_tokens: int
    total_output_tokens: int


def _add(reasons: list[str], reason: str) -> None:
    if reason not in reasons:
        reasons.append(reason)


def _timestamp(value: str) -> float | None:
    """Epoch seconds (or milliseconds) as the sampler writes them; nvidia-smi's and ISO forms as InferenceX reads them."""
    value = value.strip()
    if not value:
        return None
    if _NUMBER.fullmatch(value):
        n = float(value)
        return n / 1000.0 if n > 1e12 else n
    for fmt in ("%Y/%m/%d %H:%M:%S.%f", "%Y/%m/%d %H:%M:%S"):
        try:
            return datetime.strptime(value, fmt).timestamp()
        except ValueError:
            pass
    iso = value.replace(" ", "T", 1) if " " in value and "T" not in value else value
    try:
        stamp = datetime.fromisoformat(iso)
    except ValueError:
        return None
    return stamp.timestamp() if stamp.tzinfo is None else stamp.astimezone(timezone.utc).timestamp()


def _power(value: str) -> float | None:
    value = value.strip()
    if not value or value.lower() in {"[n/a]", "n/a", "na"}:
        return None
    found = _NUMBER.search(value)
    return float(found.group(0)) if found else None


def _gpu_key(gpu_id: str) -> tuple[int, int | str]:
    return (0, int(gpu_id)) if gpu_id.isdigit() else (1, gpu_id)


def _interpolate(samples: list[tuple[float, float]], at: float) -> float:
    times = [t for t, _ in samples]
    right = bisect.bisect_left(times, at)
    if right < len(samples) and math.isclose(samples[right][0], at, rel_tol=0.0, abs_tol=1e-9):
        return samples[right][1]
    (t0, p0), (t1, p1) = samples[right - 1], samples[right]
    return p0 + (at - t0) / (t1 - t0) * (p1 - p0)


def _energy(samples: list[tuple[float, float]], start: float, end: float) -> float:
    clipped = [(start, _interpolate(samples, start)), *((t, p) for t, p in samples if start < t < end),
               (end, _interpolate(samples, end))]
    return sum((t1 - t0) * (p0 + p1) / 2.0 for (t0, p0), (t1, p1) in zip(clipped, clipped[1:]))


def _read_samples(csv_path: Path, start: float, end: float, reasons: list[str]
                  ) -> dict[str, dict[float, list[float]]] | None:
    """Each GPU's readings by timestamp within the window and one gap either side; None where the file
    cannot be used at all (its reasons added)."""
    raw: dict[str, dict[float, list[float]]] = {}
    missing_identity = False
    try:
        with csv_path.open("r", newline="", encoding="utf-8", errors="replace") as f:
            reader = csv.DictReader(f, skipinitialspace=True)
            header = [column.strip() for column in (reader.fieldnames or [])]
            reader.fieldnames = header
            time_col = next((c for c in header if _TIME_COL.search(c)), None)
            power_col = next((c for c in header if _POWER_COL.search(c) and not _POWER_EXCLUDE.search(c)), None)
            gpu_col = next((c for c in header if _GPU_COL.match(c.strip())), None)
            for column, reason in ((time_col, "timestamp_column_missing"), (power_col, "power_column_missing"),
                                   (gpu_col, "gpu_identity_column_missing")):
                if not column:
                    _add(reasons, reason)
            if not (time_col and power_col and gpu_col):
                return None
            for row in reader:
                stamp = _timestamp((row.get(time_col) or "").strip())
                if stamp is None or not math.isfinite(stamp):
                    _add(reasons, "invalid_timestamp_sample")
                    continue
                if stamp < start - MAX_SAMPLE_GAP_S or stamp > end + MAX_SAMPLE_GAP_S:
                    continue
                watts = _power((row.get(power_col) or "").strip())
                gpu_id = (row.get(gpu_col) or "").strip()
                if watts is None or not math.isfinite(watts) or watts < 0:
                    _add(reasons, "invalid_power_sample")
                    continue
                if not gpu_id:
                    missing_identity = True
                    continue
                raw.setdefault(gpu_id, {}).setdefault(stamp, []).append(watts)
    except (OSError, csv.Error):
        _add(reasons, "telemetry_file_unreadable")
        return None
    if missing_identity:
        _add(reasons, "gpu_identity_missing")
    return raw


def integrate(csv_path: Path, start: float, end: float, expected_num_gpus: int | None) -> Integration:
    """aggregate_power.integrate_power: the window's energy per GPU, or the reasons it cannot be trusted."""
    reasons: list[str] = []
    out = Integration(reasons, expected_num_gpus)
    if not math.isfinite(start) or not math.isfinite(end) or end <= start:
        out.reasons = ["invalid_benchmark_window"]
        return out
    if expected_num_gpus is not None and expected_num_gpus <= 0:
        _add(reasons, "invalid_expected_gpu_count")
    if not csv_path.is_file():
        _add(reasons, "telemetry_file_missing")
        return out
    try:
        if csv_path.stat().st_size == 0:
            _add(reasons, "telemetry_file_empty")
            return out
    except OSError:
        _add(reasons, "telemetry_file_unreadable")
        return out
    raw = _read_samples(csv_path, start, end, reasons)
    if raw is None:
        return out
    if not raw:
        _add(reasons, "no_usable_power_samples")
        return out
    out.observed_gpu_ids = sorted(raw, key=_gpu_key)
    if expected_num_gpus is not None and expected_num_gpus > 0 and len(raw) != expected_num_gpus:
        _add(reasons, "expected_gpu_count_mismatch")
    for gpu_id in out.observed_gpu_ids:
        samples = sorted((stamp, mean(values)) for stamp, values in raw[gpu_id].items())
        out.per_gpu_sample_counts[gpu_id] = len(samples)
        issues: list[str] = []
        if len(samples) < 2:
            issues.append("insufficient_power_samples")
        elif samples[0][0] > start or samples[-1][0] < end:
            issues.append("benchmark_window_not_bracketed")
        else:
            times = [t for t, _ in samples]
            relevant = samples[bisect.bisect_right(times, start) - 1: bisect.bisect_left(times, end) + 1]
            gap = max((b[0] - a[0] for a, b in zip(relevant, relevant[1:])), default=0.0)
            out.per_gpu_max_sample_gap_s[gpu_id] = gap
            if gap > MAX_SAMPLE_GAP_S:
                issues.append("sampling_gap_exceeded")
            out.per_gpu_energy_j[gpu_id] = _energy(samples, start, end)
        for issue in issues:
            _add(reasons, issue)
        if issues:
            out.device_issues[gpu_id] = issues
    if len(out.per_gpu_energy_j) == len(out.observed_gpu_ids):
        out.total_gpu_energy_j = sum(out.per_gpu_energy_j.values())
    return out


def _count(bench: dict, key: str, reason: str, reasons: list[str]) -> int:
    value = bench.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        _add(reasons, reason)
        return 0
    return value


def benchmark_window(bench: dict) -> tuple[Window | None, list[str]]:
    """aggregate_power._load_benchmark_data: the raw result's window and counts, or why they cannot be used."""
    start, end, duration = (bench.get(k) for k in ("benchmark_start_time_unix", "benchmark_end_time_unix", "duration"))
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (start, end, duration)):
        return None, ["invalid_benchmark_window"]
    start, end, duration = float(start), float(end), float(duration)
    if not all(math.isfinite(v) for v in (start, end, duration)) or end <= start or duration <= 0:
        return None, ["invalid_benchmark_window"]
    reasons: list[str] = []
    if abs(duration - (end - start)) > max(0.5, (end - start) * 0.01):
        _add(reasons, "benchmark_duration_mismatch")
    completed = _count(bench, "completed", "invalid_successful_query_count", reasons)
    total_in = _count(bench, "total_input_tokens", "invalid_input_token_count", reasons)
    total_out = _count(bench, "total_output_tokens", "invalid_output_token_count", reasons)
    return Window(start, end, duration, completed, total_in, total_out), reasons


@dataclass
class PowerVerdict:
    valid: bool
    reasons: list[str]
    fields: dict[str, int | float]  # what process_result.py's agg file carries: schema, power_valid, 7 figures
    validation: dict  # the power_validation_<result>.json sidecar


def judge(csv_path: Path, bench: dict, expected_num_gpus: int | None, bench_path: str = "") -> PowerVerdict:
    """aggregate_power.run for one raw result: its validity, its reasons, its fields and its sidecar."""
    window, reasons = benchmark_window(bench)
    if window is None:
        integration = Integration(list(reasons), expected_num_gpus)
    else:
        integration = integrate(csv_path, window.start, window.end, expected_num_gpus)
    for reason in integration.reasons:
        _add(reasons, reason)
    metrics: dict[str, float] = {}
    valid = not reasons
    if valid and window is not None and integration.total_gpu_energy_j is not None:
        energy, seconds = integration.total_gpu_energy_j, window.end - window.start
        total_power = energy / seconds
        metrics = {"avg_power_w": total_power / len(integration.observed_gpu_ids), "avg_total_gpu_power_w": total_power,
                   "total_gpu_energy_j": energy, "joules_per_successful_query": energy / window.completed,
                   "joules_per_input_token": energy / window.total_input_tokens,
                   "joules_per_output_token": energy / window.total_output_tokens,
                   "joules_per_total_token": energy / (window.total_input_tokens + window.total_output_tokens)}
    fields: dict[str, int | float] = {"power_metric_schema_version": POWER_METRIC_SCHEMA_VERSION, "power_valid": int(valid)}
    for key, value in metrics.items():
        fields[key] = round(value, 3 if key.endswith(("_w", "_j")) else 6)
    validation = {
        "schema_version": 1, "power_valid": valid, "reasons": reasons, "telemetry_source": str(csv_path),
        "benchmark_result": bench_path,
        "benchmark_window": None if window is None else {
            "start_time_unix": window.start, "end_time_unix": window.end, "reported_duration_s": window.duration,
            "integration_duration_s": window.end - window.start, "completed": window.completed,
            "total_input_tokens": window.total_input_tokens, "total_output_tokens": window.total_output_tokens},
        "integration_method": INTEGRATION_METHOD, "expected_gpu_count": expected_num_gpus,
        "observed_gpu_count": len(integration.observed_gpu_ids), "observed_gpu_ids": integration.observed_gpu_ids,
        "per_gpu_sample_counts": integration.per_gpu_sample_counts,
        "per_gpu_max_sample_gap_s": integration.per_gpu_max_sample_gap_s,
        "per_gpu_energy_j": integration.per_gpu_energy_j, "device_issues": integration.device_issues,
        "accumulator_check": None, "metrics": {k: round(v, 6) for k, v in metrics.items() if math.isfinite(v)},
    }
    return PowerVerdict(valid, reasons, fields, validation)
