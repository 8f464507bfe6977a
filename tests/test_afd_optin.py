"""The afd-plugin suite on a machine without its opt-in: every case fails with the reason, none is skipped,
nothing is started and nothing is downloaded (what CPUs allow of the 8-GPU profile)."""
import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli import main
from bot.core.results import JobResult

ROOT = Path(__file__).resolve().parents[1]
SUITE = "qwen3.5-122b-a10b-afd"
OPT_IN = ("AFD_E2E_BACKEND", "AFD_E2E_LARGE_MODEL", "AFD_GPU_E2E_MODEL", "AFD_E2E_DEVICES")


def _plan(tmp_path_factory, *args):
    jobs = tmp_path_factory.mktemp("jobs")
    result = CliRunner().invoke(main, ["plan", "--repo", str(ROOT), "--recipe", SUITE, "--no-canary",
                                       "--format", "json", "--jobs-dir", str(jobs), *args])
    assert result.exit_code == 0, result.output
    (path,) = jobs.glob("*.json")
    return path


@pytest.fixture(scope="module")
def job_file(tmp_path_factory):
    return _plan(tmp_path_factory)


@pytest.fixture(scope="module")
def compare_file(tmp_path_factory):
    return _plan(tmp_path_factory, "--compare")


def run_with(job_file: Path, out: Path, **opt_in: str) -> JobResult:
    env = {k: v for k, v in os.environ.items() if k not in OPT_IN}
    env.update(opt_in)
    env["RECIPE_BOT_VLLM"] = "/nonexistent/vllm"  # were anything started, it would fail differently
    result = CliRunner().invoke(main, ["run", "--job", str(job_file), "--out", str(out), "--repo", str(ROOT)],
                                env=env)
    assert result.exit_code == 1, result.output
    return JobResult.model_validate_json((out / "result.json").read_text(encoding="utf-8"))


def test_the_planned_suite_runs_afd_plugins_own_node_ids(job_file):
    job = json.loads(job_file.read_text(encoding="utf-8"))
    assert job["runner_label"] == "h200-x8" and job["gpus"] == 8
    baseline, afd = job["cases"]
    assert baseline["command"]["nodes"] == [
        "tests/e2e/models/qwen3_5/test_qwen3_5_122b.py::test_qwen3_5_122b[baseline-eager]"]
    assert afd["command"]["nodes"] == [
        "tests/e2e/models/qwen3_5/test_qwen3_5_122b.py::test_qwen3_5_122b[afd-eager-4a4f]"]
    assert baseline["command"]["ports"] == [8000, 8001, 1239] and len(baseline["command"]["devices"]) == 8
    assert ["python", "-m", "pip", "install", "--no-deps", "-e", "."] in baseline["command"]["setup"]
    assert "AFD_BENCHMARK_FORCE_LB_TOPN_PER_RANK" in afd["unset_env"]


def test_the_comparison_counts_every_gpu_each_arm_holds(compare_file):
    job = json.loads(compare_file.read_text(encoding="utf-8"))
    assert job["compare_arms"] == ["native-dp8", "afd-4a4f"] and job["gpus"] == 8
    # two arms of eight GPUs, each 900 s start-up and one point of 240 s five times
    assert job["estimated_gpu_hours"] == pytest.approx(2 * 8 * (900 + 5 * 240) / 3600, abs=0.01)
    assert [p["repeats"] for c in job["cases"] for p in c["points"]] == [5, 5]


@pytest.mark.parametrize("devices_value, runner_visible, expected", [
    pytest.param("0,2,4,6,1,3,5,7", "", {"ffn": "1,3,5,7", "attention": "0,2,4,6"},
                 id="interleaved"),
    pytest.param("4,5,6,7,0,1,2,3", "", {"ffn": "0,1,2,3", "attention": "4,5,6,7"},
                 id="halves-swapped"),
    pytest.param("0,2,4,6,1,3,5,7", "10,11,12,13,14,15,16,17",
                 {"ffn": "11,13,15,17", "attention": "10,12,14,16"},
                 id="inside-an-allocation"),
])
def test_the_afd_devices_opt_in_decides_each_servers_gpus(compare_file, devices_value, runner_visible, expected):
    from bot.core.jobs import Job
    from bot.runner.engines import server_env

    job = Job.model_validate_json(compare_file.read_text(encoding="utf-8"))
    job.cases = job.cases[1:]  # the AFD arm
    env = {"AFD_E2E_DEVICES": devices_value, **({"CUDA_VISIBLE_DEVICES": runner_visible} if runner_visible else {})}
    seen = {spec.name: server_env(spec, case, env, run_tag="t", reset_prefix_cache=False)["CUDA_VISIBLE_DEVICES"]
            for case in job.cases for spec in case.servers}
    assert seen == expected


