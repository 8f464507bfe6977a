"""Run an engine's benchmark-client points in one process: a script for the engine's own Python, not a module.

The runner starts `ENGINE_PYTHON bench_driver.py ENGINE` once per case (bot/runner/inprocess.py),
so the client's library is imported once instead of once a point: vLLM's `vllm.benchmarks.serve`
(vLLM and torch, about 7.5 s a point on 2 CPU cores, about 20 s on an H200 host) or SGLang's
`sglang.bench_serving` (transformers and SGLang's own modules, 20-25 s a point on an H200 host). It
imports only the engine's library, never anything of recipe-bot: the engine's virtual environment
does not have it, and the control plane never imports this file.

Protocol, one JSON object a line. The driver's first line on stdout is {"ready": true} once the
library is imported, or {"ready": false, "error": "..."} and exit 2 (the runner then falls back to
one client process a point). Then for each line on stdin,
{"argv": [the arguments after the client's command], "log": "path"}, it runs that point exactly as
the client's command would (`vllm bench serve ARGV`: the same parser and `main`; `python -m
sglang.bench_serving ARGV`: the module run as __main__ with that argv, so its own parser and entry
point whatever its layout), with its stdout and stderr appended to the log, and answers {"rc": N}:
0 done, else the exit code the command would have had. End of stdin ends the driver at once
(os._exit: the engine's libraries are not torn down).

Two knobs for measuring the client itself (docs/gpu-runs/, issue #22), off by default:
RECIPE_BOT_CLIENT_PAUSE_S waits that many seconds before each point, as long as a process-a-point
client's start-up would; RECIPE_BOT_CLIENT_FORK=1 runs each point in a child forked from the driver
once the library is imported, so every point starts in a fresh process without importing again.
"""
from __future__ import annotations

import json
import os
import sys
import time
import traceback

PAUSE_ENV = "RECIPE_BOT_CLIENT_PAUSE_S"
FORK_ENV = "RECIPE_BOT_CLIENT_FORK"


def _reply(channel, message: dict) -> None:
    channel.write(json.dumps(message) + "\n")
    channel.flush()


def _load_vllm():
    """`vllm bench serve ARGV` as a function: vLLM's own parser and entry point, set up as its CLI sets them up."""
    # `vllm` (entrypoints/cli/main.py) sets these before any subcommand; do the same.
    os.environ.setdefault("VLLM_WORKER_MULTIPROC_METHOD", "spawn")
    # vLLM is imported here, not at the top: this file runs under the engine's own Python, after the
    # environment above is set, and the bot's own interpreter never has vLLM.
    from vllm.benchmarks.serve import add_cli_args, main

    try:
        from vllm.utils.argparse_utils import FlexibleArgumentParser as Parser
    except ImportError:  # older or newer layouts: the plain parser reads the same flags
        from argparse import ArgumentParser as Parser
    try:  # `vllm bench` on a machine without a GPU: the CPU platform, as the CLI picks it
        from vllm import platforms

        if platforms.current_platform.is_unspecified():
            from vllm.platforms.cpu import CpuPlatform

            platforms.current_platform = CpuPlatform()
    except Exception:  # noqa: BLE001 - only a fallback of the CLI's; the point decides
        pass

    def run(argv: list[str]) -> None:
        parser = Parser(prog="vllm bench serve")
        add_cli_args(parser)
        main(parser.parse_args(argv))

    return run


SGLANG_CLIENT = "sglang.bench_serving"


def _load_sglang():
    """`python -m sglang.bench_serving ARGV` as a function. Its parser is built inside its entry
    point (`cli_main()` of sglang.benchmark.serving since 0.5.x, the `if __name__ == "__main__"`
    block before), so the module is run as __main__ with that argv, as `-m` runs it: the same parser
    and entry point in every layout. Importing it first pulls in transformers, aiohttp, numpy and
    SGLang's own modules once; running it again per point re-executes only its own top level."""
    import importlib
    import runpy

    importlib.import_module(SGLANG_CLIENT)

    def run(argv: list[str]) -> None:
        saved = sys.argv
        sys.argv = [SGLANG_CLIENT, *argv]  # runpy sets argv[0] to the module's file, as -m does
        try:
            runpy.run_module(SGLANG_CLIENT, run_name="__main__", alter_sys=True)
        finally:
            sys.argv = saved

    return run


LOADERS = {"vllm": _load_vllm, "sglang": _load_sglang}


def _run_point(run, argv: list[str]) -> int:
    try:
        run(argv)
    except SystemExit as exc:  # argparse errors and the library's own exits
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except BaseException:  # noqa: BLE001 - the CLI would print the traceback and exit 1
        traceback.print_exc()
        return 1
    return 0


def _run_point_in_child(run, argv: list[str]) -> int:
    """The point in a child forked from this process: its own fresh process state, the imports shared."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = _run_point(run, argv)
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    return code if code >= 0 else 1  # killed by a signal: failed, as the CLI's process would be


def _knobs() -> tuple[float, bool]:
    # the edge of these two settings: this script runs in the engine's Python, which has no recipe-bot (so no
    # settings model); an unreadable pause counts as none, as it only measures the client
    try:
        pause = max(0.0, float(os.environ.get(PAUSE_ENV, "0") or 0))
    except ValueError:
        pause = 0.0
    return pause, os.environ.get(FORK_ENV, "0").strip().lower() in ("1", "true", "yes", "on")


def serve_points(engine: str = "vllm", stdin=sys.stdin) -> int:
    # Replies go to a private copy of stdout; fd 1 and 2 point at each point's log while it runs,
    # so whatever vLLM prints (Python, C, child processes) lands where the per-point client's went.
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    try:
        if engine not in LOADERS:
            raise LookupError(f"no in-process client for engine {engine!r}: expected one of {', '.join(LOADERS)}")
        client = LOADERS[engine]()
    except BaseException as exc:  # noqa: BLE001 - any failure to import means: fall back
        _reply(channel, {"ready": False, "error": f"{type(exc).__name__}: {exc}"})
        return 2
    _reply(channel, {"ready": True})
    pause, fork = _knobs()
    run_point = _run_point_in_child if fork else _run_point
    saved_err = os.dup(2)
    for line in stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if pause:
            time.sleep(pause)
        sys.stdout.flush()
        sys.stderr.flush()
        log = os.open(request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        try:
            rc = run_point(client, list(request["argv"]))
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(null, 1)
            os.dup2(saved_err, 2)
        _reply(channel, {"rc": rc})
    return 0


if __name__ == "__main__":
    # `python bench_driver.py` puts bot/runner/ first on sys.path: its modules (retry.py, metrics.py,
    # server.py, ...) would shadow packages of the same name in the engine's environment.
    if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(os.path.abspath(__file__)):
        del sys.path[0]
    code = serve_points(sys.argv[1] if len(sys.argv) > 1 else "vllm")
    sys.stdout.flush()
    sys.stderr.flush()
    # Every point is answered and its log written. What is left is the interpreter's own exit,
    # which with torch, transformers and the engine's client imported took 2.1 s on an H200 host
    # (docs/gpu-runs/2026-12-02-inprocess-clients: the case's GPU is held until the driver is gone,
    # and the teardown waits for it). Nothing of this process needs its atexit handlers, so leave now.
    os._exit(code)
