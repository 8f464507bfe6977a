"""Helpers for runner tests: jobs built with bot.core.jobs, the CLI as a subprocess, leftover checks."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from bot.core.jobs import AccuracySpec, Case, Job, LoadPoint, ServerSpec

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
FAKE_VLLM = HERE / "fake_vllm.py"
MARKER_VAR = "RECIPE_BOT_TEST_MARKER"


def fake_job(mode: str, *, points: int = 2, startup_timeout_s: float = 20.0,
             accuracy: AccuracySpec | None = None, extra_env: dict[str, str] | None = None,
             timeout_s: float = 120.0, num_prompts: int = 12) -> Job:
    server = ServerSpec(engine="vllm", model="fake-model", served_model_name="fake",
                        env={"FAKE_SERVER_MODE": mode, **(extra_env or {})},
                        startup_timeout_s=startup_timeout_s)
    load = [LoadPoint(point_id=f"c{c}", concurrency=c, isl=16, osl=8, num_prompts=num_prompts)
            for c in (1, 2, 4)[:points]]
    return Job(job_id=f"fake-{mode}", kind="sweep", recipe="fake", recipe_fingerprint="fp-fake",
               runner_label="cpu", cases=[Case(name=mode, servers=[server], points=load,
                                               accuracy=accuracy)], timeout_s=timeout_s)


@dataclass
class CliRun:
    returncode: int
    result: dict | None
    elapsed_s: float
    output: str
    marker: str


def recipe_bot() -> str:
    return str(Path(sys.executable).with_name("recipe-bot"))


def run_cli(job: Job, tmp_path: Path, env: dict[str, str], timeout_s: float = 600.0) -> CliRun:
    """`recipe-bot run --job F --out DIR` as a person would type it; a marker tags every child."""
    job_file = tmp_path / "job.json"
    job_file.write_text(job.model_dump_json(indent=1))
    out = tmp_path / "out"
    marker = uuid.uuid4().hex
    started = time.monotonic()
    proc = subprocess.run([recipe_bot(), "run", "--job", str(job_file), "--out", str(out)],
                          env={**os.environ, **env, MARKER_VAR: marker}, cwd=REPO,
                          capture_output=True, text=True, timeout=timeout_s, check=False)
    elapsed = time.monotonic() - started
    result_file = out / "result.json"
    result = json.loads(result_file.read_text()) if result_file.exists() else None
    return CliRun(proc.returncode, result, elapsed, proc.stdout + proc.stderr, marker)


def live_marked_processes(marker: str) -> list[str]:
    """Live processes (zombies excluded) whose environment carries the test's marker."""
    needle = f"{MARKER_VAR}={marker}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if needle not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if stat[stat.rindex(")") + 2] not in "ZX":
            found.append(f"{entry.name}: {(entry / 'cmdline').read_bytes()[:120]!r}")
    return found
