"""An InferenceX row's power is judged by the repository's own utils/aggregate_power.py where it has one (called as
process_result.py calls it), on the benchmark script's own telemetry where it made some, else recipe-bot's."""
from __future__ import annotations

import json
from pathlib import Path

from bot.runner.ix_power import row_power
from bot.runner.power import HEADER, PowerSampler

BENCH = {"benchmark_start_time_unix": 1000.0, "benchmark_end_time_unix": 1010.0, "duration": 10.0, "completed": 10,
         "total_input_tokens": 600, "total_output_tokens": 200, "total_token_throughput": 80.0}
# A stand-in for the repository's tool (our own): it records its arguments and answers as InferenceX's would.
TOOL = '''import argparse, json
p = argparse.ArgumentParser()
for a in ("--csv", "--bench-result", "--agg-result", "--expected-num-gpus", "--validation-result"):
    p.add_argument(a)
a = p.parse_args()
agg = json.load(open(a.agg_result))
agg.update({"power_metric_schema_version": 2, "power_valid": 1, "avg_power_w": 50.0, "avg_total_gpu_power_w": 100.0})
json.dump(agg, open(a.agg_result, "w"))
json.dump({"power_valid": True, "reasons": [], "args": vars(a)}, open(a.validation_result, "w"))
'''


def _row(tmp_path: Path, *, tool: bool, own_csv: bool) -> tuple[Path, Path, Path, Path]:
    repo, out = tmp_path / "repo", tmp_path / "out"
    (out / "raw").mkdir(parents=True)
    repo.mkdir()
    if tool:
        (repo / "utils").mkdir()
        (repo / "utils" / "aggregate_power.py").write_text(TOOL)
    raw = out / "raw" / "row.json"
    raw.write_text(json.dumps(BENCH))
    agg = out / "agg_row.json"
    agg.write_text(json.dumps({"conc": 4, "tput_per_gpu": 40.0}))
    if own_csv:
        (out / "raw" / "gpu_metrics.csv").write_text(HEADER + "".join(
            f"{t}, {g}, 300 W\n" for t in range(999, 1012) for g in ("0", "1")))
    return repo, out, raw, agg


def test_the_repositorys_own_tool_judges_the_scripts_own_telemetry(tmp_path):
    repo, out, raw, agg = _row(tmp_path, tool=True, own_csv=True)
    fields, power, rule = row_power(repo, out, raw, agg, 2, PowerSampler(["0", "1"], out / "gpu_metrics.csv"))
    assert rule == "utils/aggregate_power.py"
    sidecar = json.loads((out / "power_validation_row.json").read_text())
    assert sidecar["args"]["csv"] == str(out / "raw" / "gpu_metrics.csv") and sidecar["args"]["expected_num_gpus"] == "2"
    assert fields == {"power_metric_schema_version": 2, "power_valid": 1, "avg_power_w": 50.0, "avg_total_gpu_power_w": 100.0}
    assert json.loads(agg.read_text())["tput_per_gpu"] == 40.0  # the agg file patched in place, not replaced
    assert power.valid and power.tokens_per_joule == 0.8 and power.telemetry_file == "raw/gpu_metrics.csv"


def test_without_the_tool_the_mirror_judges_and_patches_the_agg_file(tmp_path):
    repo, out, raw, agg = _row(tmp_path, tool=False, own_csv=True)
    fields, power, rule = row_power(repo, out, raw, agg, 2, PowerSampler(["0", "1"], out / "gpu_metrics.csv"))
    assert rule == "recipe-bot's mirror"
    assert fields["power_valid"] == 1 and fields["avg_total_gpu_power_w"] == 600.0
    assert json.loads(agg.read_text())["joules_per_total_token"] == 7.5  # 6000 J over 800 tokens
    assert power.tokens_per_joule == round(80 / 600, 6)


def test_a_row_without_telemetry_is_not_valid_and_says_why(tmp_path):
    repo, out, raw, agg = _row(tmp_path, tool=False, own_csv=False)
    sampler = PowerSampler([], out / "gpu_metrics.csv")
    sampler.start()
    sampler.stop()
    fields, power, _ = row_power(repo, out, raw, agg, 2, sampler)
    assert fields == {"power_metric_schema_version": 2, "power_valid": 0}
    assert power.reasons == ["telemetry_file_missing"] and power.problem is not None
