"""`/reuse <run-id>`: an earlier run counts for the head only while every touched recipe's fingerprint is the
same at both commits; kept after a push of other files, ended by a push that changes a touched recipe."""
import pytest

from bot.core import stage_markers
from bot.control import reuse
from github_sandbox.harness import make_seed
from handle_helpers import BOT, PULLS, Harness, bilingual
from test_gate_events import CHECK, MAIN, recipe

TOUCHED = {"recipes/tiny-cpu.yaml": recipe("[1, 4, 8]")}


@pytest.fixture
def world(sandbox, tmp_path):
    seed = make_seed(tmp_path / "sandbox", MAIN, TOUCHED,
                     {"pulls": PULLS, "issues": [{"number": 20, "author": "bob", "title": "A bug"}]})
    return Harness(sandbox(seed), tmp_path)


def checks(h: Harness, sha: str) -> list[dict]:
    return [c for c in h.sb.state()["check_runs"] if c["head_sha"] == sha and c["name"] == CHECK]


def measured(h: Harness, sha: str, *, conclusion: str = "success", actor: str | None = None,
             gate: str | None = "success", pr: int = 7) -> int:
    """A GPU run of the bot that measured sha, and the merge gate its report posted there."""
    fields = {"actor": actor} if actor else {}
    run = h.sb.add_run("gpu.yml", inputs={"pr": str(pr), "sha": sha, "command": "/sweep", "requester": "carol",
                                          "comment_id": "1"}, conclusion=conclusion, **fields)
    if gate:
        h.sb.request("POST", "/repos/acme/bench/check-runs", {
            "name": CHECK, "head_sha": sha, "status": "completed", "conclusion": gate,
            "output": {"title": "gate", "summary": "gate"}}, user=BOT)
    return run["id"]


def push(h: Harness, files: dict) -> str:
    old = h.head(7)
    new = h.sb.push("feature", files, author="carol")["after"]
    h.handle("pull_request", "synchronize", pull=7, before=old, after=new, sender="carol")
    return new


def test_reuse_is_accepted_kept_after_a_push_of_other_files_and_ended_by_a_recipe_push(world):
    h = world
    measured_sha = h.head(7)
    run_id = measured(h, measured_sha)
    head = push(h, {"README.md": "# only the docs changed\n"})
    [planned] = checks(h, head)
    assert planned["status"] == "in_progress"

    h.on_comment(7, "alice", f"/reuse {run_id}")
    reply = h.bot_comments(7)[-1]["body"]
    english, chinese = bilingual(reply)
    assert f"reuses run [{run_id}]" in english and measured_sha in english and "`tiny-cpu`" in english
    assert "沿用运行" in chinese and measured_sha in chinese and "配方指纹" in chinese
    assert stage_markers.reuse_marker(stage_markers.Reuse(head, run_id, measured_sha, "alice")) in reply  # pinned to the full head
    [check] = checks(h, head)
    assert (check["status"], check["conclusion"]) == ("completed", "success")
    assert f"reused run {run_id}" in check["title"] and measured_sha in check["summary"]
    assert [r["id"] for r in h.dispatches()] == [run_id]  # nothing new was started

    kept = push(h, {"README.md": "# the docs changed again\n"})
    [check] = checks(h, kept)
    assert check["conclusion"] == "success" and measured_sha in check["summary"]
    english, _ = bilingual(h.bot_comments(7)[-1]["body"])
    assert "still reuses run" in english

    ended = push(h, {"recipes/tiny-cpu.yaml": recipe("[1, 4, 8, 16]")})
    [check] = checks(h, ended)
    assert (check["status"], check["conclusion"]) == ("in_progress", None) and "reuse" not in check["summary"]
    english, chinese = bilingual(h.bot_comments(7)[-1]["body"])
    assert "ended with the push" in english and "`tiny-cpu`" in english
    assert "失效" in chinese and "`tiny-cpu`" in chinese

    comments = len(h.bot_comments(7))
    later = push(h, {"recipes/tiny-cpu.yaml": recipe("[1, 4, 8]")})  # back as measured: still ended
    [check] = checks(h, later)
    assert check["status"] == "in_progress" and len(h.bot_comments(7)) == comments


