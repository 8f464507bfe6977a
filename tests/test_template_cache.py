"""Compiled templates are kept between processes, and a template from the cache renders what a fresh compile renders."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RENDER = ("from bot.core import i18n\n"
          "print(i18n.render_bilingual('report/check-title', verdict='failure',"
          " reasons=[{'code': 'regressions', 'count': 2}], calls=[]))")


def render_in_process(tmp: Path, **env: str) -> str:
    done = subprocess.run([sys.executable, "-c", RENDER], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp), **env})
    assert done.returncode == 0, done.stderr
    return done.stdout


def cache_files(tmp: Path) -> list[Path]:
    return sorted(tmp.rglob("recipe-bot-*.cache"))


@pytest.mark.parametrize("setting, cached", [("1", True), ("0", False)], ids=["cache-on", "cache-off"])
def test_a_render_writes_the_cache_only_when_it_is_on(tmp_path: Path, setting: str, cached: bool) -> None:
    render_in_process(tmp_path, RECIPE_BOT_TEMPLATE_CACHE=setting)
    assert bool(cache_files(tmp_path)) is cached


def test_a_template_read_from_the_cache_renders_the_same_text(tmp_path: Path) -> None:
    fresh = render_in_process(tmp_path / "none", RECIPE_BOT_TEMPLATE_CACHE="0")
    first = render_in_process(tmp_path)  # compiles and writes the cache
    written = {path: path.stat().st_mtime_ns for path in cache_files(tmp_path)}
    second = render_in_process(tmp_path)  # reads it
    assert written and {path: path.stat().st_mtime_ns for path in cache_files(tmp_path)} == written
    assert fresh == first == second
    assert "2 points regressed" in fresh and "性能回退" in fresh
