"""`sglang.benchmark.serving` of the stand-in, with sglang 0.5.17's interface: a module-level
`args` that `run_benchmark(args_)` sets, and `cli_main()` that parses sys.argv with the flags the
runner passes (an unknown flag is an argparse error, exit 2, as in SGLang) and runs the benchmark,
which appends one JSON line with SGLang's keys to --output-file.

FAKE_CLIENT_CRASH_AT=N makes the N-th point of a process end the process (os._exit(9)), as a crash
inside the library would; FAKE_CLIENT_IMPORT_ERROR=1 makes importing this module fail.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from argparse import ArgumentParser
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

if os.environ.get("FAKE_CLIENT_IMPORT_ERROR") == "1":
    raise ImportError("fake: sglang.benchmark.serving is broken here")

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # tests/fake_servers, for fake_vllm
import fake_vllm  # noqa: E402

global args
_calls = {"n": 0}


def run_benchmark(args_: argparse.Namespace) -> dict:
    global args
    args = args_
    _calls["n"] += 1
    if os.environ.get("FAKE_CLIENT_CRASH_AT") == str(_calls["n"]):
        print("fake: the benchmark library crashed", flush=True)
        os._exit(9)
    base_url = f"http://{args.host}:{args.port}"
    run = [base_url, args.model, args.random_input_len, args.random_output_len]
    for _ in range(args.warmup_requests):
        fake_vllm._one_request(*run)
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=args.max_concurrency) as pool:
        outputs = list(pool.map(lambda _: fake_vllm._one_request(*run), range(args.num_prompts)))
    duration = time.perf_counter() - started
    good = [o for o in outputs if o["ok"]]
    if not good:
        print("Error running benchmark for request rate: inf")
        sys.exit(1)
    total_in, total_out = sum(o["isl"] for o in good), sum(o["osl"] for o in good)
    result = {"backend": args.backend, "dataset_name": args.dataset_name,
              "max_concurrency": args.max_concurrency, "duration": duration,
              "completed": len(good), "total_input_tokens": total_in, "total_output_tokens": total_out,
              "request_throughput": len(good) / duration, "input_throughput": total_in / duration,
              "output_throughput": total_out / duration,
              "total_throughput": (total_in + total_out) / duration,
              "fake_client_pid": os.getpid()}  # which process ran the point (in-process tests)
    for name, key in (("ttft", "ttft"), ("tpot", "tpot"), ("itl", "tpot"), ("e2e_latency", "e2el")):
        values = sorted(o[key] for o in good)
        result[f"mean_{name}_ms"] = statistics.fmean(values)
        result[f"median_{name}_ms"] = statistics.median(values)
        result[f"std_{name}_ms"] = statistics.pstdev(values)
        result[f"p99_{name}_ms"] = values[min(len(values) - 1, int(round(0.99 * (len(values) - 1))))]
    with open(args.output_file, "a") as file:
        file.write(json.dumps(result) + "\n")
    print(f"Successful requests: {len(good)}")
    return result


def cli_main() -> None:
    parser = ArgumentParser(description="Benchmark the online serving throughput.")
    parser.add_argument("--backend", default="sglang", choices=["sglang", "sglang-oai", "vllm"])
    parser.add_argument("--host", default="0.0.0.0")
    parser.add_argument("--port", type=int)
    parser.add_argument("--model")
    parser.add_argument("--tokenizer")
    parser.add_argument("--dataset-name", default="sharegpt", choices=["sharegpt", "random", "random-ids"])
    parser.add_argument("--dataset-path", default="")
    parser.add_argument("--random-input-len", type=int, default=1024)
    parser.add_argument("--random-output-len", type=int, default=1024)
    parser.add_argument("--random-range-ratio", type=float, default=0.0)
    parser.add_argument("--num-prompts", type=int, default=1000)
    parser.add_argument("--max-concurrency", type=int, default=None)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--output-file")
    parser.add_argument("--disable-tqdm", action="store_true")
    parser.add_argument("--warmup-requests", type=int, default=1)
    args = parser.parse_args()
    run_benchmark(args)


if __name__ == "__main__":
    cli_main()
