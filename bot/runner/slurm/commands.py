"""Pure parts of the Slurm backend: job names, sbatch/srun command lines, scontrol parsing, verdicts."""
from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from bot.core.jobs import Job
from bot.core.messages import Message, msg

JOB_NAME_PREFIX = "rb-"
COMMENT_PREFIX = "recipe-bot"
CANCEL_MARK = "; cancelled: "
# Slurm job names are kept to characters that survive squeue's format strings and shells.
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_NAME = re.compile(r"^rb-(?:pr(?P<pr>\d+)|local)-(?P<sha>[0-9a-f]{1,12}|nosha)-(?P<job>.+)$")

# States after which the job holds nothing any more (COMPLETING is reported separately by
# scontrol, so a job in one of these states has also left squeue's default listing).
TERMINAL_STATES = frozenset({
    "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL",
    "DEADLINE", "OUT_OF_MEMORY", "SPECIAL_EXIT", "REVOKED",
})
# Tokens whose presence in the environment of a cluster job would leak a credential the job
# never needs: the benchmark talks to its own server, never to GitHub.
SECRET_ENV = frozenset({
    "GITHUB_TOKEN", "GH_TOKEN", "RECIPE_BOT_GITHUB_TOKEN", "ACTIONS_RUNTIME_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN", "ACTIONS_ID_TOKEN_REQUEST_URL", "ACTIONS_RUNTIME_URL",
    "ACTIONS_CACHE_URL", "ACTIONS_RESULTS_URL",
})
# How much longer than the job's own timeout the allocation lives when the job gives no
# Slurm time limit: server start-up and teardown happen inside it too.
TIME_LIMIT_MARGIN_S = 300


def job_name(job: Job) -> str:
    """`rb-pr<N>-<sha12>-<job_id>`: what /cancel and a superseding push select jobs by."""
    owner = f"pr{job.pr}" if job.pr is not None else "local"
    sha = (job.sha or "").lower()[:12]
    if not re.fullmatch(r"[0-9a-f]{1,12}", sha):
        sha = "nosha"
    tail = _UNSAFE.sub("_", job.job_id).strip("_") or "job"
    return f"{JOB_NAME_PREFIX}{owner}-{sha}-{tail}"[:200]


@dataclass(frozen=True)
class NameParts:
    pr: int | None
    sha12: str | None
    job_id: str


def parse_job_name(name: str) -> NameParts | None:
    """The parts of a name job_name() made; None for any other job on the cluster."""
    match = _NAME.match(name)
    if match is None:
        return None
    pr = int(match["pr"]) if match["pr"] else None
    sha = None if match["sha"] == "nosha" else match["sha"]
    return NameParts(pr=pr, sha12=sha, job_id=match["job"])


def selected_for_cancel(parts: NameParts | None, pr: int, keep_sha: str | None) -> bool:
    """A job of PR `pr` whose head SHA is not `keep_sha` (a full or abbreviated SHA)."""
    if parts is None or parts.pr != pr:
        return False
    if keep_sha is None:
        return True
    keep = keep_sha.lower()[:12]
    return parts.sha12 is None or not parts.sha12.startswith(keep[:len(parts.sha12)])


def job_comment(repository: str | None) -> str:
    return f"{COMMENT_PREFIX} {repository}" if repository else COMMENT_PREFIX


def comment_repository(comment: str) -> str | None:
    head = comment.split(CANCEL_MARK, 1)[0].strip()
    if not head.startswith(COMMENT_PREFIX):
        return None
    return head[len(COMMENT_PREFIX):].strip() or None


def cancel_comment(comment: str, why: str) -> str:
    """The job's comment plus why it was cancelled; '=' would break scontrol's key=value output."""
    base = comment.split(CANCEL_MARK, 1)[0].strip()
    if base in ("", "(null)"):
        base = COMMENT_PREFIX
    return f"{base}{CANCEL_MARK}{why.replace('=', ':').strip()}"


