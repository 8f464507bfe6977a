"""Golden renders of the queue view and of `/reuse` (replies and the gate's check), English then 简体中文.

RECIPE_BOT_UPDATE_GOLDEN=1 pytest tests/test_control_goldens.py rewrites the golden files.
"""
import dataclasses
import datetime as dt
import pathlib

import pytest

from bot.core import stage_markers
from bot.core import i18n
from bot.control import queue_view, reuse
from bot.core.github_records import RunJob
from golden_helpers import assert_golden

GOLDEN = pathlib.Path(__file__).parent / "golden" / "control"
HEAD, MEASURED = "3f9c2ab1d0e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8", "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567"
URL = "https://github.com/acme/bench/actions/runs/9876543210"
NOW = dt.datetime(2026, 1, 5, 10, 30, tzinfo=dt.timezone.utc)


def _at(hms: str) -> dt.datetime:
    return dt.datetime.fromisoformat(f"2026-01-05T{hms}+00:00")


def _job(name: str, status: str, labels: tuple[str, ...], created: str, started: str | None = None,
         conclusion: str | None = None) -> RunJob:
    return RunJob(1, name, status, conclusion, "", labels, _at(created), _at(started or created))


def status_queue() -> str:
    mine = [_job("plan", "completed", ("ubuntu-latest",), "10:00:00", "10:00:04", "success"),
            _job("bench-mi300x", "in_progress", ("self-hosted", "mi300x"), "10:00:10", "10:02:40"),
            _job("bench-h200", "queued", ("self-hosted", "h200"), "09:05:10")]
    others = [_job("bench-h200-a", "queued", ("self-hosted", "h200"), "10:10:00"),
              _job("bench-h200-b", "in_progress", ("self-hosted", "h200"), "10:00:00", "10:20:00")]
    view = queue_view.context([(9876543210, mine)], mine + others, now=NOW, active_runs=24,
                              counted_runs=queue_view.MAX_QUEUE_RUNS, more_pages=False)
    runs = [{"command": "/sweep", "sha": HEAD, "requester": "carol", "status": "in_progress", "conclusion": None,
             "url": URL}]
    return i18n.render_bilingual("control/status", runs=runs, infra=[("gpu-node-07", 2)], **view)


def reuse_accepted() -> str:
    return i18n.render_bilingual("control/reuse-accepted", run_id=9876543210, head_sha=HEAD, run_url=URL,
                                 run_sha=MEASURED, workflow="gpu.yml", by="alice", recipes=["tiny-cpu", "llama3-fp8"],
                                 more=0)


def reuse_refused_fingerprint() -> str:
    diffs = [reuse.Difference("tiny-cpu", "2bfedf933cdf53be", "c736cd6a0e6c8e80"),
             reuse.Difference("gptoss-fp4-b200-vllm", None, None)]
    return i18n.render_bilingual("control/reuse-refused", command="/reuse 9876543210", reason="fingerprint",
                                 run_id=9876543210, head_sha=HEAD, run_url=URL, run_sha=MEASURED, workflow="gpu.yml",
                                 differences=[dataclasses.asdict(d) for d in diffs], more=0)


def reuse_refused_not_bot() -> str:
    return i18n.render_bilingual("control/reuse-refused", command="/reuse 9876543210", reason="not-bot",
                                 run_id=9876543210, head_sha=HEAD, run_url=URL, run_sha=MEASURED, workflow="gpu.yml",
                                 actor="mallory", bot="recipe-bot[bot]")


def _carried(state: str, diffs: list[reuse.Difference]) -> str:
    record = stage_markers.Reuse(HEAD, 9876543210, MEASURED, "alice", state)
    return i18n.render_bilingual("control/reuse-carried", record=dataclasses.asdict(record), previous_sha=MEASURED,
                                 differences=[dataclasses.asdict(d) for d in diffs], more=0, run_url=URL)


def gate_reused_run() -> str:
    title, section = reuse.check_text(stage_markers.Reuse(HEAD, 9876543210, MEASURED, "alice"), URL, ["tiny-cpu"])
    return section + "\n\nCheck title (both languages on one line): " + title


CASES = {
    "status-queue": status_queue,
    "reuse-accepted": reuse_accepted,
    "reuse-refused-fingerprint": reuse_refused_fingerprint,
    "reuse-refused-not-bot": reuse_refused_not_bot,
    "reuse-kept-after-push": lambda: _carried("applies", []),
    "reuse-ended-by-push": lambda: _carried("ended", [reuse.Difference("tiny-cpu", "2bfedf933cdf53be",
                                                                        "c736cd6a0e6c8e80")]),
    "gate-reused-run": gate_reused_run,
}


@pytest.mark.parametrize("name", list(CASES))
def test_render_matches_its_golden_file_in_both_languages(name):
    text = CASES[name]() + "\n"
    assert_golden(GOLDEN / f"{name}.md", text)


@pytest.mark.parametrize("name", list(CASES))
def test_each_golden_holds_english_first_then_chinese(name):
    text = (GOLDEN / f"{name}.md").read_text(encoding="utf-8")
    english, chinese = text.split(i18n.SEPARATOR)
    assert not any("\u4e00" <= ch <= "\u9fff" for ch in english)
    assert sum("\u4e00" <= ch <= "\u9fff" for ch in chinese) > 10


@pytest.mark.parametrize(("name", "expected"), [
    ("status-queue", ["| `h200` | 2 | 1 |", "| `mi300x` | 0 | 1 |", "0 min 4 s", "1 h 24 min 50 s, still waiting",
                      "newest 20 of 24 active run(s)", "| `gpu-node-07` | 2 |", "1 小时 24 分 50 秒，仍在等待"]),
    ("reuse-accepted", ["reuses run [9876543210]", MEASURED, "`llama3-fp8`"]),
    ("reuse-refused-fingerprint", ["| `tiny-cpu` | `2bfedf933cdf53be` | `c736cd6a0e6c8e80` |",
                                   "| `gptoss-fp4-b200-vllm` | none | none |", "| `gptoss-fp4-b200-vllm` | 无 | 无 |"]),
    ("reuse-refused-not-bot", ["started by @mallory", "只能沿用机器人自己的 GPU 运行"]),
    ("reuse-kept-after-push", ["still reuses run", "继续沿用"]),
    ("reuse-ended-by-push", ["ended with the push", "- `tiny-cpu`", "不会恢复"]),
    ("gate-reused-run", ["reused run 9876543210", MEASURED, "沿用运行 9876543210"]),
])
def test_each_golden_shows_what_its_case_is_about(name, expected):
    text = (GOLDEN / f"{name}.md").read_text(encoding="utf-8")
    missing = [e for e in expected if e not in text]
    assert missing == []
