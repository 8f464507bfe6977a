"""`vllm.benchmarks.serve` of the stand-in: fake_vllm.py's load client behind vLLM's two names.

FAKE_CLIENT_CRASH_AT=N makes the N-th point of a process end the process (os._exit(9)), as a
crash inside the library would; FAKE_CLIENT_IMPORT_ERROR=1 makes importing this module fail.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

if os.environ.get("FAKE_CLIENT_IMPORT_ERROR") == "1":
    raise ImportError("fake: vllm.benchmarks.serve is broken here")

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # tests/fake_servers, for fake_vllm
import fake_vllm  # noqa: E402

_calls = {"n": 0}


def add_cli_args(parser: argparse.ArgumentParser) -> None:
    # fake_vllm.bench parses its own flags (and ignores the rest): hand it the argv untouched.
    parser.parse_args = lambda argv=None, namespace=None: argparse.Namespace(argv=list(argv))


def main(args: argparse.Namespace) -> dict:
    _calls["n"] += 1
    if os.environ.get("FAKE_CLIENT_CRASH_AT") == str(_calls["n"]):
        print("fake: the benchmark library crashed", flush=True)
        os._exit(9)
    if fake_vllm.bench(args.argv) != 0:
        raise SystemExit(1)
    return {}
