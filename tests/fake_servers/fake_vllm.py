#!/usr/bin/env python3
"""A stand-in for the `vllm` command with scripted faults, for the runner's lifecycle tests.

`fake_vllm.py serve MODEL --port P ...` runs a small OpenAI-ish HTTP server whose behaviour
FAKE_SERVER_MODE picks (see MODES); `fake_vllm.py bench serve ...` is a minimal load client that
writes a result file with `vllm bench serve`'s keys; `fake_vllm.py --version` prints a version.
Standard library only, so it runs under any python3. Every wait is bounded: a stand-in left
behind by a broken runner still exits on its own within LIFETIME_S.
"""
from __future__ import annotations

import argparse
import http.client
import json
import os
import signal
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

MODES = (
    "ok",                   # healthy server
    "exit_during_startup",  # logs a traceback and exits 3 before it is ready
    "never_ready",          # listens, but /health answers 503 forever
    "die_mid_benchmark",    # exits 7 after FAKE_DIE_AFTER completions
    "ignore_sigterm",       # healthy, but SIGTERM is ignored: only SIGKILL stops it
    "child_holds_port",     # forks a child that leaves the group (setsid) and keeps the port
    "fail_requests",        # healthy, but every completion answers HTTP 500
    "gpu_leak",             # healthy, but leaves an untagged process holding GPU memory (GPU only)
    "strict_args",          # like `vllm serve`: an unknown flag prints usage and exits 2
)
LIFETIME_S = 120.0
TOKEN_S = float(os.environ.get("FAKE_TOKEN_S", "0.002"))
DIE_SLOWLY_S = float(os.environ.get("FAKE_DIE_SLOWLY_S", "0"))  # die_mid_benchmark: silent this long, then exit


def log(message: str) -> None:
    print(f"[fake-vllm pid={os.getpid()}] {message}", flush=True)


def _answers() -> dict[str, str]:
    path = os.environ.get("FAKE_GSM8K_ANSWERS")
    return json.loads(Path(path).read_text()) if path else {}


def make_handler(mode: str, served: str, state: dict) -> type[BaseHTTPRequestHandler]:
    answers = _answers()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, fmt: str, *args: object) -> None:
            log(fmt % args)

        def _json(self, status: int, body: object) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            if self.path == "/health":
                self._json(503 if mode == "never_ready" else 200, {})
            elif self.path == "/v1/models":
                self._json(200, {"data": [{"id": served, "object": "model"}]})
            else:
                self._json(404, {"error": "not found"})

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            if self.path != "/v1/completions":
                self._json(404, {"error": "not found"})
                return
            if mode == "fail_requests":
                self._json(500, {"error": "fake engine error"})
                return
            max_tokens = int(body.get("max_tokens", 16))
            time.sleep(TOKEN_S * max_tokens)
            prompt = body.get("prompt", "")
            question = prompt.rsplit("Question: ", 1)[-1].removesuffix("\nAnswer:")
            text = answers.get(question, " " + "tok " * max_tokens)
            self._json(200, {"choices": [{"index": 0, "text": text, "finish_reason": "length"}],
                             "usage": {"prompt_tokens": len(prompt.split()),
                                       "completion_tokens": max_tokens}})
            with state["lock"]:
                state["served"] += 1
                if mode == "die_mid_benchmark" and state["served"] >= state["die_after"]:
                    log("simulated crash in the middle of the benchmark")
                    if not DIE_SLOWLY_S:
                        os._exit(7)
                    # An engine that crashed stops answering at once, but its process takes a while to go.
                    state["dying"] = True
                    threading.Timer(DIE_SLOWLY_S, os._exit, (7,)).start()

        def handle_one_request(self) -> None:
            if state.get("dying"):  # drop the connection unanswered
                self.close_connection = True
                return
            super().handle_one_request()

    return Handler


def _leave_gpu_leak() -> None:
    """Start a process that holds 1 GiB of GPU memory in a new session with a clean environment,
    so nothing ties it to the runner's run; return once it holds the memory."""
    pid_file = Path(os.environ.get("FAKE_LEAK_PID_FILE", "/tmp/fake-gpu-leak.pid"))
    pid_file.unlink(missing_ok=True)
    if os.fork() == 0:
        os.setsid()
        code = ("import os, sys, time, torch; x = torch.ones(1 << 30, dtype=torch.uint8, "
                "device='cuda'); torch.cuda.synchronize(); "
                "open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(60)")
        os.execve(sys.executable, [sys.executable, "-c", code, str(pid_file)],
                  {"PATH": os.environ.get("PATH", "")})
    deadline = time.monotonic() + 60
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    log(f"left pid {pid_file.read_text() if pid_file.exists() else '?'} holding GPU memory")


