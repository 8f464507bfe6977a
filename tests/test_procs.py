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


def test_a_picked_port_lies_outside_the_range_the_os_hands_out_so_no_port_zero_bind_can_take_it():
    low, high = procs.ephemeral_range()
    picked = {procs.pick_free_port() for _ in range(20)}
    assert all(procs.LOWEST_PICKED_PORT <= port <= 65535 and not low <= port <= high for port in picked), picked
    assert all(procs.port_is_free(port) for port in picked)


def test_a_picked_port_skips_the_ports_to_avoid_and_falls_back_to_the_os_when_the_range_leaves_no_room():
    # an ephemeral range covering every port above the lowest picked one: nothing outside it, so the OS picks
    port = procs.pick_free_port(ephemeral=(procs.LOWEST_PICKED_PORT, 65535))
    assert 1 <= port <= 65535 and procs.port_is_free(port)
    taken = set(range(procs.LOWEST_PICKED_PORT, 32768)) - {30001}
    assert procs.pick_free_port(avoid=taken, ephemeral=(32768, 65535)) == 30001


def test_the_ephemeral_range_falls_back_to_linuxs_default_when_it_cannot_be_read(tmp_path):
    assert procs.ephemeral_range(str(tmp_path / "missing")) == procs.LINUX_EPHEMERAL_DEFAULT
    (tmp_path / "range").write_text("40000\t50000\n")
    assert procs.ephemeral_range(str(tmp_path / "range")) == (40000, 50000)
