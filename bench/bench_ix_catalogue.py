"""Planning an InferenceX-sized catalogue (208 configs, 1,820 rows): recipe-bot beside InferenceX's own generator.

    .venv/bin/python bench/bench_ix_catalogue.py --ix-dir /tmp/ix [--repeat 5] [--reference OTHER_CHECKOUT]

Generates a catalogue of our own (configs/nvidia-master.yaml, runners.yaml, one benchmark script per
config, half of them sizing the server by $CONC) in a temporary git repository, with --ix-dir's utils/
copied into that temporary repository (the tools a plan of an InferenceX repository runs; without
--ix-dir the fixtures' own, tests/fixtures/ix-tools), then times, in one
run and alternating so that machine load hits both alike:
- recipe-bot: `recipe-bot plan --repo DIR --format json` as a process (load, validate, every row
  of every config: throughput and evals, honest packing, limits, matrices);
- InferenceX: its `utils/matrix_logic/generate_sweep_configs.py test-config --config-keys '*'` on the
  same config files, once with `--no-evals` and once with `--evals-only` (the two calls its changelog
  processor makes), from a checkout of InferenceX given by --ix-dir (never copied into this
  repository). Without --ix-dir only recipe-bot's figure is taken, and the JSON says why.
Both read cached bytecode, as installed code does (a private cache filled by one untimed round of each),
and both are timed as wall seconds, process start to exit, with their CPU seconds beside.
Also checks that both give as many rows (recipe-bot's rows are InferenceX's processor's output).
Writes bench/results/ix_catalogue.json.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from common import GIT_ENV, command_line, machine_info, summary, write_result  # noqa: E402

PREFIXES = ("alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta")
GPUS = ("h200", "b200", "mi355x")


def _single(index: int, kind: str) -> tuple[str, str, str]:
    """(config key, YAML, script name) of a single-node config with 9 (kind A) or 8 (kind B) rows."""
    prefix, gpu = PREFIXES[index % len(PREFIXES)], GPUS[index % len(GPUS)]
    precision = ("fp8", "fp4", "bf16")[index % 3]
    framework = ("vllm", "sglang")[index % 2]
    key = f"{prefix}{index}-{precision}-{gpu}-{framework}"
    if kind == "A":
        space = ("    - isl: 1024\n      osl: 1024\n      search-space:\n      - { tp: 4, conc-start: 1, conc-end: 16 }\n"
                 "    - isl: 8192\n      osl: 1024\n      search-space:\n      - { tp: 8, conc-start: 4, conc-end: 32 }\n")
    else:
        space = ("    - isl: 1024\n      osl: 1024\n      search-space:\n      - { tp: 2, conc-list: [1, 4, 16, 64] }\n"
                 "    - isl: 8192\n      osl: 1024\n      search-space:\n"
                 "      - { tp: 8, ep: 8, dp-attn: true, conc-list: [2, 8, 32, 128] }\n")
    text = (f"{key}:\n  image: example/engine:{index % 5}\n  model: example/{prefix}{index}\n"
            f"  model-prefix: {prefix}{index}\n  runner: {gpu}\n  precision: {precision}\n  framework: {framework}\n"
            f"  multinode: false\n  scenarios:\n    fixed-seq-len:\n{space}\n")
    return key, text, f"{prefix}{index}_{precision}_{gpu}_{framework}.sh"


def _multi(index: int, entries: int) -> tuple[str, str]:
    key = f"mn{index}-fp4-gb200-dynamo-trt"
    space = "".join(
        f"      - conc-list: [{4 * (n + 1)}, {8 * (n + 1)}, {16 * (n + 1)}]\n"
        f"        prefill: {{ num-worker: {1 + n % 3}, tp: 4, ep: 4, dp-attn: false }}\n"
        f"        decode: {{ num-worker: 1, tp: {8 * (1 + n % 2)}, ep: 8, dp-attn: true }}\n"
        for n in range(entries))
    text = (f"{key}:\n  image: example/dynamo:1\n  model: example/mn{index}\n  model-prefix: mn{index}\n"
            f"  runner: gb200\n  precision: fp4\n  framework: dynamo-trt\n  multinode: true\n  disagg: true\n"
            f"  kv-p2p-transfer: nixl\n  scenarios:\n    fixed-seq-len:\n    - isl: 8192\n      osl: 1024\n"
            f"      search-space:\n{space}\n")
    return key, text


SCRIPT = """#!/usr/bin/env bash
source "$(dirname "$0")/../../benchmark_lib.sh"
python3 -m server --model "$MODEL" --tp "$TP" {extra}> server.log 2>&1 &
wait_for_server_ready --port "$PORT"
run_benchmark_serving --max-concurrency "$CONC"
"""


def make_catalogue(root: pathlib.Path) -> dict:
    """208 configs: 150 of 9 rows, 50 of 8, 8 multi-node of 9 or 8 rows: 1,820 throughput rows."""
    (root / "configs").mkdir(parents=True)
    scripts = root / "benchmarks" / "single_node" / "fixed_seq_len"
    scripts.mkdir(parents=True)
    texts = []
    for index in range(200):
        key, text, script = _single(index, "A" if index < 150 else "B")
        texts.append(text)
        extra = '--max-running-requests "$CONC" ' if index % 2 else ""
        (scripts / script).write_text(SCRIPT.format(extra=extra))
    for index in range(8):
        texts.append(_multi(index, 9 if index < 6 else 8)[1])
    # the names InferenceX's utils/constants.py reads (MASTER_CONFIGS): the plan runs its tools on them
    (root / "configs" / "nvidia-master.yaml").write_text("".join(texts))
    (root / "configs" / "amd-master.yaml").write_text("{}\n")
    (root / "configs" / "runners.yaml").write_text(
        "labels:\n" + "".join(f"  {g}:\n    - {g}-fleet_0\n" for g in (*GPUS, "gb200")))
    (root / "perf-changelog.yaml").write_text("- config-keys:\n    - alpha0-fp8-h200-vllm\n  description:\n"
                                             "    - first\n  pr-link: https://example.com/1\n")
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=root, check=True, env=GIT_ENV)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True, env=GIT_ENV)
    subprocess.run(["git", "commit", "-qm", "catalogue"], cwd=root, check=True, env=GIT_ENV)
    return {"configs": 208}


def _timed(argv: list[str], cwd: pathlib.Path, env: dict[str, str]) -> tuple[float, float, str]:
    """Wall seconds (process start to exit), CPU seconds (user + system) and stdout of one process.

    Stdout goes to a file, as the workflow writes the plan (`--format json > plan.json`), and is read
    after the clock stops: through a pipe, the process would wait for this script to read megabytes in
    32 KiB chunks, and that reading (14 ms for the plan's 4.2 MB here) would count as the command's."""
    with tempfile.TemporaryFile() as out:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.PIPE, check=True)
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        out.seek(0)
        text = out.read().decode("utf-8")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), text


# Where recipe-bot's time goes, in one process doing what `recipe-bot plan --format json` does (CPU seconds).
PHASES = """
import json, pathlib, sys, time
clock = time.process_time
t0 = clock()
from bot.cli import main  # noqa: F401 - the command line and the plan command's imports
import bot.plan.cli  # noqa: F401
from bot.plan.model import PlanFilters
from bot.plan.planner import plan_change
from bot.plan.render import dump_json, plan_document
t1 = clock()
plan = plan_change(pathlib.Path(sys.argv[1]), filters=PlanFilters(canary=False, max_matrix_jobs=256))
t2 = clock()
text = dump_json(plan_document(plan))
t3 = clock()
print(json.dumps({"imports": t1 - t0, "load_and_plan": t2 - t1, "json_document": t3 - t2, "bytes": len(text)}))
"""


def phases(root: pathlib.Path, env: dict[str, str], runs: int = 3) -> dict:
    """Median CPU seconds of each phase of a plan (the rest of a run: interpreter start, argument
    parsing, writing the output, interpreter exit)."""
    found: dict[str, list[float]] = {}
    for _ in range(runs):
        _, interpreter, _ = _timed([sys.executable, "-c", "pass"], ROOT, env)
        found.setdefault("interpreter_start_and_exit", []).append(interpreter)
        _, _, out = _timed([sys.executable, "-c", PHASES, str(root)], ROOT, env)
        for key, value in json.loads(out).items():
            found.setdefault(key, []).append(value)
    return {k: round(sorted(v)[len(v) // 2], 3) for k, v in found.items()}


def bytecode_env(tmp: pathlib.Path) -> dict[str, str]:
    """Both sides run as installed code runs: imports read cached bytecode (a private cache, filled by an
    untimed first round), whatever PYTHONDONTWRITEBYTECODE the caller's shell sets. Without it every run
    of either side compiles its modules again, which neither pays where it is installed."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    return env


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ix-dir", type=pathlib.Path, help="a checkout of InferenceX (not copied here)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--reference", type=pathlib.Path,
                        help="another checkout (a folder holding its `bot` package): its plan runs in turn with this "
                             "tree's, as recipe_bot_plan@reference")
    args = parser.parse_args()
    record: dict = {"command": command_line(), "machine": machine_info()}
    with tempfile.TemporaryDirectory(prefix="ix-catalogue-") as tmp:
        root = pathlib.Path(tmp) / "catalogue"
        record["catalogue"] = make_catalogue(root)
        # recipe-bot plans with the repository's own tools: InferenceX's (--ix-dir) in the temporary
        # catalogue, never in this repository; without --ix-dir the fixtures' own (tests/fixtures/ix-tools)
        tools = args.ix_dir / "utils" if args.ix_dir else ROOT / "tests" / "fixtures" / "ix-tools" / "utils"
        for source in [*tools.glob("*.py"), *(tools / "matrix_logic").glob("*.py")]:
            target = root / "utils" / source.relative_to(tools)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
        ours = [sys.executable, "-c", "from bot.cli import main; main(prog_name='recipe-bot')", "plan",
                "--repo", str(root), "--format", "json", "--no-canary"]
        generator = args.ix_dir / "utils" / "matrix_logic" / "generate_sweep_configs.py" if args.ix_dir else None
        theirs = None
        if generator is not None and generator.is_file():
            base = [sys.executable, str(generator), "test-config", "--config-keys", "*", "--config-files",
                    str(root / "configs" / "nvidia-master.yaml"), "--runner-config", str(root / "configs" / "runners.yaml")]
            theirs = [[*base, "--no-evals"], [*base, "--evals-only"]]
        else:
            record["inferencex_skipped"] = "no --ix-dir with utils/matrix_logic/generate_sweep_configs.py given"
        env = bytecode_env(pathlib.Path(tmp))
        record["bytecode"] = ("both sides read cached bytecode (PYTHONPYCACHEPREFIX in the temporary directory, "
                              "PYTHONDONTWRITEBYTECODE unset), filled by one untimed round of each")
        samples: dict[str, list[float]] = {"recipe_bot_plan": [], "inferencex_generator": [],
                                           "recipe_bot_plan@reference": []}
        cpu: dict[str, list[float]] = {"recipe_bot_plan": [], "inferencex_generator": [],
                                       "recipe_bot_plan@reference": []}
        plan_doc, their_rows = None, None
        for round_ in range(args.repeat + 1):  # round 0 fills the bytecode cache of both and is not counted
            wall, used, out = _timed(ours, ROOT, env)
            if round_:
                samples["recipe_bot_plan"].append(wall)
                cpu["recipe_bot_plan"].append(used)
            plan_doc = json.loads(out)
            if args.reference is not None:  # `python -c` imports `bot` from its working directory first
                wall, used, _ = _timed(ours, args.reference.resolve(), env)
                if round_:
                    samples["recipe_bot_plan@reference"].append(wall)
                    cpu["recipe_bot_plan@reference"].append(used)
            if theirs:
                total, total_cpu, rows = 0.0, 0.0, []
                for argv in theirs:
                    wall, used, out = _timed(argv, args.ix_dir, env)
                    total += wall
                    total_cpu += used
                    rows.append(json.loads(out))
                if round_:
                    samples["inferencex_generator"].append(total)
                    cpu["inferencex_generator"].append(total_cpu)
                their_rows = rows
        record["recipe_bot_cpu_phases"] = phases(root, env)
    ix = plan_doc["inferencex"]
    throughput = [r for k, v in ix["rows"].items() if "." in k for r in v]
    evals = [r for k, v in ix["rows"].items() if "." not in k for r in v]
    record["rows"] = {"throughput": len(throughput), "evals": len(evals), "launches": ix["launches"],
                      "packed_launches_honest": ix["packed_launches"],
                      "configs_that_pack": sum(1 for p in ix["packing"] if p["packs"]),
                      "configs_that_do_not": sum(1 for p in ix["packing"] if not p["packs"])}
    record["seconds"] = {k: summary(v) for k, v in samples.items() if v}
    record["cpu_seconds"] = {k: summary(v) for k, v in cpu.items() if v}  # user + system: less load-bound
    if their_rows is not None:
        # recipe-bot's rows are its processor's output (the generator's rows in the processor's contract)
        record["rows"]["inferencex_throughput"] = len(their_rows[0])
        record["rows"]["inferencex_evals"] = len(their_rows[1])
        record["same_row_counts"] = (len(throughput), len(evals)) == (len(their_rows[0]), len(their_rows[1]))
        ratio = record["seconds"]["recipe_bot_plan"]["median"] / record["seconds"]["inferencex_generator"]["median"]
        record["ratio_recipe_bot_to_inferencex"] = round(ratio, 3)
        record["speedup"] = round(1 / ratio, 2)  # how many times faster recipe-bot is (target: 5)
        cpu_ratio = (record["cpu_seconds"]["recipe_bot_plan"]["median"]
                     / record["cpu_seconds"]["inferencex_generator"]["median"])
        record["cpu_ratio_recipe_bot_to_inferencex"] = round(cpu_ratio, 3)
    if args.reference is not None:
        record["reference"] = str(args.reference)
        record["ratio_to_reference"] = round(record["seconds"]["recipe_bot_plan"]["median"]
                                             / record["seconds"]["recipe_bot_plan@reference"]["median"], 3)
        record["cpu_ratio_to_reference"] = round(record["cpu_seconds"]["recipe_bot_plan"]["median"]
                                                 / record["cpu_seconds"]["recipe_bot_plan@reference"]["median"], 3)
    path = write_result("ix_catalogue", record)
    print(json.dumps({k: record[k] for k in record if k not in ("machine", "command")}, indent=1))
    print(f"written {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
