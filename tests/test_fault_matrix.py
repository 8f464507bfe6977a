"""Exactly once under GitHub's real failures: every fault (injected by the sandbox) × every command that writes.

Each cell delivers the event under the fault, then once more with GitHub healthy (a redelivery or a
re-run of the failed job), and pins: no duplicate dispatch, no lost acknowledgement, no claim left
unanswered, the command's effect made, a reply or one clear bilingual log line, and no traceback.
The cells share one sandbox per command (tests/fault_matrix.py); each uses its own request.
"""
from __future__ import annotations

import pytest

from fault_matrix import COMMANDS, Matrix, cells, run_cell

THROTTLED = {"403-retry-after-3600s"}
FAILS_FIRST = {"5xx-before", "403-retry-after-3600s", "403-no-retry-after", "422"}


@pytest.fixture(scope="module")
def matrix(tmp_path_factory):
    m = Matrix(tmp_path_factory.mktemp("fault-matrix"))
    yield m
    problems = m.problems()
    m.close()
    assert problems == [], "the sandbox answered out of GitHub's description"


@pytest.mark.parametrize(("command", "fault"), cells(), ids=[f"{c}-{f}" for c, f in cells()])
def test_a_fault_never_duplicates_a_dispatch_nor_loses_the_acknowledgement(matrix, command, fault):
    spec = COMMANDS[command]
    cell = run_cell(matrix, command, fault)
    context = f"first:\n{cell.first.stderr}\nsecond:\n{cell.second.stderr}"

    assert cell.tracebacks == 0, context
    assert cell.dispatches == spec.dispatches, context  # one run per request, never two
    assert cell.active_dispatches == spec.dispatches, context
    assert cell.effect, context
    assert cell.claims_left == 0, context  # every claim became a reply
    assert cell.acks == 1, context  # answered, and once (a second handler's reply removes itself)
    assert cell.second.code == 0, context
    if fault == "kill-before-reply":
        assert cell.first.code is None
    elif fault in FAILS_FIRST and not (command == "cancel" and fault == "5xx-before"):
        # cancel is idempotent, so its 502 is retried; every other failure is one clear line
        assert cell.first.code == 1, context
        line = cell.first_line
        assert line.startswith("recipe-bot: ⚠️") and " / ⚠️" in line, line  # English / 中文
        assert any("\u4e00" <= ch <= "\u9fff" for ch in line), line
        if fault in THROTTLED:
            assert "throttled" in line and "速率限制" in line and "60 min" in line, line
    else:  # retried within the budget, or recovered by looking instead of repeating
        assert cell.first.code == 0, context
