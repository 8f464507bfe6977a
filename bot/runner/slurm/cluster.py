"""A single-node Slurm cluster with two fake GPUs on this machine, for CI and trying the backend.

Run through scripts/slurm-up.sh and scripts/slurm-down.sh. Standard library only, so that the
scripts can run it with any python3 before recipe-bot's virtual environment exists. The steps and
the configuration are the ones measured on a Debian 12 VM without systemd (Slurm 22.05): no cgroups,
`proctrack/linuxproc`, accounting through `jobcomp/filetxt` (read with `sacct -c`), and GRES on
/dev/null and /dev/zero, which Slurm accepts as GPU device files and numbers 0 and 1.
"""
from __future__ import annotations

import argparse
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")
DAEMON_BINARIES = ("/usr/sbin/slurmctld", "/usr/sbin/slurmd", "/usr/sbin/munged", "/usr/bin/sinfo")
FAKE_GPU_FILES = ("/dev/null", "/dev/zero")
SLOTS_PER_CORE = 4  # job slots per real core; see config_overrides below


@dataclass(frozen=True)
class ClusterPaths:
    etc: Path = Path("/etc/slurm")
    state: Path = Path("/var/spool/slurmctld")
    slurmd_spool: Path = Path("/var/spool/slurmd")
    log: Path = Path("/var/log/slurm")
    run: Path = Path("/run")
    munge_run: Path = Path("/run/munge")
    munge_key: Path = Path("/etc/munge/munge.key")

    @property
    def slurmctld_pid(self) -> Path:
        return self.run / "slurmctld.pid"

    @property
    def slurmd_pid(self) -> Path:
        return self.run / "slurmd.pid"

    @property
    def munged_pid(self) -> Path:
        return self.munge_run / "munged.pid"

    @property
    def jobcomp(self) -> Path:
        return self.log / "jobcomp.log"


@dataclass(frozen=True)
class NodeShape:
    host: str
    cpus: int
    real_memory_mib: int
    gpus: int = len(FAKE_GPU_FILES)


def this_node() -> NodeShape:
    """The node as Slurm sees it: RealMemory at 80 % of MemTotal (more drains it as "Low RealMemory")."""
    # the kernel's total RAM, MemTotal's figure, without reading /proc/meminfo by hand
    mem_kib = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 1024
    return NodeShape(host=socket.gethostname().split(".")[0], cpus=SLOTS_PER_CORE * (os.cpu_count() or 1),
                     real_memory_mib=max(1, mem_kib * 8 // 10 // 1024))


def render_slurm_conf(node: NodeShape, paths: ClusterPaths = ClusterPaths()) -> str:
    # KillWait=5: a time limit or scancel gives SIGTERM, then SIGKILL 5 s later (default 30 s).
    # batch_sched_delay=0: sbatch reaches RUNNING in ~0.3 s instead of after ~3 s.
    # MinJobAge=300 keeps finished jobs visible to scontrol for 5 minutes after they end.
    return "\n".join([
        "ClusterName=ci",
        f"SlurmctldHost={node.host}(127.0.0.1)",
        "SlurmUser=slurm",
        "AuthType=auth/munge",
        f"StateSaveLocation={paths.state}",
        f"SlurmdSpoolDir={paths.slurmd_spool}",
        f"SlurmctldPidFile={paths.slurmctld_pid}",
        f"SlurmdPidFile={paths.slurmd_pid}",
        f"SlurmctldLogFile={paths.log / 'slurmctld.log'}",
        f"SlurmdLogFile={paths.log / 'slurmd.log'}",
        "MailProg=/bin/true",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "SchedulerType=sched/backfill",
        "SchedulerParameters=batch_sched_delay=0",
        "MpiDefault=none",
        # 1, not 2: a node an operator sets DOWN stays down (with its reason) until resumed, as on
        # a production cluster; with 2 it returned 15 ms later, when slurmd answered the kill RPC.
        "ReturnToService=1",
        "AccountingStorageType=accounting_storage/none",
        "JobAcctGatherType=jobacct_gather/linux",
        "JobCompType=jobcomp/filetxt",
        f"JobCompLoc={paths.jobcomp}",
        "GresTypes=gpu",
        "MinJobAge=300",
        "KillWait=5",
        "OverTimeLimit=0",
        "InactiveLimit=0",
        # The node claims more CPUs than it has (config_overrides stops slurmd from draining it
        # as "Low CPUs"), so that on a 2-core CI box the fake GPUs, not the cores, are what jobs
        # queue for, as on a GPU cluster: tests can run several small jobs side by side.
        "SlurmdParameters=config_overrides",
        f"NodeName={node.host} NodeAddr=127.0.0.1 CPUs={node.cpus} RealMemory={node.real_memory_mib}"
        f" Gres=gpu:{node.gpus} State=UNKNOWN",
        "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
        "",
    ])


def render_gres_conf(files: tuple[str, ...] = FAKE_GPU_FILES) -> str:
    # Regular files are rejected ("not a valid character or block device") and leave
    # CUDA_VISIBLE_DEVICES empty; any character device works.
    return "AutoDetect=off\n" + "".join(f"Name=gpu File={path}\n" for path in files)


def _log(message: str) -> None:
    print(f"[slurm] {message}", file=sys.stderr, flush=True)


def _pid_alive(pidfile: Path, name: str) -> int | None:
    """The live daemon `name` whose PID the pidfile holds; None for a stale or recycled PID."""
    try:
        pid = int(pidfile.read_text().split()[0])
        # /proc by hand, not psutil: this script runs on a bare python3 (module docstring)
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
    except (OSError, ValueError, IndexError):
        return None
    return pid if comm == name and _alive(pid) else None


def install_if_missing() -> None:
    if all(Path(binary).exists() for binary in DAEMON_BINARIES):
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise SystemExit("Slurm is not installed and cannot be installed here: "
                         f"needs root and apt-get to install {' '.join(PACKAGES)}")
    started = time.monotonic()
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, stdout=subprocess.DEVNULL)
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *PACKAGES],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    _log(f"installed {' '.join(PACKAGES)} in {time.monotonic() - started:.1f} s")


