"""GPU power: NVML sampled for the case's GPUs only, each point judged by InferenceX's validity rule
(utils/aggregate_power.py, mirrored in bot/runner/power_rule.py) and written as its power fields.

NVML is a fake module (sys.modules["pynvml"]) holding a made-up host, as in tests/test_runner_nvml.py;
the sampler's clock is a counter, so no figure depends on how fast this machine is.
"""
from __future__ import annotations

import json
import sys
import time
import types
from pathlib import Path

import pytest

from bot.core.messages import msg
from bot.core.results import PointMetrics, PointResult
from bot.runner.hardware import case_gpus
from bot.runner.power import HEADER, PowerSampler, point_power
from bot.runner.power_rule import METRIC_KEYS, POWER_METRIC_SCHEMA_VERSION, judge

WINDOW = (1000.0, 1010.0)
BENCH = {"benchmark_start_time_unix": WINDOW[0], "benchmark_end_time_unix": WINDOW[1], "duration": 10.0,
         "completed": 100, "total_input_tokens": 6000, "total_output_tokens": 2000}


def fake_nvml(watts: dict[int, float], reads: list[int]) -> types.ModuleType:
    lib = types.ModuleType("pynvml")
    lib.nvmlInit = lambda: None
    lib.nvmlShutdown = lambda: None
    lib.nvmlDeviceGetCount = lambda: 8
    lib.nvmlDeviceGetHandleByIndex = lambda index: index
    lib.nvmlDeviceGetHandleByUUID = lambda uuid: int(uuid.rsplit("-", 1)[1])
    lib.nvmlDeviceGetIndex = lambda handle: handle

    def power(handle: int) -> int:
        reads.append(handle)
        if handle not in watts:
            raise RuntimeError("NVML_ERROR_NOT_SUPPORTED")
        return int(watts[handle] * 1000)  # milliwatts, as NVML answers

    lib.nvmlDeviceGetPowerUsage = power
    return lib


def telemetry(path: Path, rows: list[tuple[float, str, str]]) -> Path:
    path.write_text(HEADER + "".join(f"{t:.3f}, {gpu}, {watts}\n" for t, gpu, watts in rows))
    return path


def steady(gpus=("4", "5"), watts="400.00 W", start=999.0, end=1011.0, step=1.0):
    rows, t = [], start
    while t <= end + 1e-9:
        rows += [(t, gpu, watts) for gpu in gpus]
        t += step
    return rows


class Counter:
    def __init__(self) -> None:
        self.now = 999.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def test_the_sampler_reads_only_the_case_gpus_through_the_inherited_visible_devices(tmp_path, monkeypatch):
    reads: list[int] = []
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml({4: 400.0, 5: 350.5, 6: 700.0}, reads))
    gpus = case_gpus([0, 1], 2, {"CUDA_VISIBLE_DEVICES": "4,5,6"})
    with PowerSampler(gpus, tmp_path / "gpu_metrics.csv", interval_s=0.001, clock=Counter()) as sampler:
        for _ in range(100_000):  # the background thread samples; only how many times is asserted, never how fast
            if len(reads) >= 6:
                break
            time.sleep(0.0001)
    lines = sampler.csv_path.read_text().splitlines()
    assert lines[0] == HEADER.strip()
    assert set(reads) == {4, 5}  # GPU 6 belongs to someone else
    assert lines[1:3] == ["1000.000, 4, 400.00 W", "1000.000, 5, 350.50 W"]  # one timestamp a sweep
    assert {line.split(", ")[1] for line in lines[1:]} == {"4", "5"}
    assert len(lines[1:]) % 2 == 0 and len(lines) >= 1 + 2 * 3 + 2  # every sweep both GPUs, plus the last one
    assert sampler.problem is None


def test_a_gpu_whose_power_nvml_cannot_read_is_written_as_not_available(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml({0: 300.0}, []))
    sampler = PowerSampler(["0", "1"], tmp_path / "m.csv", interval_s=60.0, clock=Counter())
    sampler.start()
    sampler.stop()
    assert "1000.000, 1, [N/A]" in sampler.csv_path.read_text()
    assert "invalid_power_sample" in judge(sampler.csv_path, BENCH, 2).reasons


def test_without_nvml_nothing_is_sampled_and_the_problem_is_named(tmp_path, monkeypatch):
    broken = types.ModuleType("pynvml")

    def no_driver() -> None:
        raise RuntimeError("NVML Shared Library Not Found")

    broken.nvmlInit = no_driver
    monkeypatch.setitem(sys.modules, "pynvml", broken)
    with PowerSampler(["0"], tmp_path / "m.csv") as sampler:
        pass
    assert not sampler.csv_path.exists()
    assert str(sampler.problem) == "no NVML on this host"


