"""`recipe-bot demo --serve`'s step: the comment reaches `recipe-bot serve` as the sandbox's signed webhook."""
from __future__ import annotations

import json

import pytest

from bot.demo.serve_mode import ServeError, serving, wait_for_dispatch
from handle_helpers import ROOT, Harness, seed


def test_a_comment_in_the_sandbox_dispatches_through_serve(sandbox, tmp_path):
    h = Harness(sandbox(seed(tmp_path)), tmp_path)
    log = tmp_path / "demo.log"
    env = {**h.env, "PYTHONPATH": str(ROOT)}
    with serving(h.sb, env, tmp_path, log) as url:
        assert url.startswith("http://127.0.0.1:")
        comment_id = h.comment(7, "alice", "/sweep")
        wait_for_dispatch(h.sb, "gpu.yml")
    [run] = h.dispatches()
    assert run["inputs"]["comment_id"] == str(comment_id)
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line.startswith("{")]
    assert "listening" in [entry["msg"] for entry in lines]
    assert h.sb.request("GET", "/_sandbox/webhooks/deliveries")[0]["status"] == 202


def test_no_dispatch_in_time_is_a_clear_error(sandbox, tmp_path):
    h = Harness(sandbox(seed(tmp_path)), tmp_path)
    with pytest.raises(ServeError, match="no gpu.yml run"):
        wait_for_dispatch(h.sb, "gpu.yml", timeout=0.2)
