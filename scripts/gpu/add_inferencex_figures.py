#!/usr/bin/env python3
"""Add metrics.inferencex to kept result.json files from the raw client files beside them.

Usage: add_inferencex_figures.py RESULT_JSON [...]
For runs kept before the runner wrote these figures itself (docs/gpu-runs/2026-11-30*): each point
whose raw file is there gets InferenceX's derived figures, computed as the runner now computes them
(bot.runner.metrics.inferencex_figures) with the GPU count the runner used for that point
(total_token_throughput / tput_per_gpu). No other field changes; a point without its raw file is left
as it is and named on stderr.
"""
import json
import sys
from pathlib import Path

from bot.runner.evidence import resolve
from bot.runner.metrics import inferencex_figures, load_raw


def migrate(path: Path) -> int:
    data = json.loads(path.read_text(encoding="utf-8"))
    added = 0
    for case in data["cases"]:
        for point in case["points"]:
            metrics, raw_rel = point.get("metrics"), point.get("raw_result_file")
            if not metrics or not raw_rel:
                continue
            raw_path = resolve(path, raw_rel, "raw_result_file")
            if not raw_path.is_file():
                print(f"{path}: {raw_rel} not kept; point {point['point_id']} left as it is",
                      file=sys.stderr)
                continue
            gpus = round(metrics["total_token_throughput"] / metrics["tput_per_gpu"])
            metrics["inferencex"] = inferencex_figures(load_raw(raw_path), gpus=gpus)
            added += 1
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return added


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(f"{arg}: {migrate(Path(arg))} point(s) given InferenceX's derived figures")
