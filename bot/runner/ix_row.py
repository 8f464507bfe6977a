"""`recipe-bot run` for an InferenceX row: its fleet launcher inside recipe-bot's lifecycle, InferenceX-shaped results."""
from __future__ import annotations

import datetime as dt
import glob
import json
import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path
from typing import Protocol

import yaml
from pydantic import BaseModel, ConfigDict, Field
from rich.console import Console

from bot import engines
from bot.inferencex.aggregate import AggregateError, aggregate, aggregate_multinode, gpus_from_name
from bot.inferencex import template as ix_template
from bot.inferencex.rowenv import benchmark_scripts, environment, launcher_for, template_file
from bot.inferencex.rowkeys import server_digest
from bot.recipes.errors import RecipeError
from bot.core.messages import msg
from bot.core.jobs import Case, Job, ServerSpec, SlurmSpec
from bot.core.results import CaseResult, JobResult, PointMetrics, PointResult
from bot.runner import procs
from bot.runner.budget import Budget
from bot.runner.hardware import case_gpus, describe_host, git_head
from bot.runner.ix_power import row_power
from bot.runner.power import PowerSampler
from bot.runner.proof import prove_teardown
from bot.runner.server import InferenceServer, tail_lines

GRACE_S = 30.0
POLL_S = 0.2


class RowJob(BaseModel):
    """A job file for one InferenceX row (what `recipe-bot plan --actions-outputs` writes)."""

    model_config = ConfigDict(extra="forbid")

    job_id: str
    config_key: str
    runner_label: str
    backend: str = "local"
    timeout_s: float = Field(default=6 * 3600, gt=0)
    row: dict
    slurm: SlurmSpec | None = None
    agentx_fast: bool = False
    # The trusted base commit whose benchmark template the plan read, and the secrets that template names
    # (taken from the runner's environment at run time, never written into a file).
    template_commit: str | None = None
    secrets: list[str] = Field(default_factory=list)


def read_template(repo: Path, row: dict, commit: str | None) -> tuple[ix_template.Template, str]:
    """The row's benchmark template from the repository: at the plan's base commit when the checkout has
    it, else the checked-out file (said in the second value). A RecipeError when there is none."""
    path = template_file(row)
    if commit:
        shown = subprocess.run(["git", "-C", str(repo), "show", f"{commit}:{path}"], capture_output=True)
        if shown.returncode == 0:
            return ix_template.load(shown.stdout, path), f"{path} at {commit[:12]}"
    if not (repo / path).is_file():
        raise RecipeError.single(path, None, None, msg(
            "the repository has no benchmark template %(path)s: the row's environment is read from it",
            path=path))
    return ix_template.load((repo / path).read_bytes(), path), f"{path} (checked out)"


def row_environment(job: "RowJob", repo: Path, runner: str) -> tuple[ix_template.RowEnv, str]:
    """The row's environment from its template, with the secrets it names taken from this environment."""
    template, source = read_template(repo, job.row, job.template_commit)
    names = set(job.secrets) | {s for found in template.secrets.values() for s in found}
    secrets = {name: os.environ[name] for name in sorted(names) if name in os.environ}
    made = environment(template, job.row, runner, agentx_fast=job.agentx_fast, secrets=secrets)
    for key in made.secret_keys:  # a secret the runner lacks does not blank a value it already has
        if made.env[key] == "" and os.environ.get(key):
            made.env[key] = os.environ[key]
    return made, source


def proxy_job(job: RowJob, repo: Path | None = None) -> Job:
    """The row as a native job, only for the Slurm backend's allocation (name, time limit, partition):
    inside it, `recipe-bot run --backend local` reads the same row job file and runs the row."""
    env = row_environment(job, (repo or Path.cwd()).resolve(), "proxy_0")[0].env
    server = ServerSpec(engine=engines.for_framework(job.row.get("framework", "")).name,
                        model=job.row["model"], launch_script=launcher_for("proxy_0"))
    return Job(job_id=job.job_id, kind="sweep", recipe=job.config_key,
               recipe_fingerprint=job.row.get("recipe-fingerprint") or server_digest(job.row),
               runner_label=job.runner_label, gpus=int(env.get("GPU_COUNT") or 0) if job.slurm and job.slurm.gres else 0,
               cases=[Case(name=job.config_key, servers=[server])], timeout_s=job.timeout_s, slurm=job.slurm)


