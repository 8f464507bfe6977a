"""The bot's memory is its own comments and run titles: only its own header markers count."""
import datetime as dt

import pytest

from bot.control import dispatch
from bot.core import markers
from bot.core.github import Comment, Run
from bot.core.markers import Approval

BOT = "recipe-bot[bot]"
SHA = "a" * 40
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)


def comment(user, body, id_=1):
    return Comment(id_, user, body, T0)


def test_markers_in_the_bots_header_are_read():
    body = "\n".join([markers.reply_marker("101", "0123456789ab"), markers.ack_marker("101", SHA),
                      markers.approval_marker(SHA, "alice"), "🚀 Started …"])
    ledger = markers.read_ledger([comment(BOT, body)], BOT)
    assert ledger.acked("101") and ledger.acked("101", SHA) and not ledger.acked("101", "b" * 40)
    assert ledger.replied("101", "0123456789ab")
    assert ledger.approvals == [Approval(SHA, "alice")]


FORGERIES = [
    ("someone-elses-comment", "mallory", markers.approval_marker(SHA, "alice")),
    ("another-bot", "dependabot[bot]", markers.ack_marker("101", SHA)),
    ("marker-after-text", BOT, "❌ `x` was not understood\n" + markers.approval_marker(SHA, "alice")),
    ("marker-inside-a-line", BOT, "`" + markers.approval_marker(SHA, "alice") + "`"),
    ("extra-spaces-inside", BOT, f"<!--  recipe-bot:ok-to-test sha={SHA} by=alice -->"),
]


@pytest.mark.parametrize("user, body", [f[1:] for f in FORGERIES], ids=[f[0] for f in FORGERIES])
def test_markers_anyone_else_could_have_written_do_not_count(user, body):
    ledger = markers.read_ledger([comment(user, body)], BOT)
    assert ledger.approvals == [] and ledger.acks == {} and ledger.replies == set()


@pytest.mark.parametrize("raw, key", [
    ("101", "101"), ("review-5", "review-5"), ("label-sweep-enabled", "label-sweep-enabled"),
    ("label-run it -->", "label-run%20it%20--%3E"),
], ids=["comment", "review", "label", "label-with-spaces-and-arrow"])
def test_keys_are_safe_inside_a_marker(raw, key):
    assert markers.request_key(raw) == key
    assert "-->" not in markers.ack_marker(markers.request_key(raw), SHA)[:-3]


def run(id_, title, status="completed", conclusion="success", minutes=0):
    return Run(id_, title, status, conclusion, T0 + dt.timedelta(minutes=minutes), f"https://x/runs/{id_}", "d" * 40)


def test_pr_runs_are_matched_by_title_newest_first():
    runs = [run(1, markers.run_title(7, SHA, "alice", "/sweep"), minutes=1),
            run(2, markers.run_title(8, SHA, "bob", "/sweep"), minutes=2),
            run(3, markers.run_title(7, "b" * 40, "carol", "/e2e"), minutes=3),
            run(4, "GPU benchmarks", minutes=4)]
    assert [r.run.id for r in markers.pr_runs(runs, 7)] == [3, 1]
    assert markers.latest_for_head(markers.pr_runs(runs, 7), SHA).run.id == 1
    assert markers.last_run_by(runs, "bob") == T0 + dt.timedelta(minutes=2)
    assert markers.last_run_by(runs, "dave") is None


@pytest.mark.parametrize("title", [
    "GPU benchmarks",
    f"recipe-bot pr-7 {SHA[:12]} by alice: /sweep",
    f"recipe-bot pr-x {SHA} by alice: /sweep",
    f"recipe-bot pr-7 {SHA} by alice: sweep",
    f"xrecipe-bot pr-7 {SHA} by alice: /sweep",
], ids=["workflow-name", "short-sha", "no-number", "no-slash", "prefix"])
def test_titles_of_other_runs_are_not_ours(title):
    assert markers.parse_run_title(title) is None


def test_cancel_spares_runs_of_the_kept_head_and_finished_runs():
    class Recorder:
        cancelled: list[int] = []

        def cancel_run(self, run_id):
            self.cancelled.append(run_id)

    runs = markers.pr_runs([
        run(1, markers.run_title(7, SHA, "a", "/sweep"), status="in_progress", conclusion=None),
        run(2, markers.run_title(7, "b" * 40, "a", "/sweep"), status="queued", conclusion=None),
        run(3, markers.run_title(7, "b" * 40, "a", "/sweep"), status="completed"),
    ], 7)
    client = Recorder()
    doomed = dispatch.cancel_active(client, "gpu.yml", 7, keep_sha=SHA, runs=runs)
    assert [r.run.id for r in doomed] == [2] and client.cancelled == [2]
