"""Planner speed and packing: the InferenceX sample and a generated catalog of 2,000 recipes.

    .venv/bin/python bench/bench_planner.py [--recipes 2000] [--repeat 5]

Measures (median of --repeat runs, wall time, one process):
- InferenceX fixture: reading its configs, every row from its own tools (its processor and generator,
  run as recipe-bot runs InferenceX's: throughput rows and eval rows), and the whole plan; the server launches with and without
  packing.
- A generated catalog of N native recipes (sweeps and E2E suites sharing include bases): loading
  (parse, includes, validation), planning everything (expansion, packing, canary, matrices), and
  touched detection of a one-recipe change between two commits of a git repository.
Writes bench/results/planner.json and prints a table. Target: planning 2,000 recipes < 0.5 s.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from bot.inferencex.changelog import default_rows  # noqa: E402
from bot.inferencex.own_tools import ToolInputs  # noqa: E402
from bot.inferencex.launches import launch_groups  # noqa: E402
from bot.inferencex.repo import load_inferencex  # noqa: E402
from bot.plan import PlanFilters, plan_catalog, plan_change  # noqa: E402
from bot.inferencex.catalog import load_catalog  # noqa: E402
from bot.recipes.sources import DirSource  # noqa: E402

RESULT = ROOT / "bench" / "results" / "planner.json"
FIXTURE = ROOT / "tests" / "fixtures" / "inferencex"
TARGET_S = 0.5
GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com",
           "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}


CPU_SECONDS: dict[str, float] = {}


def timed(function, repeat: int, name: str = ""):
    """Median wall time of `repeat` calls (and, under `name`, their median CPU time), and the last value."""
    times, cpu, value = [], [], None
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        value = function()
        times.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    if name:
        CPU_SECONDS[name] = statistics.median(cpu)
    return statistics.median(times), value


def lay_out_inferencex(root: pathlib.Path) -> pathlib.Path:
    (root / "configs").mkdir(parents=True)
    shutil.copytree(FIXTURE, root, dirs_exist_ok=True)  # InferenceX-shaped fixtures written for recipe-bot
    return root


def bench_inferencex(workdir: pathlib.Path, repeat: int) -> dict:
    root = lay_out_inferencex(workdir / "inferencex")
    t_load, repo = timed(lambda: load_inferencex(DirSource(root)), repeat)
    keys = sorted(repo.configs)

    def all_rows():  # the fixture's own tools (tests/fixtures/ix-tools), run as InferenceX's are
        source = DirSource(root)
        made = default_rows(ToolInputs(tools=source, head=source, base=None, repo=repo), keys)
        return [r for _, r in made.throughput], [r for _, r in made.evals]

    t_rows, (throughput, evals) = timed(all_rows, repeat)
    rows = [*throughput, *evals]
    groups = launch_groups(rows, {i: "" for i in range(len(rows))})
    single = [r for r in throughput if "tp" in r]
    single_groups = launch_groups(single, {i: "" for i in range(len(single))})
    t_plan, plan = timed(lambda: plan_change(root, filters=PlanFilters(canary=False)), repeat)
    points = sum(len(r["conc"]) if isinstance(r["conc"], list) else 1 for r in throughput)
    return {
        "configs": len(keys),
        "rows": len(rows),
        "throughput_rows": len(throughput),
        "eval_rows": len(evals),
        "points": points,
        "launches_unpacked": len(rows),
        "launches_packed": sum(1 if g.packs else len(g.rows) for g in groups),  # no repository: nothing packs
        "server_configurations": len(groups),
        "single_node_rows": len(single),
        "single_node_server_configs": len(single_groups),
        "seconds": {"load": t_load, "rows": t_rows, "plan": t_plan},
        "rows_per_s": len(rows) / t_rows,
        "plan_gpu_hours": plan.gpu_hours,
    }


BASES = {
    "_base/vllm-h200.yaml": (
        "runner: h200-x8\nengine: {name: vllm, version: '0.26.0'}\n"
        "model: {path: '${MODELS}/m', served_name: m, precision: fp8}\n"
        "launch:\n  args: [--max-model-len, '9472', --kv-cache-dtype, fp8]\n  env: {VLLM_USE_V1: '1'}\n"
    ),
    "_base/sglang-b200.yaml": (
        "runner: b200\nengine: {name: sglang, version: '0.5.16', image: lmsysorg/sglang:v0.5.16-cu130}\n"
        "model: {path: '${MODELS}/m', served_name: m, precision: fp4}\n"
        "launch:\n  args: [--quantization, modelopt_fp4, --attention-backend, trtllm_mha]\n"
    ),
}
RUNNERS = (
    "runners:\n  h200-x8: {gpus: 8, shared: ['scripts/h200/*']}\n  b200: {gpus: 8, shared: ['scripts/b200/*']}\n"
)


def sweep_text(index: int) -> str:
    """One of 2,000 varied sweeps: 1-3 arms of 3-8 concurrencies, two engines, some gates, some
    launches that depend on concurrency (never packed)."""
    base = "_base/vllm-h200.yaml" if index % 2 else "_base/sglang-b200.yaml"
    depends = index % 7 == 0
    ladder = (1, 2, 4, 8, 16, 32, 64, 128, 256)
    arms = []
    for n, tp in enumerate((1, 2, 4, 8)[index % 4:][: 1 + index % 3]):
        start = (index + n) % 4
        concs = ladder[start:start + 3 + (index + n) % 6]
        arm = f"  - {{name: tp{tp}, tp: {tp}, spec_decoding: {'mtp' if index % 3 == 0 else 'none'}, "
        arm += f"concurrency: [{', '.join(map(str, concs))}]"
        arm += ", args: [--max-num-seqs, '{concurrency}']}" if depends else "}"
        arms.append(arm)
    text = f"include: {base}\nname: r{index:04d}\nkind: sweep\nsearch_space:\n" + "\n".join(arms) + "\n"
    text += f"workload: {{dataset: random, isl: {1024 * (1 + index % 8)}, osl: 1024, prompts_per_concurrency: 10}}\n"
    if depends:
        text += "launch:\n  depends_on_concurrency: true\n"
    if index % 5 == 0:
        text += "accuracy: {num_samples: 50, num_shots: 5, threshold: 0.9}\n"
    return text


def e2e_text(index: int) -> str:
    return (
        f"include: _base/vllm-h200.yaml\nname: r{index:04d}\nkind: e2e\n"
        "accuracy: {num_samples: 7, num_shots: 8, threshold: 0.27}\n"
        "cases:\n  - name: baseline\n    servers: [{devices: [0, 1, 2, 3], args: [--data-parallel-size, '4']}]\n"
        "  - name: split\n    servers: [{name: a, devices: [0, 1]}, {name: b, devices: [2, 3]}]\n"
    )


def generate_catalog(root: pathlib.Path, count: int) -> None:
    recipes = root / "recipes"
    (recipes / "_base").mkdir(parents=True)
    (recipes / "_runners.yaml").write_text(RUNNERS)
    for path, text in BASES.items():
        (recipes / path).write_text(text)
    for index in range(count):
        text = e2e_text(index) if index % 10 == 9 else sweep_text(index)
        (recipes / f"r{index:04d}.yaml").write_text(text)


def git(root: pathlib.Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, env=GIT_ENV, check=True, capture_output=True,
                          text=True).stdout.strip()


def bench_catalog(workdir: pathlib.Path, count: int, repeat: int) -> dict:
    root = workdir / "catalog"
    generate_catalog(root, count)
    t_load, catalog = timed(lambda: load_catalog(root, inferencex=False), repeat, "load")
    t_plan, plan = timed(lambda: plan_catalog(catalog, PlanFilters()), repeat, "plan")
    t_unpacked, unpacked = timed(lambda: plan_catalog(catalog, PlanFilters(pack=False, canary=False)), repeat)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    base = git(root, "rev-parse", "HEAD")
    path = root / "recipes" / "r0001.yaml"
    path.write_text(path.read_text().replace("osl: 1024", "osl: 2048"))
    git(root, "commit", "-q", "-am", "one recipe")
    head = git(root, "rev-parse", "HEAD")
    t_change, change = timed(lambda: plan_change(root, base, head), repeat)
    assert [t.name for t in change.touched] == ["r0001"], change.touched
    summary = plan.summary()
    return {
        "recipes": len(catalog.entries),
        "jobs": len(plan.jobs),
        "points": summary["points"],
        "server_launches": summary["server_launches"],
        "launches_unpacked": unpacked.summary()["server_launches"],
        "matrices": len(plan.matrices),
        "seconds": {"load": t_load, "plan": t_plan, "load_and_plan": t_load + t_plan,
                    "plan_unpacked": t_unpacked, "touched_change_at_head": t_change},
        "cpu_seconds": {"load": CPU_SECONDS["load"], "plan": CPU_SECONDS["plan"]},
        "points_per_s": summary["points"] / t_plan,
        "target_s": TARGET_S,
        "plan_within_target": t_plan < TARGET_S,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--recipes", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-planner-") as tmp:
        workdir = pathlib.Path(tmp)
        ix = bench_inferencex(workdir, args.repeat)
        cat = bench_catalog(workdir, args.recipes, args.repeat)
    result = {
        "benchmark": "planner",
        "command": "python bench/bench_planner.py " + " ".join(sys.argv[1:]),
        "repeat": args.repeat,
        "statistic": "median wall time",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform(),
                    "load_average_1min": round(os.getloadavg()[0], 2)},
        "inferencex_sample": ix,
        "catalog": cat,
    }
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(result, indent=2) + "\n")
    console = Console(highlight=False, width=120)
    table = Table(title="recipe-bot planner", title_justify="left")
    for column in ("input", "what", "seconds", "rate", "launches packed / unpacked"):
        table.add_column(column, justify="left" if column in ("input", "what") else "right")
    s = ix["seconds"]
    table.add_row(f"InferenceX sample ({ix['configs']} configs)", f"generate {ix['rows']} rows",
                  f"{s['rows']:.4f}", f"{ix['rows_per_s']:,.0f} rows/s",
                  f"{ix['launches_packed']} / {ix['launches_unpacked']}")
    table.add_row("", "load configs + whole plan", f"{s['load'] + s['plan']:.4f}", "", "")
    c = cat["seconds"]
    table.add_row(f"catalog of {cat['recipes']} recipes", "load (parse, includes, validate)",
                  f"{c['load']:.3f}", "", "")
    table.add_row("", f"plan {cat['points']} points, {cat['jobs']} jobs (CPU {cat['cpu_seconds']['plan']:.3f} s)",
                  f"{c['plan']:.3f}",
                  f"{cat['points_per_s']:,.0f} rows/s", f"{cat['server_launches']} / {cat['launches_unpacked']}")
    table.add_row("", "plan_change: one recipe changed (git)", f"{c['touched_change_at_head']:.3f}", "", "")
    console.print(table)
    console.print(f"InferenceX single-node rows: {ix['single_node_rows']} in {ix['single_node_server_configs']} "
                  f"server configurations. Planning {cat['recipes']} recipes: {c['plan']:.3f} s "
                  f"(target < {TARGET_S} s: {'met' if cat['plan_within_target'] else 'MISSED'}).")
    console.print(f"wrote {RESULT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
