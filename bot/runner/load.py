"""Load through the engine's own client: `vllm bench serve` or `python -m sglang.bench_serving`."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bot.core.jobs import LoadPoint
from bot.core.results import PointResult
from bot.runner.inprocess import DRIVER, DriverGone, InProcessClient
from bot.runner.metrics import BenchResultError, load_raw, parse_bench_result
from bot.runner.server import OWN_GROUP, InferenceServer, die_with_runner, http_status, tail_lines

VLLM_CLIENT = "vllm bench serve"
SGLANG_CLIENT = "sglang.bench_serving"
CLIENT_GRACE_S = 5.0


@dataclass(frozen=True)
class Target:
    """The server a client talks to."""

    host: str
    port: int
    served_model_name: str
    tokenizer: str
    engine: str

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"


@dataclass(frozen=True)
class Client:
    name: str  # VLLM_CLIENT or SGLANG_CLIENT
    program: str  # the vllm binary, or the Python that has SGLang


def choose_client(engine: str, vllm_bin: str | None, sglang_python: str,
                  requested: str | None = None) -> Client:
    """The servers' own engine's client, unless the recipe names another (workload.client).

    An SGLang job benchmarks with `python -m sglang.bench_serving`, a vLLM job with `vllm bench
    serve`: each engine's figures come from the client its own project publishes numbers with.
    """
    wanted = requested or engine
    if wanted == "vllm":
        if vllm_bin is None:
            raise FileNotFoundError(
                "no benchmark client: the job asks for `vllm bench serve` but vLLM is not installed "
                "here (set RECIPE_BOT_VLLM or put `vllm` on PATH)")
        return Client(VLLM_CLIENT, vllm_bin)
    if wanted == "sglang":
        return Client(SGLANG_CLIENT, sglang_python)
    raise FileNotFoundError(f"no benchmark client for engine {wanted!r}: expected vllm or sglang")


def safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "x"


def _dataset_args(point: LoadPoint) -> list[str]:
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


def vllm_bench_command(client: Client, point: LoadPoint, target: Target, result_file: Path,
                       seed: int = 0) -> list[str]:
    argv = [client.program, "bench", "serve", "--backend", "openai",
            "--base-url", target.base_url, "--endpoint", "/v1/completions",
            "--model", target.served_model_name, "--tokenizer", target.tokenizer,
            *_dataset_args(point),
            "--num-prompts", str(point.num_prompts), "--max-concurrency", str(point.concurrency),
            # --save-detailed keeps per-request TTFT and ITL: the report's interval needs them.
            "--seed", str(seed), "--save-result", "--save-detailed",
            "--result-dir", str(result_file.parent), "--result-filename", result_file.name,
            "--percentile-metrics", "ttft,tpot,itl,e2el", "--metric-percentiles", "50,90,99",
            "--disable-tqdm"]
    if point.num_warmups:
        argv += ["--num-warmups", str(point.num_warmups)]
    return argv + list(point.extra_args)


def sglang_bench_command(client: Client, point: LoadPoint, target: Target, result_file: Path,
                         seed: int = 0) -> list[str]:
    if point.dataset == "trace":
        dataset = ["--dataset-name", "sharegpt", "--dataset-path", point.trace or ""]
    else:
        # random-ids needs no ShareGPT download, which an offline runner cannot make.
        dataset = ["--dataset-name", "random-ids", "--random-input-len", str(point.isl),
                   "--random-output-len", str(point.osl),
                   "--random-range-ratio", str(point.random_range_ratio or 1.0)]
    argv = [client.program, "-m", "sglang.bench_serving", "--backend", "sglang-oai",
            "--host", target.host, "--port", str(target.port),
            "--model", target.served_model_name, "--tokenizer", target.tokenizer, *dataset,
            "--num-prompts", str(point.num_prompts), "--max-concurrency", str(point.concurrency),
            "--seed", str(seed), "--output-file", str(result_file), "--disable-tqdm"]
    if point.num_warmups:
        argv += ["--warmup-requests", str(point.num_warmups)]
    return argv + list(point.extra_args)


def bench_command(client: Client, point: LoadPoint, target: Target, result_file: Path,
                  seed: int = 0) -> list[str]:
    if client.name == VLLM_CLIENT:
        return vllm_bench_command(client, point, target, result_file, seed)
    return sglang_bench_command(client, point, target, result_file, seed)


def reset_prefix_cache(target: Target) -> str:
    """Empty the server's prefix cache between points; engines without the endpoint are fine."""
    path = "/reset_prefix_cache" if target.engine == "vllm" else "/flush_cache"
    status = http_status(target.base_url + path, timeout_s=30.0, method="POST")
    if status == 200:
        return "reset"
    return "not supported" if status in (404, 405) else f"no reset (HTTP {status})"


