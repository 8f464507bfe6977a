"""The sign-off through the sandbox: a `recipe-bot / sign-off` check on every head SHA, one verdict comment
per SHA edited in place, and a new verification on an edit, a push and the end of a GPU run."""
from __future__ import annotations

import subprocess
import sys

import pytest
from handle_helpers import BOT, CONFIG, PULLS, ROOT, Harness, bilingual, dry_run_lines

from bot.checklist.render import CHECK_NAME
from bot.core.stage_markers import parse_sign_off_marker as parse_marker
from github_sandbox.harness import make_seed

CHECKLIST = ("checklist:\n  version: 1\n  allowed_registries: [docker.io/vllm]\n")
CODEOWNERS = "* @acme/core\nrecipes/ @alice @acme/recipes\n"
EN = (ROOT / "checklists/PR_REVIEW_CHECKLIST.md").read_text(encoding="utf-8")
ZH = (ROOT / "checklists/PR_REVIEW_CHECKLIST_zh.md").read_text(encoding="utf-8")


def signoff(signed: str, *, lang: str = "en", open_ids: tuple[str, ...] = ()) -> str:
    text = (EN if lang == "en" else ZH).split("\n---\n", 1)[1]
    for line in text.splitlines():
        if line.startswith("- [ ] ") and not any(f"] {i} " in line for i in open_ids):
            text = text.replace(line, "- [x] " + line[6:])
    return text.replace("FILL_IN_GITHUB_USERNAME", signed)


@pytest.fixture
def hc(sandbox, tmp_path):
    """`h` with a repository that uses the sign-off: config section, both templates, CODEOWNERS."""
    def start(codeowners: str = CODEOWNERS, pulls: list[dict] = PULLS) -> Harness:
        files_main = {
            "README.md": "# bench\n",
            ".github/recipe-bot.yaml": CONFIG + CHECKLIST,
            ".github/workflows/gpu.yml": (ROOT / ".github/workflows/gpu.yml").read_text(encoding="utf-8"),
            "checklists/PR_REVIEW_CHECKLIST.md": EN,
            "checklists/PR_REVIEW_CHECKLIST_zh.md": ZH,
            ".github/CODEOWNERS": codeowners,
        }
        overrides = {"pulls": pulls, "users": {"alice": "admin", "carol": "write", "bob": "read", "dave": "write",
                                              "mallory": "none"},
                     "teams": {"acme/core": ["alice"], "acme/recipes": ["dave"]}}
        seed = make_seed(tmp_path / f"sb-{len(harnesses)}", files_main, {"recipes/tiny.yaml": "name: tiny\n"}, overrides)
        harness = Harness(sandbox(seed), tmp_path)
        harnesses.append(harness)
        return harness

    harnesses: list[Harness] = []
    yield start
    for harness in harnesses:
        invalid = [f"{e['method']} {e['path']}: {e['errors']}" for e in harness.requests() if not e["valid"]]
        assert invalid == [], "the bot sent requests that break GitHub's OpenAPI description"


def checks(h: Harness, sha: str) -> list[dict]:
    return sorted((c for c in h.sb.state()["check_runs"] if c["head_sha"] == sha and c["name"] == CHECK_NAME),
                  key=lambda c: c["id"])


def latest_check(h: Harness, sha: str) -> dict:
    found = checks(h, sha)
    assert found, f"no {CHECK_NAME} check on {sha}"
    return found[-1]


def verdicts(h: Harness, pr: int = 7) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for comment in h.bot_comments(pr):
        if (marker := parse_marker(comment["body"])) is not None:
            out.setdefault(marker.sha, []).append(comment)
    return out


def benchmarks_passed(h: Harness, sha: str, conclusion: str = "success") -> None:
    h.sb.request("POST", "/repos/acme/bench/check-runs", {
        "name": "recipe-bot / benchmarks", "head_sha": sha, "status": "completed", "conclusion": conclusion,
        "output": {"title": "all jobs passed", "summary": "ok"}}, user=BOT)


def pushed(h: Harness, action: str = "synchronize") -> None:
    """pull_request_target carries the pull_request payload; the workflow listens to it."""
    h.handle("pull_request_target", action, path=h.event_file("pull_request", action, pull=7))


def gpu_run_ends(h: Harness, sha: str) -> None:
    run = h.sb.add_run("gpu.yml", inputs={"pr": "7", "sha": sha, "command": "/sweep", "requester": "carol"},
                       status="in_progress")
    h.sb.set_run(run["id"], status="completed", conclusion="success")
    h.handle("workflow_run", "completed", run_id=run["id"])


