"""The real H200 results in docs/gpu-runs/ parse as results and show what the runner promises."""
import json
from pathlib import Path

import pytest

from bot.jobs import Job
from bot.report.collect import collect, load_plan
from bot.results import JobResult

RUNS = Path(__file__).resolve().parents[1] / "docs" / "gpu-runs"
SMOKE = RUNS / "2026-11-30"
RESULT_FILES = sorted(RUNS.glob("**/result.json"))


def load(path: Path) -> JobResult:
    return JobResult.model_validate_json(path.read_text(encoding="utf-8"))


def smoke(job_id: str) -> JobResult:
    return load(SMOKE / "results" / job_id / "result.json")


def test_the_gpu_runs_are_there():
    assert len(RESULT_FILES) >= 7


@pytest.mark.parametrize("path", RESULT_FILES, ids=lambda p: str(p.relative_to(RUNS)))
def test_every_gpu_result_parses_and_carries_its_hardware_and_engine(path):
    result = load(path)
    assert result.hardware is not None and result.hardware.gpu_count >= 1
    assert all("H200" in gpu for gpu in result.hardware.gpus)
    assert result.engine == "vllm"
    if "nvml-proof" not in str(path):  # those two ran the stand-in server, not vLLM
        assert result.engine_version == "0.26.0"


def passing_gpu_results():
    return [p for p in RESULT_FILES if "gpu_leak" not in str(p)]


@pytest.mark.parametrize("path", passing_gpu_results(), ids=lambda p: str(p.relative_to(RUNS)))
def test_every_passing_case_proved_gpu_memory_ports_and_processes_back(path):
    result = load(path)
    assert result.status == "passed"
    for case in result.cases:
        proof = case.cleanup
        assert proof.gpu == "checked"
        assert proof.gpu_memory_back is True
        assert len(proof.gpu_memory) == result.hardware.gpu_count
        assert all(m.back_to_baseline and m.after_mib <= m.before_mib + 512 for m in proof.gpu_memory)
        assert proof.groups_gone and not proof.leftover_pids
        assert proof.ports_free and not proof.busy_ports and proof.ports
        assert not proof.sigkill_escalated


def test_the_nvml_proof_failed_the_job_that_leaked_gpu_memory():
    result = load(RUNS / "2026-11-30-h200-bringup" / "nvml-proof" / "gpu_leak" / "result.json")
    proof = result.cases[0].cleanup
    assert result.status == "failed"
    assert proof.gpu_memory_back is False
    assert "GPU 0 memory not back" in result.reason


def test_packed_sweep_ran_three_points_in_one_launch_and_unpacked_in_three():
    packed = smoke("gpu-smoke-vllm--tp1")
    unpacked = [smoke(f"gpu-smoke-vllm--tp1--c{c}") for c in (1, 16, 64)]
    assert packed.server_launches == 1
    assert [p.concurrency for p in packed.cases[0].points] == [1, 16, 64]
    assert sum(r.server_launches for r in unpacked) == 3
    assert {r.recipe_fingerprint for r in unpacked} == {packed.recipe_fingerprint}
    # What docs/gpu-runs/README.md states: packing saved wall time even against warm restarts.
    unpacked_wall = sum(r.duration_s for r in unpacked)
    assert unpacked_wall / packed.duration_s == pytest.approx(1.30, abs=0.01)


def test_every_point_has_its_raw_client_file_beside_the_result():
    for job in ("gpu-smoke-vllm--tp1", "gpu-smoke-vllm--tp1--c1", "gpu-smoke-vllm--tp1--c16",
                "gpu-smoke-vllm--tp1--c64"):
        result = smoke(job)
        for point in result.cases[0].points:
            raw = json.loads((SMOKE / "results" / job / point.raw_result_file).read_text(encoding="utf-8"))
            assert raw["completed"] == point.metrics.completed
            assert raw["max_concurrency"] == point.concurrency


def test_e2e_cases_ran_on_their_devices_one_after_the_other():
    result = smoke("gpu-smoke-e2e")
    job = Job.model_validate_json((SMOKE / "jobs" / "e2e" / "gpu-smoke-e2e.json").read_text(encoding="utf-8"))
    assert [c.name for c in result.cases] == [c.name for c in job.cases] == ["dp2", "side-by-side"]
    assert [s.devices for s in job.cases[1].servers] == [[0], [1]]
    for case in result.cases:
        assert case.accuracy is not None and case.accuracy.num_samples == 7 and case.accuracy.passed
        assert len(case.server_logs) == len(job.cases[result.cases.index(case)].servers)


def test_the_report_collects_the_gpu_results_with_their_plan(tmp_path):
    jobs = [json.loads(p.read_text()) for p in sorted((SMOKE / "jobs").glob("*/*.json"))]
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"jobs": jobs}))
    collected = collect(SMOKE / "results", load_plan(plan))
    assert sorted(job.result.job_id for job in collected.jobs) == sorted(job["job_id"] for job in jobs)
    assert all(job.result.status == "passed" and job.problem is None for job in collected.jobs)
