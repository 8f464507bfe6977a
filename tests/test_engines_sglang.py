"""SGLang behind the engine interface: launch_server, its flags, readiness, bench_serving, cache flush, version."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bot.core.settings import load_settings
from bot import engines
from bot.engines import Parallelism
from bot.engines.sglang import ENGINE as SGLANG
from bot.runner.load import reset_prefix_cache
from engine_helpers import POINT, program, recording_server, target


def test_sglang_is_registered_and_serves_inferencex_sglang_frameworks() -> None:
    assert engines.get("sglang") is SGLANG
    assert engines.for_framework("sglang-disagg") is SGLANG
    assert engines.for_framework("trt").name == engines.DEFAULT  # not ours: the default engine


def test_server_argv_is_launch_server_with_model_path() -> None:
    argv = SGLANG.server_argv("/opt/sgl/bin/python", model="/models/q", served="q", host="127.0.0.1",
                              port=30000, args=["--mem-fraction-static", "0.8"])
    assert argv == ["/opt/sgl/bin/python", "-m", "sglang.launch_server", "--model-path", "/models/q",
                    "--host", "127.0.0.1", "--port", "30000", "--served-model-name", "q",
                    "--mem-fraction-static", "0.8"]


@pytest.mark.parametrize(("parallelism", "flags"), [
    pytest.param(Parallelism(tp=2), ["--tp-size", "2"], id="tp-only"),
    pytest.param(Parallelism(tp=4, pp=2, ep=4), ["--tp-size", "4", "--pp-size", "2", "--ep-size", "4"],
                 id="pp-ep"),
    pytest.param(Parallelism(tp=8, dp_attn=True), ["--tp-size", "8", "--enable-dp-attention",
                                                   "--dp-size", "8"], id="dp-attention-defaults-to-tp"),
    pytest.param(Parallelism(tp=8, dp=4, dp_attn=True), ["--tp-size", "8", "--enable-dp-attention",
                                                         "--dp-size", "4"], id="dp-attention-with-dp"),
    pytest.param(Parallelism(tp=1, dp=2), ["--tp-size", "1", "--dp-size", "2"], id="plain-dp"),
])
def test_parallelism_flags(parallelism: Parallelism, flags: list[str]) -> None:
    assert SGLANG.parallel_args(parallelism) == flags


def test_readiness_is_health_and_models_and_no_extra_environment() -> None:
    assert SGLANG.ready_paths == ("/health", "/v1/models")
    assert SGLANG.server_env(reset_prefix_cache=True) == {}
    assert SGLANG.in_process_client  # sglang.bench_serving in the case's client process


def test_client_argv_is_bench_serving_with_random_ids(tmp_path: Path) -> None:
    argv = SGLANG.client_argv("python3", POINT, target("sglang"), tmp_path / "c8.json")
    assert argv[:3] == ["python3", "-m", "sglang.bench_serving"]
    joined = " ".join(argv)
    for part in ("--backend sglang-oai", "--host 127.0.0.1", "--port 8123", "--model m",
                 "--dataset-name random-ids", "--random-input-len 1024", "--random-output-len 128",
                 "--random-range-ratio 1.0", "--num-prompts 200", "--max-concurrency 8",
                 f"--output-file {tmp_path / 'c8.json'}", "--warmup-requests 4"):
        assert part in joined
    assert argv[-2:] == ["--request-rate", "5"]


def test_a_trace_point_replays_as_sharegpt(tmp_path: Path) -> None:
    point = POINT.model_copy(update={"dataset": "trace", "trace": "/data/t.json", "num_warmups": 0})
    args = SGLANG.client_args(point, target("sglang"), tmp_path / "t.json")
    assert args[args.index("--dataset-name") + 1:args.index("--dataset-name") + 4] == [
        "sharegpt", "--dataset-path", "/data/t.json"]
    assert "--warmup-requests" not in args


def test_cache_reset_posts_to_flush_cache() -> None:
    with recording_server(200) as (port, seen):
        assert reset_prefix_cache(target("sglang", port)) == "reset"
    assert seen == [("POST", "/flush_cache")]


def test_a_failed_flush_names_the_http_status() -> None:
    with recording_server(500) as (port, _):
        assert reset_prefix_cache(target("sglang", port)) == "no reset (HTTP 500)"


def test_version_is_the_last_line_the_python_prints_for_the_sglang_distribution(tmp_path: Path) -> None:
    python = program(tmp_path / "python", 'case "$2" in *sglang*) echo "note"; echo 0.5.17;; *) exit 1;; esac')
    assert SGLANG.version(python) == "0.5.17"
    assert SGLANG.version(str(tmp_path / "missing")) is None


def test_where_the_sglang_python_comes_from(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    named = {"RECIPE_BOT_SGLANG_PYTHON": "/opt/sgl/bin/python"}
    assert SGLANG.locate(tmp_path, named, load_settings(named)) == "/opt/sgl/bin/python"
    monkeypatch.setattr("importlib.util.find_spec", lambda name: object() if name == "sglang" else None)
    assert SGLANG.locate(tmp_path, {}, load_settings({})) == sys.executable
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    assert SGLANG.locate(tmp_path, {}, load_settings({})).endswith("python3")
