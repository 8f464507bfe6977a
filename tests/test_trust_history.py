"""Bad history never moves the gate: stale events, broken artifacts of earlier runs, unreadable files.

Each case is one attack on what the bot reads back (a webhook delivered late or again, an artifact an
earlier run left, a diff GitHub shows as binary, a recipe that is not UTF-8, a command folded away),
driven through the sandbox and the command line where it is about the real flow.
"""
from __future__ import annotations

import base64
import io
import json
import subprocess
import zipfile

import pytest
from click.testing import CliRunner

from bot.core import i18n
from bot.core import commands
from tests import synthetic
from bot.report.cli import report_cmd
from handle_helpers import bilingual
from test_checklist_sandbox import benchmarks_passed, hc, latest_check, signoff, verdicts  # noqa: F401  (hc: a fixture)
from test_gate import _artifacts as gate_artifacts, _report as gate_report, pr_world  # noqa: F401  (pr_world: a fixture)


def _runs(h) -> dict[int, dict]:
    return {r["id"]: r for r in h.dispatches()}


# -- 1. a stale or replayed synchronize event -------------------------------------------------------

def test_a_stale_synchronize_event_cancels_no_run_of_the_live_head_and_posts_nothing(h):
    first = h.head(7)
    second = h.push()
    stale = h.event_file("pull_request", "synchronize", pull=7, before=first, after=second, sender="carol")
    h.push("name: tiny\nchanged: again\n")
    live = h.head(7)
    h.on_comment(7, "alice", "/sweep")
    [run] = h.dispatches()
    assert run["inputs"]["sha"] == live
    before = h.seq()
    result = h.handle("pull_request", "synchronize", path=stale)
    assert _runs(h)[run["id"]]["status"] != "completed"  # the live head's run goes on
    assert [w["operation"] for w in h.writes(before)] == []  # no check, no comment, no cancel
    assert f"is stale: the head is {live} now" in result.stderr  # said in the log


# -- 5. a command folded away in <details> ------------------------------------------------------------

DETAILS = [
    ("paragraph", "<details>\n<summary>old log</summary>\n\n/sweep\n\n</details>\n", []),
    ("nested-markdown", "<details><summary>x</summary>\n\n- item\n\n  > quoted\n\n**bold**\n\n/sweep --conc 4\n\n"
                        "</details>\n", []),
    ("unclosed", "Looks good.\n\n<details>\n\n/sweep\n", []),
    ("nested-details", "<details>\n\n<details>\n\ninner\n\n</details>\n\n/sweep\n\n</details>\n", []),
    ("after-the-block-runs", "<details>\n<summary>log</summary>\n\n/cancel\n\n</details>\n\n/sweep\n", ["sweep"]),
    ("a-tag-in-an-html-comment-is-no-tag", "<!-- <details> -->\n\n/sweep\n", ["sweep"]),
]


@pytest.mark.parametrize("body, expected", [c[1:] for c in DETAILS], ids=[c[0] for c in DETAILS])
def test_a_command_inside_a_details_block_is_hidden_and_one_after_it_runs(h, body, expected):
    assert [c.name for c in commands.parse_comment(body).commands] == expected
    h.on_comment(7, "alice", body)
    assert [r["inputs"]["command"].split()[0] for r in h.dispatches()] == [f"/{n}" for n in expected]


# -- 3. a file GitHub shows as binary ------------------------------------------------------------------

def test_a_script_github_shows_as_binary_is_unknown_to_the_engine_scan_and_fails_it_by_name(hc):
    h = hc()
    hidden = "#!/bin/sh\n\x00\nsed -i s/a/b/ /usr/lib/python3/site-packages/vllm/x.py\n"  # bash skips the NUL
    head = h.sb.push("feature", {"recipes/launch.sh": hidden}, author="carol")["after"]
    assert [f.get("patch") for f in h.sb.request("GET", "/repos/acme/bench/pulls/7/files", user="alice")
            if f["filename"] == "recipes/launch.sh"] == [None]  # GitHub's "Binary file not shown"
    benchmarks_passed(h, head)
    h.on_comment(7, "alice", signoff("alice"))
    english, chinese = bilingual(verdicts(h)[head][0]["body"])
    assert "unknown: GitHub shows no diff for `recipes/launch.sh`" in english
    assert "未知：GitHub 不显示 `recipes/launch.sh` 的差异" in chinese
    assert latest_check(h, head)["conclusion"] == "failure"


# -- 4. a recipe that is not UTF-8 ---------------------------------------------------------------------

def _commit_bytes(h, path: str, data: bytes) -> str:
    """A push of raw bytes, as plain git in the sandbox's repository (its push API takes text)."""
    repo = h.tmp / "sandbox" / "repo"
    git = ["git", "-C", str(repo), "-c", "user.name=carol", "-c", "user.email=carol@users.noreply.github.com"]
    subprocess.run([*git, "checkout", "-q", "feature"], check=True)
    (repo / path).write_bytes(data)
    subprocess.run([*git, "add", path], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "A recipe in Latin-1"], check=True)
    subprocess.run([*git, "checkout", "-q", "main"], check=True)
    return h.head(7)


