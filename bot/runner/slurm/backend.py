"""The Slurm backend of `recipe-bot run`: one sbatch allocation per job, one srun step inside it.

Why sbatch and not salloc: the allocation then belongs to slurmctld, not to a client process on
the runner host. A runner that is restarted, loses its network or is killed outright leaves a
job that still ends on its own time limit, still writes its output into DIR, and is still
found by name (`rb-pr<N>-<sha12>-<job_id>`) by the next /cancel or superseding push; salloc
would tie the allocation's life to one interactive process (or, with --no-shell, leak it).
Batch jobs are requeued after a node failure by default, so they are submitted --no-requeue:
recipe-bot reports the failure instead of silently running twice.

Inside the allocation, `srun` runs `recipe-bot run --job F --out DIR --backend local` with the
same interpreter, which starts the servers, runs the load and writes DIR/result.json. This
module polls `scontrol show job` (finished jobs stay visible for MinJobAge; `sacct` is the
fallback once they are gone), then adds the Slurm fields to that result.json, or writes a
failed or cancelled result itself when the job ended before the inner run could.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import click
from rich.console import Console

from bot.core.cli_guard import HELP_OPTIONS
from bot.core.failure_classes import annotate, should_retry
from bot.core.jobs import Job
from bot.core.results import CaseResult, JobResult, SlurmInfo, joined, reason_of, with_duty_cycle
from bot.runner.slurm import commands as sc
from bot.core.settings import Settings, load_settings
from bot.core.messages import Message, UsageRefusal, msg, refusal
from bot.runner.slurm.query import (
    SlurmUnavailable,
    Snapshot,
    cancel_job,
    cancel_pr_jobs,
    cluster_problem,
    has_pyxis,
    in_squeue,
    kill_wait_s,
    node_reason,
    query_job,
)

__all__ = ["run_job_slurm", "cancel_pr_jobs", "cluster_problem", "has_pyxis", "slurm_cancel_cmd"]

POLL_ENV = "RECIPE_BOT_SLURM_POLL_S"
PENDING_TIMEOUT_ENV = "RECIPE_BOT_SLURM_PENDING_TIMEOUT_S"
CONTAINER_PYTHON_ENV = "RECIPE_BOT_CONTAINER_PYTHON"
CONTAINER_MOUNTS_ENV = "RECIPE_BOT_CONTAINER_MOUNTS"
GRACE_ENV = "RECIPE_BOT_SHUTDOWN_GRACE_S"  # read by the local backend (bot.runner.local)
DEFAULT_GRACE_S = 30.0
DEFAULT_POLL_S = 2.0
# How long slurmctld may stay unreachable before the runner gives the job up.
LOST_CONTACT_S = 600.0
OUTPUT_TAIL_LINES = 40
_CLI_MAIN = "import sys; from bot.cli import main; sys.exit(main())"
REPO_ROOT = Path(__file__).resolve().parents[2]


def _inner_argv(job_file: Path, out_dir: Path, repo: Path, in_container: bool, python: str = "python3") -> list[str]:
    args = ["run", "--job", str(job_file), "--out", str(out_dir), "--backend", "local",
            "--repo", str(repo)]
    if in_container:
        # The image's own Python runs recipe-bot from the mounted checkout; it needs
        # recipe-bot's runtime dependencies (pydantic, click, rich, jinja2, pyyaml).
        return ["env", f"PYTHONPATH={REPO_ROOT}", python, "-c", _CLI_MAIN, *args]
    entry = Path(sys.executable).parent / "recipe-bot"
    if entry.exists():
        return [str(entry), *args]
    return [sys.executable, "-c", _CLI_MAIN, *args]


def _container_mounts(job: Job, job_file: Path, out_dir: Path, repo: Path, extra: str = "") -> list[str]:
    mounts = [str(REPO_ROOT), str(repo), str(out_dir), str(job_file.parent)]
    for case in job.cases:
        for server in case.servers:
            model = os.path.expandvars(server.model)
            if os.path.isabs(model) and os.path.exists(model):
                mounts.append(model)
    for var in ("HF_HOME", "HF_HUB_CACHE"):
        if os.environ.get(var) and os.path.isdir(os.environ[var]):
            mounts.append(os.environ[var])
    mounts.extend(m for m in extra.split(",") if m)
    return [m for m in dict.fromkeys(mounts) if ":" not in m and "," not in m]


def _submit_env(kill_wait_s: float | None, grace_s: float = DEFAULT_GRACE_S) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in sc.SECRET_ENV}
    env["PYTHONUNBUFFERED"] = "1"
    if kill_wait_s:
        # Slurm SIGKILLs a cancelled or timed-out step KillWait seconds after its SIGTERM: the
        # inner run's own SIGTERM grace for its servers must end before that, so that it still
        # tears down in order and writes result.json.
        env[GRACE_ENV] = f"{min(grace_s or DEFAULT_GRACE_S, max(0.5, kill_wait_s * 0.6)):g}"
    return env


def _say(console: Console, text: str, style: str | None = None) -> None:
    console.print(f"[slurm] {text}", style=style, markup=False, highlight=False)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class _OutputTail:
    """Follows slurm-<id>.out so that people running by hand see the inner run's progress."""

    def __init__(self, path: Path, console: Console) -> None:
        self.path, self.console, self.offset = path, console, 0

    def pump(self) -> None:
        try:
            with self.path.open("rb") as handle:
                handle.seek(self.offset)
                chunk = handle.read()
        except OSError:
            return
        complete = chunk[: chunk.rfind(b"\n") + 1]
        if complete:
            self.offset += len(complete)
            self.console.print(complete.decode(errors="replace"), end="", markup=False, highlight=False)

    def last_lines(self, count: int = OUTPUT_TAIL_LINES) -> str | None:
        try:
            lines = self.path.read_text(errors="replace").splitlines()
        except OSError:
            return None
        return "\n".join(lines[-count:]) or None