def cancel_reason_from_comment(comment: str | None) -> str | None:
    if not comment or CANCEL_MARK not in comment:
        return None
    return comment.split(CANCEL_MARK, 1)[1].strip() or None


def slurm_time_limit(job: Job) -> str:
    """Slurm's own limit: the job's, else its timeout plus a margin, in whole minutes (Slurm rounds up)."""
    if job.slurm is not None:
        return job.slurm.time_limit
    return str(max(1, math.ceil((job.timeout_s + TIME_LIMIT_MARGIN_S) / 60)))


def gres_for(job: Job) -> str | None:
    if job.slurm is not None and job.slurm.gres:
        return job.slurm.gres
    return f"gpu:{job.gpus}" if job.gpus > 0 else None


def gres_gpu_count(gres: str | None) -> int:
    """gpu:2 and gpu:h100:2 ask for 2; gpu alone asks for 1; other resources for no GPU."""
    if not gres:
        return 0
    total = 0
    for item in gres.split(","):
        parts = item.split(":")
        if parts[0] != "gpu":
            continue
        total += int(parts[-1]) if len(parts) > 1 and parts[-1].isdigit() else 1
    return total


def container_image(job: Job) -> str | None:
    """The one image the job's servers name; a job whose servers name two is refused."""
    images = sorted({s.image for case in job.cases for s in case.servers if s.image})
    if len(images) > 1:
        raise ValueError(msg("job %(job)s names %(count)s container images (%(images)s); the Slurm backend "
                             "runs one container per job", job=repr(job.job_id), count=len(images),
                             images=", ".join(images)))
    return images[0] if images else None


@dataclass(frozen=True)
class StepPlan:
    """What runs inside the allocation: one srun step that runs the local backend."""

    inner_argv: list[str]  # recipe-bot run --job F --out DIR --backend local
    gres: str | None
    image: str | None = None  # set only when the cluster has pyxis
    mounts: list[str] = field(default_factory=list)
    workdir: str | None = None


def pyxis_flags(plan: StepPlan) -> list[str]:
    if plan.image is None:
        return []
    flags = [f"--container-image={plan.image}", "--no-container-mount-home"]
    if plan.mounts:
        flags.append("--container-mounts=" + ",".join(f"{m}:{m}" for m in dict.fromkeys(plan.mounts)))
    if plan.workdir:
        flags.append(f"--container-workdir={plan.workdir}")
    return flags


def srun_argv(plan: StepPlan) -> list[str]:
    # One task on one node; the step asks for the job's GPUs explicitly so that it gets them
    # whatever SLURM_STEP_GRES says; --kill-on-bad-exit ends the step with its task.
    argv = ["srun", "--nodes=1", "--ntasks=1", "--kill-on-bad-exit=1", "--unbuffered"]
    if plan.gres:
        argv.append(f"--gres={plan.gres}")
    return [*argv, *pyxis_flags(plan), "--", *plan.inner_argv]


def batch_script(job: Job, plan: StepPlan) -> str:
    who = f"PR #{job.pr}" if job.pr is not None else "a local run"
    return "\n".join([
        "#!/bin/bash",
        f"# recipe-bot job {job.job_id} ({who}, head {job.sha or 'unknown'}): one srun step runs",
        "# the local backend, which starts the servers, runs the load and writes result.json.",
        "exec " + shlex.join(srun_argv(plan)),
        "",
    ])


