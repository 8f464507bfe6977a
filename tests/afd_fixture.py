"""The afd-plugin-shaped fixture repository (tests/fixtures/afd_shaped) as a git repository, and how to run it."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from click.testing import CliRunner

from bot.cli import main
from bot.core.results import JobResult

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "afd_shaped"
NODE = "tests/e2e/test_fixture.py::test_fixture[{}]"


def fixture_files() -> dict[str, str]:
    return {str(p.relative_to(FIXTURE)): p.read_text(encoding="utf-8")
            for p in sorted(FIXTURE.rglob("*")) if p.is_file() and "__pycache__" not in p.parts}


def sandbox_files() -> tuple[dict[str, str], dict[str, str]]:
    """The demo's sample repository with our fixture in place of its recipes, its gate the shipped one
    (/sweep and /e2e), and a PR changing the harness."""
    from bot.demo import sample

    config = sample.repo_config(required=None)
    main = {k: v for k, v in sample.main_files().items() if not k.startswith("recipes/")}
    main.update({k: v for k, v in fixture_files().items() if k != ".github/recipe-bot.yaml"})
    main[".github/recipe-bot.yaml"] = config + "recipes_dir: recipe\n"
    runner = "tests/e2e/runner.py"
    return main, {runner: main[runner] + "\n# the PR's change to the harness\n"}


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def make_repo(root: Path) -> Path:
    repo = root / "afd-shaped"
    shutil.copytree(FIXTURE, repo, ignore=shutil.ignore_patterns("__pycache__"))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "fixture")
    return repo


def plan_jobs(repo: Path, out: Path, *args: str) -> dict[str, Path]:
    result = CliRunner().invoke(main, ["plan", "--repo", str(repo), "--format", "json", "--jobs-dir", str(out),
                                       "--no-canary", *args])
    assert result.exit_code == 0, result.output
    return {p.stem: p for p in out.glob("*.json")}


def run_job(job_file: Path, repo: Path, out: Path, *, timeout_s: float | None = None, **env: str) -> JobResult:
    if timeout_s is not None:
        job = json.loads(job_file.read_text(encoding="utf-8"))
        job["timeout_s"] = timeout_s
        job_file = out.parent / f"{out.name}-job.json"
        job_file.write_text(json.dumps(job), encoding="utf-8")
    full = {k: v for k, v in os.environ.items() if not k.startswith("FIXTURE_")}
    full.update({"FIXTURE_E2E_DEVICES": "0,1", **env})
    CliRunner().invoke(main, ["run", "--job", str(job_file), "--out", str(out), "--repo", str(repo)], env=full)
    return JobResult.model_validate_json((out / "result.json").read_text(encoding="utf-8"))
