"""GPU-hours of InferenceX's whole catalogue as recipe-bot plans it, per bucket, eval rows charged as the template runs them.

    .venv/bin/python bench/bench_ix_eval_hours.py --ix-dir /tmp/ix

Runs `recipe-bot plan --repo IX --format json` on a checkout of InferenceX (a `git clone` of the fetched
mirror; nothing of it is kept here) and sums, for every bucket of rows (`multi_node.8k1k`,
`multinode_evals`, ...), the GPU-hours two ways: the plan's own estimate (bot/inferencex/launches.py
`points_run`: an eval-only row once at its eval concurrency, as run-sweep.yml passes `eval-conc` to the
template) and the rule it replaced (every listed concurrency charged an eval). Writes
bench/results/ix_eval_hours.json.
"""
from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import command_line, machine_info, write_result  # noqa: E402

from bot.inferencex.launches import STARTUP_S, point_seconds, points_run, row_concurrencies, row_gpus  # noqa: E402


def _hours(rows: list[dict], points) -> float:
    return sum(row_gpus(r) * (STARTUP_S + point_seconds(r) * points(r)) for r in rows) / 3600.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ix-dir", type=pathlib.Path, required=True, help="a checkout of InferenceX")
    args = parser.parse_args()
    done = subprocess.run([sys.executable, "-m", "bot", "plan", "--repo", str(args.ix_dir), "--format", "json"],
                          capture_output=True, text=True, cwd=ROOT, check=True)
    plan = json.loads(done.stdout)
    head = subprocess.run(["git", "-C", str(args.ix_dir), "rev-parse", "HEAD"], capture_output=True, text=True)
    buckets = {}
    for bucket, rows in sorted(plan["inferencex"]["rows"].items()):
        buckets[bucket] = {"rows": len(rows),
                           "gpu_hours": round(_hours(rows, points_run), 2),
                           "gpu_hours_every_listed_concurrency": round(_hours(rows, lambda r: len(row_concurrencies(r))), 2)}
    evals = [b for b in buckets if "eval" in b]
    record = {
        "benchmark": "ix_eval_hours", "command": command_line(), "machine": machine_info(),
        "inferencex_commit": head.stdout.strip() or None,
        "plan_gpu_hours": plan["summary"]["gpu_hours"],
        "multi_node_eval_gpu_hours": round(sum(buckets[b]["gpu_hours"] for b in evals if "multinode" in b), 2),
        "multi_node_eval_gpu_hours_every_listed_concurrency": round(
            sum(buckets[b]["gpu_hours_every_listed_concurrency"] for b in evals if "multinode" in b), 2),
        "buckets": buckets,
    }
    path = write_result("ix_eval_hours", record)
    for bucket, figures in buckets.items():
        print(f"{bucket:28} {figures['rows']:5} rows  {figures['gpu_hours']:10.2f} GPU-h "
              f"(every listed concurrency: {figures['gpu_hours_every_listed_concurrency']:.2f})")
    print(f"multi-node evals: {record['multi_node_eval_gpu_hours']:.2f} GPU-h "
          f"(was {record['multi_node_eval_gpu_hours_every_listed_concurrency']:.2f}); whole plan "
          f"{record['plan_gpu_hours']:.2f}; {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
