"""SGLang: `python -m sglang.launch_server` and its benchmark client `python -m sglang.bench_serving`."""
from __future__ import annotations

import importlib.util
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType

from bot.core.settings import Settings
from bot.engines import METADATA_VERSION, BenchPoint, Engine, Parallelism, Target, register, run_for_line

PYTHON_ENV = "RECIPE_BOT_SGLANG_PYTHON"  # the Python that has SGLang, where set


class SGLang(Engine):
    name = "sglang"
    title = "SGLang"
    client = "sglang.bench_serving"
    cache_reset_path = "/flush_cache"
    framework_token = "sglang"
    # sglang.bench_serving runs in the case's client process (bot/runner/bench_driver.py), under
    # the Python that has SGLang: the engine's own program.
    in_process_client = True
    session_python_env = PYTHON_ENV
    result_names = MappingProxyType({"e2el": "e2e_latency"})  # sglang.bench_serving's name for end-to-end latency

    def locate(self, repo: Path, env: Mapping[str, str], settings: Settings) -> str | None:
        """The Python that has SGLang: RECIPE_BOT_SGLANG_PYTHON, else this one where
        `recipe-bot[sglang]` installed SGLang beside the runner, else python3 on PATH."""
        if settings.SGLANG_PYTHON:
            return settings.SGLANG_PYTHON
        if importlib.util.find_spec("sglang") is not None:  # looked up, never imported
            return sys.executable
        return shutil.which("python3") or "python3"

    def server_argv(self, program: str, *, model: str, served: str, host: str, port: int,
                    args: Sequence[str]) -> list[str]:
        return [program, "-m", "sglang.launch_server", "--model-path", model, "--host", host,
                "--port", str(port), "--served-model-name", served, *args]

    def parallel_args(self, parallelism: Parallelism) -> list[str]:
        p = parallelism
        args = ["--tp-size", str(p.tp)]
        args += ["--pp-size", str(p.pp)] if p.pp > 1 else []
        args += ["--ep-size", str(p.ep)] if p.ep > 1 else []
        if p.dp_attn:
            args += ["--enable-dp-attention", "--dp-size", str(p.dp if p.dp > 1 else p.tp)]
        elif p.dp > 1:
            args += ["--dp-size", str(p.dp)]
        return args

    def client_command(self, program: str) -> list[str]:
        return [program, "-m", "sglang.bench_serving"]

    def client_args(self, point: BenchPoint, target: Target, result_file: Path,
                    seed: int = 0) -> list[str]:
        if point.dataset == "trace":
            dataset = ["--dataset-name", "sharegpt", "--dataset-path", point.trace or ""]
        else:
            # random-ids needs no ShareGPT download, which an offline runner cannot make.
            dataset = ["--dataset-name", "random-ids", "--random-input-len", str(point.isl),
                       "--random-output-len", str(point.osl),
                       "--random-range-ratio", str(point.random_range_ratio or 1.0)]
        args = ["--backend", "sglang-oai", "--host", target.host, "--port", str(target.port),
                "--model", target.served_model_name, "--tokenizer", target.tokenizer, *dataset,
                "--num-prompts", str(point.num_prompts), "--max-concurrency", str(point.concurrency),
                "--seed", str(seed), "--output-file", str(result_file), "--disable-tqdm"]
        if point.num_warmups:
            args += ["--warmup-requests", str(point.num_warmups)]
        return args + list(point.extra_args)

    def session_python(self, program: str, settings: Settings) -> str | None:
        """The Python the client runs under: the program itself (`PYTHON -m sglang.bench_serving`)."""
        return program

    def version(self, program: str) -> str | None:
        return run_for_line([program, "-c", METADATA_VERSION.format("sglang")], 30.0)


ENGINE = register(SGLang())
