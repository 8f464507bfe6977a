"""Exactly once under GitHub's failures: the fault matrix of tests/test_fault_matrix.py, as a table.

    .venv/bin/python bench/bench_faults.py [--faults 5xx-after,two-handlers] [--commands sweep,label]

For every fault the sandbox injects (docs/sandbox.md, "Fault injection") and every command that
writes (`/sweep`, `/ok-to-test`, a run label, `/cancel`), one cell: the event is delivered under the
fault, then once more with GitHub healthy (a redelivery or a re-run of the failed job). Each cell
reports GPU runs started for the request (the target is the command's own count: 1 or 0, never 2),
acknowledgements (the bot's reply carrying the request's marker; 0 would be a lost one), what the
first delivery said (exit code and its last log line), tracebacks, and the cell's wall time.
Writes bench/results/faults.json and prints the table. Wall time is a figure, not a target: it is
dominated by starting `recipe-bot handle` twice per cell and by the faults' own waits.
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from bench.common import command_line, load_average, machine_info, summary, write_result  # noqa: E402
from fault_matrix import COMMANDS, FAULTS, Matrix, run_cell  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--faults", default=",".join(FAULTS))
    parser.add_argument("--commands", default=",".join(COMMANDS))
    args = parser.parse_args()
    faults = [f for f in args.faults.split(",") if f]
    commands = [c for c in args.commands.split(",") if c]
    unknown = [f for f in faults if f not in FAULTS] + [c for c in commands if c not in COMMANDS]
    if unknown:
        parser.error(f"unknown {unknown}; faults: {', '.join(FAULTS)}; commands: {', '.join(COMMANDS)}")
    load_before = load_average()
    started = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        matrix = Matrix(pathlib.Path(tmp))
        try:
            for fault in faults:
                for command in commands:
                    cell = run_cell(matrix, command, fault)
                    rows.append({
                        "fault": fault, "command": command, "runs_started": cell.dispatches,
                        "runs_expected": COMMANDS[command].dispatches, "runs_active": cell.active_dispatches,
                        "acks": cell.acks, "claims_left": cell.claims_left, "effect": cell.effect,
                        "failure_notices": cell.failure_notices, "first_exit": cell.first.code,
                        "first_line": cell.first_line, "second_exit": cell.second.code,
                        "tracebacks": cell.tracebacks, "seconds": round(cell.seconds, 2),
                        "first_seconds": round(cell.first.seconds, 2), "second_seconds": round(cell.second.seconds, 2)})
                    print(f"{fault:22} {command:11} runs {cell.dispatches} acks {cell.acks} "
                          f"exit {cell.first.code}/{cell.second.code} {cell.seconds:.1f} s", file=sys.stderr)
            problems = matrix.problems()
        finally:
            matrix.close()
    wall = time.perf_counter() - started
    ok = [r for r in rows if r["runs_started"] == r["runs_expected"] == r["runs_active"] and r["acks"] >= 1
          and r["effect"] and not r["tracebacks"] and not r["claims_left"] and r["second_exit"] == 0]
    record = {"command": command_line(), "machine": machine_info(), "load_before": load_before,
              "wall_s": round(wall, 1), "cells": len(rows), "cells_ok": len(ok),
              "duplicate_dispatches": sum(max(0, r["runs_started"] - r["runs_expected"]) for r in rows),
              "lost_acks": sum(r["acks"] == 0 for r in rows), "tracebacks": sum(r["tracebacks"] for r in rows),
              "sandbox_problems": len(problems), "cell_seconds": summary([r["seconds"] for r in rows]),
              "rows": rows}
    path = write_result("faults", record)

    table = Table(title=f"fault × command: GPU runs started / acknowledgements / first delivery "
                        f"({len(ok)} of {len(rows)} cells exactly once, {wall:.0f} s)")
    table.add_column("fault")
    for command in commands:
        table.add_column(command)
    for fault in faults:
        cells = []
        for command in commands:
            r = next(x for x in rows if x["fault"] == fault and x["command"] == command)
            mark = "✓" if r in ok else "✗"
            first = "killed" if r["first_exit"] is None else f"exit {r['first_exit']}"
            cells.append(f"{mark} runs {r['runs_started']} · acks {r['acks']} · {first}")
        table.add_row(fault, *cells)
    console = Console(width=160)
    console.print(table)
    console.print(f"duplicate dispatches {record['duplicate_dispatches']}, lost acknowledgements "
                  f"{record['lost_acks']}, tracebacks {record['tracebacks']}, sandbox problems {len(problems)}; "
                  f"cell median {record['cell_seconds']['median']:.1f} s; wrote {path.relative_to(ROOT)}")
    return 0 if len(ok) == len(rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
