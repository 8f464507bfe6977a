"""Teardown proof after a case: no process of ours left, the ports free, GPU memory back."""
from __future__ import annotations

import os
import signal
import time
from collections.abc import Sequence

from bot.core.messages import Message, msg
from bot.core.results import CleanupProof, GpuMemory
from bot.runner import procs
from bot.runner.hardware import gpu_memory_used_mib
from bot.runner.server import StopReport

GPU_TOLERANCE_MIB = 512.0  # CUDA contexts of other tenants come and go; a leak is gigabytes
GPU_SETTLE_S = 30.0  # the driver frees memory shortly after the process exits
ESCAPEE_GRACE_S = 1.0


def _kill_escapees(run_tag: str, ports: Sequence[int]) -> tuple[list[int], list[str]]:
    """Processes carrying our run tag that outlived their group (they called setsid): kill them.

    The tag, not the PID, identifies them, so a recycled PID is never signalled.
    """
    escapees = procs.tagged_live_procs(run_tag)
    if not escapees:
        return [], []
    held = {p.pid: port for port in ports for p in procs.port_holders(port)}
    failures = []
    for proc in escapees:
        if proc.pid in held:
            failures.append(msg("pid %(pid)s (%(command)s) left the server's process group and was still running "
                                "after teardown, holding port %(port)s; killed it", pid=proc.pid,
                                command=proc.cmdline[:80], port=held[proc.pid]))
        else:
            failures.append(msg("pid %(pid)s (%(command)s) left the server's process group and was still running "
                                "after teardown; killed it", pid=proc.pid, command=proc.cmdline[:80]))
        try:
            os.kill(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + ESCAPEE_GRACE_S
    while time.monotonic() < deadline and procs.tagged_live_procs(run_tag):
        procs.reap_zombie_children()
        time.sleep(0.1)
    for proc in procs.tagged_live_procs(run_tag):
        try:
            os.kill(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    time.sleep(0.2)
    procs.reap_zombie_children()
    return [p.pid for p in escapees], failures


def _busy_ports(ports: Sequence[int], settle_s: float = 2.0) -> list[int]:
    deadline = time.monotonic() + settle_s
    busy = [p for p in ports if not procs.port_is_free(p)]
    while busy and time.monotonic() < deadline:
        time.sleep(0.1)
        busy = [p for p in busy if not procs.port_is_free(p)]
    return busy


def _gpu_back(before: dict[int, float] | None) -> list[GpuMemory]:
    if before is None:
        return []
    deadline = time.monotonic() + GPU_SETTLE_S
    while True:
        after = gpu_memory_used_mib(list(before)) or {}
        memory = [GpuMemory(index=i, before_mib=round(before[i], 1),
                            after_mib=round(after.get(i, float("nan")), 1),
                            back_to_baseline=after.get(i, float("inf")) - before[i]
                            <= GPU_TOLERANCE_MIB)
                  for i in sorted(before)]
        if all(m.back_to_baseline for m in memory) or time.monotonic() >= deadline:
            return memory
        time.sleep(1.0)


def prove_teardown(reports: Sequence[StopReport], *, ports: Sequence[int], run_tag: str,
                   gpu_before: dict[int, float] | None, started: float
                   ) -> tuple[CleanupProof, list[str]]:
    """The proof for the result, and every teardown failure as one sentence each."""
    failures = [f for report in reports for f in report.failures]
    leftovers = [pid for report in reports for pid in report.leftover_pids]
    escaped, escape_failures = _kill_escapees(run_tag, ports)
    failures += escape_failures
    busy = _busy_ports(ports)
    for port in busy:
        holders = ", ".join(f"pid {p.pid} ({p.cmdline[:60]})" for p in procs.port_holders(port))
        failures.append(msg("port %(port)s still in use after teardown (held by %(holders)s)", port=port,
                            holders=holders) if holders
                        else msg("port %(port)s still in use after teardown", port=port))
    memory = _gpu_back(gpu_before)
    for gpu in memory:
        if not gpu.back_to_baseline:
            failures.append(msg("GPU %(gpu)s memory not back: %(after)s MiB used after teardown, %(before)s MiB "
                                "before the case", gpu=gpu.index, after=f"{gpu.after_mib:.0f}",
                                before=f"{gpu.before_mib:.0f}"))
    proof = CleanupProof(
        process_groups=[r.pgid for r in reports],
        leftover_pids=sorted(set(leftovers + escaped)),
        groups_gone=not leftovers and not escaped,
        ports=list(ports),
        busy_ports=busy,
        ports_free=not busy,
        gpu="checked" if gpu_before is not None else "no GPU",
        gpu_memory=memory,
        gpu_memory_back=None if gpu_before is None else all(m.back_to_baseline for m in memory),
        sigkill_escalated=any(r.sigkill_escalated for r in reports),
        teardown_s=round(time.monotonic() - started, 3),
    )
    return proof, failures
