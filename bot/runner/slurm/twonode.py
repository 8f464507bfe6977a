"""A two-node Slurm cluster on this machine: two slurmd hosts, each in its own network namespace.

For the multi-node InferenceX rows (tests/test_slurm_multinode.py). Each node is a network
namespace joined to one bridge by a veth pair, with a private address and nothing else: no default
route and no forwarding, so nothing reaches the outside. slurmctld runs in the host's namespace on
the bridge's address (what a login node is here), so both nodes and the runner reach it. Processes
on a node share the host's PID and mount namespaces; only the network is the node's own, which is
what a multi-node launcher depends on (each node's address, one engine port per node).

The cluster is separate from scripts/slurm-up.sh's single node: its own ports, config file
(SLURM_CONF=/run/rb-twonode/slurm.conf), state and pidfiles; it shares munged. Standard library only,
like cluster.py: `python3 bot/runner/slurm/twonode.py up|down` as root.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

if __package__ in (None, ""):  # run by path, before recipe-bot's .venv exists (module docstring)
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from bot.runner.slurm import cluster  # noqa: E402 - after the path fix above

ROOT = Path("/run/rb-twonode")
CONF = ROOT / "slurm.conf"
BRIDGE = "rb2n0"
SUBNET = "10.213.7"
CONTROLLER_ADDR = f"{SUBNET}.1"
CTLD_PORT, SLURMD_PORT = 6837, 6838  # the single node's are 6817/6818
PARTITION = "two"
IPROUTE_BINARY = "/usr/sbin/ip"


@dataclass(frozen=True)
class Node:
    name: str
    addr: str

    @property
    def netns(self) -> str:
        return f"rb2n-{self.name}"

    @property
    def host_veth(self) -> str:
        return f"rb2n-{self.name}-h"

    @property
    def pidfile(self) -> Path:
        return ROOT / f"slurmd-{self.name}.pid"


NODES = (Node("rbn1", f"{SUBNET}.11"), Node("rbn2", f"{SUBNET}.12"))


def env() -> dict[str, str]:
    """The environment in which Slurm's commands talk to this cluster (not the single node's)."""
    return {**os.environ, "SLURM_CONF": str(CONF)}


def render_slurm_conf(host: str, cpus: int, memory_mib: int) -> str:
    base = [line for line in cluster.render_slurm_conf(cluster.NodeShape(host, cpus, memory_mib, 1),
                                                       _paths()).splitlines()
            if not line.startswith(("ClusterName=", "SlurmctldHost=", "NodeName=", "PartitionName=",
                                    "SlurmdPidFile=", "SlurmdSpoolDir=", "SlurmdLogFile="))]
    nodes = [f"NodeName={n.name} NodeAddr={n.addr} CPUs={cpus} RealMemory={memory_mib} Gres=gpu:1 State=UNKNOWN"
             for n in NODES]
    return "\n".join([
        "ClusterName=twonode",
        f"SlurmctldHost={host}({CONTROLLER_ADDR})",
        f"SlurmctldPort={CTLD_PORT}",
        f"SlurmdPort={SLURMD_PORT}",
        # %n: each slurmd its own pidfile, spool and log, though they share this file
        f"SlurmdPidFile={ROOT}/slurmd-%n.pid",
        f"SlurmdSpoolDir={ROOT}/spool-%n",
        f"SlurmdLogFile={ROOT}/log/slurmd-%n.log",
        *base,
        *nodes,
        f"PartitionName={PARTITION} Nodes={','.join(n.name for n in NODES)} Default=YES MaxTime=INFINITE State=UP",
        "",
    ])


def _paths() -> cluster.ClusterPaths:
    return cluster.ClusterPaths(etc=ROOT, state=ROOT / "state", slurmd_spool=ROOT / "spool", log=ROOT / "log",
                                run=ROOT)


def _ip(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run([IPROUTE_BINARY, *argv], capture_output=True, text=True, check=check)


def _install_iproute() -> None:
    if Path(IPROUTE_BINARY).exists():
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise SystemExit("iproute2 (ip) is missing and cannot be installed here: needs root and apt-get")
    env_ = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env_, stdout=subprocess.DEVNULL)
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", "iproute2"], check=True, env=env_,
                   stdout=subprocess.DEVNULL)


def _network() -> None:
    """The bridge on the controller's address and one namespace per node, joined by a veth pair."""
    _ip("link", "add", BRIDGE, "type", "bridge")
    _ip("addr", "add", f"{CONTROLLER_ADDR}/24", "dev", BRIDGE)
    _ip("link", "set", BRIDGE, "up")
    for node in NODES:
        _ip("netns", "add", node.netns)
        _ip("link", "add", node.host_veth, "type", "veth", "peer", "name", "eth0", "netns", node.netns)
        _ip("link", "set", node.host_veth, "master", BRIDGE, "up")
        for argv in (("addr", "add", f"{node.addr}/24", "dev", "eth0"), ("link", "set", "eth0", "up"),
                     ("link", "set", "lo", "up")):
            _ip("netns", "exec", node.netns, IPROUTE_BINARY, *argv)


