"""The runner's view of processes and ports (psutil): a tagged child, its listening port, its zombie."""
import os
import subprocess
import sys
import time

from bot.runner import procs

LISTEN = ("import socket, sys, time\n"
          "s = socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1]))); s.listen()\n"
          "print('up', flush=True); time.sleep(60)\n")


def test_a_tagged_listener_is_found_by_tag_group_and_port_and_its_zombie_holds_nothing():
    port = procs.pick_free_port()
    child = subprocess.Popen([sys.executable, "-c", LISTEN, str(port)], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, procs.RUN_TAG_VAR: "run-test-procs"}, start_new_session=True)
    try:
        assert child.stdout.readline() == "up\n"
        assert [p.pid for p in procs.tagged_live_procs("run-test-procs")] == [child.pid]
        assert [p.pid for p in procs.group_members(child.pid)] == [child.pid]
        assert [p.pid for p in procs.port_holders(port)] == [child.pid]
        assert "-c" in procs.read_proc(child.pid).cmdline and not procs.port_is_free(port)
        child.kill()
        deadline = time.monotonic() + 10
        while not procs.read_proc(child.pid).zombie and time.monotonic() < deadline:
            time.sleep(0.05)
        assert procs.read_proc(child.pid).zombie  # exited, not reaped yet
        assert procs.tagged_live_procs("run-test-procs") == [] and procs.group_members(child.pid) == []
        assert procs.port_is_free(port)
    finally:
        child.kill()
        child.wait()
    assert procs.read_proc(child.pid) is None and not procs.has_tag(child.pid, "run-test-procs")