@contextmanager
def _stop_requests() -> Iterator[threading.Event]:
    """SIGTERM/SIGINT (a cancelled workflow, Ctrl-C) become a request to cancel the Slurm job."""
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
    for sig in previous:
        signal.signal(sig, lambda signum, frame: stop.set())
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _read_inner(path: Path) -> tuple[JobResult | None, Message | None]:
    if not path.exists():
        return None, None
    try:
        return JobResult.model_validate_json(path.read_text()), None
    except ValueError as exc:
        return None, msg("the run's result.json could not be read (%(why)s)", why=str(exc).splitlines()[0])


def _write_result(result: JobResult, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(with_duty_cycle(result).model_dump(mode="json"), indent=2) + "\n")
    os.replace(tmp, path)


def _result_without_run(job: Job, status: str, reason: Message | str, *, ran: bool, tail: str | None,
                        started: str, started_mono: float) -> JobResult:
    case_reason = (msg("no result: the job ended before this case reported (%(why)s)", why=reason) if ran
                   else msg("not run: %(why)s", why=reason))
    cases = [CaseResult(name=case.name, status="failed" if ran else "skipped", reason=case_reason,
                        log_tail=tail if ran else None) for case in job.cases]
    return JobResult(job_id=job.job_id, kind=job.kind, recipe=job.recipe,
                     recipe_fingerprint=job.recipe_fingerprint, runner_label=job.runner_label,
                     status=status, reason=reason, gpus=job.gpus, repository=job.repository,
                     pr=job.pr, sha=job.sha, command=job.command,
                     engine=next((c.servers[0].engine for c in job.cases if c.servers), None), started_at=started,
                     finished_at=_now(), duration_s=round(time.monotonic() - started_mono, 3),
                     server_launches=0, cases=cases)


@dataclass
class _Watch:
    """What the polling loop learnt about the job."""

    last: Snapshot | None = None
    ran: bool = False
    pending_reason: str | None = None
    pending_deadline: Message | None = None
    stopped: Message | None = None
    node_reason: str | None = None
    lost: Message | None = None


