"""The teardown proof reads GPU memory on the host GPUs a case used, through CUDA_VISIBLE_DEVICES.

NVML is replaced by a fake module (sys.modules["pynvml"]) that holds a made-up host: the runner's own
nvml() context, index/UUID lookup and memory reads run unchanged against it.
"""
from __future__ import annotations

import sys
import time
import types

import pytest

from bot.core.settings import load_settings
from bot.runner.hardware import case_gpus, gpu_memory_used_mib
from bot.runner.proof import prove_teardown
from bot.runner.server import StopReport

MIB = 2**20


class FakeHost:
    """Eight GPUs named GPU-0000 ... GPU-0007, each with a used-memory figure the test sets."""

    def __init__(self, count: int = 8) -> None:
        self.used_mib = {i: 0.0 for i in range(count)}
        self.processes: dict[int, list[tuple[int, float]]] = {}  # GPU index -> (pid, MiB) of compute processes
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
        lib.nvmlDeviceGetComputeRunningProcesses = lambda handle: [
            types.SimpleNamespace(pid=pid, usedGpuMemory=int(mib * MIB)) for pid, mib in host.processes.get(handle, [])]
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
    assert list(map(str, failures)) == ["GPU 5 memory not back: 4096 MiB used after teardown, 0 MiB before the case"]


def test_teardown_proof_passes_when_the_mapped_gpus_are_back(host: FakeHost) -> None:
    before = gpu_memory_used_mib(case_gpus([0], 1, {"CUDA_VISIBLE_DEVICES": "4,5"}))
    host.used_mib[0] = 8192.0

    proof, failures = _prove(before)

    assert proof.gpu == "checked" and proof.gpu_memory_back is True and failures == []
    assert [m.index for m in proof.gpu_memory] == [4]


def _gpu_job(gpus: int = 1) -> "Job":
    from bot.core.jobs import Case, Job, LoadPoint, ServerSpec

    server = ServerSpec(engine="sglang", model="/models/m")
    point = LoadPoint(point_id="c1", concurrency=1, dataset="random", isl=8, osl=8, num_prompts=1)
    return Job(job_id="j", kind="sweep", recipe="r", recipe_fingerprint="f", runner_label="h200", gpus=gpus,
               cases=[Case(name="c", servers=[server], points=[point])])


def test_preflight_refuses_a_busy_gpu_naming_the_pids_and_memory_before_any_server(
        host: FakeHost, monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    from bot.core import failure_classes
    from bot.runner import local

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5")
    monkeypatch.delenv("RECIPE_BOT_IDLE_GPU_MIB", raising=False)
    host.used_mib[5] = 118_784.0  # the second GPU of the allocation: another tenant's 116 GiB
    host.processes[5] = [(4242, 118_000.0)]
    host.used_mib[0] = 80_000.0  # not this job's GPU: never judged

    def no_launch(*args, **kwargs):
        raise AssertionError("a server was started on a busy GPU")

    monkeypatch.setattr(local, "_launches", no_launch)
    result = failure_classes.annotate(local.run_job_local(_gpu_job(gpus=2), tmp_path / "out", repo=tmp_path))

    case = result.cases[0]
    assert result.status == "failed" and case.status == "failed"
    assert str(case.reason) == ("the case's GPUs are busy before it started (GPU 5: 118784 MiB, PID 4242 (118000 MiB)); "
                           "an idle GPU has no compute process and at most 1024 MiB used (RECIPE_BOT_IDLE_GPU_MIB)")
    assert (result.failure.kind, result.failure.rule) == ("infrastructure", "device-busy")
    assert failure_classes.should_retry(result)
    assert case.reason.render("zh").startswith("用例启动前它的 GPU 已被占用（GPU 5: 118784 MiB, PID 4242 (118000 MiB)）")
    assert case.cleanup is None  # nothing was started, so there is nothing to prove


@pytest.mark.parametrize("used, processes, bound, busy", [
    pytest.param(0.0, [], None, False, id="idle"),
    pytest.param(900.0, [], None, False, id="under-the-bound"),
    pytest.param(2048.0, [], None, True, id="memory-without-a-listed-process"),
    pytest.param(0.0, [(77, 0.0)], None, True, id="a-compute-process-with-no-memory-yet"),
    pytest.param(2048.0, [], "4096", False, id="bound-raised-by-the-operator"),
])
def test_preflight_judges_processes_and_memory(host: FakeHost, monkeypatch: pytest.MonkeyPatch,
                                               used, processes, bound, busy) -> None:
    from bot.runner.preflight import check_idle

    host.used_mib[0], host.processes[0] = used, processes
    env = {} if bound is None else {"RECIPE_BOT_IDLE_GPU_MIB": bound}
    # the bound as a run reads it with its settings (the default where the operator set none)
    assert (check_idle(["0"], load_settings(env).IDLE_GPU_MIB) is not None) == busy


def test_preflight_without_nvidia_gpus_checks_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.runner.preflight import check_idle

    broken = types.ModuleType("pynvml")
    broken.nvmlInit = lambda: (_ for _ in ()).throw(RuntimeError("NVML Shared Library Not Found"))
    monkeypatch.setitem(sys.modules, "pynvml", broken)
    assert check_idle(["0"], 1024.0) is None


def test_a_bad_idle_bound_is_refused_in_both_languages(host: FakeHost) -> None:
    with pytest.raises(ValueError) as err:
        load_settings({"RECIPE_BOT_IDLE_GPU_MIB": "lots"})
    assert str(err.value) == ("RECIPE_BOT_IDLE_GPU_MIB='lots' is not accepted: expected a number of MiB from 0 to 1048576\n"
                              "RECIPE_BOT_IDLE_GPU_MIB='lots' 无效，应为：0 到 1048576 之间的 MiB 数")