def up(timeout_s: float = 60.0) -> tuple[Node, ...]:
    if os.geteuid() != 0:
        raise SystemExit("starting the two-node cluster needs root (network namespaces, Slurm's daemons)")
    cluster.install_if_missing()
    _install_iproute()
    down(quiet=True)
    started = time.monotonic()
    deadline = started + timeout_s
    paths = _paths()
    shutil.rmtree(paths.state, ignore_errors=True)  # a clean start: job ids restart at 1, as for the single node
    paths.jobcomp.unlink(missing_ok=True)
    for directory, owner in ((ROOT, "root"), (paths.state, "slurm"), (paths.log, "slurm")):
        directory.mkdir(parents=True, exist_ok=True)
        cluster._chown(directory, owner)
    for node in NODES:
        (ROOT / f"spool-{node.name}").mkdir(exist_ok=True)
    host = cluster.this_node()
    memory = max(1, host.real_memory_mib // len(NODES))
    CONF.write_text(render_slurm_conf(host.host, host.cpus, memory))
    (ROOT / "gres.conf").write_text(cluster.render_gres_conf(cluster.FAKE_GPU_FILES[:1]))
    _network()
    default = cluster.ClusterPaths()
    if not cluster._pid_alive(default.munged_pid, "munged"):  # shared with the single node when it runs
        default.munge_run.mkdir(parents=True, exist_ok=True)
        cluster._chown(default.munge_run, "munge")
        if not default.munge_key.exists():
            subprocess.run(["runuser", "-u", "munge", "--", "mungekey", "--create"], check=True)
        subprocess.run(["runuser", "-u", "munge", "--", "/usr/sbin/munged"], check=True)
        cluster._wait_pidfile(default.munged_pid, "munged", deadline)
        (ROOT / "munged.ours").write_text(str(cluster._pid_alive(default.munged_pid, "munged")))
    subprocess.run(["/usr/sbin/slurmctld"], check=True, env=env())
    cluster._wait_pidfile(paths.slurmctld_pid, "slurmctld", deadline)
    for node in NODES:
        # nsenter, not `ip netns exec`: that remounts /sys for the namespace, which hides
        # /sys/fs/cgroup, and slurmd then refuses to start ("Unable to initialize cgroup plugin").
        subprocess.run(["nsenter", f"--net=/run/netns/{node.netns}", "/usr/sbin/slurmd", "-N", node.name],
                       check=True, env=env())
        cluster._wait_pidfile(node.pidfile, "slurmd", deadline)
    while time.monotonic() < deadline:
        if all(node_state(n.name) == "idle" for n in NODES):
            cluster._log(f"two nodes idle {time.monotonic() - started:.2f} s after the start: "
                         + ", ".join(f"{n.name} at {n.addr} (netns {n.netns})" for n in NODES))
            return NODES
        time.sleep(0.1)
    for log in sorted(paths.log.glob("*.log")):
        cluster._log(f"--- last lines of {log}\n" + "\n".join(log.read_text().splitlines()[-20:]))
    raise SystemExit("the two nodes are " + ", ".join(f"{n.name} {node_state(n.name) or 'unknown'}" for n in NODES)
                     + f", not idle, after {timeout_s:.0f} s")


def node_state(name: str) -> str:
    done = subprocess.run(["sinfo", "-h", "-n", name, "-o", "%T"], capture_output=True, text=True, env=env())
    return done.stdout.strip() if done.returncode == 0 else ""


def netns_pids(node: Node) -> list[int]:
    """Every process in the node's network namespace (slurmd, its steps, whatever they left)."""
    done = _ip("netns", "pids", node.netns, check=False)
    return [int(p) for p in done.stdout.split() if p.isdigit()]


def down(quiet: bool = False, grace_s: float = 10.0) -> None:
    """Stops everything up() started and removes the namespaces and the bridge; safe to run twice.

    Jobs are cancelled first; then slurmd, slurmctld (and munged when up() started it); then any
    process still in a node's namespace, by its PID; then the links and the namespaces.
    """
    paths = _paths()
    if cluster._pid_alive(paths.slurmctld_pid, "slurmctld"):
        jobs = subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True, text=True, env=env()).stdout.split()
        if jobs:
            subprocess.run(["scancel", *jobs], capture_output=True, env=env())
            stop = time.monotonic() + grace_s
            while time.monotonic() < stop and subprocess.run(["squeue", "-h", "-o", "%i"], capture_output=True,
                                                             text=True, env=env()).stdout.split():
                time.sleep(0.2)
    pids = [pid for node in NODES if (pid := cluster._pid_alive(node.pidfile, "slurmd"))]
    if (ctld := cluster._pid_alive(paths.slurmctld_pid, "slurmctld")):
        pids.append(ctld)
    ours = ROOT / "munged.ours"
    if ours.exists():
        munged = cluster._pid_alive(cluster.ClusterPaths().munged_pid, "munged")
        if munged and str(munged) == ours.read_text().strip():
            pids.append(munged)
        ours.unlink()
    namespaces = set(_ip("netns", "list", check=False).stdout.split())
    for node in NODES:
        if node.netns in namespaces:
            pids += [p for p in netns_pids(node) if p not in pids]
    _stop(pids, grace_s)
    for node in NODES:
        _ip("link", "del", node.host_veth, check=False)
        if node.netns in namespaces:
            _ip("netns", "del", node.netns, check=False)
    _ip("link", "del", BRIDGE, check=False)
    if not quiet:
        cluster._log(f"two-node cluster stopped ({len(pids)} processes), namespaces and bridge removed"
                     if pids or namespaces & {n.netns for n in NODES} else "no two-node cluster was running")


def _stop(pids: list[int], grace_s: float) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(cluster._alive(p) for p in pids):
        time.sleep(0.05)
    for pid in pids:
        if cluster._alive(pid):
            os.kill(pid, signal.SIGKILL)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["up", "down"])
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for both nodes to be idle")
    args = parser.parse_args(argv)
    if args.action == "up":
        up(timeout_s=args.timeout)
    else:
        down()
    return 0


if __name__ == "__main__":
    sys.exit(main())