def run_job_slurm(job: Job, job_file: Path, out_dir: Path, console: Console | None = None, *,
                  repo: Path | None = None, poll_s: float | None = None,
                  pending_timeout_s: float | None = None, attempt: int = 1,
                  retry: bool = False, settings: Settings | None = None) -> JobResult:
    """Run `job` as one Slurm job and return (and write) DIR/result.json with the Slurm fields.

    retry: an infrastructure failure of this first attempt (bot/core/failure_classes.py) is run once
    more, with `--exclude` naming the node that failed; the first attempt's files move to
    DIR/attempt-1/ so that the report shows both. A recipe failure is never retried.
    """
    console = console or Console(stderr=True)
    kwargs = {"repo": repo, "poll_s": poll_s, "pending_timeout_s": pending_timeout_s,
              "settings": settings or load_settings()}  # the command's settings, read once for both attempts
    result = _attempt(job, job_file, out_dir, console, attempt=attempt, exclude=(), **kwargs)
    if not retry or not should_retry(result):
        return result
    node = result.slurm.node if result.slurm else None
    exclude = tuple(n for n in (node,) if n)
    _say(console, f"infrastructure failure ({result.failure.rule}): retrying once"
                  + (f" without node {node}" if node else ""), "yellow")
    _keep_first_attempt(out_dir.resolve(), job_file.resolve())
    return _attempt(job, job_file, out_dir, console, attempt=2, exclude=exclude, **kwargs)


def _keep_first_attempt(out_dir: Path, job_file: Path) -> None:
    """Everything the first attempt wrote moves to DIR/attempt-1/ (its paths stay relative)."""
    keep = out_dir / "attempt-1"
    keep.mkdir(exist_ok=True)
    for entry in list(out_dir.iterdir()):
        if entry.name.startswith("attempt-") or entry == job_file:
            continue
        shutil.move(str(entry), str(keep / entry.name))


def _attempt(job: Job, job_file: Path, out_dir: Path, console: Console, *, attempt: int,
             exclude: tuple[str, ...], **kwargs) -> JobResult:
    result = _run_once(job, job_file, out_dir, console, exclude=exclude, **kwargs)
    result = annotate(result.model_copy(update={"attempt": attempt,
                                                "excluded_nodes": list(exclude)}))
    _write_result(result, out_dir.resolve() / "result.json")
    return result


def _run_once(job: Job, job_file: Path, out_dir: Path, console: Console | None = None, *,
              repo: Path | None = None, poll_s: float | None = None,
              pending_timeout_s: float | None = None, exclude: tuple[str, ...] = (),
              settings: Settings | None = None) -> JobResult:
    """One Slurm job for `job`: DIR/result.json with the Slurm fields.

    repo: the repository root for launch scripts and data paths, as for the local backend
    (default: the current directory); the job runs there, so it must be on a shared filesystem,
    like DIR and the job file.
    pending_timeout_s: cancel the job and fail it when it has not started after this long
    (default: $RECIPE_BOT_SLURM_PENDING_TIMEOUT_S, else wait as long as the queue takes).
    """
    console = console or Console(stderr=True)
    settings = settings or load_settings()
    poll_s = poll_s or settings.SLURM_POLL_S or DEFAULT_POLL_S
    pending_timeout_s = pending_timeout_s or settings.SLURM_PENDING_TIMEOUT_S
    out_dir = out_dir.resolve()
    job_file = job_file.resolve()
    repo = (repo or Path.cwd()).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    result_path = out_dir / "result.json"
    result_path.unlink(missing_ok=True)  # a stale result must never pass for this run's
    started, started_mono = _now(), time.monotonic()

    def refused(reason: Message | str) -> JobResult:
        _say(console, str(reason), "red")
        result = _result_without_run(job, "failed", reason, ran=False, tail=None,
                                     started=started, started_mono=started_mono)
        _write_result(result, result_path)
        return result

    problem = cluster_problem()
    if problem:
        return refused(msg("cannot submit to Slurm: %(problem)s", problem=problem))
    try:
        image = sc.container_image(job)
    except ValueError as exc:
        return refused(reason_of(exc))
    pyxis = image is not None and has_pyxis()
    if image and not pyxis:
        _say(console, f"the job names image {image}, but this cluster has no pyxis (srun has no "
                      "--container-image): running on the node itself", "yellow")
    plan = sc.StepPlan(inner_argv=_inner_argv(job_file, out_dir, repo, pyxis, settings.CONTAINER_PYTHON), gres=sc.gres_for(job),
                       image=image if pyxis else None,
                       mounts=_container_mounts(job, job_file, out_dir, repo, settings.CONTAINER_MOUNTS) if pyxis else [],
                       workdir=str(out_dir) if pyxis else None)
    script = out_dir / "slurm-batch.sh"
    script.write_text(sc.batch_script(job, plan))
    script.chmod(0o755)
    submitted = subprocess.run(sc.sbatch_argv(job, script, out_dir, workdir=repo, exclude=exclude),
                               capture_output=True,
                               text=True, env=_submit_env(kill_wait_s(), settings.SHUTDOWN_GRACE_S), cwd=out_dir, timeout=60)
    if submitted.returncode != 0:
        return refused(msg("sbatch refused the job: %(said)s",
                           said=submitted.stderr.strip() or submitted.stdout.strip()))
    slurm_id = submitted.stdout.strip().split(";")[0]
    _say(console, f"submitted job {slurm_id} as {sc.job_name(job)}"
                  f"{f' with --gres={plan.gres}' if plan.gres else ''}"
                  f"{f' in {image} through pyxis' if pyxis else ''}")
    tail = _OutputTail(out_dir / f"slurm-{slurm_id}.out", console)
    with _stop_requests() as stop:
        watch = _watch(slurm_id, stop, tail, console, poll_s=poll_s,
                       pending_timeout_s=pending_timeout_s)
    tail.pump()
    result = _merge(job, slurm_id, watch, tail, result_path, started=started, started_mono=started_mono)
    _write_result(result, result_path)
    _say(console, f"job {slurm_id}: {result.slurm.state if result.slurm else '?'} -> {result.status}"
                  f"{f' ({result.reason})' if result.reason else ''}",
         "green" if result.status == "passed" else "red")
    return result


