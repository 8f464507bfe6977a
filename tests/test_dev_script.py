"""scripts/dev's apt-get waits, bounded and saying so, for another apt-get or dpkg to let go of the lock."""
from __future__ import annotations

import fcntl
import os
import subprocess
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "apt-get-waiting"


def _env(tmp_path: Path, lock: Path, limit: int) -> dict[str, str]:
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "apt-get").write_text('#!/bin/sh\necho "apt-get ran: $*"\n')
    (fake / "apt-get").chmod(0o755)
    return {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}", "RECIPE_BOT_APT_LOCKS": str(lock),
            "RECIPE_BOT_APT_WAIT_S": str(limit)}


def test_a_held_lock_is_waited_for_then_apt_get_runs(tmp_path: Path) -> None:
    lock = tmp_path / "lock-frontend"
    lock.write_text("")
    fd = os.open(lock, os.O_RDWR)
    fcntl.lockf(fd, fcntl.LOCK_EX)  # what a running apt-get holds
    threading.Timer(2.0, lambda: os.close(fd)).start()
    done = subprocess.run([str(SCRIPT), "update", "-qq"], env=_env(tmp_path, lock, 60), capture_output=True,
                          text=True, timeout=90)
    assert done.returncode == 0, done.stderr
    assert "holds the package lock; waiting for it (up to 60 s)" in done.stderr and "正在等待" in done.stderr
    assert "the package lock is free after" in done.stderr
    assert done.stdout.strip() == "apt-get ran: -o DPkg::Lock::Timeout=60 update -qq"


def test_a_lock_held_past_the_bound_fails_with_what_to_do(tmp_path: Path) -> None:
    lock = tmp_path / "lock-frontend"
    lock.write_text("")
    fd = os.open(lock, os.O_RDWR)
    fcntl.lockf(fd, fcntl.LOCK_EX)
    try:
        done = subprocess.run([str(SCRIPT), "install", "-y", "npm"], env=_env(tmp_path, lock, 2),
                              capture_output=True, text=True, timeout=60)
    finally:
        os.close(fd)
    assert done.returncode == 1 and "apt-get ran" not in done.stdout
    assert "still held after 2 s" in done.stderr and "仍被占用" in done.stderr


def test_a_free_lock_runs_apt_get_at_once(tmp_path: Path) -> None:
    done = subprocess.run([str(SCRIPT), "update"], env=_env(tmp_path, tmp_path / "no-such-lock", 60),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == "" and "apt-get ran" in done.stdout  # no wait said


def test_scripts_dev_goes_through_the_waiting_apt_get() -> None:
    for script in ("scripts/dev", "scripts/setup-upstream.sh"):
        text = (ROOT / script).read_text()
        assert "apt-get-waiting\" update" in text and "apt-get-waiting\" install" in text
        assert "\n    apt-get " not in text
