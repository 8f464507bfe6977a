"""Processes and ports as psutil sees them: group members, zombies, run tags, port holders."""
from __future__ import annotations

import ctypes
import errno
import os
import random
import socket
from dataclasses import dataclass

import psutil

# Every process the runner starts carries this variable; children inherit it, so a process that
# left its group (setsid) is still recognisable as ours, and a recycled PID is never signalled.
RUN_TAG_VAR = "RECIPE_BOT_RUN_ID"

_GONE = (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, ProcessLookupError, PermissionError)
# A zombie has exited and only waits to be reaped: it holds no memory, ports or GPU.
_EXITED = (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)


@dataclass(frozen=True)
class ProcInfo:
    pid: int
    ppid: int
    pgid: int
    state: str  # psutil's status: running, sleeping, disk-sleep, zombie, stopped ...
    cmdline: str

    @property
    def zombie(self) -> bool:
        return self.state in _EXITED


def _info(proc: psutil.Process) -> ProcInfo | None:
    try:
        with proc.oneshot():
            state, ppid, name = proc.status(), proc.ppid(), proc.name()
            try:
                cmdline = " ".join(proc.cmdline()).strip()
            except _GONE:
                cmdline = ""  # a zombie has no command line left
        pgid = os.getpgid(proc.pid)
    except _GONE:
        return None
    return ProcInfo(pid=proc.pid, ppid=ppid, pgid=pgid, state=state, cmdline=(cmdline or name)[:200])


def read_proc(pid: int) -> ProcInfo | None:
    try:
        return _info(psutil.Process(pid))
    except _GONE:
        return None


def all_procs() -> list[ProcInfo]:
    return [info for proc in psutil.process_iter() if (info := _info(proc)) is not None]


def group_members(pgid: int, *, live_only: bool = True) -> list[ProcInfo]:
    return [p for p in all_procs() if p.pgid == pgid and not (live_only and p.zombie)]


def has_tag(pid: int, tag: str) -> bool:
    try:
        return psutil.Process(pid).environ().get(RUN_TAG_VAR) == tag
    except _GONE:
        return False


def tagged_live_procs(tag: str) -> list[ProcInfo]:
    me = os.getpid()
    return [p for p in all_procs() if p.pid != me and not p.zombie and has_tag(p.pid, tag)]


def reap_zombie_children(skip: set[int] = frozenset()) -> list[int]:
    """Reap our own zombie children (orphans reparented to us as subreaper), except `skip`.

    `skip` holds PIDs a subprocess.Popen still owns: reaping those behind Popen's back would lose
    their exit status.
    """
    me = os.getpid()
    reaped = []
    for proc in all_procs():
        if proc.ppid == me and proc.zombie and proc.pid not in skip:
            try:
                os.waitpid(proc.pid, os.WNOHANG)
                reaped.append(proc.pid)
            except ChildProcessError:
                pass
    return reaped


def become_subreaper() -> bool:
    """Ask Linux to reparent orphans of our process tree to us, so their zombies get reaped here."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_child_subreaper = 36
        return libc.prctl(pr_set_child_subreaper, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _listeners_on_port(port: int) -> list:
    """Listening TCP sockets (IPv4 and IPv6, any address) on `port`, with their owners' PIDs where visible."""
    try:
        found = psutil.net_connections(kind="tcp")
    except psutil.AccessDenied:
        return []
    return [c for c in found if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port]


def port_holders(port: int) -> list[ProcInfo]:
    """Processes with a listening socket on `port` (any address)."""
    pids = sorted({c.pid for c in _listeners_on_port(port) if c.pid is not None})
    return [info for pid in pids if (info := read_proc(pid)) is not None]


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """True when nothing listens on the port: a bind succeeds (TIME_WAIT leftovers do not count)."""
    if _listeners_on_port(port):
        return False
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            if exc.errno in (errno.EADDRINUSE, errno.EACCES):
                return False
            raise
    return True


EPHEMERAL_RANGE_FILE = "/proc/sys/net/ipv4/ip_local_port_range"
LINUX_EPHEMERAL_DEFAULT = (32768, 60999)
LOWEST_PICKED_PORT = 20000  # below it sit the ports services are configured on (8000, 8080, 18431 …)


def ephemeral_range(path: str = EPHEMERAL_RANGE_FILE) -> tuple[int, int]:
    """The ports the OS hands out for a bind to port 0 and for outgoing connections."""
    try:
        low, high = (int(part) for part in open(path, encoding="ascii").read().split())
    except (OSError, ValueError):
        return LINUX_EPHEMERAL_DEFAULT
    return low, high


def pick_free_port(avoid: set[int] = frozenset(), *, ephemeral: tuple[int, int] | None = None) -> int:
    """A free port for a server that binds it only once it has started (a minute later on a GPU host).

    It is picked outside the OS's ephemeral range: a port the OS handed out for a bind to 0 and took back
    could meanwhile be handed to any other process that asks (a sandbox, a client's outgoing connection),
    which would then answer the runner's readiness checks or hold the server's port. Where the range
    leaves no room, the OS picks.
    """
    low, high = ephemeral or ephemeral_range()
    outside = [p for p in range(LOWEST_PICKED_PORT, 65536) if not low <= p <= high and p not in avoid]
    rng = random.Random()
    for port in rng.sample(outside, min(len(outside), 200)):
        if port_is_free(port):
            return port
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        if port not in avoid:
            return port