def _watch(slurm_id: str, stop: threading.Event, tail: _OutputTail, console: Console, *,
           poll_s: float, pending_timeout_s: float | None) -> _Watch:
    watch = _Watch()
    submitted = last_contact = time.monotonic()
    shown = None
    cancel_sent = False
    while True:
        snap = query_job(slurm_id)
        now = time.monotonic()
        if snap is None:
            if now - last_contact > LOST_CONTACT_S:
                watch.lost = msg("lost contact with slurmctld for %(seconds)s s", seconds=f"{LOST_CONTACT_S:.0f}")
                cancel_job(slurm_id, str(watch.lost))  # Slurm keeps the English text in the job's comment
                return watch
        else:
            last_contact = now
            watch.last = snap
            state = snap.state
            # A job cancelled while pending never gets a node; one that started always has one,
            # even when it ended between two polls.
            if state in ("RUNNING", "COMPLETING", "SUSPENDED") or snap.node:
                watch.ran = True
            if state == "PENDING":
                watch.pending_reason = snap.reason
            if state == "NODE_FAIL" and watch.node_reason is None:
                watch.node_reason = node_reason(snap.node)
            label = (state, snap.reason if state == "PENDING" else snap.node)
            if label != shown:
                shown = label
                where = (f" ({snap.reason})" if state == "PENDING" and snap.reason
                         else f" on {snap.node}" if snap.node and state != "PENDING" else "")
                _say(console, f"job {slurm_id}: {state}{where}")
            if sc.is_terminal(state) and not in_squeue(slurm_id):
                return watch
            if not cancel_sent and stop.is_set():
                watch.stopped = msg("the runner was stopped (SIGTERM or Ctrl-C) and cancelled it")
                cancel_sent = cancel_job(slurm_id, str(watch.stopped), snap.comment)
            if (not cancel_sent and state == "PENDING" and pending_timeout_s is not None
                    and not watch.ran and now - submitted > pending_timeout_s):
                watch.pending_deadline = msg("Slurm job still pending (%(why)s) after %(seconds)s s, past its "
                                             "deadline: cancelled", why=snap.reason or msg("no reason given"),
                                             seconds=f"{pending_timeout_s:g}")
                cancel_sent = cancel_job(slurm_id, str(watch.pending_deadline), snap.comment)
        tail.pump()
        time.sleep(poll_s)


