"""`github-sandbox seed|deliver|serve` from the command line: a seed repository from a spec, an event from a running sandbox, clear refusals."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from github_sandbox.cli import main
from github_sandbox.harness import SAMPLE_FEATURE_FILES, SAMPLE_MAIN_FILES, make_seed
from github_sandbox.seed import load_seed


def github_sandbox(*args: str) -> subprocess.CompletedProcess[str]:
    """The console script as a user runs it (`python -m github_sandbox` is the same entry point)."""
    return subprocess.run([sys.executable, "-m", "github_sandbox", *args], capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)


def write_spec(tmp_path: Path, spec: object) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    return path


def head(repo: Path, branch: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "rev-parse", branch], check=True, capture_output=True,
                          text=True).stdout.strip()


def test_seed_builds_the_same_repository_as_the_harness(tmp_path: Path) -> None:
    overrides = {"pulls": [{"number": 3, "head": "tune", "base": "main", "author": "bob"}]}
    spec = write_spec(tmp_path, {"main": SAMPLE_MAIN_FILES, "feature": SAMPLE_FEATURE_FILES, "seed": overrides,
                                 "feature_branch": "tune"})
    result = CliRunner().invoke(main, ["seed", str(tmp_path / "cli"), "--spec", str(spec)])
    assert result.exit_code == 0, result.output
    seed_path = Path(result.output.strip())
    assert seed_path == tmp_path / "cli" / "seed.yaml"
    assert [p.number for p in load_seed(seed_path).seed.pulls] == [3]
    reference = make_seed(tmp_path / "py", SAMPLE_MAIN_FILES, SAMPLE_FEATURE_FILES, overrides, feature_branch="tune")
    for branch in ("main", "tune"):
        assert head(tmp_path / "cli" / "repo", branch) == head(reference.parent / "repo", branch)


@pytest.mark.parametrize("spec, named", [
    ({"main": {}, "extra": 1}, "extra: unknown key; accepted: main, feature, seed, feature_branch"),
    ({"main": {"a.txt": 5}}, "main.a.txt: expected text, got int"),
    ({"main": {"a.txt": None}}, "main.a.txt: expected text, got NoneType"),
    ({"feature": ["a.txt"]}, "feature: expected a mapping of file path to text or null, got list"),
    ({"seed": "acme/bench"}, "seed: expected a mapping of seed keys"),
    (["main"], "(top level): expected a mapping"),
], ids=["unknown-key", "main-not-text", "main-deletes", "feature-not-a-mapping", "seed-not-a-mapping", "not-a-mapping"])
def test_a_bad_spec_is_one_error_naming_the_file_and_field_in_both_languages(tmp_path: Path, spec: object,
                                                                             named: str) -> None:
    path = write_spec(tmp_path, spec)
    result = CliRunner().invoke(main, ["seed", str(tmp_path / "out"), "--spec", str(path)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    english, chinese = result.output.strip().split("\n")
    assert english.startswith(f"Error: {path}: {named}")
    assert chinese.startswith(f"{path}：") and any("\u4e00" <= ch <= "\u9fff" for ch in chinese)
    assert not (tmp_path / "out" / "repo").exists()


def test_seed_refuses_a_folder_that_has_a_repository_already(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, {"main": SAMPLE_MAIN_FILES})
    assert CliRunner().invoke(main, ["seed", str(tmp_path / "out"), "--spec", str(spec)]).exit_code == 0
    again = CliRunner().invoke(main, ["seed", str(tmp_path / "out"), "--spec", str(spec)])
    assert again.exit_code == 1 and "exists already" in again.output and "已存在" in again.output


def test_deliver_writes_the_event_the_bot_reads_from_a_running_sandbox(sandbox, tmp_path: Path) -> None:
    sb = sandbox()
    comment = sb.github("alice").get_repo("acme/bench").get_issue(7).create_comment("/sweep")
    out = tmp_path / "event.json"
    done = github_sandbox("deliver", "issue_comment", "created", "--sandbox", sb.url, "-s", f"comment_id={comment.id}",
                          "--out", str(out))
    assert done.returncode == 0, done.stderr
    payload = json.loads(out.read_text(encoding="utf-8"))
    assert payload["comment"]["id"] == comment.id and payload["comment"]["body"] == "/sweep"
    assert payload["issue"]["number"] == 7 and payload["sender"]["login"] == "alice"
    assert sb.request("GET", "/_sandbox/webhooks/deliveries") == []  # written, not sent: no --send


def test_deliver_names_what_the_sandbox_refused_and_a_missing_sandbox(sandbox) -> None:
    sb = sandbox()
    refused = github_sandbox("deliver", "issue_comment", "created", "--sandbox", sb.url, "-s", "comment_id=999999")
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "the sandbox refused issue_comment created: 400" in refused.stderr and "拒绝" in refused.stderr
    gone = github_sandbox("deliver", "issue_comment", "created", "--sandbox", "http://127.0.0.1:9")
    assert gone.returncode == 1 and "no sandbox at http://127.0.0.1:9" in gone.stderr and "没有" in gone.stderr


@pytest.mark.parametrize("args, english, chinese", [
    (["serve", "--seed", "x.yaml", "--port", "70000"], "70000 is not in the range 0<=x<=65535", "命令行参数有误"),
    (["serve"], "Missing option '--seed'", "命令行参数有误"),
    (["deliver", "issue_comment", "created", "--sandbox", "http://x", "-s", "comment_id"], "expected KEY=VALUE",
     "应为 KEY=VALUE"),
], ids=["port-out-of-range", "no-seed", "selector-without-value"])
def test_a_usage_error_is_refused_with_a_chinese_line_too(args: list[str], english: str, chinese: str) -> None:
    done = github_sandbox(*args)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert english in done.stderr and chinese in done.stderr


def test_help_lists_the_three_commands_and_takes_dash_h() -> None:
    done = github_sandbox("-h")
    assert done.returncode == 0
    assert all(f"  {name} " in done.stdout for name in ("serve", "seed", "deliver"))
