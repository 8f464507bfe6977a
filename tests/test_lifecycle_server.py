"""InferenceServer: readiness, group-wide SIGTERM, one shared grace, zombies that do not count."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bot.runner import procs
from bot.runner.server import InferenceServer, ServerDied, terminate_servers
from fake_servers import FAKE_VLLM
from message_text import english


def _server(tmp_path: Path, name: str, mode: str = "ok", *, wrap_in_shell: bool = False,
            grace_s: float = 5.0) -> InferenceServer:
    port = procs.pick_free_port()
    argv = [sys.executable, str(FAKE_VLLM), "serve", "m", "--port", str(port)]
    if wrap_in_shell:  # a launch script that runs the engine as a child instead of exec-ing it
        argv = ["bash", "-c", " ".join(argv) + "; echo engine exited"]
    return InferenceServer(name=name, argv=argv, env={**os.environ, "FAKE_SERVER_MODE": mode},
                           port=port, log_path=tmp_path / f"{name}.log", grace_s=grace_s)


def test_ready_server_stops_on_sigterm_and_frees_its_port(tmp_path: Path) -> None:
    with _server(tmp_path, "a") as server:
        assert server.wait_ready(20) < 20
        pgid = server.pgid
    report = server.stop_report

    assert report.failures == [] and not report.sigkill_escalated
    assert procs.group_members(pgid) == []
    assert procs.port_is_free(server.port)
    assert "ready" in server.log_tail()


def test_a_server_leads_its_own_group_inside_the_runners_session(tmp_path: Path) -> None:
    # A session of its own would be a scheduler autogroup of its own: on a loaded CPU host the
    # engine's API process then streams a whole answer at once (TPOT 0; bench/README.md, #25).
    with _server(tmp_path, "session") as server:
        server.wait_ready(20)
        assert os.getpgid(server.process.pid) == server.pgid == server.process.pid
        assert os.getpgid(server.process.pid) != os.getpgid(0)
        assert os.getsid(server.process.pid) == os.getsid(0)


def test_engine_under_a_shell_script_is_stopped_with_its_group(tmp_path: Path) -> None:
    with _server(tmp_path, "script", wrap_in_shell=True) as server:
        server.wait_ready(20)
        members = procs.group_members(server.pgid)
        assert len(members) == 2, "bash and the engine share the group"

    assert server.stop_report.failures == []
    assert procs.group_members(server.pgid) == []


def test_startup_death_fails_fast_with_the_log(tmp_path: Path) -> None:
    started = time.monotonic()
    with _server(tmp_path, "dies", "exit_during_startup") as server:
        with pytest.raises(ServerDied, match="exited with code 3 before it was ready") as err:
            server.wait_ready(60)

    assert time.monotonic() - started < 10
    assert "fake engine failed" in err.value.log_tail


def test_one_grace_deadline_is_shared_by_all_servers(tmp_path: Path) -> None:
    servers = [_server(tmp_path, f"stubborn{i}", "ignore_sigterm", grace_s=1.0) for i in range(2)]
    for server in servers:
        server.start()
    for server in servers:
        server.wait_ready(20)

    started = time.monotonic()
    reports = terminate_servers(servers, grace_s=1.0)

    assert time.monotonic() - started < 1.0 + 3.0, "grace is not paid once per server"
    assert all(r.sigkill_escalated and "forced SIGKILL" in english(r.failures[0]) for r in reports)
    assert all(procs.group_members(s.pgid) == [] for s in servers)


def test_a_zombie_is_not_a_live_member_of_its_group() -> None:
    # The leader forks a child that exits at once and is never waited for: a zombie.
    code = "import os, time\nif os.fork() == 0:\n    os._exit(0)\ntime.sleep(30)\n"
    leader = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while len(procs.group_members(leader.pid, live_only=False)) < 2:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        everyone = procs.group_members(leader.pid, live_only=False)
        live = procs.group_members(leader.pid)

        assert [p.pid for p in live] == [leader.pid]
        assert any(p.zombie for p in everyone)
    finally:
        os.killpg(leader.pid, signal.SIGKILL)
        leader.wait()
