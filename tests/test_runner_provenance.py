"""result.json names the commit the job was authorized for, checked against its own checkout."""
from pathlib import Path

import pytest

from bot.core import provenance as sources
from bot.core.jobs import Case, Job, LoadPoint, ServerSpec
from bot.runner import provenance
from bot.runner.local import run_job_local
from tests.git_helpers import git

UNSET = "RECIPE_BOT_PROVENANCE_TEST_NEVER_SET"


def commit(repo: Path, name: str) -> str:
    repo.mkdir(parents=True, exist_ok=True)
    if not (repo / ".git").exists():
        git(repo, "init", "-q")
    (repo / name).write_text(name)
    git(repo, "add", name)
    git(repo, "commit", "-qm", name)
    return git(repo, "rev-parse", "HEAD")


def job(sha: str | None, *, args=(), dataset="random") -> Job:
    # An opt-in variable that is never set: the case fails before starting anything, in
    # milliseconds, and the job still writes its whole result (engine sglang: no vLLM probe).
    server = ServerSpec(engine="sglang", model="/models/m", args=list(args))
    point = LoadPoint(point_id="c1", concurrency=1, dataset=dataset, isl=8, osl=8,
                      trace="t.jsonl" if dataset == "trace" else None, num_prompts=1)
    return Job(job_id="j", kind="sweep", recipe="r", recipe_fingerprint="f", runner_label="cpu",
               sha=sha, cases=[Case(name="c", servers=[server], points=[point],
                                    required_env=[UNSET])])


def test_a_directory_inside_another_repository_has_no_head_of_its_own(tmp_path):
    commit(tmp_path / "outer", "a")
    inner = tmp_path / "outer" / "job-dir"
    inner.mkdir()
    assert provenance.checkout_head(inner) is None


def test_a_repository_nested_in_another_reports_its_own_head(tmp_path):
    outer_sha = commit(tmp_path / "outer", "a")
    inner_sha = commit(tmp_path / "outer" / "pr", "b")
    assert provenance.checkout_head(tmp_path / "outer" / "pr") == inner_sha != outer_sha


def test_result_sha_is_the_jobs_even_inside_another_repositorys_work_tree(tmp_path):
    commit(tmp_path / "outer", "a")
    inner_sha = commit(tmp_path / "outer" / "pr", "b")
    result = run_job_local(job(inner_sha), tmp_path / "out", repo=tmp_path / "outer" / "pr",
                           job_file="plan/jobs/j.json")
    assert result.sha == inner_sha
    assert result.provenance.authorized_sha == inner_sha == result.provenance.checkout_sha
    assert result.provenance.sha_checked
    assert result.provenance.job_file == "plan/jobs/j.json"


def test_a_job_dir_inside_another_repository_is_not_mistaken_for_its_checkout(tmp_path):
    outer_sha = commit(tmp_path / "outer", "a")
    job_dir = tmp_path / "outer" / "x"
    job_dir.mkdir()
    authorized = "1" * 40
    result = run_job_local(job(authorized), tmp_path / "out", repo=job_dir)
    assert result.sha == authorized != outer_sha
    assert result.provenance.checkout_sha is None and not result.provenance.sha_checked


def test_a_checkout_at_another_commit_fails_the_job_with_the_reason_and_runs_nothing(tmp_path):
    first = commit(tmp_path / "pr", "a")
    second = commit(tmp_path / "pr", "b")
    result = run_job_local(job(first), tmp_path / "out", repo=tmp_path / "pr")
    assert result.status == "failed"
    assert first in str(result.reason) and second in str(result.reason) and "authorized" in str(result.reason)
    assert [c.status for c in result.cases] == ["skipped"]
    assert result.server_launches == 0


@pytest.mark.parametrize("args, dataset, weights, data", [
    (["--load-format", "dummy"], "random", "dummy", "synthetic"),
    (["--load-format=dummy"], "trace", "dummy", "real"),
    (["--load-format", "safetensors"], "random", "real", "synthetic"),
    ([], "trace", "real", "real"),
], ids=["dummy-random", "dummy-equals-trace", "real-format", "real-trace"])
def test_model_and_dataset_sources_are_read_from_the_job(args, dataset, weights, data):
    planned = job(None, args=args, dataset=dataset)
    assert sources.weights_of(planned) == weights
    assert sources.dataset_of(planned) == data


@pytest.mark.parametrize("marker, expected", [(True, "dummy"), (False, "real")],
                         ids=["random-weights-marker", "no-marker"])
def test_a_model_directory_marked_random_is_reported_as_dummy_weights(tmp_path, monkeypatch, marker, expected):
    model = tmp_path / "tiny-model"
    model.mkdir()
    if marker:  # what scripts/make_tiny_model.py writes beside its random safetensors
        (model / provenance.RANDOM_WEIGHTS_MARKER).write_text("random\n")
    monkeypatch.setenv("RECIPE_BOT_TINY_MODEL", str(model))
    planned = job("a" * 40)
    planned = planned.model_copy(update={"cases": [case.model_copy(update={"servers": [
        server.model_copy(update={"model": "${RECIPE_BOT_TINY_MODEL}"}) for server in case.servers]})
        for case in planned.cases]})
    assert provenance.provenance_of(planned, "a" * 40).weights == expected
