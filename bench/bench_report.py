"""Report rendering at scale: time and comment size for 500 and 5,000 benchmark points.

    .venv/bin/python bench/bench_report.py [--points 500,5000] [--repeat 3]

Builds deterministic results (tests.synthetic) the way the GPU workflow lays them out, then
times each stage of `recipe-bot report` (collect, baseline, build, render with the size budget,
PNG chart) and the whole command in a fresh process, and records how big the comment is against
GitHub's 65,536-character limit. Writes bench/results/report.json and prints a table.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from bot.report import build, chart, collect, compare, render  # noqa: E402
from tests import synthetic  # noqa: E402
from bot.report.model import Meta  # noqa: E402

RESULT = ROOT / "bench" / "results" / "report.json"


def timed(function, repeat: int):
    """The median wall time of `repeat` calls, and the last call's value."""
    times, value = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        value = function()
        times.append(time.perf_counter() - start)
    return statistics.median(times), value


def measure(points: int, repeat: int, workdir: pathlib.Path,
            reference: pathlib.Path | None = None) -> dict:
    scenario = synthetic.many_points(points)
    paths = synthetic.materialize(scenario, workdir / f"p{points}")
    plan = collect.load_plan(paths["plan"])
    t_collect, collection = timed(lambda: collect.collect(paths["results"], plan,
                                                          synthetic.HEAD_SHA), repeat)
    t_base, baseline = timed(lambda: compare.load_baseline(paths["baseline"]), repeat)
    meta = Meta(sha=synthetic.HEAD_SHA, pr=synthetic.PR, command=scenario.command,
                run_url=synthetic.RUN_URL)
    thresholds = compare.thresholds_from(None)
    t_build, report = timed(lambda: build.build_report(collection, baseline, thresholds, meta),
                            repeat)
    t_render, rendered = timed(lambda: render.render_comment(report), repeat)
    png = workdir / f"chart-{points}.png"
    t_png, _ = timed(lambda: chart.write_png(chart.series_from(report), png, "bench"), repeat)

    out = workdir / f"out-{points}"
    # A fresh interpreter, as the workflow step runs it: imports and all.
    command = [sys.executable, "-c", "from bot.cli import main; main()", "report",
               "--results", str(paths["results"]), "--jobs", str(paths["plan"]),
               "--baseline", str(paths["baseline"]), "--out", str(out),
               "--config", str(workdir / "empty.yaml")]
    (workdir / "empty.yaml").write_text("{}\n", encoding="utf-8")
    # PYTHONDONTWRITEBYTECODE off, as on a runner: the first run writes the .pyc files the others read.
    env = {k: v for k, v in os.environ.items() if k not in ("GITHUB_STEP_SUMMARY", "PYTHONDONTWRITEBYTECODE")}

    def run_cli(tree: pathlib.Path) -> tuple[float, float]:
        """Wall and CPU seconds (this process and the chart's child) of one report command."""
        before = os.times()
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, cwd=workdir,
                       env={**env, "PYTHONPATH": str(tree)})
        after = os.times()
        cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
        return time.perf_counter() - start, cpu

    # This tree and the reference (when given) take turns, so both see the same machine.
    samples: dict[str, list[tuple[float, float]]] = {"this": [], "reference": []}
    for _ in range(repeat):
        samples["this"].append(run_cli(ROOT))
        if reference is not None:
            samples["reference"].append(run_cli(reference))
    t_cli = statistics.median(w for w, _ in samples["this"])
    cli = {name: {"wall_s": statistics.median(w for w, _ in runs),
                  "cpu_s": statistics.median(c for _, c in runs), "samples": runs}
           for name, runs in samples.items() if runs}
    text = rendered.text
    return {
        "points": report.counts.points_total,
        "recipes": len(report.recipes),
        "verdict": report.verdict.conclusion,
        "seconds": {"collect": t_collect, "baseline": t_base, "build": t_build,
                    "render": t_render, "png": t_png, "cli_total": t_cli},
        "cli": cli,  # wall and CPU of the whole command; "reference": the --reference tree's
        "comment_chars": len(text),
        "comment_bytes": len(text.encode("utf-8")),
        "limit_chars": render.COMMENT_LIMIT,
        "headroom_chars": render.COMMENT_LIMIT - len(text),
        "shortened": rendered.shortened,
        "rows_per_recipe_shown": rendered.limits.rows_per_recipe,
        "point_rows_in_comment": sum(1 for line in text.splitlines()
                                     if line.startswith("| `") and " | " in line) // 2,
        "full_results_bytes": (out / "full-results.json").stat().st_size,
        "png_bytes": png.stat().st_size,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--points", default="500,5000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--reference", type=pathlib.Path,
                        help="another checkout of recipe-bot (e.g. `git worktree add /tmp/ref main`): its "
                             "`recipe-bot report` runs in turn with this tree's on the same files, and the "
                             "ratio is reported")
    args = parser.parse_args()
    sizes = [int(n) for n in args.points.split(",")]
    load_at_start = list(os.getloadavg())
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        runs = [measure(n, args.repeat, pathlib.Path(tmp), args.reference) for n in sizes]
    record = {
        "benchmark": "report",
        "command": "python bench/bench_report.py " + " ".join(sys.argv[1:]),
        "repeat": args.repeat, "statistic": "median wall time",
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "platform": platform.platform(), "load_average_at_start": load_at_start,
                    "load_average_at_end": list(os.getloadavg())},
        "reference": str(args.reference) if args.reference else None,
        "runs": runs,
    }
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")

    table = Table(title=f"recipe-bot report (median of {args.repeat})")
    for column in ("points", "collect s", "build s", "render s", "png s", "CLI total s",
                   "comment chars", "of limit", "rows shown", "shortened"):
        table.add_column(column, justify="right")
    for run in runs:
        s = run["seconds"]
        table.add_row(f"{run['points']:,}", f"{s['collect'] + s['baseline']:.2f}",
                      f"{s['build']:.2f}", f"{s['render']:.2f}", f"{s['png']:.2f}",
                      f"{s['cli_total']:.2f}", f"{run['comment_chars']:,}",
                      f"{run['comment_chars'] / run['limit_chars']:.0%}",
                      f"{run['point_rows_in_comment']:,}", "yes" if run["shortened"] else "no")
    Console(width=140).print(table)
    if args.reference:
        versus = Table(title=f"this tree against {args.reference} (median of {args.repeat}, taking turns)")
        for column in ("points", "wall s", "reference wall s", "ratio", "CPU s", "reference CPU s", "ratio"):
            versus.add_column(column, justify="right")
        for run in runs:
            this, ref = run["cli"]["this"], run["cli"]["reference"]
            versus.add_row(f"{run['points']:,}", f"{this['wall_s']:.2f}", f"{ref['wall_s']:.2f}",
                           f"{ref['wall_s'] / this['wall_s']:.2f}×", f"{this['cpu_s']:.2f}",
                           f"{ref['cpu_s']:.2f}", f"{ref['cpu_s'] / this['cpu_s']:.2f}×")
        Console(width=140).print(versus)
    print(f"wrote {RESULT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
