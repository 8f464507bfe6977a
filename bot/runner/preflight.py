"""Before a case's servers start: the GPUs it will use must be idle (no compute process, memory
under a small bound), or the job fails as infrastructure naming what holds them.

A benchmark on a GPU another process already fills measures that process too, and its teardown
proof compares against a busy baseline; so a busy GPU is refused up front (rule device-busy: the
one automatic retry runs the job again, on Slurm with the node excluded). NVML is read on the host
GPUs the case maps to through the inherited CUDA_VISIBLE_DEVICES (hardware.case_gpus).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.core.messages import Message, msg
from bot.runner.hardware import _used_mib, nvml, nvml_handles

IDLE_ENV = "RECIPE_BOT_IDLE_GPU_MIB"
# An idle H200 reads 0 MiB (NVML v2 leaves out the driver's reservation); a CUDA context alone is
# about 500 MiB, so 1 GiB tells "nothing runs here" from "something holds memory".
DEFAULT_IDLE_MIB = 1024.0


@dataclass(frozen=True)
class GpuUse:
    index: int
    used_mib: float
    processes: tuple[tuple[int, float | None], ...]  # (pid, MiB or None where NVML does not say)


def _processes(lib: object, handle: object) -> tuple[tuple[int, float | None], ...]:
    try:
        found = lib.nvmlDeviceGetComputeRunningProcesses(handle)
    except Exception:  # noqa: BLE001 - a driver or binding without it: memory alone decides
        return ()
    listed = []
    for proc in found or ():
        used = getattr(proc, "usedGpuMemory", None)
        listed.append((int(proc.pid), used / 2**20 if isinstance(used, int) and used >= 0 else None))
    return tuple(listed)


def gpu_use(gpus: Sequence[int | str]) -> list[GpuUse] | None:
    """Used memory and compute processes of each GPU given; None where there is no NVIDIA GPU."""
    with nvml() as lib:
        if lib is None:
            return None
        found = nvml_handles(lib, gpus)
        return None if found is None else [GpuUse(index, _used_mib(lib, handle), _processes(lib, handle))
                                           for index, handle in found]


def busy_reason(uses: Sequence[GpuUse], bound_mib: float) -> Message | None:
    """One sentence naming each busy GPU, its processes and memory; None when all are idle."""
    busy = []
    for use in uses:
        if not use.processes and use.used_mib <= bound_mib:
            continue
        procs = ", ".join(f"PID {pid}" + (f" ({mib:.0f} MiB)" if mib is not None else "")
                          for pid, mib in use.processes)
        busy.append(f"GPU {use.index}: {use.used_mib:.0f} MiB" + (f", {procs}" if procs else ""))
    if not busy:
        return None
    return msg("the case's GPUs are busy before it started (%(busy)s); an idle GPU has no compute process and at "
               "most %(bound)s MiB used (%(name)s)", busy="; ".join(busy), bound=f"{bound_mib:.0f}", name=IDLE_ENV)


def check_idle(gpus: Sequence[int | str], bound_mib: float) -> Message | None:
    """Why the case must not start on these GPUs, or None (idle, or no NVIDIA GPU to ask). bound_mib: the
    memory an idle GPU may show, RECIPE_BOT_IDLE_GPU_MIB as the run read it with its settings."""
    if not gpus:
        return None
    uses = gpu_use(gpus)
    return None if uses is None else busy_reason(uses, bound_mib)