def serve(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="fake_vllm.py serve")
    parser.add_argument("model")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--served-model-name", default=None)
    mode = os.environ.get("FAKE_SERVER_MODE", "ok")
    if mode == "strict_args":
        parser.prog = "vllm serve"
        parser.parse_args(argv)  # argparse prints usage and "error: unrecognized arguments"
    args, _unknown = parser.parse_known_args(argv)
    if mode not in MODES:
        log(f"unknown FAKE_SERVER_MODE {mode!r}")
        return 2
    log(f"starting in mode {mode} on port {args.port}")
    time.sleep(float(os.environ.get("FAKE_STARTUP_S", "0.3")))
    if mode == "exit_during_startup":
        log("Traceback (most recent call last):")
        log("RuntimeError: fake engine failed to allocate its KV cache")
        return 3
    if mode == "ignore_sigterm":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    gpu_mib = int(os.environ.get("FAKE_GPU_MIB", "0"))
    if gpu_mib:  # hold GPU memory like an engine would (only where torch and a GPU exist)
        import torch

        state_gpu = torch.empty(gpu_mib * 2**20, dtype=torch.uint8, device="cuda")
        log(f"holding {state_gpu.numel() >> 20} MiB on the GPU")
    state = {"lock": threading.Lock(), "served": 0,
             "die_after": int(os.environ.get("FAKE_DIE_AFTER", "3"))}
    server = ThreadingHTTPServer((args.host, args.port),
                                 make_handler(mode, args.served_model_name or args.model, state))
    if mode == "child_holds_port" and os.fork() == 0:
        os.setsid()  # leave the runner's process group, keep the inherited listening socket
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        log("child left the process group and holds the port")
        time.sleep(LIFETIME_S)
        os._exit(0)
    if mode == "gpu_leak":
        _leave_gpu_leak()
    threading.Timer(LIFETIME_S, lambda: os._exit(0)).start()
    log("ready")
    server.serve_forever()
    return 0


def _one_request(base_url: str, model: str, isl: int, osl: int) -> dict:
    host, port = base_url.removeprefix("http://").split(":")
    started = time.perf_counter()
    try:
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        body = json.dumps({"model": model, "prompt": "x " * isl, "max_tokens": osl,
                           "ignore_eos": True})
        conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
        response = conn.getresponse()
        first = time.perf_counter()
        response.read()
        ok = response.status == 200
    except OSError:
        return {"ok": False}
    end = time.perf_counter()
    return {"ok": ok, "ttft": (first - started) * 1000, "e2el": (end - started) * 1000,
            "tpot": (end - first) * 1000 / max(1, osl - 1), "osl": osl, "isl": isl}


def _stats(values: list[float], name: str) -> dict[str, float]:
    if not values:
        return {}
    ordered = sorted(values)

    def pct(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]

    return {f"mean_{name}_ms": statistics.fmean(values), f"median_{name}_ms": pct(50),
            f"p50_{name}_ms": pct(50), f"p90_{name}_ms": pct(90), f"p99_{name}_ms": pct(99)}


def bench(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="fake_vllm.py bench serve")
    for flag in ("--base-url", "--model", "--result-dir", "--result-filename"):
        parser.add_argument(flag, required=True)
    for flag, default in (("--num-prompts", 10), ("--max-concurrency", 1),
                          ("--random-input-len", 16), ("--random-output-len", 8),
                          ("--num-warmups", 0)):
        parser.add_argument(flag, type=int, default=default)
    args, _unknown = parser.parse_known_args(argv)
    run = [args.base_url, args.model, args.random_input_len, args.random_output_len]
    for _ in range(args.num_warmups):
        _one_request(*run)
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=args.max_concurrency) as pool:
        outputs = list(pool.map(lambda _: _one_request(*run), range(args.num_prompts)))
    duration = time.perf_counter() - started
    good = [o for o in outputs if o["ok"]]
    total_in = sum(o["isl"] for o in good)
    total_out = sum(o["osl"] for o in good)
    result = {"backend": "openai", "model_id": args.model, "num_prompts": args.num_prompts,
              "max_concurrency": args.max_concurrency, "duration": duration,
              "completed": len(good), "failed": len(outputs) - len(good),
              "total_input_tokens": total_in, "total_output_tokens": total_out,
              "request_throughput": len(good) / duration,
              "output_throughput": total_out / duration,
              "total_token_throughput": (total_in + total_out) / duration,
              "fake_client_pid": os.getpid()}  # which process ran the point (in-process tests)
    for name in ("ttft", "tpot", "e2el"):
        result.update(_stats([o[name] for o in good], name))
    result.update(_stats([o["tpot"] for o in good], "itl"))
    out = Path(args.result_dir) / args.result_filename
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result))
    print(f"Successful requests: {len(good)}  Failed requests: {len(outputs) - len(good)}")
    return 0


def main(argv: list[str]) -> int:
    if argv[:1] == ["--version"]:
        print("0.0.0+fake")
        return 0
    if argv[:1] == ["serve"]:
        return serve(argv[1:])
    if argv[:2] == ["bench", "serve"]:
        return bench(argv[2:])
    print(f"fake_vllm.py: unsupported arguments {argv}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
