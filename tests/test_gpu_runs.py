"""The real H200 results in docs/gpu-runs/ parse as results and show what the runner promises."""
import json
from pathlib import Path

import pytest

from bot.core.jobs import Job
from bot.report.collect import collect, load_plan
from bot.core.results import JobResult
from bot.runner.evidence import missing_files, not_kept, resolve

RUNS = Path(__file__).resolve().parents[1] / "docs" / "gpu-runs"
SMOKE = RUNS / "2026-11-30"
SGLANG = RUNS / "2026-12-01-sglang"
RESULT_FILES = sorted(RUNS.glob("**/result.json"))
ENGINE_VERSIONS = {"vllm": "0.26.0", "sglang": "0.5.17"}


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
    assert result.engine in ENGINE_VERSIONS
    if "nvml-proof" not in str(path):  # those two ran the stand-in server, not vLLM
        assert result.engine_version == ENGINE_VERSIONS[result.engine]


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
        assert 1 <= len(proof.gpu_memory) <= result.hardware.gpu_count
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


@pytest.mark.parametrize("path", RESULT_FILES, ids=lambda p: str(p.relative_to(RUNS)))
def test_every_file_a_result_names_is_beside_it_or_listed_as_not_kept(path):
    assert missing_files(path, load(path)) == []


def test_not_kept_lists_name_only_files_that_are_really_absent():
    listed = [(path, rel) for path in RESULT_FILES for rel in not_kept(path)]
    assert listed  # the nvml-proof runs' stand-in client files
    assert all(not resolve(path, rel).exists() for path, rel in listed)


# InferenceX's utils/process_result.py, restated independently of bot/runner/metrics.py: from the
# raw client JSON, conc and the per-GPU throughputs, every *_ms field in seconds under its name
# without "_ms", and for every TPOT field the interactivity 1000 / value under "intvty".
def recompute_inferencex(raw: dict, gpus: int) -> dict:
    total = float(raw.get("total_token_throughput", raw.get("total_throughput")))
    output = float(raw["output_throughput"])
    want = {"conc": float(raw["max_concurrency"]), "tput_per_gpu": total / gpus,
            "output_tput_per_gpu": output / gpus, "input_tput_per_gpu": (total - output) / gpus}
    for key, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            continue
        if isinstance(value, str) and value not in ("inf", "-inf", "nan"):
            continue
        if key.endswith("ms"):
            want[key.replace("_ms", "")] = float(value) / 1000.0
        if "tpot" in key:
            want[key.replace("_ms", "").replace("tpot", "intvty")] = (
                1000.0 / float(value) if float(value) else None)
    return want


def measured_points():
    found = []
    for path in RESULT_FILES:
        result = load(path)
        for case in result.cases:
            for point in case.points:
                if point.metrics and point.raw_result_file and \
                        point.raw_result_file not in not_kept(path):
                    found.append(pytest.param(path, case.name, point.point_id,
                                              id=f"{path.parent.relative_to(RUNS)}:{point.point_id}"))
    return found


@pytest.mark.parametrize(("path", "case_name", "point_id"), measured_points())
def test_derived_figures_equal_a_recomputation_from_the_kept_raw_json(path, case_name, point_id):
    result = load(path)
    case = next(c for c in result.cases if c.name == case_name)
    point = next(p for p in case.points if p.point_id == point_id)
    raw_text = resolve(path, point.raw_result_file).read_text(encoding="utf-8")
    raw = json.loads(raw_text.strip().splitlines()[-1]) if point.client == "sglang.bench_serving" \
        else json.loads(raw_text)
    gpus = round(point.metrics.total_token_throughput / point.metrics.tput_per_gpu)

    want = recompute_inferencex(raw, gpus)

    assert sorted(point.metrics.inferencex) == sorted(want)
    for name, value in want.items():
        assert point.metrics.inferencex[name] == pytest.approx(value, rel=1e-12), name
    # The figures the issue counts: standard deviations and interactivity's mean/p90/p99/std.
    for name in ("std_ttft", "std_tpot", "std_itl", "mean_intvty", "median_intvty", "p90_intvty",
                 "p99_intvty", "std_intvty"):
        assert name in point.metrics.inferencex


