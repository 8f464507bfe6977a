"""The afd-plugin suite on a machine without its opt-in: every case fails with the reason, none is skipped,
nothing is started and nothing is downloaded (what CPUs allow of the 8-GPU profile)."""
import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli import main
from bot.results import JobResult

ROOT = Path(__file__).resolve().parents[1]
SUITE = "qwen3.5-122b-a10b-afd"
OPT_IN = ("AFD_E2E_BACKEND", "AFD_E2E_LARGE_MODEL", "AFD_GPU_E2E_MODEL", "AFD_E2E_DEVICES")


@pytest.fixture(scope="module")
def job_file(tmp_path_factory):
    jobs = tmp_path_factory.mktemp("jobs")
    result = CliRunner().invoke(main, ["plan", "--repo", str(ROOT), "--recipe", SUITE, "--no-canary",
                                       "--format", "json", "--jobs-dir", str(jobs)])
    assert result.exit_code == 0, result.output
    (path,) = jobs.glob("*.json")
    return path


def run_with(job_file: Path, out: Path, **opt_in: str) -> JobResult:
    env = {k: v for k, v in os.environ.items() if k not in OPT_IN}
    env.update(opt_in)
    env["RECIPE_BOT_VLLM"] = "/nonexistent/vllm"  # were anything started, it would fail differently
    result = CliRunner().invoke(main, ["run", "--job", str(job_file), "--out", str(out), "--repo", str(ROOT)],
                                env=env)
    assert result.exit_code == 1, result.output
    return JobResult.model_validate_json((out / "result.json").read_text(encoding="utf-8"))


def test_the_planned_suite_keeps_the_afd_device_mapping(job_file):
    job = json.loads(job_file.read_text(encoding="utf-8"))
    assert job["runner_label"] == "h200-x8" and job["gpus"] == 8
    baseline, afd = job["cases"]
    # Positions in AFD_E2E_DEVICES: the first four run native/Attention, the last four FFN.
    assert baseline["devices_env"] == afd["devices_env"] == "AFD_E2E_DEVICES"
    assert baseline["servers"][0]["devices"] == [0, 1, 2, 3]
    assert {s["name"]: s["devices"] for s in afd["servers"]} == {"ffn": [4, 5, 6, 7], "attention": [0, 1, 2, 3]}
    assert "AFD_BENCHMARK_FORCE_LB_TOPN_PER_RANK" in afd["unset_env"]


@pytest.mark.parametrize("devices_value, runner_visible, expected", [
    pytest.param("0,2,4,6,1,3,5,7", "", {"baseline": "0,2,4,6", "ffn": "1,3,5,7", "attention": "0,2,4,6"},
                 id="interleaved"),
    pytest.param("4,5,6,7,0,1,2,3", "", {"baseline": "4,5,6,7", "ffn": "0,1,2,3", "attention": "4,5,6,7"},
                 id="halves-swapped"),
    pytest.param("0,2,4,6,1,3,5,7", "10,11,12,13,14,15,16,17",
                 {"baseline": "10,12,14,16", "ffn": "11,13,15,17", "attention": "10,12,14,16"},
                 id="inside-an-allocation"),
])
def test_the_afd_devices_opt_in_decides_each_servers_gpus(job_file, devices_value, runner_visible, expected):
    from bot.jobs import Job
    from bot.runner.engines import server_env

    job = Job.model_validate_json(job_file.read_text(encoding="utf-8"))
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
def test_a_bad_afd_devices_value_is_a_clear_problem(job_file, devices_value, message):
    from bot.jobs import Job
    from bot.runner.engines import server_env
    from bot.runner.environment import EnvironmentProblem

    job = Job.model_validate_json(job_file.read_text(encoding="utf-8"))
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
        assert "fails rather than skips" in case.reason
        for text in named:
            assert text in case.reason
        assert case.server_logs == []  # nothing was started, so nothing could be downloaded
