"""The seed file is a contract: good seeds load, bad ones get one error naming the file, line and field."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from github_sandbox.cli import serve_cmd
from github_sandbox.harness import SAMPLE_FEATURE_FILES, SAMPLE_MAIN_FILES, make_seed
from github_sandbox.seed import SeedError, load_seed
from github_sandbox.state import SandboxState

GOOD = """\
repository: acme/bench
default_branch: main
git: ./repo
bot: recipe-bot[bot]
users: {alice: admin, carol: write, bob: read, mallory: none}
teams: {acme/core: [alice]}
pulls:
  - {number: 7, head: feature, base: main, author: bob, fork: false, draft: false,
     title: "Tune tiny recipe", body: "", labels: [],
     comments: [{id: 101, user: alice, body: "/sweep"}]}
"""


@pytest.fixture
def seed_dir(tmp_path: Path) -> Path:
    make_seed(tmp_path, SAMPLE_MAIN_FILES, SAMPLE_FEATURE_FILES)
    return tmp_path


def write(seed_dir: Path, text: str) -> Path:
    path = seed_dir / "seed.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def load_state(path: Path) -> SandboxState:
    return SandboxState(load_seed(path))


def test_the_seed_from_the_issue_loads_as_written(seed_dir: Path) -> None:
    state = load_state(write(seed_dir, GOOD))
    snap = state.snapshot()
    assert snap["repository"]["full_name"] == "acme/bench"
    assert snap["users"] == {"alice": "admin", "carol": "write", "bob": "read", "mallory": "none",
                             "recipe-bot[bot]": "write"}
    [pull] = snap["pulls"]
    assert (pull["number"], pull["head"], pull["base"], pull["author"], pull["head_repo"]) == (
        7, "feature", "main", "bob", "acme/bench")
    assert pull["head_sha"] == state.git.branch_sha("feature")
    assert snap["comments"][0] | {"created": None, "updated": None} == {
        "id": 101, "issue": 7, "user": "alice", "body": "/sweep", "created": None, "updated": None, "edits": []}
    assert [w["file"] for w in snap["workflows"]] == ["recipe-bot.yml", "gpu.yml"]
    assert state.association("alice") == "MEMBER" and state.association("carol") == "COLLABORATOR"
    assert state.association("mallory") == "NONE"


def test_optional_fields_fork_merged_closed_workflows_and_runs(seed_dir: Path) -> None:
    text = GOOD.replace("fork: false", "fork: true") + """\
  - {number: 9, head: feature, author: carol, merged: true}
workflows: [{file: gpu.yml, name: GPU, id: 42}]
workflow_runs:
  - {workflow: gpu.yml, branch: feature, conclusion: success, inputs: {pr: "7"},
     artifacts: [{name: results, files: {result.json: "{}"}}]}
"""
    snap = load_state(write(seed_dir, text)).snapshot()
    fork, merged = snap["pulls"]
    assert (fork["fork"], fork["head_repo"]) == (True, "bob/bench")
    assert (merged["merged"], merged["state"], merged["base"]) == (True, "closed", "main")
    assert snap["workflows"] == [{"id": 42, "file": "gpu.yml", "path": ".github/workflows/gpu.yml", "name": "GPU",
                                  "state": "active"}]
    [run] = snap["workflow_runs"]
    assert (run["workflow_id"], run["status"], run["conclusion"], run["inputs"]) == (42, "completed", "success", {"pr": "7"})
    assert run["artifacts"][0]["name"] == "results"


@pytest.mark.parametrize("text, expected", [
    (GOOD + "colour: blue\n", "seed.yaml:11: colour: unknown key; accepted keys here: repository, default_branch"),
    (GOOD.replace("fork: false,", "fork: false, forked: true,"),
     "seed.yaml:8: pulls[0].forked: unknown key; accepted keys here: number, title, body, author"),
    (GOOD.replace("carol: write", "carol: owner"), "seed.yaml:5: users.carol: Input should be 'none', 'read'"),
    (GOOD.replace("repository: acme/bench", "repository: bench"), "seed.yaml:1: repository: Value error, must be owner/name"),
    (GOOD.replace("teams: {acme/core: [alice]}", "teams: {core: [alice]}"), "seed.yaml:6: teams: Value error, team 'core' must be org/slug"),
    (GOOD + "issues: [{number: 7, author: bob}]\n", "pull and issue numbers must be unique; repeated: [7]"),
    (GOOD.replace("head: feature", "head: nope"), "seed.yaml:8: pulls[0].head: no branch 'nope' in"),
    (GOOD.replace("fork: false,", "fork: false, head_sha: deadbeef,"), "seed.yaml:8: pulls[0].head_sha: no commit 'deadbeef'"),
    (GOOD.replace("git: ./repo", "git: ./missing"), "seed.yaml:3: git: "),
    (GOOD.replace("default_branch: main", "default_branch: trunk"), "seed.yaml:2: default_branch: no branch 'trunk'"),
    (GOOD + "workflow_runs: [{workflow: deploy.yml}]\n",
     "seed.yaml:11: workflow_runs[0].workflow: no workflow 'deploy.yml'; workflows: recipe-bot.yml, gpu.yml"),
    ("repository: [unclosed\n", "seed.yaml:2: not valid YAML"),
    ("- just a list\n", "seed.yaml:1: the seed must be a mapping"),
], ids=["unknown-top-key", "unknown-pull-key", "bad-permission", "repository-without-owner", "team-without-org",
        "duplicate-numbers", "head-branch-missing", "head-sha-missing", "git-dir-missing", "default-branch-missing",
        "run-of-unknown-workflow", "not-yaml", "not-a-mapping"])
def test_a_bad_seed_gets_one_error_naming_file_line_and_field(seed_dir: Path, text: str, expected: str) -> None:
    path = write(seed_dir, text)
    with pytest.raises(SeedError) as err:
        load_state(path)
    message = str(err.value)
    assert message.startswith(str(path.parent)) and expected in message, message


def test_the_command_reports_a_bad_seed_and_exits_non_zero(seed_dir: Path) -> None:
    path = write(seed_dir, GOOD.replace("head: feature", "head: nope"))
    result = CliRunner().invoke(serve_cmd, ["--seed", str(path), "--port", "0"])
    assert result.exit_code == 1
    assert "pulls[0].head: no branch 'nope'" in result.output and "listening on" not in result.output
