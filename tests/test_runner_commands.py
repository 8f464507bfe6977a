"""Command lines and environments the runner builds from a job: engines, clients, opt-in rules."""
from __future__ import annotations

import stat
from pathlib import Path

import pytest

from bot import engines
from bot.engines import Installed
from bot.core.jobs import Case, LoadPoint, ServerSpec
from bot.runner.engines import build_launch
from bot.runner.environment import EnvironmentProblem, check_required, expand, visible_devices
from bot.runner.load import Client, Target, bench_command, choose_client

VLLM, SGLANG = engines.get("vllm"), engines.get("sglang")
VLLM_CLIENT, SGLANG_CLIENT = VLLM.client, SGLANG.client


def _installed(vllm: str | None = "/opt/vllm/bin/vllm", sglang: str = "/opt/sgl/bin/python"
               ) -> dict[str, Installed]:
    return {"vllm": Installed(VLLM, vllm), "sglang": Installed(SGLANG, sglang)}

ENV = {"MODEL_DIR": "/models/tiny", "HOME": "/root", "DROP_ME": "x", "PATH": "/usr/bin"}


def _case(spec: ServerSpec, **kwargs: object) -> Case:
    points = [LoadPoint(point_id="c1", concurrency=1, isl=8, osl=8, num_prompts=1),
              LoadPoint(point_id="c2", concurrency=2, isl=8, osl=8, num_prompts=1)]
    return Case(name="c", servers=[spec], points=points, **kwargs)


def _launch(spec: ServerSpec, case: Case | None = None, repo: Path = Path("/repo")):
    return build_launch(spec, case or _case(spec), port=8123, repo=repo, runner_env=ENV,
                        run_tag="tag-1", installed=_installed())


def test_vllm_serve_command_expands_variables_and_appends_recipe_args() -> None:
    spec = ServerSpec(engine="vllm", model="${MODEL_DIR}", served_model_name="tiny",
                      args=["--max-model-len", "2048", "--download-dir", "${HOME}/w"])

    launch = _launch(spec)

    assert launch.argv == ["/opt/vllm/bin/vllm", "serve", "/models/tiny", "--host", "127.0.0.1",
                           "--port", "8123", "--served-model-name", "tiny",
                           "--max-model-len", "2048", "--download-dir", "/root/w"]
    assert (launch.model, launch.served_model_name) == ("/models/tiny", "tiny")


def test_sglang_launch_server_command() -> None:
    launch = _launch(ServerSpec(engine="sglang", model="org/model", args=["--tp", "2"]))

    assert launch.argv == ["/opt/sgl/bin/python", "-m", "sglang.launch_server", "--model-path",
                           "org/model", "--host", "127.0.0.1", "--port", "8123",
                           "--served-model-name", "org/model", "--tp", "2"]


def test_server_env_devices_unset_recipe_env_and_run_tag() -> None:
    spec = ServerSpec(engine="vllm", model="m", devices=[0, 2, 4, 6],
                      env={"VLLM_USE_FLASHINFER_SAMPLER": "0", "WHERE": "${MODEL_DIR}"})

    env = _launch(spec, _case(spec, unset_env=["DROP_ME"])).env

    assert env["CUDA_VISIBLE_DEVICES"] == "0,2,4,6"
    assert "DROP_ME" not in env
    assert env["VLLM_USE_FLASHINFER_SAMPLER"] == "0" and env["WHERE"] == "/models/tiny"
    assert env["RECIPE_BOT_RUN_ID"] == "tag-1"
    assert env["VLLM_SERVER_DEV_MODE"] == "1", "a packed sweep resets the prefix cache"


def test_single_point_case_does_not_turn_on_dev_mode() -> None:
    spec = ServerSpec(engine="vllm", model="m")
    case = Case(name="one", servers=[spec],
                points=[LoadPoint(point_id="c1", concurrency=1, isl=8, osl=8, num_prompts=1)])

    assert "VLLM_SERVER_DEV_MODE" not in _launch(spec, case).env


def test_launch_script_gets_port_model_and_args(tmp_path: Path) -> None:
    script = tmp_path / "launch" / "serve.sh"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    spec = ServerSpec(engine="vllm", model="${MODEL_DIR}", launch_script="launch/serve.sh",
                      args=["--tp", "8", "--name", "a b"])

    launch = _launch(spec, repo=tmp_path)

    assert launch.argv == [str(script.resolve()), "--tp", "8", "--name", "a b"]
    assert launch.env["PORT"] == "8123" and launch.env["MODEL"] == "/models/tiny"
    assert launch.env["SERVER_ARGS"] == "--tp 8 --name 'a b'"
    assert launch.cwd == tmp_path


@pytest.mark.parametrize(("script", "message"), [
    pytest.param("../outside.sh", "points outside the repository", id="escapes-repo"),
    pytest.param("missing.sh", "does not exist", id="missing"),
])
def test_bad_launch_script_is_refused(tmp_path: Path, script: str, message: str) -> None:
    (tmp_path.parent / "outside.sh").write_text("echo\n")
    spec = ServerSpec(engine="vllm", model="m", launch_script=script)

    with pytest.raises(EnvironmentProblem, match=message):
        _launch(spec, repo=tmp_path)


def test_unset_variable_is_named_with_its_field() -> None:
    with pytest.raises(EnvironmentProblem, match=r"server 'server': model refers to \$\{NOPE\}"):
        _launch(ServerSpec(engine="vllm", model="${NOPE}/x"))


def test_only_braced_variables_expand() -> None:
    assert expand("$HOME and ${HOME}", ENV, "f") == "$HOME and /root"


