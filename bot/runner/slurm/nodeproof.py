"""Teardown proof on one Slurm node, run there as one task of a step: the run's processes, its ports, GPU memory.

`python -m bot.runner.slurm.nodeproof --run-tag T --port P` prints one JSON line: the node's name, the
same CleanupProof a local run writes, and each failure as message data. A process belongs to this node
when it carries the run's tag (RECIPE_BOT_RUN_ID, which Slurm's jobs inherit from the launcher's
environment) and SLURMD_NODENAME names this node (Slurm sets it in every task). Such a process outlived
the Slurm job that started it (it left the job's process tree, which proctrack/linuxproc follows): it
is a failure, and it is killed, as the local proof kills an escapee. Ports are checked in the node's own
network; GPU memory on every GPU NVML sees on the node, against the same tolerance as a local run (the
multi-node launchers allocate whole nodes, so nothing else holds memory there).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
import time

import psutil

from bot.core.messages import Message, msg, to_data
from bot.core.results import CleanupProof, GpuMemory
from bot.runner import procs
from bot.runner.hardware import gpu_memory_used_mib
from bot.runner.proof import GPU_TOLERANCE_MIB

NODE_VAR = "SLURMD_NODENAME"
KILL_GRACE_S = 2.0


def node_name() -> str:
    return os.environ.get(NODE_VAR) or socket.gethostname().split(".")[0]


def _on_node(pid: int, node: str) -> bool:
    try:
        return psutil.Process(pid).environ().get(NODE_VAR) == node
    except (psutil.Error, OSError):
        return False


def _leftovers(run_tag: str, node: str) -> list[procs.ProcInfo]:
    return [p for p in procs.tagged_live_procs(run_tag) if _on_node(p.pid, node)]


def _kill(pids: list[int], run_tag: str, node: str) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            if procs.has_tag(pid, run_tag):  # the tag, not the PID alone: a recycled PID is never signalled
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + KILL_GRACE_S
        while time.monotonic() < deadline and _leftovers(run_tag, node):
            time.sleep(0.1)


def prove_node(run_tag: str, ports: list[int]) -> tuple[str, CleanupProof, list[Message]]:
    started = time.monotonic()
    node = node_name()
    failures: list[Message] = []
    left = _leftovers(run_tag, node)
    for proc in left:
        failures.append(msg("node %(node)s: pid %(pid)s (%(command)s) was still running after the row's Slurm "
                            "jobs ended; killed it", node=node, pid=proc.pid, command=proc.cmdline[:80]))
    _kill([p.pid for p in left], run_tag, node)
    busy = [port for port in ports if not procs.port_is_free(port)]
    for port in busy:
        failures.append(msg("node %(node)s: port %(port)s still in use after the row's Slurm jobs ended",
                            node=node, port=port))
    used = gpu_memory_used_mib(None)
    memory = [GpuMemory(index=i, before_mib=0.0, after_mib=round(mib, 1), back_to_baseline=mib <= GPU_TOLERANCE_MIB)
              for i, mib in sorted((used or {}).items())]
    for gpu in memory:
        if not gpu.back_to_baseline:
            failures.append(msg("node %(node)s: GPU %(gpu)s still holds %(after)s MiB after the row's Slurm jobs "
                                "ended", node=node, gpu=gpu.index, after=f"{gpu.after_mib:.0f}"))
    proof = CleanupProof(leftover_pids=sorted(p.pid for p in left), groups_gone=not left, ports=ports,
                         busy_ports=busy, ports_free=not busy, gpu="checked" if used is not None else "no GPU",
                         gpu_memory=memory, gpu_memory_back=None if used is None else all(m.back_to_baseline
                                                                                          for m in memory),
                         teardown_s=round(time.monotonic() - started, 3))
    return node, proof, failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-tag", required=True)
    parser.add_argument("--port", type=int, action="append", default=[])
    args = parser.parse_args(argv)
    node, proof, failures = prove_node(args.run_tag, args.port)
    print(json.dumps({"node": node, "proof": proof.model_dump(mode="json"),
                      "failures": [to_data(f) for f in failures]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
