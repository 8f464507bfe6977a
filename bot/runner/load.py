"""Load through an engine's own benchmark client (bot.engines: `vllm bench serve`, `sglang.bench_serving`)."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bot import engines
from bot.engines import Engine, Installed, Target
from bot.core.jobs import LoadPoint
from bot.core.messages import Message, msg
from bot.core.results import PointResult
from bot.runner.inprocess import DRIVER, DriverGone, InProcessClient
from bot.runner.metrics import BenchResultError, load_raw, parse_bench_result
from bot.runner.rawfile import complete_raw_file
from bot.runner.server import OWN_GROUP, InferenceServer, die_with_runner, http_status, tail_lines

CLIENT_GRACE_S = 5.0


@dataclass(frozen=True)
class Client:
    engine: Engine  # whose benchmark client
    program: str  # the program its command starts with (the vllm binary, the Python that has SGLang)

    @property
    def name(self) -> str:
        return self.engine.client


def choose_client(installed: Mapping[str, Installed], engine: str,
                  requested: str | None = None) -> Client:
    """The servers' own engine's client, unless the recipe names another (workload.client).

    An SGLang job benchmarks with `python -m sglang.bench_serving`, a vLLM job with `vllm bench
    serve`: each engine's figures come from the client its own project publishes numbers with.
    """
    wanted = requested or engine
    if wanted not in installed:
        raise FileNotFoundError(msg("no benchmark client for engine %(engine)s: expected %(accepted)s",
                                    engine=repr(wanted), accepted=engines.accepted()))
    found = installed[wanted]
    if found.program is None:
        raise FileNotFoundError(found.engine.missing_client
                                or msg("no benchmark client: %(engine)s is not installed here",
                                       engine=found.engine.title))
    return Client(found.engine, found.program)


def safe_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "x"


def bench_command(client: Client, point: LoadPoint, target: Target, result_file: Path,
                  seed: int = 0) -> list[str]:
    return client.engine.client_argv(client.program, point, target, result_file, seed)


def reset_prefix_cache(target: Target) -> str:
    """Empty the server's prefix cache between points; engines without the endpoint are fine."""
    path = engines.get(target.engine).cache_reset_path
    if path is None:
        return "not supported"
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


def _run_in_session(session: InProcessClient, argv: list[str], args: list[str], log_file: Path,
                    watch: Callable[[], None]) -> int:
    """The point in the case's client process: the same arguments after the client's command."""
    with log_file.open("wb") as log:
        log.write(f"# recipe-bot: {' '.join(argv)}\n# recipe-bot: run in process by "
                  f"{session.python} {DRIVER.name}\n".encode())
    return session.run(args, log_file, watch)


def run_point(point: LoadPoint, *, client: Client, target: Target,
              servers: Sequence[InferenceServer], out_dir: Path, case_dir: Path, gpus: int,
              env: Mapping[str, str], tick: Callable[[Message], None], repeat: int = 0,
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
    args = client.engine.client_args(point, target, result_file, seed=repeat)
    argv = [*client.engine.client_command(client.program), *args]
    base = PointResult(point_id=point.point_id, concurrency=point.concurrency, isl=point.isl,
                       osl=point.osl, status="failed", client=client.name, client_process="point")

    def watch() -> None:
        for server in servers:
            server.check_alive(msg("during point %(point)s", point=repr(point.point_id)))
        tick(msg("running point %(point)s", point=repr(point.point_id)))

    returncode = None
    if session is not None and session.alive and session.engine is client.engine:
        try:
            returncode = _run_in_session(session, argv, args, log_file, watch)
            base = base.model_copy(update={"client_process": "case"})
        except DriverGone:  # the library crashed under this point: run it the usual way
            session.close()
    if returncode is None:
        returncode = _run_process(argv, log_file, env, watch)
    result = _point_result(point, base, returncode, client=client, target=target,
                           result_file=result_file, log_file=log_file, out_dir=out_dir, gpus=gpus)
    # The server may have died at the very end; the client's figures would then be partial. The one
    # the client talked to may have crashed under a failed point and still be exiting: it settles.
    during = msg("during point %(point)s", point=repr(point.point_id))
    for server in servers:
        if result.status != "passed" and server.port == target.port:
            server.check_alive_settled(during)
        else:
            server.check_alive(during)
    return result


def _point_result(point: LoadPoint, base: PointResult, returncode: int, *, client: Client,
                  target: Target, result_file: Path, log_file: Path, out_dir: Path,
                  gpus: int) -> PointResult:
    """What the client's exit code and result file say of the point."""
    if returncode != 0:
        last = tail_lines(log_file, 1) or "(no output)"
        return base.model_copy(update={
            "reason": msg("%(client)s exited with code %(code)s: %(last)s", client=client.name, code=returncode,
                          last=last)})
    if not result_file.exists():
        return base.model_copy(update={"reason": msg("%(client)s wrote no result file", client=client.name)})
    raw_rel = str(result_file.relative_to(out_dir))
    try:
        raw = load_raw(result_file)
        try:  # InferenceX's process_result.py reads the file as its own client's (bot/runner/rawfile.py)
            raw = complete_raw_file(result_file, raw, model_id=target.served_model_name)
        except OSError as exc:
            raise BenchResultError(f"{raw_rel}: cannot complete the client's result file ({exc})") from exc
        metrics = parse_bench_result(raw, gpus=gpus,
                                     expected_requests=point.num_prompts, source=raw_rel,
                                     client_names=client.engine.result_names)
    except BenchResultError as exc:
        return base.model_copy(update={"reason": str(exc), "raw_result_file": raw_rel})
    reason = None
    if metrics.completed == 0:
        reason = msg("no request completed")
    elif metrics.failed:
        reason = msg("%(failed)s of %(total)s requests failed", failed=metrics.failed,
                     total=metrics.completed + metrics.failed)
    return base.model_copy(update={"status": "failed" if reason else "passed", "reason": reason,
                                   "metrics": metrics, "raw_result_file": raw_rel})