def is_row_job(data: object) -> bool:
    return isinstance(data, dict) and isinstance(data.get("inferencex"), dict)


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def runner_name(repo: Path, runner_label: str) -> str:
    """GitHub's RUNNER_NAME on a runner; elsewhere the first runner runners.yaml lists for the label."""
    if os.environ.get("RUNNER_NAME"):
        return os.environ["RUNNER_NAME"]
    for directory in ("configs", ".github/configs"):
        path = repo / directory / "runners.yaml"
        if path.is_file():
            names = (yaml.safe_load(path.read_text()) or {}).get("labels", {}).get(runner_label) or []
            if names:
                return str(names[0])
    return f"{runner_label.removeprefix('cluster:')}_0"


def _collect(repo: Path, raw_dir: Path, result_filename: str) -> list[str]:
    """Move what the launcher wrote (result, eval results, server log) into the result directory."""
    raw_dir.mkdir(parents=True, exist_ok=True)
    kept = []
    patterns = [f"{result_filename}.json", f"{result_filename}_*.json", "results*.json", "sample*.jsonl",
                "server.log", "gpu_metrics*.csv"]
    for pattern in patterns:
        for found in sorted(glob.glob(str(repo / pattern))):
            target = raw_dir / Path(found).name
            shutil.move(found, target)
            kept.append(str(target.relative_to(raw_dir.parent)))
    return kept


def _metrics(agg: dict, bench: dict) -> PointMetrics:
    def stats(name: str) -> dict[str, float]:
        return {q: float(bench[f"{q}_{name}_ms"]) for q in ("mean", "median", "p90", "p99") if f"{q}_{name}_ms" in bench}

    median_tpot = bench.get("median_tpot_ms")
    return PointMetrics(
        completed=int(bench.get("completed", 0)), failed=int(bench.get("failed", 0)),
        duration_s=float(bench.get("duration", 0.0)), request_throughput=float(bench.get("request_throughput", 0.0)),
        output_throughput=float(bench["output_throughput"]), total_token_throughput=float(bench["total_token_throughput"]),
        tput_per_gpu=agg["tput_per_gpu"], output_tput_per_gpu=agg["output_tput_per_gpu"],
        input_tput_per_gpu=agg["input_tput_per_gpu"],
        interactivity=1000.0 / float(median_tpot) if median_tpot else None,
        ttft_ms=stats("ttft"), tpot_ms=stats("tpot"), itl_ms=stats("itl"), e2el_ms=stats("e2el"),
    )


def _multinode_points(out_dir: Path, env: dict[str, str]) -> tuple[str | None, list[PointResult], list[dict]]:
    """Every `${RESULT_FILENAME}_*.json` the multi-node launcher wrote, aggregated as its template does."""
    found = sorted((out_dir / "raw").glob(f"{glob.escape(env['RESULT_FILENAME'])}_*.json"))
    if not found:
        return f"Run failed: No benchmark result files found for {env['RESULT_FILENAME']}_*.json", [], []
    points, aggs = [], []
    for raw in found:
        gpus = gpus_from_name(raw.name)
        if gpus is None:
            continue
        try:
            bench = json.loads(raw.read_text())
            agg = aggregate_multinode(env, bench, *gpus)
        except (ValueError, AggregateError) as exc:
            return f"result processing failed for {raw.name}: {exc}", [], []
        (out_dir / f"agg_{raw.stem}.json").write_text(json.dumps(agg, indent=2) + "\n")
        aggs.append(agg)
        points.append(PointResult(point_id=f"c{agg['conc']}", concurrency=agg["conc"], status="passed",
                                  metrics=_metrics(agg, bench), raw_result_file=str(raw.relative_to(out_dir))))
    return None, points, aggs