def test_both_engines_have_derived_figures_checked():
    engines = {load(p).engine for p, *_ in (param.values for param in measured_points())}
    assert engines == {"vllm", "sglang"}


def sglang(job_id: str) -> JobResult:
    return load(SGLANG / "results" / job_id / "result.json")


def test_sglang_packed_sweep_ran_three_points_in_one_launch_with_its_own_client_and_gate():
    packed = sglang("gpu-smoke-sglang--tp1")
    job = Job.model_validate_json((SGLANG / "jobs" / "packed" / "gpu-smoke-sglang--tp1.json").read_text())
    case = packed.cases[0]
    assert packed.engine == "sglang" and packed.engine_version == "0.5.17"
    assert packed.server_launches == 1 and packed.status == "passed"
    assert [p.concurrency for p in case.points] == [1, 16, 64]
    assert {p.client for p in case.points} == {"sglang.bench_serving"}
    assert all(p.metrics.completed == q.num_prompts and p.metrics.failed == 0
               for p, q in zip(case.points, job.cases[0].points))
    assert case.accuracy is not None and case.accuracy.num_samples == 7 and case.accuracy.passed
    server_log = resolve(SGLANG / "results" / "gpu-smoke-sglang--tp1" / "result.json",
                         case.server_logs[0]).read_text()
    assert "attention_backend='fa3'" in server_log and "load_format='dummy'" in server_log
    for point in case.points:
        log = (SGLANG / "results" / "gpu-smoke-sglang--tp1" / point.raw_result_file).with_suffix(".log")
        assert "-m sglang.bench_serving --backend sglang-oai" in log.read_text()


def test_sglang_unpacked_sweep_took_three_launches_and_more_wall_time():
    packed = sglang("gpu-smoke-sglang--tp1")
    unpacked = [sglang(f"gpu-smoke-sglang--tp1--c{c}") for c in (1, 16, 64)]
    assert sum(r.server_launches for r in unpacked) == 3
    assert {r.recipe_fingerprint for r in unpacked} == {packed.recipe_fingerprint}
    # What docs/gpu-runs/2026-12-01-sglang/README.md states (the packed job also ran GSM8K).
    assert sum(r.duration_s for r in unpacked) / packed.duration_s == pytest.approx(1.26, abs=0.01)


def test_sglang_e2e_case_passed_its_gate_and_gave_gpu_memory_back():
    result = sglang("gpu-smoke-sglang-e2e")
    assert [c.name for c in result.cases] == ["gsm8k-7"]
    case = result.cases[0]
    assert case.accuracy.passed and case.accuracy.num_samples == 7 and not case.points
    assert [m.index for m in case.cleanup.gpu_memory] == [0]
    assert case.cleanup.gpu_memory_back


def test_nvidia_smi_after_every_sglang_command_reads_zero_used():
    for name in ("packed", "unpacked", "e2e"):
        rows = (SGLANG / "results" / f"nvidia-smi-after-{name}.csv").read_text().splitlines()
        assert rows[1].split(", ")[1] == "0 MiB", name


def test_sglang_staging_sent_the_needed_parts_and_the_host_ran_the_staged_versions():
    parts = [line.split() for line in (SGLANG / "staging" / "parts.txt").read_text().splitlines()]
    needed = [float(p[1]) for p in parts if p[5] == "needed"]
    assert len(needed) == 11 and sum(needed) == pytest.approx(567.1, abs=0.1)
    assert all(size <= 52.0 for size in needed)  # + the repo's 8.5 MiB stays under 64 MiB a call
    manifest = json.loads((SGLANG / "staging" / "manifest.json").read_text())["packages"]
    ran = dict(line.split() for line in (SGLANG / "results" / "site-versions.txt").read_text().splitlines())
    for name in ("sglang", "sglang-kernel", "flashinfer-python", "transformers", "tokenizers"):
        assert ran[name] == manifest[name]["version"], name
    assert manifest["sglang"]["version"] == "0.5.17"
