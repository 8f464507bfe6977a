"""`recipe-bot plan` on the command line: the table people read and the JSON the GPU workflow reads."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli import main
from bot.core.jobs import Job
from git_helpers import GIT_ENV, git  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str, str]:
    """A repository with the shipped recipes, and a second commit that changes the tiny recipes' engine script."""
    root = tmp_path / "repo"
    shutil.copytree(ROOT / "recipes", root / "recipes")
    (root / "scripts").mkdir()
    (root / "scripts" / "setup-cpu-engine.sh").write_text("#!/bin/sh\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    base = git(root, "rev-parse", "HEAD")
    (root / "scripts" / "setup-cpu-engine.sh").write_text("#!/bin/sh\necho changed\n")
    git(root, "commit", "-q", "-am", "head")
    return root, base, git(root, "rev-parse", "HEAD")


def run(*args: str):
    return CliRunner().invoke(main, ["plan", *args], catch_exceptions=False)


def test_the_default_table_names_recipes_launches_and_shared_infra(repo):
    root, base, head = repo
    result = run("--repo", str(root), "--base", base, "--head", head)
    assert result.exit_code == 0, result.output
    assert "tiny-cpu" in result.output and "tiny-cpu-e2e" in result.output
    assert "gpu-smoke-vllm" not in result.output
    assert "shared infra touched, 2 recipes affected" in result.output
    assert "GPU-h" in result.output and "Launches" in result.output


def test_json_carries_matrices_per_runner_label_with_job_ids_and_jobs(repo):
    root, base, head = repo
    result = run("--repo", str(root), "--base", base, "--head", head, "--format", "json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["head"] == head[:12] and document["base"] == base[:12]
    (matrix,) = document["matrices"]
    assert matrix["runner_label"] == "cpu" and matrix["index"] == 0
    entries = {e["job_id"]: e for e in matrix["include"]}
    assert set(entries) == {"tiny-cpu--tp1", "tiny-cpu-e2e"}
    job = Job.model_validate(entries["tiny-cpu--tp1"]["job"])
    assert [p.concurrency for p in job.points] == [1, 2, 4, 8, 16, 32]
    assert document["summary"]["server_launches"] == 2
    assert [j["job_id"] for j in document["jobs"]] == ["tiny-cpu--tp1", "tiny-cpu-e2e"]  # what the report reads
    assert [t["name"] for t in document["touched"]] == ["tiny-cpu", "tiny-cpu-e2e"]


def test_jobs_dir_writes_one_runnable_job_file_per_job(repo, tmp_path):
    root, base, head = repo
    jobs_dir = tmp_path / "jobs"
    result = run("--repo", str(root), "--base", base, "--head", head, "--format", "json", "--jobs-dir", str(jobs_dir))
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    files = [e["job_file"] for m in document["matrices"] for e in m["include"]]
    assert sorted(Path(f).name for f in files) == ["tiny-cpu--tp1.json", "tiny-cpu-e2e.json"]
    assert all("job" not in e for m in document["matrices"] for e in m["include"])
    for file in files:
        job = Job.model_validate_json(Path(file).read_text())
        assert f"{job.job_id}.json" == Path(file).name
    assert sorted(p.name for p in jobs_dir.iterdir()) == ["tiny-cpu--tp1.json", "tiny-cpu-e2e.json"]


def test_the_table_says_how_many_job_files_it_wrote_in_english_then_chinese(repo, tmp_path):
    root, base, head = repo
    jobs_dir = tmp_path / "jobs"
    result = run("--repo", str(root), "--base", base, "--head", head, "--jobs-dir", str(jobs_dir))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    english = lines.index(f"2 job files written to {jobs_dir}")
    assert lines[english + 1] == f"已写入 2 个作业文件到 {jobs_dir}"


@pytest.mark.parametrize("args,expected_points", [
    (["--scope", "lowest"], [1]),
    (["--conc", "2,8", "--conc", "32"], [2, 8, 32]),
], ids=["scope-lowest", "conc-list"])
def test_filters_on_the_command_line(repo, args, expected_points):
    root, _, _ = repo
    result = run("--repo", str(root), "--recipe", "tiny-cpu", "--format", "json", *args)
    document = json.loads(result.output)
    (matrix,) = document["matrices"]
    (entry,) = matrix["include"]
    assert [p["concurrency"] for p in entry["job"]["cases"][0]["points"]] == expected_points


def test_a_broken_recipe_exits_1_with_one_located_error_in_both_languages(repo):
    root, _, _ = repo
    path = root / "recipes" / "tiny-cpu.yaml"
    path.write_text(path.read_text().replace("  isl: 128", "  isl: 128\n  isll: 7"))
    result = CliRunner().invoke(main, ["plan", "--repo", str(root)])
    assert result.exit_code == 1
    assert "recipes/tiny-cpu.yaml:14" in result.output and "workload.isll" in result.output
    assert "unknown key" in result.output and "字段" in result.output


def test_a_broken_recipe_in_json_mode_is_a_json_error(repo):
    root, _, _ = repo
    path = root / "recipes" / "tiny-cpu.yaml"
    path.write_text(path.read_text().replace("kind: sweep", "kind: swep"))
    result = CliRunner().invoke(main, ["plan", "--repo", str(root), "--format", "json"])
    assert result.exit_code == 1
    (error,) = json.loads(result.stdout)["errors"]
    assert (error["file"], error["line"], error["field"]) == ("recipes/tiny-cpu.yaml", 3, "kind")
    assert error["accepted"] == ["e2e", "sweep"]


@pytest.mark.parametrize("args,words", [
    (["--conc", "0"], "not a positive integer"),
    (["--recipe", "nope*"], "no recipe matches"),
    (["--base", "no-such-rev"], "unknown revision"),
], ids=["bad-conc", "glob-matching-nothing", "unknown-base"])
def test_bad_requests_are_refused_with_a_reason(repo, args, words):
    root, _, _ = repo
    result = CliRunner().invoke(main, ["plan", "--repo", str(root), *args])
    assert result.exit_code != 0 and words in result.output


@pytest.mark.parametrize("command,expected", [
    ("/sweep tiny-* --scope lowest", {"tiny-cpu--tp1": [1]}),
    ("/sweep --conc 4,16", {"tiny-cpu--tp1": [4, 16]}),
    ("/e2e", {"tiny-cpu-e2e": []}),
], ids=["sweep-glob-scope", "sweep-touched-conc", "e2e-touched"])
def test_a_pr_command_narrows_the_plan(repo, command, expected):
    root, base, head = repo
    result = run("--repo", str(root), "--base", base, "--head", head, "--command", command, "--format", "json")
    assert result.exit_code == 0, result.output
    entries = [e for m in json.loads(result.output)["matrices"] for e in m["include"]]
    points = {e["job_id"]: [p["concurrency"] for c in e["job"]["cases"] for p in c["points"]] for e in entries}
    assert points == expected


@pytest.mark.parametrize("command", ["/cancel", "/sweep --conc x", "please sweep"],
                         ids=["not-a-planning-command", "bad-argument", "not-a-command"])
def test_a_command_that_cannot_plan_is_a_usage_error(repo, command):
    root, _, _ = repo
    result = CliRunner().invoke(main, ["plan", "--repo", str(root), "--command", command])
    assert result.exit_code == 2 and "--command" in result.output


def test_markdown_is_bilingual(repo):
    root, base, head = repo
    result = run("--repo", str(root), "--base", base, "--head", head, "--format", "markdown")
    assert result.exit_code == 0
    assert "| `tiny-cpu` |" in result.output and "运行计划" in result.output


def test_the_installed_command_runs(repo):
    root, base, head = repo
    exe = Path(sys.executable).with_name("recipe-bot")
    proc = subprocess.run([str(exe), "plan", "--repo", str(root), "--base", base, "--head", head, "--format", "json"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["summary"]["recipes"] == 2
