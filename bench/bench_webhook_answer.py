"""Where the webhook's answer time goes in a burst: serve's service in this process, timed phase by phase.

    .venv/bin/python bench/bench_webhook_answer.py [--rounds 5] [--burst-prs 10] [--burst-per-pr 2]

Serve's WSGI app runs under waitress here (serve's own thread count), against a sandbox seeded as
bench/bench_serve.py seeds it, and the bench POSTs bursts of signed `issue_comment` deliveries at once.
Each phase of the answer path is wrapped in a timer (the signature check, the JSON parse and event check, the
queue's insert and synced commit, the log line), and the time the request waited before serve's code ran
(waitress: the connection read, a free thread) is the bench's time less serve's. Modes, each a fresh queue:
`no handling` (the workers idle: the answer path alone), `handled` (the real handler at work beside the
answers, as in production). Writes bench/results/webhook_answer.json; all figures are from one run, compare
the modes, not the milliseconds with another machine's.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from collections import defaultdict

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import waitress  # noqa: E402

from bench.bench_serve import SECRET, percentile, seed  # noqa: E402
from bench.common import command_line, load_average, machine_info, write_result  # noqa: E402
from bot.serve import cli as serve_cli  # noqa: E402
from bot.serve import service as service_mod  # noqa: E402
from bot.serve.logs import JsonLog  # noqa: E402
from bot.serve.signature import sign  # noqa: E402
from github_sandbox.harness import SandboxProcess  # noqa: E402

PHASES = defaultdict(list)  # phase -> seconds, filled by the wrappers


def timed(name: str, fn):
    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            PHASES[name].append(time.perf_counter() - t0)
    return wrapper


class TimedLock:
    """The queue's lock, timing how long an HTTP thread (a `waitress` thread) waits to take it."""

    def __init__(self, lock):
        self.lock = lock

    def __enter__(self):
        t0 = time.perf_counter()
        self.lock.acquire()
        if threading.current_thread().name.startswith("waitress"):
            PHASES["  of which: waiting for the queue's lock"].append(time.perf_counter() - t0)
        return self

    def __exit__(self, *exc):
        self.lock.release()


def instrument(svc) -> None:
    svc.queue._lock = TimedLock(svc.queue._lock)
    service_mod.signature.verify = timed("signature", service_mod.signature.verify)
    service_mod.check_payload = timed("json + event check", service_mod.check_payload)
    svc.queue.put = timed("queue insert + synced commit", svc.queue.put)
    svc.log = timed("log line", svc.log)
    inner = svc.webhook
    svc.webhook = timed("serve (webhook())", inner)


def fsync_cost(folder: pathlib.Path, n: int = 20) -> list[float]:
    path = folder / "fsync-probe"
    out = []
    with open(path, "wb") as f:
        for _ in range(n):
            f.write(b"x" * 512)
            t0 = time.perf_counter()
            os.fsync(f.fileno())
            out.append(time.perf_counter() - t0)
    return out


def stats(values: list[float]) -> dict:
    if not values:
        return {}
    return {"n": len(values), "median_ms": round(percentile(values, 0.5) * 1000, 2),
            "p90_ms": round(percentile(values, 0.9) * 1000, 2), "max_ms": round(max(values) * 1000, 2)}