def sbatch_argv(job: Job, script: Path, out_dir: Path, workdir: Path | None = None,
                exclude: tuple[str, ...] = ()) -> list[str]:
    argv = ["sbatch", "--parsable", f"--job-name={job_name(job)}",
            f"--output={out_dir / 'slurm-%j.out'}", f"--chdir={workdir or out_dir}",
            # A batch job is requeued after a node failure by default; recipe-bot reports the
            # failure instead, and the next /sweep or push runs it again.
            "--no-requeue", "--nodes=1", "--ntasks=1",
            f"--time={slurm_time_limit(job)}", f"--comment={job_comment(job.repository)}"]
    gres = gres_for(job)
    if gres:
        argv.append(f"--gres={gres}")
    if job.slurm is not None:
        if job.slurm.partition:
            argv.append(f"--partition={job.slurm.partition}")
        if job.slurm.account:
            argv.append(f"--account={job.slurm.account}")
        argv.extend(job.slurm.extra_args)
    if exclude:  # the automatic retry of an infrastructure failure avoids the node that failed
        argv.append(f"--exclude={','.join(exclude)}")
    return [*argv, str(script)]


def parse_scontrol(text: str) -> dict[str, str]:
    """`scontrol show job|node` output as key -> value.

    Values may hold spaces (Comment=, Command=, Reason=): a whitespace-separated token without
    '=' continues the previous value. The first key of each record wins if one repeats.
    """
    fields: dict[str, str] = {}
    key = None
    for token in text.split():
        name, eq, value = token.partition("=")
        if eq and name and re.fullmatch(r"[A-Za-z][A-Za-z0-9_/:]*", name):
            if name in fields:
                key = None  # a repeated key: keep the first value, skip this one's tokens
            else:
                fields[name] = value
                key = name
        elif key is not None:
            fields[key] = f"{fields[key]} {token}"
    return fields


def is_terminal(state: str) -> bool:
    return state.split()[0] in TERMINAL_STATES if state else False


@dataclass(frozen=True)
class Verdict:
    status: str  # a JobStatus
    reason: Message | str | None


def verdict(state: str, *, exit_code: str | None, slurm_reason: str | None, ran: bool,
            time_limit: str | None, node: str | None, node_reason: str | None,
            cancel_reason: Message | str | None, pending_deadline: Message | str | None) -> Verdict:
    """What a finished Slurm job means for recipe-bot when the inner run left no verdict of its own.

    `pending_deadline` is set when recipe-bot itself cancelled the job for pending too long;
    `cancel_reason` when someone cancelled it through recipe-bot (the job's comment says why).
    """
    if pending_deadline is not None:
        return Verdict("failed", pending_deadline)
    if state == "CANCELLED":
        by = cancel_reason or msg("scancel by an operator or the cluster")
        return Verdict("cancelled", msg("Slurm job cancelled while running: %(by)s", by=by) if ran
                       else msg("Slurm job cancelled while pending: %(by)s", by=by))
    if state == "TIMEOUT":
        return Verdict("failed", msg("Slurm job hit its time limit (%(limit)s)",
                                     limit=time_limit or msg("unknown")))
    if state == "NODE_FAIL":
        where = node or msg("unknown")
        if node_reason:
            return Verdict("failed", msg("Slurm node %(node)s failed or was set down (%(why)s) while running",
                                         node=where, why=node_reason) if ran
                           else msg("Slurm node %(node)s failed or was set down (%(why)s) while pending",
                                    node=where, why=node_reason))
        return Verdict("failed", msg("Slurm node %(node)s failed or was set down while running", node=where) if ran
                       else msg("Slurm node %(node)s failed or was set down while pending", node=where))
    if state == "COMPLETED":
        return Verdict("failed", msg("Slurm job completed but the run wrote no result.json"))
    if state == "FAILED":
        return Verdict("failed", msg("Slurm job failed (exit code %(code)s, reason %(reason)s) and wrote no "
                                     "result.json", code=exit_code, reason=slurm_reason or msg("none")))
    readable = {"PREEMPTED": msg("was preempted"), "BOOT_FAIL": msg("node failed to boot"),
                "DEADLINE": msg("missed its Slurm deadline"), "OUT_OF_MEMORY": msg("ran out of memory")}
    return Verdict("failed", msg("Slurm job ended %(state)s: %(why)s", state=state,
                                 why=readable.get(state, slurm_reason or msg("no reason given"))))
