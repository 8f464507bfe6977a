"""A multi-node InferenceX row on Slurm: its launcher allocates the nodes; recipe-bot watches those jobs and proves each node clean.

InferenceX's multi-node launchers (runners/launch_*-slurm*.sh, benchmarks/multi_node/*/submit.sh) run
on the cluster's login node and submit their own `sbatch -N <nodes>` job, whose script `srun`s one
task per node; they wait for it in squeue and copy its result files into the workspace. So here the
launcher runs on this host (the runner, a login node), not inside an allocation of recipe-bot's:
one of those would hold a node that the launcher's job needs. recipe-bot's lifecycle goes around it
(bot/runner/ix_row.py: the launcher's process group, the time limit, this host's teardown proof) and
this module adds the cluster's side:

- the launcher's jobs are the jobs of this user submitted while it ran (not recipe-bot's own `rb-`
  jobs); a runner account runs one row at a time;
- a job that waits for nodes that are down or drained (ReqNodeNotAvail) for RECIPE_BOT_SLURM_UNAVAILABLE_S,
  or that ends NODE_FAIL, stops the row with the node's name and Slurm's reason for it;
- once the launcher has stopped, its jobs still queued are cancelled (they belong to slurmctld, not to
  the launcher), and one step on every node they ran on (bot/runner/slurm/nodeproof.py) proves that
  node clean: no process of the run left, its ports free, GPU memory back.
"""
from __future__ import annotations

import getpass
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from rich.console import Console

from bot.core.messages import Message, message_from_data, msg
from bot.core.results import CleanupProof, JobResult, SlurmInfo
from bot.core.settings import Settings, load_settings
from bot.runner import procs
from bot.runner.ix_row import RowJob, run_row_job
from bot.runner.slurm import commands as sc
from bot.runner.slurm.query import cluster_problem, node_reason

__all__ = ["is_multinode_row", "run_multinode_row"]

LOOK_EVERY_S = 1.0  # squeue/scontrol at most once a second while the launcher runs
DEFAULT_UNAVAILABLE_S = 120.0
CANCEL_WAIT_S = 60.0
PROOF_TIMEOUT_S = 300.0


def is_multinode_row(job: RowJob) -> bool:
    return isinstance(job.row.get("prefill"), dict) and isinstance(job.row.get("decode"), dict)


def _slurm(argv: list[str], timeout: float = 30.0) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout).stdout
    except (subprocess.TimeoutExpired, FileNotFoundError):
        return ""


def _hostnames(nodelist: str) -> list[str]:
    if not nodelist or nodelist in ("(null)", "None"):
        return []
    return _slurm(["scontrol", "show", "hostnames", nodelist]).split()


UNUSABLE_STATES = ("down", "drain", "drained", "draining", "fail", "failing", "not_responding", "inval")


def unusable_nodes(sinfo_lines: str) -> list[str]:
    """From `sinfo -h -N -o %N|%T`: the nodes down, drained, failing or not responding (the `*` suffix)."""
    found = []
    for line in sinfo_lines.splitlines():
        name, _, state = line.strip().partition("|")
        if name and (state.endswith("*") or state.rstrip("*~#!%$@^-").split("+")[0] in UNUSABLE_STATES):
            found.append(name)
    return sorted(set(found))


def waiting_for_nodes(reason: str) -> tuple[bool, str | None]:
    """Whether a pending job's reason says it waits for unusable nodes, and the node list it names if any:
    `ReqNodeNotAvail,_UnavailableNodes:rbn2` (scontrol's form) names them; "Nodes required for job are DOWN,
    DRAINED ..." (an --exclusive job) does not."""
    reason = reason.replace("_", " ")
    if reason.startswith("ReqNodeNotAvail"):
        return True, reason.partition("UnavailableNodes:")[2].strip() or None
    return reason.startswith("Nodes required for job are DOWN"), None


