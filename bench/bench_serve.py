"""Comment-to-dispatch latency, GitHub requests and ordering with `recipe-bot serve` against the sandbox (App mode).

    .venv/bin/python bench/bench_serve.py [--repeat 15] [--reference OTHER_CHECKOUT] [--burst-prs 10]

Each tree (this one, and `--reference`'s when given: e.g. `git archive main | tar -x -C /tmp/ref`) gets its
own sandbox seeded with this repository's .github/recipe-bot.yaml, gpu.yml and tiny-cpu recipe, and its own
`recipe-bot serve --token-env GITHUB_TOKEN` process (run from that tree), registered as the sandbox's
webhook target. The trees take turns, comment by comment, so both see the same machine load.

1. Latency: on a fresh PR each time, carol (write) comments `/sweep`; the sandbox sends the signed
   `issue_comment` webhook, serve queues it, a worker handles it and dispatches the GPU workflow. Latency is
   the comment's POST returning to the dispatch appearing in the sandbox's request log (polled every 5 ms).
   The GitHub requests serve made for the sweep are counted from that log: up to the dispatch, and in all
   once serve's queue is idle again (the reply comes after the dispatch). The first comment of each tree
   is a warm-up (its process has read nothing yet) and is reported apart.
2. Burst: with the sandbox's own delivery off, the bench itself POSTs `--burst-per-pr` (2) signed
   deliveries for each of `--burst-prs` (10) further PRs at once (one thread each), timing each answer, then
   reads serve's queue: every delivery handled once, in arrival order per PR, no two of one PR at once.
Writes bench/results/serve.json. Targets (issue #38): median < 100 ms, p99 < 250 ms, at most 6 GitHub
requests, every webhook answered in < 20 ms.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import pathlib
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from bench.common import ROOT, command_line, load_average, machine_info, summary, write_result  # noqa: E402
from bench.bench_handle import project_seed  # noqa: E402
from bot.serve.signature import sign  # noqa: E402
from github_sandbox.harness import SandboxProcess  # noqa: E402

TARGETS = {"median_s": 0.100, "p99_s": 0.250, "requests": 6, "webhook_answer_s": 0.020}
SECRET = "bench-secret"
DISPATCH = "actions/create-workflow-dispatch"


def seed(workdir: pathlib.Path, pulls: int) -> pathlib.Path:
    """bench_handle's project, with one PR per measured comment."""
    return project_seed(workdir, [{"number": n, "head": "feature", "base": "main", "author": "carol",
                                   "title": f"Change {n}"} for n in range(1, pulls + 1)])


