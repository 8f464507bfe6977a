"""`/status` as the queue view: this PR's jobs with their waits, and queued/running jobs per runner label
across the repository, read from the sandbox's runs (validated against GitHub's description)."""
import datetime as dt

from bot.control import queue_view
from bot.core.github_records import RunJob
from handle_helpers import bilingual

SHA = "0" * 40
H200, MI300 = ["self-hosted", "h200"], ["self-hosted", "mi300x"]


def _inputs(pr: int, head: str, command: str = "/sweep") -> dict:
    return {"pr": str(pr), "sha": head, "command": command, "requester": "carol", "comment_id": "1"}


def test_status_shows_this_prs_job_waits_and_queued_jobs_on_two_runner_labels(h):
    head = h.head(7)
    h.sb.add_run("gpu.yml", inputs=_inputs(7, head), status="in_progress", jobs=[
        {"name": "plan", "status": "completed", "conclusion": "success", "labels": ["ubuntu-latest"],
         "created_at": "2026-01-05T10:00:00Z", "started_at": "2026-01-05T10:00:05Z"},
        {"name": "bench-mi300x", "status": "in_progress", "labels": MI300,
         "created_at": "2026-01-05T10:00:10Z", "started_at": "2026-01-05T10:02:40Z"},
        {"name": "bench-h200", "status": "queued", "labels": H200, "created_at": "2026-01-05T10:00:10Z"}])
    # Another PR's run waits for the same H200 runners; a finished run counts for nothing.
    h.sb.add_run("gpu.yml", inputs=_inputs(8, head), status="queued", jobs=[
        {"name": "bench-h200-a", "status": "queued", "labels": H200},
        {"name": "bench-h200-b", "status": "queued", "labels": H200}])
    h.sb.add_run("gpu.yml", inputs=_inputs(8, head), conclusion="success", jobs=[
        {"name": "bench-h200-old", "status": "completed", "conclusion": "success", "labels": H200}])
    since = h.seq()
    h.on_comment(7, "mallory", "/status")
    english, chinese = bilingual(h.bot_comments(7)[-1]["body"])
    # This PR's jobs, with the time each waited for a runner.
    assert "| `plan` | `ubuntu-latest` | completed / success | 0 min 5 s |" in english
    assert "| `bench-mi300x` | `mi300x` | in_progress | 2 min 30 s |" in english
    assert "| `bench-h200` | `h200` | queued |" in english and "still waiting |" in english
    # Queued and running jobs per runner label across the repository, the longest queue first.
    assert "| `h200` | 3 | 0 |" in english and "| `mi300x` | 0 | 1 |" in english
    assert english.index("| `h200` | 3") < english.index("| `mi300x` | 0")
    assert "bench-h200-old" not in english and "Capped" not in english
    assert "| `h200` | 3 | 0 |" in chinese and "2 分 30 秒" in chinese and "仍在等待" in chinese
    assert "runner 标签" in chinese and "排队中" in chinese
    # Bounded: the two active-run listings, then one job listing per run (each run once).
    gets = [e["path"] for e in h.requests(since) if e["method"] == "GET"]
    assert sum("/actions/runs?" in p or p.endswith("/actions/runs") for p in gets) == 2, gets
    assert sum(p.split("?")[0].endswith("/jobs") for p in gets) == 2, gets


def test_status_without_active_jobs_says_nothing_is_queued(h):
    h.on_comment(7, "mallory", "/status")
    english, chinese = bilingual(h.bot_comments(7)[-1]["body"])
    assert "No run of the repository is queued or running." in english
    assert "没有排队或运行中的运行" in chinese


NOW = dt.datetime(2026, 1, 5, 10, 30, tzinfo=dt.timezone.utc)


def _job(name: str, status: str, labels: list[str], created: str = "10:00:00", started: str | None = None) -> RunJob:
    at = lambda hms: dt.datetime.fromisoformat(f"2026-01-05T{hms}+00:00")  # noqa: E731
    return RunJob(1, name, status, None, "", tuple(labels), at(created), at(started or created))


def test_more_active_runs_than_counted_says_the_view_was_capped():
    view = queue_view.context([], [_job("a", "queued", H200)], now=NOW, active_runs=35,
                              counted_runs=queue_view.MAX_QUEUE_RUNS, more_pages=False)
    assert view["capped"] and not view["more_pages"]
    uncapped = queue_view.context([], [], now=NOW, active_runs=3, counted_runs=3, more_pages=False)
    assert not uncapped["capped"]


def test_a_queued_job_waits_until_now_and_a_started_one_until_it_started():
    assert queue_view.waited(_job("q", "queued", H200, "10:00:00"), NOW) == (1800, True)
    assert queue_view.waited(_job("r", "in_progress", H200, "10:00:00", "10:04:01"), NOW) == (241, False)
    assert queue_view.duration(3725) == {"h": 1, "m": 2, "s": 5}


def test_the_runner_label_leaves_out_the_generic_self_hosted_label():
    assert queue_view.label_key(["self-hosted", "h200", "x8"]) == "h200 + x8"
    assert queue_view.label_key(["self-hosted"]) == "self-hosted"
    assert queue_view.label_key(["ubuntu-latest"]) == "ubuntu-latest"