def _merge(job: Job, slurm_id: str, watch: _Watch, tail: _OutputTail, result_path: Path, *,
           started: str, started_mono: float) -> JobResult:
    snap = watch.last or Snapshot("UNKNOWN", None, None, None, None, None, None)
    state = snap.state.split()[0] if snap.state else "UNKNOWN"
    cancel_reason = watch.stopped or sc.cancel_reason_from_comment(snap.comment)
    slurm_reason = snap.reason or (watch.pending_reason if watch.pending_deadline else None)
    if state == "NODE_FAIL" and watch.node_reason:
        slurm_reason = f"{slurm_reason or 'NodeFail'}: {watch.node_reason}"
    if state == "CANCELLED" and cancel_reason and not watch.pending_deadline:
        slurm_reason = slurm_reason or f"cancelled: {cancel_reason}"
    info = SlurmInfo(job_id=slurm_id, node=snap.node, state=state, exit_code=snap.exit_code,
                     reason=slurm_reason)
    verdict = sc.verdict(state, exit_code=snap.exit_code, slurm_reason=snap.reason, ran=watch.ran,
                         time_limit=snap.time_limit, node=snap.node, node_reason=watch.node_reason,
                         cancel_reason=cancel_reason, pending_deadline=watch.pending_deadline)
    if watch.lost:
        verdict = sc.Verdict("failed", msg("%(lost)s; Slurm job %(job)s cancelled", lost=watch.lost, job=slurm_id))
    inner, unreadable = _read_inner(result_path)
    if inner is None:
        reason = joined([part for part in (verdict.reason, unreadable) if part])
        result = _result_without_run(job, verdict.status, reason or state, ran=watch.ran,
                                     tail=tail.last_lines(), started=started, started_mono=started_mono)
        return result.model_copy(update={"slurm": info})
    # The inner run classified what it saw; Slurm's view may change the verdict, so the outer
    # result is classified again (bot.core.failure_classes.annotate) from the merged fields.
    update: dict[str, object] = {"slurm": info, "failure": None}
    if state not in ("COMPLETED", "FAILED") or watch.lost:
        # Slurm ended the job from outside (cancel, time limit, node failure): that is the verdict,
        # whatever the inner run managed to write while it was being stopped.
        update["status"] = verdict.status
        update["reason"] = (msg("%(reason)s; the run reported: %(inner)s", reason=verdict.reason, inner=inner.reason)
                            if inner.reason else verdict.reason)
    elif inner.status == "passed" and state != "COMPLETED":
        update["status"] = "failed"
        update["reason"] = msg("the run reported passed, but its Slurm job ended %(state)s (exit %(code)s)",
                               state=state, code=snap.exit_code)
    return inner.model_copy(update=update)


@click.command("slurm-cancel", context_settings=HELP_OPTIONS)
@click.option("--pr", type=click.IntRange(1, 2**31 - 1), required=True,
              help="Cancel the Slurm jobs of this pull request.")
@click.option("--keep-sha", default=None, help="Keep the jobs of this head SHA (a superseding push).")
@click.option("--repository", default=None, help="Only jobs submitted for this owner/name.")
@click.option("--why", default=None, help="Reason recorded on each job and in its result.json.")
def slurm_cancel_cmd(pr: int, keep_sha: str | None, repository: str | None, why: str | None) -> None:
    """Cancel a PR's recipe-bot Slurm jobs (all of them, or all but one head SHA's)."""
    try:
        cancelled = cancel_pr_jobs(pr, keep_sha, repository=repository, why=why)
    except ValueError as exc:
        raise UsageRefusal(msg("Invalid value for %(param)s: %(problem)s", param="--keep-sha",
                               problem=exc.args[0])) from exc
    except SlurmUnavailable as exc:
        raise refusal(exc.args[0]) from exc
    click.echo(json.dumps({"pr": pr, "keep_sha": keep_sha, "cancelled": cancelled}))

