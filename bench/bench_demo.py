"""A new user's first `scripts/dev demo`: a fresh clone, the pip cache as this machine has it, every
phase timed from the script's own output, and the disk each install leaves.

    .venv/bin/python bench/bench_demo.py [--keep] [--reference REV]

Clones the current commit into a scratch folder (no .venv, .engine or .upstream there), runs
`scripts/dev demo` in it with RECIPE_BOT_ENGINE_DIR unset, and stamps each line of its output with
the seconds since start; phases begin at the script's own banners ([dev], [setup-cpu-engine],
npm, `recipe-bot demo`). Target (issue #22): the whole loop within 5 minutes on 2 cores with a warm
pip cache. `--reference REV` then does the same for another commit (the ratio is this / that).
Writes bench/results/demo.json with the stamped output's phase marks, the sizes and the
load average.
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

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from bench.common import ROOT, command_line, load_average, machine_info, write_result  # noqa: E402

TARGET_S = 300.0
# (mark, a line of the script's output that shows it); scripts/dev installs the CPU engine in the
# background while the bot's .venv and the npm packages install, so the marks, not phases, are kept.
MARKS = (
    ("bot venv starts", "[dev] installing recipe-bot"),
    ("npm packages start", "[dev] installing the pinned upstream"),
    ("npm packages done", "added "),
    ("CPU engine starts", "[setup-cpu-engine] creating"),
    ("tiny model starts", "[setup-cpu-engine] building the tiny"),
    ("CPU engine done", "[setup-cpu-engine] engine:"),
    ("demo loop starts", "recipe-bot demo"),
)


def disk_mib(path: pathlib.Path) -> float:
    done = subprocess.run(["du", "-sm", str(path)], capture_output=True, text=True)
    return float(done.stdout.split()[0]) if done.returncode == 0 and done.stdout else 0.0


def measure(rev: str | None, keep: bool) -> dict:
    """One fresh clone (at `rev`, or this commit) and its `scripts/dev demo`, stamped line by line."""
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="bench-demo-"))
    clone = scratch / "recipe-bot"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    if rev:
        subprocess.run(["git", "-C", str(clone), "checkout", "--quiet", rev], check=True)
    commit = subprocess.run(["git", "-C", str(clone), "rev-parse", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    env = {k: v for k, v in os.environ.items()
           if k not in ("RECIPE_BOT_ENGINE_DIR", "VIRTUAL_ENV", "PYTHONPATH", "RECIPE_BOT_UPSTREAM_DIR")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if ".venv" not in p)
    before, start = load_average(), time.perf_counter()
    stamped: list[tuple[float, str]] = []
    with subprocess.Popen(["scripts/dev", "demo"], cwd=clone, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, bufsize=1) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            stamped.append((time.perf_counter() - start, line.rstrip("\n")))
            if "WARNING: Location" not in line:
                print(f"{stamped[-1][0]:7.1f}  {stamped[-1][1]}", flush=True)
    wall = time.perf_counter() - start
    marks = {name: next((t for t, line in stamped if needle in line), None) for name, needle in MARKS}
    loop = marks["demo loop starts"]
    phases = {"set-up (until the demo starts)": loop, "demo loop": wall - loop if loop is not None else None}
    sizes = {name: disk_mib(clone / name) for name in (".venv", ".engine", ".upstream", "demo-out")}
    record = {"commit": commit, "load_average_before": before, "load_average_after": load_average(),
              "exit_code": proc.returncode, "wall_s": wall, "target_s": TARGET_S,
              "within_target": proc.returncode == 0 and wall <= TARGET_S, "phases_s": phases, "marks_s": marks,
              "disk_mib": sizes, "output_tail": [f"{t:.1f} {line}" for t, line in stamped[-15:]]}
    print(f"\n{commit[:12]}: exit {proc.returncode}; {wall:.0f} s against the {TARGET_S:.0f} s target "
          f"({wall / TARGET_S:.2f}×); " + ", ".join(f"{k} {v:.0f} s" for k, v in phases.items() if v is not None))
    print("marks: " + ", ".join(f"{k} {v:.0f} s" for k, v in marks.items() if v is not None))
    print("disk: " + ", ".join(f"{k} {v:,.0f} MiB" for k, v in sizes.items()))
    if not keep:
        shutil.rmtree(scratch, ignore_errors=True)
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--keep", action="store_true", help="keep the scratch clones")
    parser.add_argument("--reference", metavar="REV", help="then the same for this commit, for the ratio")
    args = parser.parse_args()
    record = {"benchmark": "demo", "command": command_line(), "machine": machine_info(),
              "pip_cache_mib": disk_mib(pathlib.Path.home() / ".cache" / "pip"), "this": measure(None, args.keep)}
    if args.reference:
        record["reference"] = measure(args.reference, args.keep)
        record["ratio"] = record["this"]["wall_s"] / record["reference"]["wall_s"]
        print(f"\nthis / reference: {record['ratio']:.2f}")
    print(f"wrote {write_result('demo', record).relative_to(ROOT)}")


if __name__ == "__main__":
    main()
