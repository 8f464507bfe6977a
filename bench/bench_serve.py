"""Comment-to-dispatch latency with `recipe-bot serve` against the sandbox (GitHub App mode).

    .venv/bin/python bench/bench_serve.py [--repeat 15]

Starts one sandbox seeded with this repository's .github/recipe-bot.yaml and gpu.yml, and one
`recipe-bot serve --token-env GITHUB_TOKEN` process; registers serve as the sandbox's webhook target
(POST /_sandbox/webhooks/target, signed with a secret). Then, once per pull (a fresh PR each time, so
no PR's history grows), carol (write) comments `/sweep`: the sandbox sends the signed `issue_comment`
webhook, serve queues it in SQLite, a worker runs the Actions-mode handler, which dispatches the GPU
workflow. Latency is the comment's POST returning to the dispatch appearing in the sandbox's state
(polled every 10 ms). Writes bench/results/serve.json. Target: median < 1 s.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

from bench.common import ROOT, command_line, load_average, machine_info, summary, write_result  # noqa: E402
from bench.bench_handle import project_seed  # noqa: E402
from github_sandbox.harness import SandboxProcess  # noqa: E402

TARGET_MEDIAN_S = 1.0
SECRET = "bench-secret"


def seed(workdir: pathlib.Path, pulls: int) -> pathlib.Path:
    """bench_handle's project, with one PR per measured comment."""
    return project_seed(workdir, [{"number": n, "head": "feature", "base": "main", "author": "carol",
                                   "title": f"Change {n}"} for n in range(1, pulls + 1)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, SandboxProcess(seed(pathlib.Path(tmp), args.repeat)) as sb:
        env = {**os.environ, **sb.env(), "RECIPE_BOT_WEBHOOK_SECRET": SECRET, "PYTHONPATH": str(ROOT)}
        serve = subprocess.Popen([sys.executable, "-m", "bot", "serve", "--port", "0", "--token-env", "GITHUB_TOKEN",
                                  "--queue", str(pathlib.Path(tmp) / "queue.sqlite3")],
                                 env=env, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        try:
            assert serve.stderr is not None
            url = next(json.loads(line)["url"] for line in serve.stderr if json.loads(line)["msg"] == "listening")
            # keep reading serve's log so a full pipe never blocks it
            threading.Thread(target=lambda: [None for _ in serve.stderr], daemon=True).start()  # type: ignore[union-attr]
            sb.request("POST", "/_sandbox/webhooks/target", {"url": url, "secret": SECRET})
            samples = []
            for pr in range(1, args.repeat + 1):
                before = len(sb.state()["workflow_runs"])
                sb.request("POST", f"/repos/acme/bench/issues/{pr}/comments", {"body": "/sweep"}, user="carol")
                start = time.perf_counter()
                deadline = start + 60
                while len(sb.state()["workflow_runs"]) == before:
                    if time.perf_counter() > deadline:
                        raise SystemExit(f"PR #{pr}: no dispatch within 60 s")
                    time.sleep(0.01)
                samples.append(time.perf_counter() - start)
        finally:
            serve.terminate()
            serve.wait(30)
    record = {"command": command_line(), "machine": machine_info(), "load_average": load_average(),
              "comment_to_dispatch_s": summary(samples), "samples_s": [round(s, 4) for s in samples],
              "target_median_s": TARGET_MEDIAN_S,
              "meets_target": summary(samples)["median"] < TARGET_MEDIAN_S}
    target = write_result("serve", record)
    s = record["comment_to_dispatch_s"]
    print(f"comment → dispatch with serve: median {s['median']:.3f} s, p90 {s['p90']:.3f} s, "
          f"min {s['min']:.3f} s, max {s['max']:.3f} s over {s['n']} (target median < {TARGET_MEDIAN_S} s) → {target}")


if __name__ == "__main__":
    main()
