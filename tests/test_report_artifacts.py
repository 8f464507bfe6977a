"""One bad baseline artifact or result file is skipped and named in the report; the rest still count."""
from __future__ import annotations

import io
import json
import random
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.core.github import GitHubClient
from tests import synthetic
from bot.report.cli import report_cmd
from bot.report.fetch import ArtifactRejected, Limits, extract_safely, fetch_baseline
from github_sandbox.harness import SAMPLE_FEATURE_FILES, SAMPLE_MAIN_FILES

ROOT = Path(__file__).resolve().parents[1]
GPU_WORKFLOW = (ROOT / ".github" / "workflows" / "gpu.yml").read_text(encoding="utf-8")
SMALL = Limits(max_total_bytes=1 << 20, max_members=3, max_ratio=200)


def zip_of(members: list[tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zipped:
        for name, data in members:
            zipped.writestr(name, data)
    return buffer.getvalue()


@pytest.mark.parametrize(("archive", "reason"), [
    pytest.param(zip_of([("ok.json", b"{}"), ("../escape.txt", b"x")]), "points outside", id="zip-slip"),
    pytest.param(zip_of([("/etc/passwd-copy", b"x")]), "points outside", id="absolute-path"),
    pytest.param(zip_of([(f"f{i}", b"x") for i in range(4)]), "4 members, more than 3", id="too-many-members"),
    pytest.param(zip_of([("big.bin", random.Random(0).randbytes(3 << 19))]), "more than 1,048,576", id="too-large-in-all"),
    pytest.param(zip_of([("bomb.txt", b"0" * (3 << 20))]), "ratio limit 200", id="compression-bomb"),
    pytest.param(zip_of([("a", b"file"), ("a/b", b"under a file")]), "cannot be extracted", id="file-folder-clash"),
    pytest.param(b"<html>502 Bad Gateway</html>", "not a zip archive", id="not-a-zip"),
    pytest.param(zip_of([("ok.json", b"{}" * 100)])[:-30], "not a zip archive", id="truncated"),
])
def test_a_bad_artifact_is_rejected_whole_with_the_reason(tmp_path, archive, reason):
    dest = tmp_path / "run-1" / "result-x"
    with pytest.raises(ArtifactRejected, match=reason):
        extract_safely(archive, dest, SMALL)
    assert not dest.exists() and not (tmp_path / "escape.txt").exists()
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == []  # nothing half-written


def test_a_good_artifact_is_extracted_whole(tmp_path):
    dest = tmp_path / "result-x"
    assert extract_safely(zip_of([("job/result.json", b"{}"), ("job/raw/a.json", b"[]")]), dest, SMALL) == 2
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == \
        ["job/raw/a.json", "job/result.json"]


def result_files(results, *, tput: float | None = None) -> dict[str, str]:
    files = {}
    for result in results:
        data = json.loads(result.model_dump_json())
        if tput is not None:
            for case in data["cases"]:
                for point in case["points"]:
                    if point["metrics"]:
                        point["metrics"]["tput_per_gpu"] = tput
        files[f"{result.job_id}/result.json"] = json.dumps(data)
    return files


def test_bad_artifacts_are_skipped_and_listed_while_the_good_one_is_the_baseline(sandbox, tmp_path):
    sb = sandbox(files_main={**SAMPLE_MAIN_FILES, ".github/workflows/gpu.yml": GPU_WORKFLOW},
                 files_feature=SAMPLE_FEATURE_FILES)
    main_sha = sb.state()["repository"]["default_branch_sha"]
    scenario = synthetic.passing_sweep()
    artifacts = [
        {"name": "result-good", "files": result_files(scenario.baseline)},
        {"name": "result-slip", "files": {"../../escape.json": "{}"}},
        {"name": "result-absurd", "files": result_files(scenario.baseline, tput=1e308)},  # loads, then refused
        {"name": "result-good", "files": result_files(scenario.baseline)},  # a name clash: kept apart
    ]
    # a baseline-mode run (a push to the default branch): only such runs become baselines (#15)
    run = sb.add_run("gpu.yml", event="push", branch="main", head_sha=main_sha, conclusion="success",
                     artifacts=artifacts)
    env = sb.env()
    client = GitHubClient(base_url=env["GITHUB_API_URL"], token=env["GITHUB_TOKEN"],
                          repository=env["GITHUB_REPOSITORY"])
    problems: list = []
    [picked] = fetch_baseline(client, workflow="gpu.yml", base_branch="main", dest=tmp_path / "base",
                              problems=problems)
    assert picked.run_id == run["id"] and picked.artifacts == 3
    assert len(problems) == 1 and "result-slip" in str(problems[0]) and "points outside" in str(problems[0])
    assert not (tmp_path / "escape.json").exists()

    paths = synthetic.materialize(scenario, tmp_path / "head")
    result = CliRunner().invoke(report_cmd, ["--results", str(paths["results"]), "--jobs", str(paths["plan"]),
                                             "--baseline-from-github", "main", "--baseline", str(tmp_path / "b2"),
                                             "--out", str(tmp_path / "out"), "--sha", synthetic.HEAD_SHA],
                                env=sb.env())
    assert result.exit_code == 0, result.output
    comment = (tmp_path / "out" / "comment.md").read_text(encoding="utf-8")
    english, chinese = comment.split("跳过的基线文件")[0], comment
    assert "**Base files skipped:** " in english and "result-slip" in english and "points outside" in english
    assert "less than or equal to" in english or "plausible" in english  # the 1e308 file, and why
    assert "跳过的基线文件" in chinese


def test_a_folder_named_like_a_result_file_is_one_skipped_file_not_a_crash(tmp_path):
    from bot.report import collect, compare

    scenario = synthetic.passing_sweep()
    for side, results in (("head", scenario.results), ("base", scenario.baseline)):
        synthetic.write_results(tmp_path / side, results)
        (tmp_path / side / "clash" / "result.json").mkdir(parents=True)  # a directory, where a file was meant
    collection = collect.collect(tmp_path / "head")
    [clash] = [job for job in collection.jobs if job.source == "clash/result.json"]
    assert clash.result.status == "failed" and "cannot be read" in clash.result.reason
    assert len(collection.jobs) == len(scenario.results) + 1  # the good results are all there
    baseline = compare.load_baseline(tmp_path / "base")
    assert [u.split(":")[0] for u in baseline.unreadable] == ["clash/result.json"]
    assert baseline.shas  # the good base files still count