def run_mode(sb: SandboxProcess, workdir: pathlib.Path, handling: bool, rounds: int, first_pr: int, prs: int,
             per_pr: int) -> dict:
    PHASES.clear()
    log = JsonLog(out=open(os.devnull, "w"))  # noqa: SIM115
    env = {**sb.env(), "RECIPE_BOT_WEBHOOK_SECRET": SECRET}
    svc = serve_cli.build_service(queue=str(workdir / f"queue-{handling}.sqlite3"), secret_env="RECIPE_BOT_WEBHOOK_SECRET",
                                  token_env="GITHUB_TOKEN", app_id_env="RECIPE_BOT_APP_ID",
                                  key_env="RECIPE_BOT_APP_PRIVATE_KEY_PATH", workers=4, environ=env, log=log)
    instrument(svc)
    server = waitress.create_server(serve_cli._access_log(svc, log), host="127.0.0.1", port=0,
                                    threads=serve_cli.HTTP_THREADS)
    url = f"http://127.0.0.1:{server.effective_port}/"
    threading.Thread(target=server.run, daemon=True).start()
    if handling:
        svc.start()
        if hasattr(svc.workers, "wait_ready"):  # serve's worker process: its imports before the first burst
            assert svc.workers.wait_ready(60), "the worker process did not start"
    at_bench: list[float] = []
    for r in range(rounds):
        payloads = []
        for round_ in range(per_pr):
            for pr in range(first_pr, first_pr + prs):
                comment = sb.request("POST", f"/repos/acme/bench/issues/{pr}/comments",
                                     {"body": "/sweep" if round_ == 0 else "/status"}, user="carol")
                payloads.append(sb.event("issue_comment", "created", comment_id=comment["id"]))
        # the bench's client threads run in a process of their own, so they never hold serve's GIL
        burst = workdir / "burst.json"
        burst.write_text(json.dumps({"url": url, "bodies": [json.dumps(p) for p in payloads],
                                     "signatures": [sign(SECRET, json.dumps(p).encode()) for p in payloads]}))
        out = subprocess.run([sys.executable, __file__, "--client", str(burst)], capture_output=True, text=True,
                             check=True)
        at_bench += json.loads(out.stdout)
        deadline = time.monotonic() + 120
        while handling and time.monotonic() < deadline:
            counts = svc.queue.counts()
            if counts["pending"] == 0 and counts["running"] == 0:
                break
            time.sleep(0.05)
    server.close()
    svc.stop()
    svc.queue.close()
    return {"at_bench": stats(at_bench), **{name: stats(v) for name, v in PHASES.items()}}


def client(burst_file: str) -> None:
    """The burst's POSTs at once, one thread each; prints each answer's time at the client (seconds)."""
    burst = json.loads(pathlib.Path(burst_file).read_text())
    bodies = [b.encode() for b in burst["bodies"]]
    barrier = threading.Barrier(len(bodies))

    def post(i: int) -> float:
        request = urllib.request.Request(burst["url"], data=bodies[i], method="POST", headers={
            "Content-Type": "application/json", "X-GitHub-Event": "issue_comment",
            "X-GitHub-Delivery": str(uuid.uuid4()), "X-Hub-Signature-256": burst["signatures"][i]})
        barrier.wait()
        t0 = time.perf_counter()
        with urllib.request.urlopen(request, timeout=30) as answer:
            answer.read()
        return time.perf_counter() - t0

    with concurrent.futures.ThreadPoolExecutor(len(bodies)) as pool:
        print(json.dumps(list(pool.map(post, range(len(bodies))))))


def main() -> None:
    if sys.argv[1:2] == ["--client"]:
        return client(sys.argv[2])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--burst-prs", type=int, default=10)
    parser.add_argument("--burst-per-pr", type=int, default=2)
    args = parser.parse_args()
    load_before = load_average()
    record: dict = {"command": command_line(), "machine": machine_info(), "load_average": load_before}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = pathlib.Path(tmp)
        record["fsync_512B"] = stats(fsync_cost(workdir))
        with SandboxProcess(seed(workdir, args.burst_prs)) as sb:
            for handling in (False, True):
                name = "handled" if handling else "no handling"
                record[name] = run_mode(sb, workdir, handling, args.rounds, 1, args.burst_prs, args.burst_per_pr)
    record["load_average_after"] = load_average()
    target = write_result("webhook_answer", record)
    print(f"fsync of 512 bytes: {record['fsync_512B']}")
    for name in ("no handling", "handled"):
        print(f"-- {name}")
        for phase, s in record[name].items():
            print(f"   {phase:32s} {s}")
    print(f"load {load_before} → {record['load_average_after']}; → {target}")


if __name__ == "__main__":
    main()
