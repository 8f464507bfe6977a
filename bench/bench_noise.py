"""The cost of a noise-aware comparison: one point's bootstrap intervals against its plain Δ.

    .venv/bin/python bench/bench_noise.py [--requests 128,1024,4096] [--repeat 5]

For each request count, one head and one base run (and a three-run base) of synthetic per-request
data (tests.synthetic.requests_for), compared with the default thresholds: the time of
compare_point with per-request data divided by its time without (the point-estimate floor), and
the absolute time per point. Writes bench/results/noise.json and prints a table.
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from bench.common import command_line, machine_info, summary, write_result  # noqa: E402
from bot.report import compare  # noqa: E402
from tests import synthetic  # noqa: E402


def sample(requests: int, salt: str, scale: float = 1.0) -> compare.BaseSample:
    metrics = synthetic.metrics_for(16, scale=scale, salt=salt)
    samples = synthetic.requests_for(requests, ttft_ms=metrics.ttft_ms["median"],
                                     tpot_ms=metrics.tpot_ms["median"], salt=salt)
    return compare.BaseSample(metrics.model_copy(update={"requests": samples,
                                                         "completed": requests}),
                              synthetic.BASE_SHA, "0.32.0", ())


def timed(function, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", default="128,1024,4096")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    thresholds = compare.DEFAULT_THRESHOLDS
    rows = []
    for n in (int(v) for v in args.requests.split(",")):
        head = sample(n, "head", 0.97)
        for base_runs in (1, 3):
            base = tuple(sample(n, f"base{i}") for i in range(base_runs))
            plain_head = head.metrics.model_copy(update={"requests": None})
            plain_base = tuple(compare.BaseSample(b.metrics.model_copy(update={"requests": None}),
                                                  b.sha, b.engine_version, b.gpus) for b in base)
            with_data = timed(lambda: compare.compare_point(head.metrics, base, thresholds),
                              args.repeat)
            without = timed(lambda: compare.compare_point(plain_head, plain_base, thresholds),
                            args.repeat)
            ratio = summary(with_data)["median"] / summary(without)["median"]
            rows.append({"requests": n, "base_runs": base_runs, "bootstrap_s": with_data,
                         "plain_s": without, "ratio": ratio})
    table = Table(title="compare_point: bootstrap intervals vs plain Δ (median)")
    for column in ("requests", "base runs", "with intervals (ms)", "plain (ms)", "ratio"):
        table.add_column(column, justify="right")
    for row in rows:
        table.add_row(str(row["requests"]), str(row["base_runs"]),
                      f"{summary(row['bootstrap_s'])['median'] * 1000:.1f}",
                      f"{summary(row['plain_s'])['median'] * 1000:.2f}", f"{row['ratio']:.0f}×")
    Console().print(table)
    path = write_result("noise", {"command": command_line(), "machine": machine_info(),
                                  "rows": rows})
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
