"""What /proc says about processes and ports: group members, zombies, run tags, port holders."""
from __future__ import annotations

import errno
import os
import socket
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
# Every process the runner starts carries this variable; children inherit it, so a process that
# left its group (setsid) is still recognisable as ours, and a recycled PID is never signalled.
RUN_TAG_VAR = "RECIPE_BOT_RUN_ID"

_TCP_LISTEN = "0A"


@dataclass(frozen=True)
class ProcInfo:
    pid: int
    ppid: int
    pgid: int
    state: str  # one letter of /proc/PID/stat: R, S, D, Z, T ...
    cmdline: str

    @property
    def zombie(self) -> bool:
        # A zombie has exited and only waits to be reaped: it holds no memory, ports or GPU.
        return self.state in ("Z", "X")


def read_proc(pid: int) -> ProcInfo | None:
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name is in parentheses and may itself contain spaces or parentheses.
    fields = stat[stat.rindex(")") + 2:].split()
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
        cmdline = raw.replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        cmdline = ""
    if not cmdline:
        cmdline = stat[stat.index("(") + 1:stat.rindex(")")]
    return ProcInfo(pid=pid, ppid=int(fields[1]), pgid=int(fields[2]), state=fields[0],
                    cmdline=cmdline[:200])


def all_procs() -> list[ProcInfo]:
    found = []
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            info = read_proc(int(entry.name))
            if info is not None:
                found.append(info)
    return found


def group_members(pgid: int, *, live_only: bool = True) -> list[ProcInfo]:
    return [p for p in all_procs() if p.pgid == pgid and not (live_only and p.zombie)]


def has_tag(pid: int, tag: str) -> bool:
    try:
        environ = (PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return False
    return f"{RUN_TAG_VAR}={tag}".encode() in environ.split(b"\0")


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
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_child_subreaper = 36
        return libc.prctl(pr_set_child_subreaper, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _socket_inodes_on_port(port: int) -> set[str]:
    inodes = set()
    for table in ("tcp", "tcp6"):
        try:
            lines = (PROC / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            local, state, inode = cols[1], cols[3], cols[9]
            if int(local.rsplit(":", 1)[1], 16) == port and state == _TCP_LISTEN and inode != "0":
                inodes.add(inode)
    return inodes


def port_holders(port: int) -> list[ProcInfo]:
    """Processes with a listening socket on `port` (any address)."""
    inodes = _socket_inodes_on_port(port)
    if not inodes:
        return []
    wanted = {f"socket:[{inode}]" for inode in inodes}
    holders = []
    for entry in PROC.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fds = list((entry / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(fd) in wanted:
                    info = read_proc(int(entry.name))
                    if info is not None:
                        holders.append(info)
                    break
            except OSError:
                continue
    return holders


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """True when nothing listens on the port: a bind succeeds (TIME_WAIT leftovers do not count)."""
    if _socket_inodes_on_port(port):
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


def pick_free_port(avoid: set[int] = frozenset()) -> int:
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        if port not in avoid:
            return port
