"""Run `vllm bench serve` points in one process: a script for the engine's own Python, not a module.

The runner starts `ENGINE_PYTHON vllm_bench_driver.py` once per case (bot/runner/inprocess.py),
so vLLM and torch are imported once instead of once a point (about 7.5 s a point on 2 CPU cores).
It imports vLLM's benchmark library (`vllm.benchmarks.serve`), never anything of recipe-bot: the
engine's virtual environment does not have it, and the control plane never imports this file.

Protocol, one JSON object a line. The driver's first line on stdout is {"ready": true} once the
library is imported, or {"ready": false, "error": "..."} and exit 2 (the runner then falls back to
one `vllm bench serve` process a point). Then for each line on stdin,
{"argv": [the arguments after `vllm bench serve`], "log": "path"}, it runs that point exactly as
`vllm bench serve ARGV` would (same parser, same `main`, so the same raw result file), with its
stdout and stderr appended to the log, and answers {"rc": N}: 0 done, else the exit code the CLI
would have had. End of stdin ends the driver.
"""
from __future__ import annotations

import json
import os
import sys
import traceback


def _reply(channel, message: dict) -> None:
    channel.write(json.dumps(message) + "\n")
    channel.flush()


def _load():
    """vLLM's own parser and entry point of `vllm bench serve`, set up as its CLI sets them up."""
    # `vllm` (entrypoints/cli/main.py) sets these before any subcommand; do the same.
    os.environ.setdefault("VLLM_WORKER_MULTIPROC_METHOD", "spawn")
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

    def parse(argv: list[str]):
        parser = Parser(prog="vllm bench serve")
        add_cli_args(parser)
        return parser.parse_args(argv)

    return parse, main


def _run_point(parse, main, argv: list[str]) -> int:
    try:
        main(parse(argv))
    except SystemExit as exc:  # argparse errors and the library's own exits
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except BaseException:  # noqa: BLE001 - the CLI would print the traceback and exit 1
        traceback.print_exc()
        return 1
    return 0


def serve_points(stdin=sys.stdin) -> int:
    # Replies go to a private copy of stdout; fd 1 and 2 point at each point's log while it runs,
    # so whatever vLLM prints (Python, C, child processes) lands where the per-point client's went.
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    try:
        parse, main = _load()
    except BaseException as exc:  # noqa: BLE001 - any failure to import means: fall back
        _reply(channel, {"ready": False, "error": f"{type(exc).__name__}: {exc}"})
        return 2
    _reply(channel, {"ready": True})
    saved_err = os.dup(2)
    for line in stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        log = os.open(request["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(log)
        try:
            rc = _run_point(parse, main, list(request["argv"]))
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(null, 1)
            os.dup2(saved_err, 2)
        _reply(channel, {"rc": rc})
    return 0


if __name__ == "__main__":
    sys.exit(serve_points())
