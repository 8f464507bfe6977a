"""The baseline comes only from baseline-mode runs: the default branch measuring its own commit."""
import io
import json
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.core.github import GitHubClient
from tests import synthetic
from bot.report.cli import report_cmd
from bot.report.fetch import BaselineFetchError, extract_safely, fetch_baseline
from github_sandbox.harness import SAMPLE_FEATURE_FILES, SAMPLE_MAIN_FILES

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


def add_run(sb, sha: str, conclusion: str, artifacts: list[dict], *, pr: str = "3",
            command: str = "/sweep") -> int:
    """A run the bot dispatched on the default branch (a PR's run, or `/baseline` with pr 0)."""
    run = sb.add_run("gpu.yml", inputs={"pr": pr, "sha": sha, "command": command, "requester": "alice",
                                         "comment_id": ""}, conclusion=conclusion, artifacts=artifacts)
    return run["id"]


def add_baseline_run(sb, sha: str, conclusion: str, artifacts: list[dict], event: str = "push") -> int:
    """gpu.yml's baseline mode: a push to (or the schedule of) the default branch measuring its own commit."""
    return sb.add_run("gpu.yml", event=event, branch="main", head_sha=sha, conclusion=conclusion,
                      artifacts=artifacts)["id"]


@pytest.fixture
def world(sandbox):
    sb = sandbox(files_main={**SAMPLE_MAIN_FILES, ".github/workflows/gpu.yml": GPU_WORKFLOW},
                 files_feature=SAMPLE_FEATURE_FILES)
    state = sb.state()
    main_sha = state["repository"]["default_branch_sha"]
    feature_sha = state["pulls"][0]["head_sha"]
    scenario = synthetic.passing_sweep()
    runs = {
        "merged": add_baseline_run(sb, main_sha, "success", artifact_of(scenario.baseline)),
        # A PR's own run: its commit is not on main, so its figures are no baseline.
        "unmerged": add_run(sb, feature_sha, "success", artifact_of(scenario.baseline, scale=0.5)),
        "failed": add_baseline_run(sb, main_sha, "failure", artifact_of(scenario.baseline, scale=0.5)),
        # A PR's run on a commit that is part of main (a fork PR's run wrote its own result.json).
        "pr-on-main": add_run(sb, main_sha, "success", artifact_of(scenario.baseline, scale=0.5), pr="9"),
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
    sb, scenario, runs, _ = world
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
    # Each baseline names the baseline-mode run and the commit it came from, in both languages.
    assert f"run [{runs['merged']}](" in comment and f"运行 [{runs['merged']}](" in comment
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


def _client(sb) -> GitHubClient:
    env = sb.env()
    return GitHubClient(base_url=env["GITHUB_API_URL"], token=env["GITHUB_TOKEN"],
                        repository=env["GITHUB_REPOSITORY"])


def test_a_squash_merge_repository_gets_its_baseline_from_a_baseline_run(sandbox, tmp_path):
    sb = sandbox(files_main={**SAMPLE_MAIN_FILES, ".github/workflows/gpu.yml": GPU_WORKFLOW},
                 files_feature=SAMPLE_FEATURE_FILES)
    scenario = synthetic.passing_sweep()
    feature_sha = sb.state()["pulls"][0]["head_sha"]
    # The PR's own successful run measured its head, which a squash merge never puts on main.
    add_run(sb, feature_sha, "success", artifact_of(scenario.baseline, scale=0.5), pr="7")
    squashed = sb.push("main", dict(SAMPLE_FEATURE_FILES), message="Squashed PR #7", author="alice")["after"]
    assert fetch_baseline(_client(sb), workflow="gpu.yml", base_branch="main", dest=tmp_path / "none") == []
    run_id = add_baseline_run(sb, squashed, "success", artifact_of(scenario.baseline))
    picked = fetch_baseline(_client(sb), workflow="gpu.yml", base_branch="main", dest=tmp_path / "base")
    assert [(run.run_id, run.sha) for run in picked] == [(run_id, squashed)]


BASELINE_RULES = [
    # name, how the run was made, counts as a baseline
    ("push to main", dict(event="push"), True),
    ("schedule on main", dict(event="schedule"), True),
    ("/baseline dispatched on main", dict(pr="0", command="/baseline"), True),
    ("fork PR run on a merged commit", dict(pr="9"), False),
    ("/baseline title with a PR number", dict(pr="9", command="/baseline"), False),
]


@pytest.mark.parametrize("how, counts", [r[1:] for r in BASELINE_RULES], ids=[r[0] for r in BASELINE_RULES])
def test_only_baseline_mode_runs_are_baselines(sandbox, tmp_path, how, counts):
    sb = sandbox(files_main={**SAMPLE_MAIN_FILES, ".github/workflows/gpu.yml": GPU_WORKFLOW},
                 files_feature=SAMPLE_FEATURE_FILES)
    main_sha = sb.state()["repository"]["default_branch_sha"]
    artifacts = artifact_of(synthetic.passing_sweep().baseline)
    if "event" in how:
        run_id = add_baseline_run(sb, main_sha, "success", artifacts, event=how["event"])
    else:
        run_id = add_run(sb, main_sha, "success", artifacts, **how)
    picked = fetch_baseline(_client(sb), workflow="gpu.yml", base_branch="main", dest=tmp_path / "base")
    assert [run.run_id for run in picked] == ([run_id] if counts else [])
