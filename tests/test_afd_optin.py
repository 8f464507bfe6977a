"""The afd-plugin suite on a machine without its opt-in: every case fails with the reason, none is skipped,
nothing is started and nothing is downloaded (what CPUs allow of the 8-GPU profile)."""
import json
import os
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
    assert baseline["servers"][0]["devices"] == [0, 2, 4, 6]
    assert {s["name"]: s["devices"] for s in afd["servers"]} == {"ffn": [1, 3, 5, 7], "attention": [0, 2, 4, 6]}
    assert "AFD_BENCHMARK_FORCE_LB_TOPN_PER_RANK" in afd["unset_env"]


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