def _stop_group(process: subprocess.Popen) -> None:
    """Stop a client's process group: SIGTERM, a short grace, SIGKILL; then sweep stragglers."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=CLIENT_GRACE_S)
        except ProcessLookupError:
            pass
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=CLIENT_GRACE_S)
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _run_process(argv: list[str], log_file: Path, env: Mapping[str, str],
                 watch: Callable[[], None]) -> int:
    """The point as its own client process (`vllm bench serve ...`, `python -m sglang...`)."""
    with log_file.open("wb") as log:
        log.write(f"# recipe-bot: {' '.join(argv)}\n".encode())
        log.flush()
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                   stderr=subprocess.STDOUT, env=dict(env), **OWN_GROUP,
                                   preexec_fn=die_with_runner())
    try:
        while process.poll() is None:
            watch()
            time.sleep(0.2)
    finally:
        _stop_group(process)
    return process.returncode


def _run_in_session(session: InProcessClient, argv: list[str], log_file: Path,
                    watch: Callable[[], None]) -> int:
    """The point in the case's client process: the same arguments after `vllm bench serve`."""
    with log_file.open("wb") as log:
        log.write(f"# recipe-bot: {' '.join(argv)}\n# recipe-bot: run in process by "
                  f"{session.python} {DRIVER.name}\n".encode())
    return session.run(argv[3:], log_file, watch)


def run_point(point: LoadPoint, *, client: Client, target: Target,
              servers: Sequence[InferenceServer], out_dir: Path, case_dir: Path, gpus: int,
              env: Mapping[str, str], tick: Callable[[str], None], repeat: int = 0,
              session: InProcessClient | None = None) -> PointResult:
    """Run one point (its `repeat`-th run: seed and file names) against a ready server, in the
    case's client process when `session` is given, else as a client process of its own.
    A dead server raises ServerDied; the rest is data."""
    points_dir = case_dir / "points"
    points_dir.mkdir(parents=True, exist_ok=True)
    stem = safe_name(point.point_id) + (f".r{repeat}" if repeat else "")
    result_file = points_dir / f"{stem}.json"
    log_file = points_dir / f"{stem}.log"
    result_file.unlink(missing_ok=True)  # sglang appends: start from nothing
    argv = bench_command(client, point, target, result_file, seed=repeat)
    base = PointResult(point_id=point.point_id, concurrency=point.concurrency, isl=point.isl,
                       osl=point.osl, status="failed", client=client.name, client_process="point")

    def watch() -> None:
        for server in servers:
            server.check_alive(f"during point {point.point_id!r}")
        tick(f"running point {point.point_id!r}")

    returncode = None
    if session is not None and session.alive and client.name == VLLM_CLIENT:
        try:
            returncode = _run_in_session(session, argv, log_file, watch)
            base = base.model_copy(update={"client_process": "case"})
        except DriverGone:  # the library crashed under this point: run it the usual way
            session.close()
    if returncode is None:
        returncode = _run_process(argv, log_file, env, watch)
    # The server may have died at the very end; the client's figures would then be partial.
    for server in servers:
        server.check_alive(f"during point {point.point_id!r}")
    if returncode != 0:
        last = tail_lines(log_file, 1) or "(no output)"
        return base.model_copy(update={
            "reason": f"{client.name} exited with code {returncode}: {last}"})
    if not result_file.exists():
        return base.model_copy(update={"reason": f"{client.name} wrote no result file"})
    raw_rel = str(result_file.relative_to(out_dir))
    try:
        metrics = parse_bench_result(load_raw(result_file), gpus=gpus,
                                     expected_requests=point.num_prompts, source=raw_rel)
    except BenchResultError as exc:
        return base.model_copy(update={"reason": str(exc), "raw_result_file": raw_rel})
    reason = None
    if metrics.completed == 0:
        reason = "no request completed"
    elif metrics.failed:
        reason = f"{metrics.failed} of {metrics.completed + metrics.failed} requests failed"
    return base.model_copy(update={"status": "failed" if reason else "passed", "reason": reason,
                                   "metrics": metrics, "raw_result_file": raw_rel})

