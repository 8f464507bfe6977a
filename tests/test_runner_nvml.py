"""The teardown proof reads GPU memory on the host GPUs a case used, through CUDA_VISIBLE_DEVICES.

NVML is replaced by a fake module (sys.modules["pynvml"]) that holds a made-up host: the runner's own
nvml() context, index/UUID lookup and memory reads run unchanged against it.
"""
from __future__ import annotations

import sys
import time
import types

import pytest

from bot.runner.hardware import case_gpus, gpu_memory_used_mib
from bot.runner.proof import prove_teardown
from bot.runner.server import StopReport

MIB = 2**20


class FakeHost:
    """Eight GPUs named GPU-0000 ... GPU-0007, each with a used-memory figure the test sets."""

    def __init__(self, count: int = 8) -> None:
        self.used_mib = {i: 0.0 for i in range(count)}
        self.reads: list[int] = []

    def module(self) -> types.ModuleType:
        host = self
        lib = types.ModuleType("pynvml")
        lib.nvmlMemory_v2 = 2
        lib.nvmlInit = lambda: None
        lib.nvmlShutdown = lambda: None
        lib.nvmlDeviceGetCount = lambda: len(host.used_mib)

        def by_index(index: int) -> int:
            if index not in host.used_mib:
                raise RuntimeError("NVML_ERROR_INVALID_ARGUMENT")
            return index

        def by_uuid(uuid: str) -> int:
            for index in host.used_mib:
                if uuid == f"GPU-{index:04d}":
                    return index
            raise RuntimeError("NVML_ERROR_NOT_FOUND")

        def memory(handle: int, version: int | None = None) -> types.SimpleNamespace:
            host.reads.append(handle)
            return types.SimpleNamespace(used=host.used_mib[handle] * MIB)

        lib.nvmlDeviceGetHandleByIndex = by_index
        lib.nvmlDeviceGetHandleByUUID = by_uuid
        lib.nvmlDeviceGetIndex = lambda handle: handle
        lib.nvmlDeviceGetMemoryInfo = memory
        lib.nvmlDeviceGetName = lambda handle: "NVIDIA H200"
        return lib


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch) -> FakeHost:
    fake = FakeHost()
    monkeypatch.setitem(sys.modules, "pynvml", fake.module())
    return fake


@pytest.mark.parametrize(("devices", "gpus", "inherited", "expected"), [
    pytest.param([0, 1], 2, "4,5", ["4", "5"], id="devices-index-into-inherited-list"),
    pytest.param([1], 1, "4,5", ["5"], id="second-of-the-allocation"),
    pytest.param(None, 2, "4,5,6", ["4", "5"], id="no-device-list-uses-first-gpus-of-allocation"),
    pytest.param(None, 1, None, ["0"], id="no-device-list-no-allocation-first-gpu-only"),
    pytest.param([2, 3], 2, None, ["2", "3"], id="no-allocation-devices-are-host-indices"),
    pytest.param(None, 0, "4,5", [], id="cpu-case-uses-no-gpu"),
    pytest.param([0], 1, "GPU-0006,GPU-0007", ["GPU-0006"], id="uuid-allocation"),
    pytest.param([0, 3], 2, "4,5", ["4"], id="device-outside-allocation-is-not-a-host-gpu"),
])
def test_case_gpus_map_through_the_inherited_visible_devices(devices, gpus, inherited, expected):
    env = {} if inherited is None else {"CUDA_VISIBLE_DEVICES": inherited}
    assert case_gpus(devices, gpus, env) == expected


def test_memory_is_read_on_the_mapped_gpus_only(host: FakeHost) -> None:
    host.used_mib.update({4: 100.0, 5: 200.0, 0: 999.0})

    used = gpu_memory_used_mib(case_gpus([0, 1], 2, {"CUDA_VISIBLE_DEVICES": "4,5"}))

    assert used == {4: 100.0, 5: 200.0}
    assert sorted(set(host.reads)) == [4, 5]


def test_uuids_resolve_to_nvml_indices(host: FakeHost) -> None:
    host.used_mib[6] = 42.0
    assert gpu_memory_used_mib(["GPU-0006", "GPU-9999"]) == {6: 42.0}


def test_a_job_without_device_list_checks_its_gpus_not_every_gpu(host: FakeHost) -> None:
    host.used_mib.update({1: 5000.0, 2: 7000.0})  # other tenants' GPUs: none of this job's business

    used = gpu_memory_used_mib(case_gpus(None, 1, {}))

    assert used == {0: 0.0}


def _prove(before: dict[int, float]):
    report = StopReport(name="server", pgid=1)
    return prove_teardown([report], ports=[], run_tag="t", gpu_before=before,
                          started=time.monotonic())


def test_teardown_proof_names_the_host_gpu_that_kept_memory(host: FakeHost,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("bot.runner.proof.GPU_SETTLE_S", 0.0)
    before = gpu_memory_used_mib(case_gpus([0, 1], 2, {"CUDA_VISIBLE_DEVICES": "4,5"}))
    host.used_mib[5] = 4096.0  # a leak on the allocation's second GPU
    host.used_mib[0] = 8192.0  # host GPU 0 is not ours: never judged

    proof, failures = _prove(before)

    assert [m.index for m in proof.gpu_memory] == [4, 5]
    assert proof.gpu_memory_back is False
    assert failures == ["GPU 5 memory not back: 4096 MiB used after teardown, 0 MiB before the case"]


def test_teardown_proof_passes_when_the_mapped_gpus_are_back(host: FakeHost) -> None:
    before = gpu_memory_used_mib(case_gpus([0], 1, {"CUDA_VISIBLE_DEVICES": "4,5"}))
    host.used_mib[0] = 8192.0

    proof, failures = _prove(before)

    assert proof.gpu == "checked" and proof.gpu_memory_back is True and failures == []
    assert [m.index for m in proof.gpu_memory] == [4]