def test_steady_power_gives_inferencex_seven_figures(tmp_path):
    verdict = judge(telemetry(tmp_path / "m.csv", steady()), BENCH, 2)
    assert verdict.valid and verdict.reasons == []
    assert verdict.fields == {
        "power_metric_schema_version": POWER_METRIC_SCHEMA_VERSION, "power_valid": 1,
        "avg_power_w": 400.0, "avg_total_gpu_power_w": 800.0, "total_gpu_energy_j": 8000.0,
        "joules_per_successful_query": 80.0, "joules_per_input_token": round(8000 / 6000, 6),
        "joules_per_output_token": 4.0, "joules_per_total_token": 1.0}
    assert set(verdict.fields) == {"power_metric_schema_version", "power_valid", *METRIC_KEYS}


def test_the_window_ends_are_interpolated_between_samples(tmp_path):
    rows = [(999.5, "0", "100 W"), (1010.5, "0", "210 W")]  # a ramp of 10 W/s through the window
    verdict = judge(telemetry(tmp_path / "m.csv", rows), BENCH, 1)
    assert verdict.reasons == ["sampling_gap_exceeded"]  # 11 s between samples: the rule refuses it
    rows = [(999.5 + i, "0", f"{100 + 10 * i} W") for i in range(12)]
    assert judge(telemetry(tmp_path / "m.csv", rows), BENCH, 1).fields["total_gpu_energy_j"] == 1550.0


@pytest.mark.parametrize(("rows", "bench", "expected_gpus", "reasons"), [
    pytest.param(None, BENCH, 2, ["telemetry_file_missing"], id="no-telemetry"),
    pytest.param([], BENCH, 2, ["no_usable_power_samples"], id="header-only"),
    pytest.param(steady(start=1001.0), BENCH, 2, ["benchmark_window_not_bracketed"], id="starts-after-window"),
    pytest.param(steady(end=1009.0), BENCH, 2, ["benchmark_window_not_bracketed"], id="stops-before-window-end"),
    pytest.param(steady(step=4.0, end=1015.0), BENCH, 2, ["sampling_gap_exceeded"], id="gap-over-3-s"),
    pytest.param(steady(), BENCH, 4, ["expected_gpu_count_mismatch"], id="fewer-gpus-than-the-case"),
    pytest.param(steady(watts="[N/A]"), BENCH, 2, ["invalid_power_sample", "no_usable_power_samples"],
                 id="power-not-available"),
    pytest.param(steady(), {k: v for k, v in BENCH.items() if "unix" not in k}, 2, ["invalid_benchmark_window"],
                 id="raw-result-without-window"),
    pytest.param(steady(), {**BENCH, "duration": 8.0}, 2, ["benchmark_duration_mismatch"], id="duration-disagrees"),
    pytest.param(steady(), {**BENCH, "completed": 0}, 2, ["invalid_successful_query_count"], id="nothing-completed"),
])
def test_inferencex_rule_refuses_power_it_cannot_trust(tmp_path, rows, bench, expected_gpus, reasons):
    path = tmp_path / "m.csv" if rows is None else telemetry(tmp_path / "m.csv", rows)
    verdict = judge(path, bench, expected_gpus)
    assert not verdict.valid
    assert verdict.reasons == reasons
    assert verdict.fields == {"power_metric_schema_version": POWER_METRIC_SCHEMA_VERSION, "power_valid": 0}
    assert verdict.validation["reasons"] == reasons and verdict.validation["power_valid"] is False


def _point(tmp_path: Path, raw: dict) -> PointResult:
    points = tmp_path / "case" / "points"
    points.mkdir(parents=True)
    (points / "c4.json").write_text(json.dumps(raw))
    metrics = PointMetrics(completed=100, failed=0, duration_s=10.0, request_throughput=10.0, output_throughput=200.0,
                           total_token_throughput=800.0, tput_per_gpu=400.0, output_tput_per_gpu=100.0,
                           input_tput_per_gpu=300.0, interactivity=50.0, inferencex={"conc": 4.0})
    return PointResult(point_id="c4", concurrency=4, status="passed", metrics=metrics,
                       raw_result_file="case/points/c4.json")


def test_a_point_with_valid_power_carries_the_fields_and_tokens_per_joule(tmp_path, monkeypatch):
    point = _point(tmp_path, BENCH)
    sampler = PowerSampler(["4", "5"], telemetry(tmp_path / "case" / "gpu_metrics.csv", steady()))
    done = point_power(point, sampler, tmp_path)
    assert done.metrics.inferencex["power_valid"] == 1 and done.metrics.inferencex["conc"] == 4.0
    assert done.metrics.inferencex["avg_total_gpu_power_w"] == 800.0
    assert done.power.valid and done.power.tokens_per_joule == 1.0  # 800 tok/s over 800 W
    assert done.power.telemetry_file == "case/gpu_metrics.csv"
    sidecar = json.loads((tmp_path / done.power.validation_file).read_text())
    assert sidecar["power_valid"] is True and sidecar["observed_gpu_ids"] == ["4", "5"]
    assert type(json.loads(done.model_dump_json())["metrics"]["inferencex"]["power_valid"]) is int


