"""bot/core/github.py against the sandbox: the operations the control plane and the report share."""
import io
import json
import zipfile

import pytest

from bot.core.github import GitHubClient, GitHubError
from handle_helpers import BOT, seed


@pytest.fixture
def sb(sandbox, tmp_path):
    return sandbox(seed(tmp_path))


def client(sb, **kwargs):
    return GitHubClient(base_url=sb.url, token=BOT, repository="acme/bench", **kwargs)


def test_from_env_reads_the_actions_variables(sb):
    c = GitHubClient.from_env(environ={"GITHUB_API_URL": sb.url, "GITHUB_TOKEN": BOT,
                                       "GITHUB_REPOSITORY": "acme/bench"})
    assert c.base_url == sb.url and c.get_pull(7).number == 7


@pytest.mark.parametrize("environ, message", [
    ({"GITHUB_REPOSITORY": "acme/bench"}, "GITHUB_TOKEN"),
    ({"GITHUB_TOKEN": "x"}, "GITHUB_REPOSITORY"),
    ({"GITHUB_TOKEN": "x", "GITHUB_REPOSITORY": "bench"}, "owner/name"),
], ids=["no-token", "no-repository", "bad-repository"])
def test_from_env_names_what_is_missing(environ, message):
    with pytest.raises(GitHubError, match=message):
        GitHubClient.from_env(environ=environ)


def test_reads(sb):
    c = client(sb)
    pull = c.get_pull(9)
    assert pull.fork and pull.author == "mallory" and len(pull.head_sha) == 40
    assert c.get_pull_json(7)["number"] == 7
    assert c.permission("alice") == "admin" and c.permission("bob") == "read"
    assert c.permission("nobody-here") == "none"
    assert c.is_team_member("acme/core", "alice") and not c.is_team_member("acme/core", "bob")
    assert c.get_text(".github/recipe-bot.yaml", "main").startswith("bot_login:")
    assert c.get_text("no/such/file", "main") is None
    assert c.authenticated_login() == BOT


def test_comments_are_created_edited_and_listed_across_pages(sb):
    c = client(sb)
    ids = [c.create_comment(7, f"comment {i}") for i in range(3)]
    c.edit_comment(ids[1], "edited")
    listed = c.list_issue_comments(7)
    assert [x.body for x in listed] == ["comment 0", "edited", "comment 2"]
    assert all(x.user == BOT and x.created_at is not None for x in listed)
    pages = list(c._pages("issues/7/comments", {"per_page": 1}))
    assert [x["id"] for x in pages] == ids


def test_check_runs_are_created_updated_and_listed(sb):
    c = client(sb)
    sha = c.get_pull(7).head_sha
    run_id = c.create_check_run(name="recipe-bot / benchmarks", head_sha=sha, status="in_progress",
                                title="running", summary="3 jobs")
    c.update_check_run(run_id, status="completed", conclusion="success", title="passed", summary="all good")
    [check] = c.list_check_runs(sha, "recipe-bot / benchmarks")
    assert (check.id, check.status, check.conclusion) == (run_id, "completed", "success")


def test_artifacts_are_listed_and_downloaded(sb):
    run = sb.add_run("gpu.yml", status="completed", conclusion="success",
                     artifacts=[{"name": "result-tiny", "files": {"tiny/result.json": '{"ok": true}'}}])
    c = client(sb)
    [artifact] = c.list_run_artifacts(run["id"])
    assert artifact.name == "result-tiny"
    archive = zipfile.ZipFile(io.BytesIO(c.download_artifact(artifact.id)))
    assert json.loads(archive.read("tiny/result.json")) == {"ok": True}


def test_errors_name_the_call_and_githubs_message(sb):
    with pytest.raises(GitHubError, match=r"GET pulls/404: HTTP 404"):
        client(sb).get_pull(404)


def test_dry_run_prints_every_write_and_sends_none(sb):
    out = io.StringIO()
    c = client(sb, dry_run=True, out=out)
    before = sb.log()
    assert c.create_comment(7, "hello") is None
    c.edit_comment(5, "again")
    c.react(5, "rocket")
    c.add_labels(7, ["sweep-enabled"])
    c.remove_label(7, "sweep-enabled")
    c.create_status("a" * 40, state="pending", context="recipe-bot", description="queued")
    c.create_check_run(name="recipe-bot / benchmarks", head_sha="a" * 40, status="queued")
    c.update_check_run(3, status="completed", conclusion="failure", title="t", summary="s")
    assert c.dispatch_workflow("gpu.yml", ref="main", inputs={"pr": "7"}).run_id is None
    c.cancel_run(11)
    c.rerun_failed_jobs(12)
    actions = [json.loads(line)["action"] for line in out.getvalue().splitlines()]
    assert actions == ["comment", "comment", "react", "label", "label", "status", "check", "check",
                       "dispatch", "cancel", "rerun"]
    assert sb.log() == before
