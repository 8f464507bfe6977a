"""Talking to slurmctld: is there a cluster, what state is a job in, and cancelling jobs by PR."""
from __future__ import annotations

import getpass
import re
import shutil
import subprocess
from dataclasses import dataclass

from bot.runner.slurm import commands as sc
from bot.core.messages import Message, msg


class SlurmUnavailable(RuntimeError):
    """This host cannot submit to Slurm; the message says what is missing (str() is its English form)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _slurm(argv: list[str], timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        return subprocess.CompletedProcess(argv, 124, "", f"{argv[0]} timed out after {exc.timeout} s")
    except FileNotFoundError:
        return subprocess.CompletedProcess(argv, 127, "", f"{argv[0]} not found on PATH")


def cluster_problem() -> Message | None:
    """Why this host cannot run Slurm jobs now, or None when it can."""
    missing = [tool for tool in ("sbatch", "squeue", "scontrol", "scancel") if shutil.which(tool) is None]
    if missing:
        return msg("no Slurm client on this host (%(tools)s not on PATH)", tools=", ".join(missing))
    ping = _slurm(["scontrol", "ping"], timeout=15)
    if ping.returncode != 0 or "UP" not in ping.stdout:
        said = (ping.stdout + ping.stderr).strip().splitlines()
        return msg("slurmctld does not answer `scontrol ping`: %(said)s", said=said[0] if said else msg("no answer"))
    nodes = _slurm(["sinfo", "-h", "-o", "%T"], timeout=15)
    states = set(nodes.stdout.split())
    if not states & {"idle", "mixed", "allocated", "completing"}:
        return msg("no usable Slurm node (sinfo says: %(states)s)", states=", ".join(sorted(states)) or msg("nothing"))
    return None


def has_pyxis() -> bool:
    """Pyxis registers --container-image with srun; plain Slurm only has --container (OCI)."""
    return "--container-image" in _slurm(["srun", "--help"], timeout=15).stdout


def _config() -> dict[str, str]:
    done = _slurm(["scontrol", "show", "config"], timeout=15)
    config = {}
    for line in done.stdout.splitlines():
        key, eq, value = line.partition("=")
        if eq:
            config[key.strip()] = value.strip()
    return config


@dataclass(frozen=True)
class Snapshot:
    state: str
    reason: str | None
    exit_code: str | None
    node: str | None
    time_limit: str | None
    comment: str | None
    run_time: str | None


def _clean(value: str | None) -> str | None:
    return None if value in (None, "", "None", "(null)", "N/A") else value


def query_job(slurm_id: str) -> Snapshot | None:
    """The job as slurmctld sees it; sacct for a job it has already forgotten; None if unknown."""
    done = _slurm(["scontrol", "show", "job", slurm_id])
    if done.returncode == 0 and done.stdout.strip():
        fields = sc.parse_scontrol(done.stdout)
        return Snapshot(state=fields.get("JobState", ""), reason=_clean(fields.get("Reason")),
                        exit_code=_clean(fields.get("ExitCode")),
                        node=_clean(fields.get("NodeList") or fields.get("BatchHost")),
                        time_limit=_clean(fields.get("TimeLimit")),
                        comment=_clean((fields.get("Comment") or "").strip()),
                        run_time=_clean(fields.get("RunTime")))
    if "Invalid job id" not in done.stderr:
        return None  # slurmctld unreachable: the caller retries
    return _query_sacct(slurm_id)


def _query_sacct(slurm_id: str) -> Snapshot | None:
    config = _config()
    if config.get("AccountingStorageType", "accounting_storage/none") != "accounting_storage/none":
        argv = ["sacct", "-X", "-P", "-n", "-j", slurm_id, "-o", "State,ExitCode,NodeList,Timelimit,Comment"]
    elif config.get("JobCompType") == "jobcomp/filetxt":
        # Without slurmdbd, jobcomp/filetxt still records every finished job; `sacct -c` reads it.
        argv = ["sacct", "-c", "-P", "-n", "-j", slurm_id, "-o", "State,ExitCode,NodeList,Timelimit"]
    else:
        return Snapshot("UNKNOWN", "job forgotten by slurmctld and no accounting configured",
                        None, None, None, None, None)
    rows = [line.split("|") for line in _slurm(argv).stdout.splitlines() if line.strip()]
    if not rows:
        return None
    row = rows[-1] + [""] * 5
    return Snapshot(state=row[0].split()[0], reason=None, exit_code=_clean(row[1]), node=_clean(row[2]),
                    time_limit=_clean(row[3]), comment=_clean(row[4]), run_time=None)


def in_squeue(slurm_id: str) -> bool:
    done = _slurm(["squeue", "-h", "-j", slurm_id, "-o", "%i"])
    return done.returncode == 0 and slurm_id in done.stdout.split()


def node_reason(node: str | None) -> str | None:
    if not node:
        return None
    fields = sc.parse_scontrol(_slurm(["scontrol", "show", "node", node]).stdout)
    return _clean(fields.get("Reason"))


def cancel_job(slurm_id: str, why: str, comment: str | None = None) -> bool:
    """Record why in the job's comment (scontrol shows it after the end), then scancel it."""
    _slurm(["scontrol", "update", f"JobId={slurm_id}", f"Comment={sc.cancel_comment(comment or '', why)}"])
    return _slurm(["scancel", slurm_id]).returncode == 0


def cancel_pr_jobs(pr: int, keep_sha: str | None = None, *, repository: str | None = None,
                   why: str | None = None) -> list[str]:
    """Cancel this user's recipe-bot jobs of PR `pr`, except those of head `keep_sha`.

    Selection is by the job name job_name() gives (`rb-pr<N>-<sha12>-<job_id>`) and, when
    `repository` is given, by the repository in the job's comment, so that two repositories
    sharing a cluster never cancel each other's PR of the same number. Returns the Slurm job ids.
    """
    if keep_sha is not None and not re.fullmatch(r"[0-9a-fA-F]{7,40}", keep_sha):
        raise ValueError(msg("keep_sha %(value)s is not a commit SHA (7 to 40 hex digits)", value=repr(keep_sha)))
    listing = _slurm(["squeue", "-h", "-u", getpass.getuser(), "-o", "%i|%T|%j|%k"])
    if listing.returncode != 0:
        raise SlurmUnavailable(msg("squeue failed: %(said)s", said=listing.stderr.strip()))
    reason = why or (f"superseded by head {keep_sha[:12]} of PR #{pr}" if keep_sha
                     else f"/cancel on PR #{pr}")
    cancelled = []
    for line in listing.stdout.splitlines():
        slurm_id, state, name, comment = (line.split("|", 3) + ["", "", ""])[:4]
        if state == "COMPLETING" or sc.is_terminal(state):
            continue  # already ending: cancelled before, or finished; nothing left to cancel
        if not sc.selected_for_cancel(sc.parse_job_name(name), pr, keep_sha):
            continue
        if repository is not None and sc.comment_repository(comment) != repository:
            continue
        if cancel_job(slurm_id, reason, comment):
            cancelled.append(slurm_id)
    return cancelled


def kill_wait_s() -> float | None:
    value = _config().get("KillWait", "").split()
    return float(value[0]) if value and value[0].isdigit() else None
