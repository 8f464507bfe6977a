#!/usr/bin/env python3
"""A stand-in engine server for the Slurm tests: starts in milliseconds, says where it ran.

Launched by the local runner as a recipe's launch script (PORT, HOST, SERVED_MODEL_NAME come from
the runner). STANDIN_MODE=ready serves /health and /v1/models after STANDIN_READY_AFTER_S;
STANDIN_MODE=never-ready only sleeps, so that a job stays in its server start-up for as long as
a fault test needs; STANDIN_MODE=bad-flag refuses its arguments like an engine's argparse does.
When STANDIN_REPORT_DIR is set it first writes <dir>/<SLURM_JOB_ID>.json with
its PID, its CUDA_VISIBLE_DEVICES and Slurm's own `scontrol show job -d` of the job it runs in.
"""
import json
import os
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def report() -> None:
    directory = os.environ.get("STANDIN_REPORT_DIR")
    if not directory:
        return
    job_id = os.environ.get("SLURM_JOB_ID", "none")
    detail = subprocess.run(["scontrol", "show", "job", "-d", job_id], capture_output=True, text=True)
    record = {"pid": os.getpid(), "pgid": os.getpgid(0), "slurm_job_id": job_id,
              "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
              "slurm_job_gpus": os.environ.get("SLURM_JOB_GPUS"), "scontrol": detail.stdout}
    target = Path(directory) / f"{job_id}.json"
    tmp = target.with_suffix(".tmp")
    tmp.write_text(json.dumps(record))
    os.replace(tmp, target)


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/health":
            body = b""
        elif self.path == "/v1/models":
            served = os.environ.get("SERVED_MODEL_NAME", "standin")
            body = json.dumps({"object": "list", "data": [{"id": served, "object": "model"}]}).encode()
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def main() -> None:
    report()
    print(f"standin pid {os.getpid()} mode {os.environ.get('STANDIN_MODE')} "
          f"CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')}", flush=True)
    if os.environ.get("STANDIN_MODE") == "bad-flag":
        print("usage: launch_server.py [-h] --model-path MODEL_PATH [--tp-size TP_SIZE]\n"
              "launch_server.py: error: unrecognized arguments: --tp-szie 2", file=sys.stderr,
              flush=True)
        sys.exit(2)
    if os.environ.get("STANDIN_MODE", "ready") == "never-ready":
        while True:
            time.sleep(3600)
    time.sleep(float(os.environ.get("STANDIN_READY_AFTER_S", "0")))
    server = ThreadingHTTPServer((os.environ.get("HOST", "127.0.0.1"), int(os.environ["PORT"])), Handler)
    server.serve_forever()


if __name__ == "__main__":
    main()