class RowHooks(Protocol):
    """What a backend adds around the launcher (bot/runner/slurm/multinode.py: the Slurm jobs it submits)."""

    def poll(self) -> str | None:
        """While the launcher runs: a reason to stop it now, or None."""

    def after_stop(self, run_tag: str, ports: list[int]) -> list[str]:
        """Once the launcher has stopped, before this host's teardown proof: teardown failures elsewhere."""


def run_row_job(job: RowJob, out_dir: Path, console: Console | None = None, *, repo: Path | None = None,
                backend: str = "local", hooks: RowHooks | None = None) -> JobResult:
    """Run the row's `runners/launch_<fleet>.sh` in its own process group under the job's time limit,
    prove the teardown, keep the raw files, and add InferenceX's aggregated fields to the result."""
    repo = (repo or Path.cwd()).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    console = console or Console(stderr=True)
    row = job.row
    name = runner_name(repo, job.runner_label)
    try:
        made, template_source = row_environment(job, repo, name)
    except RecipeError as exc:
        made, template_source = None, str(exc)
    env_row = made.env if made is not None else {}
    launcher = launcher_for(name)
    fingerprint = row.get("recipe-fingerprint") or server_digest(row)
    port = procs.pick_free_port()
    run_tag = f"{job.job_id}-{uuid.uuid4().hex[:12]}"
    env = {**os.environ, **env_row, "PORT": str(port), "GITHUB_WORKSPACE": str(repo), procs.RUN_TAG_VAR: run_tag}
    started_at, t0 = _now(), time.monotonic()
    point_id = f"c{env_row.get('CONC') or env_row.get('CONC_LIST', '').replace(' ', 'x')}"
    base = dict(job_id=job.job_id, kind="sweep", recipe=job.config_key, recipe_fingerprint=fingerprint,
                runner_label=job.runner_label, gpus=int(env_row.get("GPU_COUNT") or 0), engine=row.get("framework"),
                command=f"bash {launcher}", hardware=describe_host(), sha=git_head(repo), started_at=started_at)
    if made is None:
        return JobResult(**base, status="failed", reason=f"the row's environment: {template_source}",
                         finished_at=_now(), duration_s=0.0, inferencex={"row": row, "launcher": launcher})
    shown_env = made.without_secrets()
    notes = [f"environment from {template_source}"]
    if made.unread:
        notes.append("template script lines not read (they may set variables): " + "; ".join(made.unread))
    if not (repo / launcher).is_file():
        script = next((s for s in benchmark_scripts(env_row) if (repo / s).is_file()), None)
        if script is not None:  # run the benchmark script itself, as the launcher would on its host
            notes.append(f"no fleet launcher {launcher}: ran the benchmark script {script} directly")
            launcher = script
    base["command"] = f"bash {launcher}"
    if not (repo / launcher).is_file():
        reason = (f"no fleet launcher {launcher} for runner {name!r} (label {job.runner_label!r}) and no "
                  f"benchmark script ({', '.join(benchmark_scripts(env_row)) or 'multi-node rows need a launcher'})")
        return JobResult(**base, status="failed", reason=reason, finished_at=_now(), duration_s=0.0,
                         inferencex={"row": row, "env": shown_env, "launcher": launcher,
                                     "secrets": sorted(made.secret_keys)})
    procs.become_subreaper()
    budget = Budget(job.timeout_s)
    log_path = out_dir / "launcher.log"
    console.print(f"InferenceX row {job.job_id}: bash {launcher} (RUNNER_NAME={name}, "
                  f"CONC={env_row.get('CONC') or env_row.get('CONC_LIST')}, "
                  f"limit {job.timeout_s:g} s, backend {backend})", highlight=False, markup=False)
    process = InferenceServer(name="launcher", argv=["bash", launcher], env=env, port=port, log_path=log_path,
                              cwd=repo, grace_s=GRACE_S)
    reason = None
    sampler = PowerSampler(case_gpus(None, int(env_row.get("GPU_COUNT") or 0), os.environ), out_dir / "gpu_metrics.csv")
    with budget.signals_handled():
        process.start()
        with sampler:  # the row's GPUs while the launcher runs (bot/runner/power.py)
            while process.exit_code() is None:
                if budget.cancel_signal is not None:
                    reason = "cancelled"
                    break
                if budget.remaining() <= 0:
                    reason = f"time limit of {job.timeout_s:g} s reached; the launcher was stopped"
                    break
                if hooks is not None and (stop_why := hooks.poll()):
                    reason = stop_why
                    break
                time.sleep(POLL_S)
        teardown_started = time.monotonic()
        code = process.exit_code()
        report = process.stop()
    elsewhere = hooks.after_stop(run_tag, [port]) if hooks is not None else []
    proof, failures = prove_teardown([report], ports=[port], run_tag=run_tag, gpu_before=None,
                                     started=teardown_started)
    kept = _collect(repo, out_dir / "raw", env_row.get("RESULT_FILENAME", ""))
    if reason is None and code != 0:
        reason = f"launcher {launcher} exited with code {code}"
    info: dict = {"row": row, "env": shown_env, "launcher": launcher, "runner_name": name, "raw_files": kept,
                  "notes": notes, "secrets": sorted(made.secret_keys)}
    first_conc = (env_row.get("CONC") or env_row.get("CONC_LIST", "0")).split()[0]
    point = PointResult(point_id=point_id, concurrency=int(first_conc or 0),
                        status="passed", raw_result_file=None, client=None)
    points: list[PointResult] = []
    if reason is None and env_row.get("EVAL_ONLY") == "true":
        if not any(Path(k).name.startswith("results") for k in kept):
            reason = "Eval-only run failed: no results*.json files found."
    elif reason is None and env_row.get("IS_MULTINODE") == "true":
        reason, points, aggs = _multinode_points(out_dir, env_row)
        if reason is None:
            info["agg"] = aggs
    elif reason is None:
        raw = out_dir / "raw" / f"{env_row['RESULT_FILENAME']}.json"
        if not raw.is_file():
            reason = f"Run failed: Benchmark result {env_row['RESULT_FILENAME']}.json not found."
        else:
            try:
                bench = json.loads(raw.read_text())
                agg = aggregate(env_row, bench)
            except (ValueError, AggregateError) as exc:
                reason = f"result processing failed: {exc}"
            else:
                agg_path = out_dir / f"agg_{env_row['RESULT_FILENAME']}.json"
                agg_path.write_text(json.dumps(agg, indent=2) + "\n")
                fields, power, info["power_rule"] = row_power(repo, out_dir, raw, agg_path, int(env_row.get("GPU_COUNT") or 0),
                                                              sampler)
                info["agg"] = {**agg, **fields}
                info["agg_file"] = agg_path.name
                metrics = _metrics(agg, bench)
                point = point.model_copy(update={"metrics": metrics.model_copy(update={"inferencex": fields}),
                                                 "raw_result_file": str(raw.relative_to(out_dir)), "power": power})
    points = points or [point]
    failures = [*elsewhere, *failures]
    if reason is None and failures:
        reason = "teardown: " + "; ".join(map(str, failures))  # an InferenceX row's reasons stay its own English
    status = "cancelled" if reason == "cancelled" else ("failed" if reason else "passed")
    if status != "passed":
        points = [p.model_copy(update={"status": "failed", "reason": reason}) for p in points]
    case = CaseResult(name=job.config_key, status="passed" if status == "passed" else "failed", reason=reason,
                      points=points, cleanup=proof, server_logs=[k for k in kept if k.endswith(".log")],
                      log_tail=tail_lines(log_path) if status != "passed" else None)
    return JobResult(**base, status=status, reason=reason, finished_at=_now(),
                     duration_s=round(time.monotonic() - t0, 3), server_launches=1, cases=[case], inferencex=info)
