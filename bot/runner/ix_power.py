"""Power of an InferenceX row recipe-bot runs itself: the repository's own utils/aggregate_power.py on the row's telemetry.

The telemetry is the benchmark script's own (`start_gpu_monitor` writes gpu_metrics.csv, which the row's
raw files keep) where it made one, else recipe-bot's NVML sampler's over the launcher's run (bot/runner/
power.py). The rule is the repository's: its `utils/aggregate_power.py`, run as process_result.py runs it
after the template's benchmark step, patches the agg file and writes the validation sidecar; a repository
without that file gets recipe-bot's mirror of InferenceX's rule (bot/runner/power_rule.py).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bot.core.results import PowerResult
from bot.runner.power import PowerSampler
from bot.runner.power_rule import METRIC_KEYS, judge

TOOL = "utils/aggregate_power.py"
TOOL_TIMEOUT_S = 120.0


def row_power(repo: Path, out_dir: Path, raw: Path, agg_path: Path, expected_gpus: int,
              sampler: PowerSampler) -> tuple[dict, PowerResult, str]:
    """The agg file patched with the row's power fields; returns them, how they were judged and by which rule."""
    own = out_dir / "raw" / "gpu_metrics.csv"
    telemetry = own if own.is_file() else sampler.csv_path
    validation = out_dir / f"power_validation_{raw.stem}.json"
    expected = expected_gpus if expected_gpus > 0 else None
    tool = repo / TOOL
    ran = None
    if tool.is_file() and expected is not None:
        try:
            ran = subprocess.run([sys.executable, str(tool), "--csv", str(telemetry), "--bench-result", str(raw),
                                  "--agg-result", str(agg_path), "--expected-num-gpus", str(expected),
                                  "--validation-result", str(validation)], cwd=repo, capture_output=True,
                                 text=True, timeout=TOOL_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired):
            ran = None
    if ran is None or not validation.is_file():  # REQUIRE_POWER=1 makes it exit 1 on invalid power: still its verdict
        verdict = judge(telemetry, json.loads(raw.read_text()), expected, bench_path=str(raw))
        data = {k: v for k, v in json.loads(agg_path.read_text()).items() if k not in METRIC_KEYS}
        agg_path.write_text(json.dumps({**data, **verdict.fields}, indent=2) + "\n")
        validation.write_text(json.dumps(verdict.validation, indent=2) + "\n")
        rule = "recipe-bot's mirror"
    else:
        rule = TOOL
    agg = json.loads(agg_path.read_text())
    sidecar = json.loads(validation.read_text())
    fields = {k: agg[k] for k in ("power_metric_schema_version", "power_valid", *METRIC_KEYS) if k in agg}
    total = agg.get("avg_total_gpu_power_w")
    bench = json.loads(raw.read_text())
    tokens = bench.get("total_token_throughput")
    power = PowerResult(
        valid=bool(sidecar.get("power_valid")), reasons=list(sidecar.get("reasons") or []),
        problem=sampler.problem if telemetry == sampler.csv_path else None,
        interval_s=sampler.interval_s if telemetry == sampler.csv_path else None, gpus=sampler.gpus,
        telemetry_file=str(telemetry.relative_to(out_dir)) if telemetry.is_file() else None,
        validation_file=str(validation.relative_to(out_dir)),
        tokens_per_joule=round(float(tokens) / total, 6) if sidecar.get("power_valid") and total and tokens else None)
    return fields, power, rule