def _chown(path: Path, user: str) -> None:
    entry = pwd.getpwnam(user)
    os.chown(path, entry.pw_uid, entry.pw_gid)


def prepare(node: NodeShape, paths: ClusterPaths) -> None:
    """Directories, the munge key and both config files; wipes the queue and the job records."""
    shutil.rmtree(paths.state, ignore_errors=True)
    paths.jobcomp.unlink(missing_ok=True)  # job ids restart at 1: old records would collide
    for directory, owner in ((paths.state, "slurm"), (paths.log, "slurm"),
                             (paths.slurmd_spool, "root"), (paths.munge_run, "munge")):
        directory.mkdir(parents=True, exist_ok=True)
        _chown(directory, owner)
    if not paths.munge_key.exists():
        subprocess.run(["runuser", "-u", "munge", "--", "mungekey", "--create"], check=True)
    paths.etc.mkdir(parents=True, exist_ok=True)
    (paths.etc / "slurm.conf").write_text(render_slurm_conf(node, paths))
    (paths.etc / "gres.conf").write_text(render_gres_conf())


def _wait_pidfile(pidfile: Path, name: str, deadline: float) -> int:
    while time.monotonic() < deadline:
        pid = _pid_alive(pidfile, name)
        if pid:
            return pid
        time.sleep(0.05)
    raise SystemExit(f"{name} did not start: no live process in {pidfile}")


def node_state(host: str) -> str:
    done = subprocess.run(["sinfo", "-h", "-n", host, "-o", "%T"], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else ""


def up(paths: ClusterPaths = ClusterPaths(), timeout_s: float = 60.0) -> NodeShape:
    if os.geteuid() != 0:
        raise SystemExit("starting the Slurm daemons needs root (they write /etc/slurm, /run and /var)")
    install_if_missing()
    down(paths, quiet=True)
    node = this_node()
    prepare(node, paths)
    started = time.monotonic()
    deadline = started + timeout_s
    # The daemons fork and write their pidfiles; without systemd nothing else starts them.
    subprocess.run(["runuser", "-u", "munge", "--", "/usr/sbin/munged"], check=True)
    _wait_pidfile(paths.munged_pid, "munged", deadline)
    subprocess.run(["/usr/sbin/slurmctld"], check=True)
    _wait_pidfile(paths.slurmctld_pid, "slurmctld", deadline)
    subprocess.run(["/usr/sbin/slurmd", "-N", node.host], check=True)
    _wait_pidfile(paths.slurmd_pid, "slurmd", deadline)
    state = ""
    while time.monotonic() < deadline:
        state = node_state(node.host)
        if state == "idle":
            _log(f"node {node.host} idle {time.monotonic() - started:.2f} s after the daemons started "
                 f"(CPUs={node.cpus} RealMemory={node.real_memory_mib} gpu:{node.gpus})")
            return node
        time.sleep(0.1)
    for log in ("slurmctld.log", "slurmd.log"):
        path = paths.log / log
        if path.exists():
            _log(f"--- last lines of {path}\n" + "\n".join(path.read_text().splitlines()[-20:]))
    raise SystemExit(f"node {node.host} is {state or 'unknown'}, not idle, after {timeout_s:.0f} s")


def down(paths: ClusterPaths = ClusterPaths(), quiet: bool = False, grace_s: float = 10.0) -> None:
    """Stops the three daemons by the PIDs in their pidfiles: SIGTERM, then SIGKILL after grace_s.

    Jobs still queued are cancelled first: slurmstepd and the job's processes would outlive slurmd.
    """
    if _pid_alive(paths.slurmctld_pid, "slurmctld"):
        _drain_queue(grace_s, quiet)
    pids = {name: pid for name, pidfile in (("slurmd", paths.slurmd_pid),
                                            ("slurmctld", paths.slurmctld_pid),
                                            ("munged", paths.munged_pid))
            if (pid := _pid_alive(pidfile, name))}
    for pid in pids.values():
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    for name, pid in pids.items():
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.05)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
            _log(f"{name} (pid {pid}) ignored SIGTERM for {grace_s:.0f} s: killed")
        elif not quiet:
            _log(f"stopped {name} (pid {pid})")
    if not pids and not quiet:
        _log("no Slurm daemon was running")


def _drain_queue(timeout_s: float, quiet: bool) -> None:
    def queued() -> list[str]:
        done = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True)
        return done.stdout.split() if done.returncode == 0 else []

    jobs = queued()
    if not jobs:
        return
    subprocess.run(["scancel", *jobs], capture_output=True)
    deadline = time.monotonic() + timeout_s
    while queued() and time.monotonic() < deadline:
        time.sleep(0.2)
    if not quiet:
        _log(f"cancelled {len(jobs)} job(s) still queued: {' '.join(jobs)}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    # A zombie left by a parent that has not reaped it yet is no longer running. The state from /proc by
    # hand, not psutil (bot.runner.procs): this script runs on a bare python3 (module docstring).
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["up", "down"])
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for an idle node")
    args = parser.parse_args(argv)
    if args.action == "up":
        up(timeout_s=args.timeout)
    else:
        down()
    return 0


if __name__ == "__main__":
    sys.exit(main())