def _waits_for(fields: dict[str, str]) -> list[str]:
    """The nodes a pending job waits for because they are unusable (the partition's, where its reason names none)."""
    waits, named = waiting_for_nodes(fields.get("Reason", ""))
    if not waits:
        return []
    if named:
        return _hostnames(named)
    partition = fields.get("Partition", "")
    return unusable_nodes(_slurm(["sinfo", "-h", "-N", "-o", "%N|%T", *(["-p", partition] if partition else [])]))


@dataclass
class _Seen:
    job_id: str
    name: str
    state: str
    nodes: list[str] = field(default_factory=list)
    unavailable_since: float | None = None


@dataclass
class LauncherJobs:
    """The Slurm jobs the launcher submits, looked at while it runs (ix_row.RowHooks) and after it stopped."""

    settings: Settings
    console: Console
    since: str = field(default_factory=lambda: datetime.now().replace(microsecond=0).isoformat())
    user: str = field(default_factory=getpass.getuser)
    jobs: dict[str, _Seen] = field(default_factory=dict)
    problem: Message | None = None
    node_proofs: dict[str, CleanupProof] = field(default_factory=dict)
    _last_look: float = 0.0

    def look(self) -> None:
        """Every job of this user submitted since the launcher started; finished ones too (MinJobAge)."""
        for line in _slurm(["scontrol", "-o", "show", "job"]).splitlines():
            fields = sc.parse_scontrol(line)
            if (not fields.get("JobId") or not fields.get("UserId", "").startswith(f"{self.user}(")
                    or fields.get("SubmitTime", "") < self.since
                    or fields.get("JobName", "").startswith(sc.JOB_NAME_PREFIX)):
                continue
            seen = self.jobs.setdefault(fields["JobId"], _Seen(fields["JobId"], fields.get("JobName", ""), ""))
            seen.state = fields.get("JobState", "")
            seen.nodes = _hostnames(fields.get("NodeList", "")) or seen.nodes
            down = _waits_for(fields) if seen.state == "PENDING" else []
            if not down:
                seen.unavailable_since = None
            elif seen.unavailable_since is None:
                seen.unavailable_since = time.monotonic()
                self.console.print(f"[slurm] the launcher's job {seen.job_id} waits for {', '.join(down)} "
                                   f"({fields.get('Reason')})", markup=False, highlight=False)
            self._judge(seen, down, fields)

    def _judge(self, seen: _Seen, down: list[str], fields: dict[str, str]) -> None:
        if self.problem is not None:
            return
        if seen.state == "NODE_FAIL":
            node = ",".join(seen.nodes) or None
            why = node_reason(node)
            self.problem = (msg("Slurm node %(node)s failed or was set down (%(why)s) while running", node=node,
                                why=why) if why else
                            msg("Slurm node %(node)s failed or was set down while running", node=node or "?"))
        elif down and time.monotonic() - (seen.unavailable_since or 0) >= self._patience():
            nodes = ", ".join(f"{n} ({node_reason(n) or _state(n)})" for n in down)
            self.problem = msg("the launcher's Slurm job %(job)s (%(name)s) cannot start: node %(nodes)s is down "
                               "or drained; gave it up after %(seconds)s s", job=seen.job_id, name=seen.name,
                               nodes=nodes, seconds=f"{self._patience():g}")

    def _patience(self) -> float:
        return self.settings.SLURM_UNAVAILABLE_S or DEFAULT_UNAVAILABLE_S

    def poll(self) -> str | None:
        if time.monotonic() - self._last_look >= LOOK_EVERY_S:
            self._last_look = time.monotonic()
            self.look()
        return self.problem

    def after_stop(self, run_tag: str, ports: list[int]) -> list[Message]:
        self.look()
        unfinished = [j.job_id for j in self.jobs.values() if not sc.is_terminal(j.state)]
        if unfinished:  # the launcher stopped (time limit, cancel, a node down) but its jobs live on
            self.console.print(f"[slurm] cancelling the launcher's jobs still queued: {' '.join(unfinished)}",
                               markup=False, highlight=False)
            _slurm(["scancel", *unfinished])
            deadline = time.monotonic() + CANCEL_WAIT_S
            while time.monotonic() < deadline and _slurm(["squeue", "-h", "-j", ",".join(unfinished), "-o", "%i"]).strip():
                time.sleep(0.5)
            self.look()
        nodes = sorted({n for j in self.jobs.values() for n in j.nodes})
        return self._prove(nodes, run_tag, ports) if nodes else []

    def _prove(self, nodes: list[str], run_tag: str, ports: list[int]) -> list[Message]:
        """One task on each node the row's jobs ran on (its own short job): that node's teardown proof."""
        argv = ["srun", f"--nodelist={','.join(nodes)}", f"--nodes={len(nodes)}", "--ntasks-per-node=1",
                f"--ntasks={len(nodes)}", "--time=5", f"--job-name={sc.JOB_NAME_PREFIX}nodeproof-{run_tag[:40]}",
                "--kill-on-bad-exit=0", sys.executable, "-m", "bot.runner.slurm.nodeproof", "--run-tag", run_tag,
                *[f"--port={p}" for p in ports]]
        # The step itself must not carry the tag it looks for; nor any of SLURM_* from an outer allocation.
        env = {k: v for k, v in os.environ.items() if k != procs.RUN_TAG_VAR and not k.startswith("SLURM_JOB")}
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=PROOF_TIMEOUT_S, env=env)
        except subprocess.TimeoutExpired:
            return [msg("no teardown proof from nodes %(nodes)s: the proof step did not finish in %(seconds)s s",
                        nodes=", ".join(nodes), seconds=f"{PROOF_TIMEOUT_S:g}")]
        failures: list[Message] = []
        for line in done.stdout.splitlines():
            try:
                data = json.loads(line)
                node, proof = str(data["node"]), CleanupProof.model_validate(data["proof"])
            except (ValueError, KeyError, TypeError):
                continue
            self.node_proofs[node] = proof
            failures += [message_from_data(f) for f in data.get("failures", [])]
        for node in nodes:
            if node not in self.node_proofs:
                said = (done.stderr.strip().splitlines() or [""])[-1]
                failures.append(msg("no teardown proof from node %(node)s (%(said)s)", node=node,
                                    said=said or f"srun exit {done.returncode}"))
        return failures

    def slurm_info(self) -> SlurmInfo | None:
        if not self.jobs:
            return None
        ids = sorted(self.jobs, key=int)
        last = self.jobs[ids[-1]]
        nodes = sorted({n for j in self.jobs.values() for n in j.nodes})
        return SlurmInfo(job_id=",".join(ids), node=",".join(nodes) or None, state=last.state,
                         reason=str(self.problem) if self.problem else None)