def test_reuse_after_a_push_that_changed_a_recipe_is_refused_naming_the_recipe(world):
    h = world
    measured_sha = h.head(7)
    run_id = measured(h, measured_sha)
    head = push(h, {"recipes/tiny-cpu.yaml": recipe("[1, 4, 8, 16]")})
    h.on_comment(7, "alice", f"/reuse {run_id}")
    english, chinese = bilingual(h.bot_comments(7)[-1]["body"])
    assert "was not applied" in english and "| `tiny-cpu` |" in english and measured_sha in english
    assert "未生效" in chinese and "| `tiny-cpu` |" in chinese and "配方指纹不同" in chinese
    [check] = checks(h, head)
    assert check["status"] == "in_progress"
    assert reuse.latest([type("C", (), c)() for c in h.bot_comments(7)], BOT) is None


@pytest.mark.parametrize(("case", "expected_en", "expected_zh"), [
    ("not-found", "there is no workflow run 987654", "没有编号为 987654"),
    ("not-the-bots", "was not started by the bot", "不是机器人"),
    ("failed", "did not pass (conclusion: failure)", "未通过"),
    ("gate-failed", "is failure", "状态为 failure"),
    ("another-pr", "measured pull request #8", "PR #8"),
])
def test_reuse_of_a_run_that_cannot_count_is_refused_with_the_reason(world, case, expected_en, expected_zh):
    h = world
    sha = h.head(7)
    run_id = {"not-found": lambda: 987654,
              "not-the-bots": lambda: measured(h, sha, actor="mallory"),
              "failed": lambda: measured(h, sha, conclusion="failure", gate=None),
              "gate-failed": lambda: measured(h, sha, gate="failure"),
              "another-pr": lambda: measured(h, sha, pr=8)}[case]()
    h.on_comment(7, "alice", f"/reuse {run_id}")
    english, chinese = bilingual(h.bot_comments(7)[-1]["body"])
    assert expected_en in english and expected_zh in chinese
    assert not any("reused run" in c["title"] for c in checks(h, sha))
    assert reuse.latest([type("C", (), c)() for c in h.bot_comments(7)], BOT) is None


def test_reuse_needs_maintain_and_a_marker_typed_by_someone_else_counts_for_nothing(world):
    h = world
    measured_sha = h.head(7)
    run_id = measured(h, measured_sha)
    h.on_comment(7, "carol", f"/reuse {run_id}")  # write is not enough
    english, _ = bilingual(h.bot_comments(7)[-1]["body"])
    assert "maintain" in english
    forged = stage_markers.reuse_marker(stage_markers.Reuse(measured_sha, run_id, measured_sha, "alice"))
    h.comment(7, "carol", forged + "\nreusing, trust me")
    head = push(h, {"README.md": "# docs\n"})
    [check] = checks(h, head)
    assert check["status"] == "in_progress"


@pytest.mark.parametrize(("here", "there", "expected"), [
    ({"a": "1", "b": "2"}, {"a": "1", "b": "9"}, []),  # b differs but is not touched
    ({"a": "1"}, {"a": "2"}, [reuse.Difference("a", "1", "2")]),
    ({"a": "1"}, {}, [reuse.Difference("a", "1", None)]),
    ({}, {}, [reuse.Difference("a", None, None)]),  # an InferenceX config: no recipe fingerprint
    (None, {"a": "1"}, [reuse.Difference("*", None, None)]),
], ids=["untouched-differs", "changed", "new-at-head", "no-fingerprint", "unloadable"])
def test_the_one_fingerprint_rule(here, there, expected):
    assert reuse.differences(["a"], here, there) == expected


def test_the_merge_queue_compares_every_recipe_with_the_same_rule():
    assert reuse.differences(None, {"a": "1", "b": "2"}, {"a": "1", "b": "2"}) == []
    assert reuse.differences(None, {"a": "1"}, {"a": "1", "b": "2"}) == [reuse.Difference("b", None, "2")]
