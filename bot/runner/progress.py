"""What a person running a job sees (rich), mirrored as plain lines into DIR/runner.log."""
from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from bot.core.results import CaseResult, JobResult, PointResult

_STYLE = {"passed": "green", "failed": "bold red", "cancelled": "yellow", "skipped": "dim"}


class Progress:
    def __init__(self, console: Console, log_path: Path, *, cpu: bool = False) -> None:
        self.console = console
        self.tput_unit = "tok/s (CPU)" if cpu else "tok/s/GPU"  # a CPU job's figure is per host, not per GPU
        self.log_path = log_path
        self.started = time.monotonic()
        log_path.parent.mkdir(parents=True, exist_ok=True)

    def say(self, markup: str) -> None:
        """One event line; `markup` is rich markup whose dynamic parts went through escape()."""
        stamp = f"{time.monotonic() - self.started:7.1f}s"
        self.console.print(f"[dim]{stamp}[/dim] {markup}", highlight=False)
        with self.log_path.open("a", encoding="utf-8") as log:
            log.write(f"{stamp} {Text.from_markup(markup).plain}\n")

    @contextmanager
    def waiting(self, what: str) -> Iterator[None]:
        with self.console.status(escape(what)):
            yield

    def point(self, result: PointResult) -> None:
        m = result.metrics
        if m is None:
            self.say(f"  point [bold]{escape(result.point_id)}[/bold] "
                     f"[{_STYLE[result.status]}]{result.status}[/]: {escape(str(result.reason or ''))}")
            return
        inter = f"{m.interactivity:.1f} tok/s/user" if m.interactivity else "n/a"
        self.say(f"  point [bold]{escape(result.point_id)}[/bold] c={result.concurrency} "
                 f"[{_STYLE[result.status]}]{result.status}[/]: "
                 f"{m.total_token_throughput:.1f} tok/s total, {m.tput_per_gpu:.1f} {self.tput_unit}, "
                 f"TTFT p50 {m.ttft_ms.get('median', float('nan')):.1f} ms, "
                 f"TPOT p50 {m.tpot_ms.get('median', float('nan')):.2f} ms, {inter}, "
                 f"{m.completed} ok / {m.failed} failed in {m.duration_s:.1f} s"
                 + (f" [red]({escape(str(result.reason))})[/red]" if result.reason else ""))

    def case(self, result: CaseResult) -> None:
        proof = result.cleanup
        clean = ("clean" if proof and proof.clean else "NOT clean") if proof else "no servers"
        self.say(f"case [bold]{escape(result.name)}[/bold] "
                 f"[{_STYLE[result.status]}]{result.status}[/]; teardown {clean}"
                 + (f" in {proof.teardown_s:.1f} s" if proof else "")
                 + (f": {escape(str(result.reason))}" if result.reason else ""))

    def summary(self, result: JobResult) -> None:
        table = Table(title=f"job {result.job_id}: {result.status}", title_justify="left")
        for column in ("case", "point", "conc", "status", self.tput_unit, "TTFT p50 ms",
                       "TPOT p50 ms", "interactivity"):
            table.add_column(column)
        for case in result.cases:
            for point in case.points or []:
                m = point.metrics
                table.add_row(case.name, point.point_id, str(point.concurrency), point.status,
                              f"{m.tput_per_gpu:.1f}" if m else "-",
                              f"{m.ttft_ms.get('median', 0):.1f}" if m else "-",
                              f"{m.tpot_ms.get('median', 0):.2f}" if m else "-",
                              f"{m.interactivity:.1f}" if m and m.interactivity else "-")
            for node in case.harness.nodes if case.harness else []:  # the repository's own tests
                table.add_row(case.name, node.node_id.rsplit("::", 1)[-1], "-", node.outcome, "-", "-", "-", "-")
            if case.accuracy:
                acc = case.accuracy
                table.add_row(case.name, f"gsm8k {acc.num_shots}-shot", "-",
                              "passed" if acc.passed else "failed",
                              f"strict {acc.strict_match:.3f}", f"flex {acc.flexible_extract:.3f}",
                              f"n={acc.num_samples}", f">= {acc.threshold:g}")
        self.console.print(table)
        if result.reason:
            self.console.print(f"[{_STYLE.get(result.status, 'bold')}]{escape(str(result.reason))}[/]")