@pytest.mark.parametrize(("required", "env", "fails"), [
    pytest.param(["A"], {"A": "1"}, False, id="present"),
    pytest.param(["A"], {}, True, id="missing"),
    pytest.param(["A"], {"A": ""}, True, id="empty-counts-as-missing"),
    pytest.param(["AFD_E2E_BACKEND=gpu"], {"AFD_E2E_BACKEND": "gpu"}, False, id="pinned-value-met"),
    pytest.param(["AFD_E2E_BACKEND=gpu"], {"AFD_E2E_BACKEND": "cpu"}, True, id="pinned-value-wrong"),
    pytest.param(["AFD_E2E_BACKEND=gpu"], {}, True, id="pinned-value-unset"),
    pytest.param(["AFD_E2E_LARGE_MODEL=1", "AFD_GPU_E2E_MODEL"], {"AFD_E2E_LARGE_MODEL": "1"}, True,
                 id="pinned-met-but-name-missing"),
])
def test_required_env_fails_never_skips(required: list[str], env: dict, fails: bool) -> None:
    if fails:
        with pytest.raises(EnvironmentProblem, match="fails rather than skips"):
            check_required(required, env)
    else:
        check_required(required, env)


def test_a_wrong_pinned_value_is_named_with_what_was_found() -> None:
    with pytest.raises(EnvironmentProblem, match=r"AFD_E2E_BACKEND=gpu \(found 'cpu'\)"):
        check_required(["AFD_E2E_BACKEND=gpu"], {"AFD_E2E_BACKEND": "cpu"})


@pytest.mark.parametrize(("devices", "inherited", "expected"), [
    pytest.param([0, 2], None, "0,2", id="no-allocation-devices-are-physical"),
    pytest.param([0, 1], "4,5", "4,5", id="slurm-allocation-first-two"),
    pytest.param([1], "GPU-aa,GPU-bb", "GPU-bb", id="uuids-pass-through"),
])
def test_devices_index_into_the_inherited_visible_devices(devices, inherited, expected) -> None:
    env = {} if inherited is None else {"CUDA_VISIBLE_DEVICES": inherited}
    assert visible_devices(devices, env) == expected


def test_devices_outside_the_allocation_fail_the_case() -> None:
    with pytest.raises(EnvironmentProblem, match=r"devices \[2\] are outside the 2 GPU"):
        visible_devices([0, 2], {"CUDA_VISIBLE_DEVICES": "4,5"})


POINT = LoadPoint(point_id="c8", concurrency=8, isl=1024, osl=128, num_prompts=200,
                  num_warmups=4, extra_args=["--request-rate", "5"])
TARGET = Target(host="127.0.0.1", port=8123, served_model_name="m", tokenizer="/models/m",
                engine="vllm")


def test_vllm_bench_serve_command(tmp_path: Path) -> None:
    argv = bench_command(Client(VLLM, "vllm"), POINT, TARGET, tmp_path / "c8.json")

    joined = " ".join(argv)
    assert argv[:3] == ["vllm", "bench", "serve"]
    for part in ("--base-url http://127.0.0.1:8123", "--endpoint /v1/completions", "--model m",
                 "--tokenizer /models/m", "--dataset-name random", "--random-input-len 1024",
                 "--random-output-len 128", "--ignore-eos", "--num-prompts 200",
                 "--max-concurrency 8", "--num-warmups 4", "--save-result",
                 f"--result-dir {tmp_path}", "--result-filename c8.json",
                 "--percentile-metrics ttft,tpot,itl,e2el", "--metric-percentiles 50,90,99"):
        assert part in joined
    assert argv[-2:] == ["--request-rate", "5"]


def test_no_warmup_flag_without_warmups(tmp_path: Path) -> None:
    point = POINT.model_copy(update={"num_warmups": 0})

    assert "--num-warmups" not in bench_command(Client(VLLM, "vllm"), point, TARGET,
                                                tmp_path / "x.json")


def test_sglang_bench_serving_command(tmp_path: Path) -> None:
    argv = bench_command(Client(SGLANG, "python3"), POINT, TARGET, tmp_path / "c8.json")

    assert argv[:3] == ["python3", "-m", "sglang.bench_serving"]
    joined = " ".join(argv)
    for part in ("--port 8123", "--num-prompts 200", "--max-concurrency 8",
                 f"--output-file {tmp_path / 'c8.json'}", "--warmup-requests 4",
                 "--random-input-len 1024", "--random-output-len 128"):
        assert part in joined


@pytest.mark.parametrize(("engine", "vllm_bin", "requested", "expected"), [
    pytest.param("vllm", "/v/vllm", None, VLLM_CLIENT, id="vllm-engine-own-client"),
    pytest.param("sglang", "/v/vllm", None, SGLANG_CLIENT, id="sglang-engine-own-client-even-with-vllm"),
    pytest.param("sglang", None, None, SGLANG_CLIENT, id="sglang-image-without-vllm"),
    pytest.param("sglang", "/v/vllm", "vllm", VLLM_CLIENT, id="recipe-names-vllm-client"),
    pytest.param("vllm", "/v/vllm", "sglang", SGLANG_CLIENT, id="recipe-names-sglang-client"),
])
def test_a_job_uses_its_engines_own_client_unless_the_recipe_names_another(
        engine: str, vllm_bin: str | None, requested: str | None, expected: str) -> None:
    assert choose_client(_installed(vllm_bin, "python3"), engine, requested).name == expected


@pytest.mark.parametrize(("engine", "requested"), [
    pytest.param("vllm", None, id="vllm-engine-no-vllm"),
    pytest.param("sglang", "vllm", id="recipe-names-vllm-not-installed"),
])
def test_a_missing_vllm_client_is_an_error(engine: str, requested: str | None) -> None:
    with pytest.raises(FileNotFoundError, match="no benchmark client"):
        choose_client(_installed(None, "python3"), engine, requested)