def test_every_head_sha_gets_a_waiting_check_from_the_push(hc):
    h = hc()
    first = h.head(7)
    pushed(h, "opened")
    assert latest_check(h, first)["status"] == "in_progress"
    assert "Waiting for a sign-off" in latest_check(h, first)["title"]
    second = h.push()
    pushed(h)
    check = latest_check(h, second)
    assert check["status"] == "in_progress" and "等待签核" in check["title"]
    assert verdicts(h) == {}, "no sign-off yet: the check says so, no comment"


def test_signoff_lifecycle_one_comment_per_sha_edited_on_each_verification(hc):
    h = hc()
    head = h.head(7)
    comment_id = h.comment(7, "alice", signoff("alice"))
    h.handle("issue_comment", "created", comment_id=comment_id)
    [verdict] = verdicts(h)[head]
    assert latest_check(h, head)["conclusion"] == "failure", "no benchmark verdict on this SHA yet"
    english, chinese = bilingual(verdict["body"].split("\n", 1)[1])
    assert "no `recipe-bot / benchmarks` result" in english and "签核未通过" in chinese

    benchmarks_passed(h, head)
    gpu_run_ends(h, head)
    [verdict] = verdicts(h)[head]
    assert "Sign-off verified" in verdict["body"] and "签核通过" in verdict["body"]
    assert latest_check(h, head)["conclusion"] == "success"

    h.edit(comment_id, "alice", signoff("alice", open_ids=("C5",)))
    h.handle("issue_comment", "edited", comment_id=comment_id)
    [verdict] = verdicts(h)[head]
    assert "C5 left unticked without an explanation" in verdict["body"]
    assert latest_check(h, head)["conclusion"] == "failure"

    new_head = h.push()
    pushed(h)
    check = latest_check(h, new_head)
    assert check["status"] == "in_progress" and "stale" in check["title"]
    assert "@alice" in check["summary"] and head[:12] in check["summary"]
    assert list(verdicts(h)) == [head], "a push alone posts no comment"

    h.on_comment(7, "alice", signoff("alice"))
    benchmarks_passed(h, new_head)
    result = subprocess.run([sys.executable, "-c", "from bot.cli import main; main(prog_name='recipe-bot')",
                             "checklist", "verify", "--pr", "7", "--sha", new_head],
                            env=h.env, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "success"
    assert latest_check(h, new_head)["conclusion"] == "success"
    assert {sha: len(found) for sha, found in verdicts(h).items()} == {head: 1, new_head: 1}


def test_review_signoff_by_a_team_member_in_chinese(hc):
    h = hc()
    head = h.head(7)
    benchmarks_passed(h, head)
    review = h.sb.add_review(7, "dave", "APPROVED", body=signoff("dave", lang="zh"))
    h.handle("pull_request_review", "submitted", review_id=review["id"])
    assert latest_check(h, head)["conclusion"] == "success"
    memberships = [r["path"] for r in h.requests() if r["operation"] == "teams/get-membership-for-user-in-org"]
    assert memberships == ["/orgs/acme/teams/recipes/memberships/dave"]
    assert "(the Chinese template)" in verdicts(h)[head][0]["body"]


def test_a_team_the_token_cannot_read_is_a_clear_failure(hc):
    h = hc("recipes/ @acme/ghosts\n")
    head = h.head(7)
    benchmarks_passed(h, head)
    h.on_comment(7, "dave", signoff("dave"))
    body = verdicts(h)[head][0]["body"]
    assert "the token cannot read team `acme/ghosts`" in body and "令牌无法读取团队" in body
    assert latest_check(h, head)["conclusion"] == "failure"


def test_a_codeowners_syntax_error_names_its_line(hc):
    h = hc("* @acme/core\nrecipes/ alice\n")
    head = h.head(7)
    h.on_comment(7, "alice", signoff("alice"))
    body = verdicts(h)[head][0]["body"]
    assert "`.github/CODEOWNERS@main` line 2" in body and "第 2 行" in body
    assert latest_check(h, head)["conclusion"] == "failure"


def test_a_quoted_signoff_is_answered_and_does_not_count(hc):
    h = hc()
    head = h.head(7)
    h.on_comment(7, "alice", "> " + signoff("alice").replace("\n", "\n> "))
    [verdict] = verdicts(h)[head]
    assert "inside a quote or a code block" in verdict["body"] and "引用块或代码块" in verdict["body"]
    assert latest_check(h, head)["status"] == "in_progress"
    new_head = h.push()
    pushed(h)
    assert list(verdicts(h)) == [head], "an old quote is no news on the next push"
    assert latest_check(h, new_head)["status"] == "in_progress"


def test_a_review_counts_only_for_the_commit_it_was_submitted_on(hc):
    h = hc()
    old_head = h.head(7)
    benchmarks_passed(h, old_head)
    review = h.sb.add_review(7, "alice", "APPROVED", body=signoff("alice"))
    h.handle("pull_request_review", "submitted", review_id=review["id"])
    assert latest_check(h, old_head)["conclusion"] == "success"
    new_head = h.push()
    benchmarks_passed(h, new_head)
    pushed(h)
    check = latest_check(h, new_head)
    assert check["status"] == "in_progress" and f"review-{review['id']}" in check["summary"]


def test_dry_run_verification_prints_its_writes_and_makes_none(hc):
    h = hc()
    h.comment(7, "alice", signoff("alice"))
    before = h.seq()
    result = subprocess.run([sys.executable, "-c", "from bot.cli import main; main(prog_name='recipe-bot')",
                             "checklist", "verify", "--pr", "7", "--dry-run"],
                            env=h.env, capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    actions = [line["action"] for line in dry_run_lines(result.stdout.rsplit("\n", 2)[0])]
    assert actions == ["comment", "check"]
    assert h.writes(before) == []


def test_two_signoffs_in_one_comment_fail_with_both_lines(hc):
    h = hc()
    head = h.head(7)
    h.on_comment(7, "alice", signoff("alice") + "\n\n" + signoff("alice"))
    body = verdicts(h)[head][0]["body"]
    assert "holds 2 sign-offs" in body and "每条评论只能有一份" in body
    assert latest_check(h, head)["conclusion"] == "failure"


def test_the_bots_own_verdict_is_not_read_as_a_signoff(hc):
    h = hc()
    head = h.head(7)
    h.on_comment(7, "alice", signoff("alice"))
    [verdict] = verdicts(h)[head]
    before = h.seq()
    h.handle("issue_comment", "created", comment_id=verdict["id"])
    assert h.writes(before) == []


@pytest.mark.parametrize("args,message", [
    (["--pr", "7", "--sha", "abc123"], "full 40-character"),
    (["--pr", "0"], "positive integer"),
])
def test_verify_cli_rejects_bad_input_in_both_languages(args, message):
    result = subprocess.run([sys.executable, "-c", "from bot.cli import main; main(prog_name='recipe-bot')",
                             "checklist", "verify", *args], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert result.returncode == 2 and message in result.stderr
    assert any("\u4e00" <= ch <= "\u9fff" for ch in result.stderr)
    assert "Traceback" not in result.stderr


def test_a_signoff_written_before_the_push_and_never_judged_is_stale(hc):
    old = {"id": 900, "user": "alice", "body": signoff("alice"), "created": "2024-01-01T00:00:00Z"}
    h = hc(pulls=[{**PULLS[0], "comments": [old]}, *PULLS[1:]])
    new_head = h.push()
    benchmarks_passed(h, new_head)
    pushed(h)
    check = latest_check(h, new_head)
    assert check["status"] == "in_progress" and "written before it" in check["summary"]
    assert check["external_id"].startswith("pushed-at:")
    h.handle("issue_comment", "created", comment_id=900)  # a handler that ran late still finds it stale
    assert latest_check(h, new_head)["status"] == "in_progress" and verdicts(h) == {}
    h.on_comment(7, "alice", signoff("alice"))
    assert latest_check(h, new_head)["conclusion"] == "success"


def test_engine_patch_and_image_in_the_diff_fail_until_a_waiver_is_linked(hc):
    h = hc()
    head = h.sb.push("feature", {"recipes/launch.sh": "#!/bin/sh\ncd /opt/vllm && git apply /w/fast.patch\n",
                                 "recipes/tiny.yaml": "name: tiny\nimage: vllm/vllm-openai:v0.9.2\n"},
                     author="carol")["after"]
    benchmarks_passed(h, head)
    comment_id = h.comment(7, "alice", signoff("alice"))
    h.handle("issue_comment", "created", comment_id=comment_id)
    body = verdicts(h)[head][0]["body"]
    assert "the diff patches the engine: `recipes/launch.sh` (line 2)" in body
    assert "`vllm/vllm-openai:v0.9.2` from allowed registries" in body
    assert latest_check(h, head)["conclusion"] == "failure"
    linked = signoff("alice").replace("- insert any additional info here", "- C7: waiver at docs/waiver/7.md")
    h.edit(comment_id, "alice", linked)
    h.handle("issue_comment", "edited", comment_id=comment_id)
    [verdict] = verdicts(h)[head]
    assert "and the waiver `docs/waiver/7.md` is linked" in verdict["body"]
    assert latest_check(h, head)["conclusion"] == "success"