def test_on_a_host_without_nvml_the_fields_are_present_and_not_valid_with_the_reason(tmp_path, monkeypatch):
    broken = types.ModuleType("pynvml")
    broken.nvmlInit = lambda: (_ for _ in ()).throw(RuntimeError("no driver"))
    monkeypatch.setitem(sys.modules, "pynvml", broken)
    point = _point(tmp_path, BENCH)
    with PowerSampler(["0"], tmp_path / "case" / "gpu_metrics.csv") as sampler:
        pass
    done = point_power(point, sampler, tmp_path)
    assert done.metrics.inferencex["power_valid"] == 0
    assert done.metrics.inferencex["power_metric_schema_version"] == POWER_METRIC_SCHEMA_VERSION
    assert not set(METRIC_KEYS) & set(done.metrics.inferencex)
    assert done.power.reasons == ["telemetry_file_missing"]
    assert str(done.power.problem) == "no NVML on this host" and done.power.tokens_per_joule is None


def _with_power(result, valid: bool):
    from bot.core.results import PowerResult

    case = result.cases[0]
    points = []
    for point in case.points:
        extra = {"power_metric_schema_version": 2, "power_valid": int(valid)}
        if valid:
            extra |= {"avg_power_w": 400.0, "avg_total_gpu_power_w": 400.0}
        power = PowerResult(valid=valid, reasons=[] if valid else ["telemetry_file_missing"], interval_s=1.0,
                            gpus=["0"], tokens_per_joule=round(point.metrics.total_token_throughput / 400.0, 6)
                            if valid else None, problem=None if valid else msg("no NVML on this host"))
        metrics = point.metrics.model_copy(update={"inferencex": {**point.metrics.inferencex, **extra}})
        points.append(point.model_copy(update={"metrics": metrics, "power": power}))
    return result.model_copy(update={"cases": [case.model_copy(update={"points": points}), *result.cases[1:]]})


@pytest.mark.parametrize("valid", [True, False], ids=["valid-shows-tok-per-joule", "invalid-shows-the-reason"])
def test_the_report_shows_tokens_per_watt_where_valid_and_the_reason_where_not(tmp_path, monkeypatch, valid):
    from click.testing import CliRunner

    from bot.report.cli import report_cmd
    from tests import synthetic

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    scenario = synthetic.passing_sweep()
    scenario.results[0] = recorded = _with_power(scenario.results[0], valid)
    paths = synthetic.materialize(scenario, tmp_path / "in")
    out = tmp_path / "out"
    done = CliRunner().invoke(report_cmd, [
        "--results", str(paths["results"]), "--jobs", str(paths["plan"]), "--baseline", str(paths["baseline"]),
        "--out", str(out), "--run-url", synthetic.RUN_URL, "--command", scenario.command], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    text = (out / "comment.md").read_text(encoding="utf-8")
    job, points = f"`{recorded.job_id}`", recorded.cases[0].points
    if valid:
        first = points[0]
        figure = f"{first.point_id} {first.power.tokens_per_joule:,.3f} tok/s/W (400.0 W a GPU)"
        assert f"Power of {job} (NVML every 1 s on GPUs 0, InferenceX's rule): {figure}" in text
        assert f"{first.point_id} {first.power.tokens_per_joule:,.3f} tok/s/W（每块 GPU 400.0 W）" in text
        assert "not valid" not in text
    else:
        english = f"Power of {job} not valid for {len(points)} points: telemetry_file_missing (no NVML on this host)"
        chinese = f"{job} 有 {len(points)} 个测试点的功耗无效：telemetry_file_missing（本主机没有 NVML）"
        assert text.count(english) == 1 and text.count(chinese) == 1
        assert "tok/s/W" not in text


def test_sampled_telemetry_and_a_completed_raw_file_give_valid_power_end_to_end(tmp_path, monkeypatch):
    from bot.runner.rawfile import completed_raw

    reads: list[int] = []
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml({0: 250.0, 1: 250.0}, reads))
    with PowerSampler(["0", "1"], tmp_path / "case" / "gpu_metrics.csv", interval_s=0.001, clock=Counter()) as sampler:
        for _ in range(100_000):  # sweeps stamped 1000, 1001, ...: at least 14 of them, however long that takes
            if len(reads) >= 28:
                break
            time.sleep(0.0001)
    raw = completed_raw({"duration": 10.0, "completed": 8, "total_input_tokens": 800, "total_output_tokens": 200,
                         "max_concurrency": 4, "output_throughput": 20.0, "total_token_throughput": 100.0},
                        model_id="m", end_unix=1011.0)
    verdict = judge(sampler.csv_path, raw, len(sampler.gpus))
    assert verdict.valid, verdict.reasons
    assert verdict.fields["avg_total_gpu_power_w"] == 500.0 and verdict.fields["total_gpu_energy_j"] == 5000.0