@pytest.mark.parametrize("devices_value, message", [
    pytest.param("0,2,4", "devices [4, 5, 6, 7] are outside the 3 GPU(s) that AFD_E2E_DEVICES=0,2,4 lists",
                 id="too-short"),
    pytest.param("0,two,4,6,1,3,5,7", "AFD_E2E_DEVICES='0,two,4,6,1,3,5,7' is not a comma-separated list",
                 id="not-numbers"),
])
def test_a_bad_afd_devices_value_is_a_clear_problem(compare_file, devices_value, message):
    from bot.core.jobs import Job
    from bot.runner.engines import server_env
    from bot.runner.environment import EnvironmentProblem

    job = Job.model_validate_json(compare_file.read_text(encoding="utf-8"))
    case = job.cases[1]
    with pytest.raises(EnvironmentProblem, match=re.escape(message)):
        for spec in case.servers:
            server_env(spec, case, {"AFD_E2E_DEVICES": devices_value}, run_tag="t", reset_prefix_cache=False)


@pytest.mark.parametrize("opt_in, named", [
    pytest.param({}, ["AFD_E2E_BACKEND=gpu", "AFD_GPU_E2E_MODEL"], id="nothing-set"),
    pytest.param({"AFD_E2E_BACKEND": "cpu", "AFD_E2E_LARGE_MODEL": "1", "AFD_GPU_E2E_MODEL": "/m",
                  "AFD_E2E_DEVICES": "0,2,4,6,1,3,5,7"}, ["AFD_E2E_BACKEND=gpu (found 'cpu')"], id="wrong-backend"),
    pytest.param({"AFD_E2E_BACKEND": "gpu", "AFD_E2E_LARGE_MODEL": "1", "AFD_E2E_DEVICES": "0,2,4,6,1,3,5,7"},
                 ["AFD_GPU_E2E_MODEL"], id="no-model-path"),
])
def test_a_missing_opt_in_fails_every_case_and_never_skips(job_file, tmp_path, opt_in, named):
    result = run_with(job_file, tmp_path / "out", **opt_in)
    assert result.status == "failed"
    assert [case.status for case in result.cases] == ["failed", "failed"]
    for case in result.cases:
        assert "fails rather than skips" in str(case.reason)
        for text in named:
            assert text in str(case.reason)
        assert case.server_logs == [] and case.harness.exit_code is None  # nothing was started
    assert result.setup == []  # nor installed


@pytest.mark.parametrize("devices, says", [
    pytest.param("0,0,0,0,1,1,1,1", "must list each device once", id="repeated"),
    pytest.param("0,1,2,3,4,5,6,7,8", "exactly 8 device ids", id="nine"),
    pytest.param("0,1,2,3,4,5,6", "exactly 8 device ids", id="seven"),
    pytest.param("0,2,4,6,0,2,4,6", "must list each device once", id="roles-share-gpus"),
])
def test_the_harness_own_opt_in_checks_refuse_what_it_refuses(job_file, tmp_path, devices, says):
    result = run_with(job_file, tmp_path / "out", AFD_E2E_BACKEND="gpu", AFD_E2E_LARGE_MODEL="1",
                      AFD_GPU_E2E_MODEL=str(tmp_path), AFD_E2E_DEVICES=devices)
    for case in result.cases:
        assert case.status == "failed" and says in str(case.reason) and "test_qwen3_5_122b[" in str(case.reason)


def test_a_model_path_that_does_not_exist_is_refused(job_file, tmp_path):
    result = run_with(job_file, tmp_path / "out", AFD_E2E_BACKEND="gpu", AFD_E2E_LARGE_MODEL="1",
                      AFD_GPU_E2E_MODEL=str(tmp_path / "missing"), AFD_E2E_DEVICES="0,2,4,6,1,3,5,7")
    assert all("AFD_GPU_E2E_MODEL must be an existing directory" in str(c.reason) for c in result.cases)