def percentile(values: list[float], q: float) -> float:
    """Nearest rank."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, int(-(-q * len(ordered) // 1)) - 1))]


class Arm:
    """One tree: its sandbox and its serve process."""

    def __init__(self, name: str, root: pathlib.Path, workdir: pathlib.Path, pulls: int):
        self.name, self.root, self.workdir = name, root, workdir
        self.queue_path = workdir / "queue.sqlite3"
        self.sb = SandboxProcess(seed(workdir, pulls))
        self.samples: list[float] = []
        self.requests_to_dispatch: list[int] = []
        self.requests_total: list[int] = []
        self.sandbox_ms_to_dispatch: list[float] = []
        self.warmup: dict = {}

    def __enter__(self) -> Arm:
        self.sb.__enter__()
        env = {**os.environ, **self.sb.env(), "RECIPE_BOT_WEBHOOK_SECRET": SECRET, "PYTHONPATH": str(self.root)}
        self.bot = self.sb.env()["GITHUB_TOKEN"]
        self.serve = subprocess.Popen([sys.executable, "-m", "bot", "serve", "--port", "0", "--token-env",
                                       "GITHUB_TOKEN", "--queue", str(self.queue_path)],
                                      env=env, stderr=subprocess.PIPE, text=True, cwd=self.root)
        assert self.serve.stderr is not None
        self.url = next(json.loads(line)["url"] for line in self.serve.stderr if json.loads(line)["msg"] == "listening")
        # keep reading serve's log so a full pipe never blocks it
        self.lines: list[dict] = []
        threading.Thread(target=lambda: [self.lines.append(json.loads(line)) for line in self.serve.stderr],  # type: ignore[union-attr]
                         daemon=True).start()
        self.sb.deliver_to(self.url, SECRET)
        self.ready()
        return self

    def ready(self, deadline_s: float = 60) -> None:
        """Wait for /readyz's 200: serve's workers (a worker process of their own since #38) have started."""
        end = time.perf_counter() + deadline_s
        while True:
            try:
                with urllib.request.urlopen(self.url + "readyz", timeout=10):
                    return
            except urllib.error.HTTPError:
                if time.perf_counter() > end:
                    raise SystemExit(f"{self.name}: serve was not ready within {deadline_s} s") from None
                time.sleep(0.05)

    def __exit__(self, *exc: object) -> None:
        self.serve.terminate()
        self.serve.wait(30)
        self.sb.__exit__(*exc)

    def last_seq(self) -> int:
        entries = self.sb.log(all=True)
        return entries[-1]["seq"] if entries else 0

    def idle(self, deadline_s: float = 60) -> None:
        end = time.perf_counter() + deadline_s
        while time.perf_counter() < end:
            with urllib.request.urlopen(self.url + "readyz", timeout=10) as answer:
                counts = json.loads(answer.read())
            if counts["pending"] == 0 and counts["running"] == 0:
                return
            time.sleep(0.02)
        raise SystemExit(f"{self.name}: serve's queue did not empty within {deadline_s} s")

    def sweep(self, pr: int) -> None:
        seq = self.last_seq()
        self.sb.request("POST", f"/repos/acme/bench/issues/{pr}/comments", {"body": "/sweep"}, user="carol")
        start = time.perf_counter()
        deadline = start + 60
        while not any(e.get("operation") == DISPATCH for e in self.sb.log(since=seq)):
            if time.perf_counter() > deadline:
                raise SystemExit(f"{self.name}: PR #{pr}: no dispatch within 60 s")
            time.sleep(0.005)
        latency = time.perf_counter() - start
        self.idle()
        mine = [e for e in self.sb.log(all=True, since=seq) if e.get("user") == self.bot]
        upto = next(i for i, e in enumerate(mine) if e.get("operation") == DISPATCH) + 1
        record = (latency, upto, len(mine), sum(e.get("ms", 0) for e in mine[:upto]))
        if not self.warmup:
            self.warmup = {"latency_s": round(latency, 4), "requests_to_dispatch": upto, "requests_total": len(mine)}
            return
        self.samples.append(record[0])
        self.requests_to_dispatch.append(record[1])
        self.requests_total.append(record[2])
        self.sandbox_ms_to_dispatch.append(record[3])

    def burst(self, first_pr: int, prs: int, per_pr: int) -> dict:
        """`per_pr` deliveries for each of `prs` PRs, POSTed at once; what serve answered and did."""
        self.sb.deliver_to(None)
        payloads = []
        for round_ in range(per_pr):
            for pr in range(first_pr, first_pr + prs):
                comment = self.sb.request("POST", f"/repos/acme/bench/issues/{pr}/comments",
                                          {"body": "/sweep" if round_ == 0 else "/status"}, user="carol")
                payloads.append(self.sb.event("issue_comment", "created", comment_id=comment["id"]))
        seq = self.last_seq()
        bodies = [json.dumps(p).encode() for p in payloads]
        deliveries = [str(uuid.uuid4()) for _ in payloads]
        barrier = threading.Barrier(len(bodies))

        def post(i: int) -> tuple[int, float]:
            request = urllib.request.Request(self.url, data=bodies[i], method="POST", headers={
                "Content-Type": "application/json", "X-GitHub-Event": "issue_comment",
                "X-GitHub-Delivery": deliveries[i], "X-Hub-Signature-256": sign(SECRET, bodies[i])})
            barrier.wait()
            t0 = time.perf_counter()
            with urllib.request.urlopen(request, timeout=30) as answer:
                answer.read()
                return answer.status, time.perf_counter() - t0

        with concurrent.futures.ThreadPoolExecutor(len(bodies)) as pool:
            answers = list(pool.map(post, range(len(bodies))))
        self.idle(120)
        self.sb.deliver_to(self.url, SECRET)
        db = sqlite3.connect(str(self.queue_path))
        rows = db.execute("SELECT delivery, key, seq, state, attempts, started, finished FROM deliveries "
                          "WHERE delivery IN (%s) ORDER BY seq" % ",".join("?" * len(deliveries)), deliveries).fetchall()
        db.close()
        by_key: dict[str, list[tuple]] = {}
        for row in rows:
            by_key.setdefault(row[1], []).append(row)
        # arrival order is the queue's (seq): within a PR, each delivery starts after the one before it finished
        in_order = all(a[6] <= b[5] for group in by_key.values() for a, b in zip(group, group[1:]))
        dispatches = [e for e in self.sb.log(all=True, since=seq) if e.get("operation") == DISPATCH]
        times = [t for _, t in answers]
        wanted = set(deliveries)
        served = [line["answer_ms"] / 1000 for line in list(self.lines)
                  if line.get("msg") == "webhook queued" and line.get("delivery") in wanted and "answer_ms" in line]
        return {"deliveries": len(bodies), "statuses": sorted({s for s, _ in answers}),
                "answer_s": {**summary(times), "p99": round(percentile(times, 0.99), 4)},
                # serve's own time, headers read to answer (its log's answer_ms; absent in older trees)
                "serve_answer_s": {**summary(served), "p99": round(percentile(served, 0.99), 4)} if served else None,
                "handled_once": len(rows) == len(bodies) and all(r[3] == "done" and r[4] == 1 for r in rows),
                "one_pr_at_a_time_in_order": in_order, "prs": len(by_key),
                "dispatches": len(dispatches)}


def figures(arm: Arm) -> dict:
    s = arm.samples
    return {"comment_to_dispatch_s": {**summary(s), "p99": round(percentile(s, 0.99), 4)},
            "samples_s": [round(x, 4) for x in s], "warmup": arm.warmup,
            "requests_to_dispatch": sorted(set(arm.requests_to_dispatch)),
            "requests_total": sorted(set(arm.requests_total)),
            "sandbox_ms_to_dispatch_median": round(sorted(arm.sandbox_ms_to_dispatch)[len(s) // 2], 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--reference", type=pathlib.Path, help="another checkout, measured in turn")
    parser.add_argument("--burst-prs", type=int, default=10)
    parser.add_argument("--burst-per-pr", type=int, default=2)
    args = parser.parse_args()
    trees = [("this tree", ROOT)] + ([("reference", args.reference.resolve())] if args.reference else [])
    pulls = args.repeat + 1 + args.burst_prs
    load_before = load_average()
    with tempfile.TemporaryDirectory() as tmp:
        arms = [Arm(name, root, pathlib.Path(tmp) / f"arm{n}", pulls) for n, (name, root) in enumerate(trees)]
        for arm in arms:
            arm.__enter__()
        try:
            for pr in range(1, args.repeat + 2):  # PR 1: the warm-up
                for arm in (arms if pr % 2 else arms[::-1]):
                    arm.sweep(pr)
            bursts = {arm.name: arm.burst(args.repeat + 2, args.burst_prs, args.burst_per_pr) for arm in arms}
        finally:
            for arm in arms:
                arm.__exit__(None, None, None)
    record = {"command": command_line(), "machine": machine_info(), "load_average": load_before,
              "load_average_after": load_average(), "targets": TARGETS,
              "trees": {arm.name: {"root": str(arm.root), **figures(arm), "burst": bursts[arm.name]} for arm in arms}}
    mine = record["trees"]["this tree"]
    if args.reference:
        ref = record["trees"]["reference"]
        record["median_ratio_reference_over_this"] = round(
            ref["comment_to_dispatch_s"]["median"] / mine["comment_to_dispatch_s"]["median"], 2)
    target = write_result("serve", record)
    for arm in arms:
        f = record["trees"][arm.name]
        s, b = f["comment_to_dispatch_s"], f["burst"]
        print(f"{arm.name}: comment → dispatch median {s['median'] * 1000:.0f} ms, p90 {s['p90'] * 1000:.0f} ms, "
              f"p99 {s['p99'] * 1000:.0f} ms over {s['n']} (warm-up {f['warmup']['latency_s'] * 1000:.0f} ms); "
              f"GitHub requests to the dispatch {f['requests_to_dispatch']}, in all {f['requests_total']} "
              f"(sandbox's own time to the dispatch, median {f['sandbox_ms_to_dispatch_median']} ms); burst of "
              f"{b['deliveries']} for {b['prs']} PRs: answers {b['statuses']} in median "
              f"{b['answer_s']['median'] * 1000:.1f} ms, max {b['answer_s']['max'] * 1000:.1f} ms at the bench"
              + (f" (serve's own: median {b['serve_answer_s']['median'] * 1000:.1f} ms, max "
                 f"{b['serve_answer_s']['max'] * 1000:.1f} ms)" if b["serve_answer_s"] else "")
              + f"; handled once {b['handled_once']}, in order per PR {b['one_pr_at_a_time_in_order']}, {b['dispatches']} dispatches")
    if args.reference:
        print(f"median, reference / this tree: {record['median_ratio_reference_over_this']}×")
    print(f"→ {target}")


if __name__ == "__main__":
    main()