def _state(node: str) -> str:
    return _slurm(["sinfo", "-h", "-n", node, "-o", "%T"]).strip() or "unknown"


def run_multinode_row(job: RowJob, out_dir: Path, console: Console | None = None, *, repo: Path | None = None,
                      settings: Settings | None = None) -> JobResult:
    """The row's launcher on this host with the cluster's side around it (module docstring)."""
    console = console or Console(stderr=True)
    hooks = LauncherJobs(settings or load_settings(), console)
    problem = cluster_problem()
    if problem is not None:
        hooks.problem = msg("cannot submit to Slurm: %(problem)s", problem=problem)
        console.print(f"[slurm] {hooks.problem}", markup=False, highlight=False)
    result = run_row_job(job, out_dir, console, repo=repo, backend="slurm", hooks=hooks)
    case = result.cases[0] if result.cases else None
    update: dict[str, object] = {"slurm": hooks.slurm_info()}
    if hooks.problem is not None and result.reason != hooks.problem:
        # the launcher only saw its job vanish or fail; the node, and why, is what a reader needs
        update["status"] = "failed"
        update["reason"] = (msg("%(reason)s; the run reported: %(inner)s", reason=hooks.problem, inner=result.reason)
                            if result.reason else hooks.problem)
    if case is not None:
        update["cases"] = [case.model_copy(update={"node_cleanup": hooks.node_proofs,
                                                   "status": "failed" if update.get("status") == "failed"
                                                   else case.status,
                                                   "reason": update.get("reason", case.reason)}),
                           *result.cases[1:]]
    return result.model_copy(update=update)
