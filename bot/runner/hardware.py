"""Facts about this host that make results comparable: CPU, GPUs (NVML), commit (engine versions: bot.engines)."""
from __future__ import annotations

import os
import platform
import socket
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from bot.core.results import Hardware
from bot.runner.provenance import checkout_head


@contextmanager
def nvml() -> Iterator[object | None]:
    """pynvml, initialised, or None where there is no NVIDIA driver or GPU."""
    try:
        import pynvml  # here, not at the top: an optional runner-side extra, absent on hosts without a GPU

        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no library, no driver, no device: all mean "no GPU"
        yield None
        return
    try:
        yield pynvml
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass


def case_gpus(devices: list[int] | None, gpus: int, env: Mapping[str, str]) -> list[str]:
    """The host GPUs a case uses, as CUDA_VISIBLE_DEVICES entries (an index or a UUID).

    A recipe's devices index into what the runner was given: under CUDA_VISIBLE_DEVICES=4,5
    devices [0, 1] are the host's GPUs 4 and 5 (environment.visible_devices gives the servers the
    same mapping). A case with no device list uses the first `gpus` visible GPUs, which is where
    CUDA puts a server that asks for that many; a CPU case (gpus 0) uses none.
    Numeric entries are taken as NVML indices: the two agree under CUDA_DEVICE_ORDER=PCI_BUS_ID,
    which is what multi-GPU hosts that hand out GPUs by number set.
    """
    logical = list(devices) if devices is not None else list(range(max(0, gpus)))
    inherited = [d.strip() for d in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    if not inherited:
        return [str(d) for d in logical]
    return [inherited[d] for d in logical if 0 <= d < len(inherited)]


def _handle(lib: object, gpu: int | str, count: int) -> tuple[int, object] | None:
    """NVML index and handle of one CUDA_VISIBLE_DEVICES entry, or None where it names no GPU."""
    text = str(gpu).strip()
    try:
        if text.isdigit():
            index = int(text)
            return (index, lib.nvmlDeviceGetHandleByIndex(index)) if index < count else None
        handle = lib.nvmlDeviceGetHandleByUUID(text)
        return lib.nvmlDeviceGetIndex(handle), handle
    except Exception:  # noqa: BLE001 - an unknown UUID: nothing of ours to check there
        return None


def gpu_memory_used_mib(gpus: Sequence[int | str] | None = None) -> dict[int, float] | None:
    """Used memory per NVML index of the GPUs given (indices or UUIDs; None: every GPU),
    or None where there is no GPU."""
    with nvml() as lib:
        if lib is None:
            return None
        found = nvml_handles(lib, gpus)
        return None if found is None else {index: _used_mib(lib, handle) for index, handle in found}


def nvml_handles(lib, gpus: Sequence[int | str] | None) -> list | None:
    """(NVML index, handle) of each GPU given that NVML knows (None: every GPU), or None with no GPU."""
    count = lib.nvmlDeviceGetCount()
    if count == 0:
        return None
    wanted = list(range(count)) if gpus is None else list(gpus)
    return [h for h in (_handle(lib, g, count) for g in wanted) if h is not None]


def _used_mib(lib: object, handle: object) -> float:
    """Used memory as nvidia-smi shows it: NVML's v2 figure leaves out the driver's reservation
    (about 600 MiB on an H200), so an idle GPU reads 0 MiB; v1 on drivers without v2."""
    try:
        info = lib.nvmlDeviceGetMemoryInfo(handle, version=lib.nvmlMemory_v2)
    except Exception:  # noqa: BLE001 - older driver or binding
        info = lib.nvmlDeviceGetMemoryInfo(handle)
    return info.used / 2**20


def _cpu_model() -> str:
    # /proc/cpuinfo's model name: psutil has no CPU model name (and platform.processor() is empty on Linux)
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe_host() -> Hardware:
    gpus: list[str] = []
    with nvml() as lib:
        if lib is not None:
            for i in range(lib.nvmlDeviceGetCount()):
                name = lib.nvmlDeviceGetName(lib.nvmlDeviceGetHandleByIndex(i))
                gpus.append(name.decode() if isinstance(name, bytes) else str(name))
    return Hardware(host=socket.gethostname(), cpu=_cpu_model(), cpu_count=os.cpu_count() or 0,
                    gpu_count=len(gpus), gpus=gpus)


def git_head(repo: Path) -> str | None:
    """HEAD of the checkout rooted at `repo`, never of a repository enclosing it."""

    return checkout_head(repo)