def test_a_recipe_that_is_not_utf8_is_a_plan_error_on_the_gate_naming_file_and_byte(h):
    old = h.head(7)
    new = _commit_bytes(h, "recipes/tiny.yaml", "name: tiny\n# caf\xe9\n".encode("latin-1"))
    assert new != old
    h.handle("pull_request", "synchronize", pull=7, before=old, after=new, sender="carol")
    [gate] = [c for c in h.sb.state()["check_runs"] if c["head_sha"] == new and c["name"] == "recipe-bot / benchmarks"]
    assert gate["conclusion"] == "failure"
    english, chinese = bilingual(gate["summary"])
    assert "recipes/tiny.yaml" in english and "recipes/tiny.yaml: not UTF-8 text (byte 16" in english
    assert "不是 UTF-8 文本（第 16 字节" in chinese


# -- 2. one bad artifact of an earlier run on the head ----------------------------------------------

def _zip(files: dict[str, str]) -> str:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zipped:
        for name, text in files.items():
            zipped.writestr(name, text)
    return base64.b64encode(buffer.getvalue()).decode()


BAD_ARTIFACTS = [
    ("a-repetitive-log", {"files": {"tiny/server.log": "INFO engine ready, waiting for requests\n" * 60_000}},
     "expands 2,400,000 bytes", "解压为 2,400,000 字节"),
    ("zip-slip", {"zip_base64": _zip({"../../outside/result.json": "{}"})}, "points outside the artifact folder",
     "指向 artifact 目录之外"),
    ("not-a-zip", {"zip_base64": base64.b64encode(b"<html>rate limited</html>").decode()}, "not a zip archive",
     "不是 zip 归档"),
]


@pytest.mark.parametrize("bad, english_why, chinese_why", [c[1:] for c in BAD_ARTIFACTS],
                         ids=[c[0] for c in BAD_ARTIFACTS])
def test_a_bad_artifact_of_an_earlier_run_is_skipped_and_named_and_the_gate_still_posts(
        pr_world, tmp_path, bad, english_why, chinese_why):
    sb, head = pr_world
    full = synthetic.sweep_plan("tiny-cpu", concurrencies=(1, 64), sha=head, command="/sweep")
    passed = synthetic.run_sweep(full)
    prior = sb.add_run("gpu.yml", inputs={"pr": "7", "sha": head, "command": "/sweep", "requester": "carol",
                                          "comment_id": "1"}, conclusion="success",
                       artifacts=[*gate_artifacts([full], [passed]), {"name": "result-broken", **bad}])
    rerun = synthetic.sweep_plan("tiny-cpu", concurrencies=(64,), sha=head, command="/sweep --conc 64")
    checks, summary = gate_report(sb, tmp_path, head, [rerun], [synthetic.run_sweep(rerun)], [full],
                                  prior["id"] + 100, "later")
    assert summary["gate"]["conclusion"] == "success"  # the earlier run's good artifacts still count
    assert [(s["run"], s["artifact"]) for s in summary["gate"]["skipped_artifacts"]] == [(prior["id"], "result-broken")]
    english, chinese = checks[-1]["summary"].split(i18n.SEPARATOR)[:2]  # the gate's section opens the check
    assert f"run {prior['id']}, `result-broken`: " in english and english_why in english
    assert f"运行 {prior['id']}，`result-broken`：" in chinese and chinese_why in chinese


def test_a_deeply_nested_result_json_is_one_failed_job_in_an_earlier_run_and_in_this_one(pr_world, tmp_path):
    sb, head = pr_world
    deep = "[" * 100_000 + "]" * 100_000
    full = synthetic.sweep_plan("tiny-cpu", concurrencies=(1,), sha=head, command="/sweep")
    prior = sb.add_run("gpu.yml", inputs={"pr": "7", "sha": head, "command": "/sweep", "requester": "carol",
                                          "comment_id": "1"}, conclusion="failure",
                       artifacts=[*gate_artifacts([full], []), {"name": "result-deep", "files": {"x/result.json": deep}}])
    folder = tmp_path / "now"
    (folder / "results" / "y").mkdir(parents=True)
    (folder / "results" / "y" / "result.json").write_text(deep, encoding="utf-8")
    result = CliRunner().invoke(report_cmd, [
        "--results", str(folder / "results"), "--sha", head, "--pr", "7", "--gate", "--post",
        "--out", str(folder / "out"), "--bot-login", sb.state()["bot"]], env={**sb.env(), "GITHUB_RUN_ID": str(prior["id"] + 100)})
    assert result.exit_code == 0, result.output
    summary = json.loads((folder / "out" / "summary.json").read_text(encoding="utf-8"))
    assert summary["gate"]["failing"] == [{"recipe": "tiny-cpu", "item": "tp1-c1", "status": "failed",
                                           "run_id": prior["id"]}]  # its planned job had no readable result
    comment = (folder / "out" / "comment.md").read_text(encoding="utf-8")
    assert "y/result.json is not a valid result" in comment and "recursion limit exceeded" in comment
