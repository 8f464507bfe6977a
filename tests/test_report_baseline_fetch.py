"""The baseline comes from the GPU workflow's artifacts of runs that measured a commit of the base branch."""
import io
import json
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.github import GitHubClient
from bot.report import synthetic
from bot.report.cli import report_cmd
from bot.report.fetch import BaselineFetchError, extract_safely, fetch_baseline
from bot.sandbox.harness import SAMPLE_FEATURE_FILES, SAMPLE_MAIN_FILES

ROOT = Path(__file__).resolve().parents[1]
GPU_WORKFLOW = (ROOT / ".github" / "workflows" / "gpu.yml").read_text(encoding="utf-8")


def artifact_of(results, *, scale: float = 1.0) -> list[dict]:
    artifacts = []
    for result in results:
        data = json.loads(result.model_dump_json())
        for case in data["cases"]:
            for point in case["points"]:
                if point["metrics"]:
                    point["metrics"]["tput_per_gpu"] *= scale
        artifacts.append({"name": f"result-{result.job_id}",
                          "files": {f"{result.job_id}/result.json": json.dumps(data)}})
    return artifacts


def add_run(sb, sha: str, conclusion: str, artifacts: list[dict]) -> int:
    run = sb.add_run("gpu.yml", inputs={"pr": "3", "sha": sha, "command": "/sweep", "requester": "alice",
                                         "comment_id": ""}, conclusion=conclusion, artifacts=artifacts)
    return run["id"]


@pytest.fixture
def world(sandbox):
    sb = sandbox(files_main={**SAMPLE_MAIN_FILES, ".github/workflows/gpu.yml": GPU_WORKFLOW},
                 files_feature=SAMPLE_FEATURE_FILES)
    state = sb.state()
    main_sha = state["repository"]["default_branch_sha"]
    feature_sha = state["pulls"][0]["head_sha"]
    scenario = synthetic.passing_sweep()
    runs = {
        "merged": add_run(sb, main_sha, "success", artifact_of(scenario.baseline)),
        # A PR's own run: its commit is not on main, so its figures are no baseline.
        "unmerged": add_run(sb, feature_sha, "success", artifact_of(scenario.baseline, scale=0.5)),
        "failed": add_run(sb, main_sha, "failure", artifact_of(scenario.baseline, scale=0.5)),
    }
    return sb, scenario, runs, main_sha


def test_only_successful_runs_of_base_commits_are_fetched(world, tmp_path):
    sb, scenario, runs, main_sha = world
    env = sb.env()
    client = GitHubClient(base_url=env["GITHUB_API_URL"], token=env["GITHUB_TOKEN"],
                          repository=env["GITHUB_REPOSITORY"])
    picked = fetch_baseline(client, workflow="gpu.yml", base_branch="main", dest=tmp_path / "base")
    assert [(run.run_id, run.sha) for run in picked] == [(runs["merged"], main_sha)]
    fetched = sorted(p.relative_to(tmp_path / "base") for p in (tmp_path / "base").rglob("result.json"))
    assert fetched and all(str(p).startswith(f"run-{runs['merged']}/result-") for p in fetched)


def test_the_report_compares_against_the_fetched_baseline(world, tmp_path):
    sb, scenario, _, _ = world
    paths = synthetic.materialize(scenario, tmp_path)
    result = CliRunner().invoke(report_cmd, ["--results", str(paths["results"]), "--jobs", str(paths["plan"]),
                                             "--baseline-from-github", "main", "--out", str(tmp_path / "out"),
                                             "--sha", synthetic.HEAD_SHA], env=sb.env())
    assert result.exit_code == 0, result.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    # The unmerged and the failed runs carry half the throughput: had either been used, tput regressed.
    assert summary["verdict"] == "success"
    comment = (tmp_path / "out" / "comment.md").read_text(encoding="utf-8")
    assert f"**Base:** `{synthetic.BASE_SHA[:12]}`" in comment
    # Only the recipe that is new in this PR (qwen3-8b-fp8, 2 points) has no baseline.
    assert "🆕 2 without baseline" in comment


def test_an_artifact_member_outside_the_folder_is_refused(tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zipped:
        zipped.writestr("ok/result.json", "{}")
        zipped.writestr("../escape.txt", "x")
    with pytest.raises(BaselineFetchError, match="outside"):
        extract_safely(buffer.getvalue(), tmp_path / "dest")
    assert not (tmp_path / "escape.txt").exists()
    assert not (tmp_path / "dest" / "ok" / "result.json").exists()  # nothing half-written
