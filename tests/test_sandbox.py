"""The sandbox, driven through PyGithub and plain HTTP exactly as the bot and users drive it."""
from __future__ import annotations

import io
import json
import signal
import subprocess
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from github import Auth, Github

from github_sandbox.harness import SAMPLE_FEATURE_FILES, SAMPLE_MAIN_FILES, SandboxProcess, make_seed

BOT = "recipe-bot[bot]"
WORKFLOW = """name: GPU benchmarks
run-name: "bench pr-${{ inputs.pr }} ${{ inputs.command }} by ${{ github.actor }}"
on:
  workflow_dispatch:
    inputs:
      pr: {required: true, type: string}
      command: {required: false, type: string, default: sweep}
      mode: {required: false, type: choice, options: [fast, full], default: fast}
jobs:
  bench: {runs-on: gpu, steps: [{run: echo}]}
"""


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One sandbox for the PyGithub acceptance tests (each test uses its own objects in it)."""
    main = {**SAMPLE_MAIN_FILES, ".github/workflows/gpu.yml": WORKFLOW}
    seed = make_seed(tmp_path_factory.mktemp("shared"), main, SAMPLE_FEATURE_FILES, {
        "pulls": [
            {"number": 7, "head": "feature", "base": "main", "author": "bob", "title": "Tune tiny recipe",
             "comments": [{"id": 101, "user": "alice", "body": "/sweep"}]},
            {"number": 8, "head": "feature", "base": "main", "author": "mallory", "fork": True,
             "title": "From a fork"},
        ],
    })
    with SandboxProcess(seed) as sb:
        yield sb


def gh(sb: SandboxProcess, login: str, **kwargs: Any) -> Github:
    return sb.github(login, **kwargs)


def http(sb: SandboxProcess, method: str, path: str, body: Any = None, user: str | None = "alice",
         raw: bytes | None = None) -> tuple[int, dict[str, str], Any]:
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    req = urllib.request.Request(sb.url + path, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    if user:
        req.add_header("Authorization", f"token {user}")

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    try:
        with urllib.request.build_opener(NoRedirect).open(req) as resp:
            status, headers, payload = resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as exc:
        status, headers, payload = exc.code, dict(exc.headers), exc.read()
    return status, headers, json.loads(payload) if payload and payload[:1] in b"[{" else payload


def last_write(sb: SandboxProcess, operation: str) -> dict[str, Any]:
    return [e for e in sb.log() if e["operation"] == operation][-1]


# --- acceptance: PyGithub against the sandbox ------------------------------------------------------
def test_pygithub_lists_the_files_a_pull_request_changes(shared: SandboxProcess) -> None:
    pr = gh(shared, "alice").get_repo("acme/bench").get_pull(7)
    files = {f.filename: f for f in pr.get_files()}
    assert set(files) == {"configs/tiny-master.yaml", "scripts/launch.sh"}
    assert (files["scripts/launch.sh"].status, files["configs/tiny-master.yaml"].status) == ("added", "modified")
    assert files["configs/tiny-master.yaml"].patch.startswith("@@")
    assert (pr.head.ref, pr.base.ref, pr.user.login, pr.changed_files) == ("feature", "main", "bob", 2)
    assert pr.head.sha == shared.state()["pulls"][0]["head_sha"]


def test_pygithub_posts_and_edits_a_comment_and_both_show_in_log_and_state(shared: SandboxProcess) -> None:
    pr = gh(shared, "carol").get_repo("acme/bench").get_pull(7)
    comment = pr.create_issue_comment("first words")
    comment.edit("second thoughts")
    posted, edited = last_write(shared, "issues/create-comment"), last_write(shared, "issues/update-comment")
    assert (posted["user"], posted["body"], posted["status"], posted["valid"]) == ("carol", {"body": "first words"}, 201, True)
    assert (edited["path"], edited["body"], edited["status"]) == (
        f"/repos/acme/bench/issues/comments/{comment.id}", {"body": "second thoughts"}, 200)
    stored = next(c for c in shared.state()["comments"] if c["id"] == comment.id)
    assert (stored["issue"], stored["user"], stored["body"]) == (7, "carol", "second thoughts")
    assert stored["created"] <= stored["updated"]
    assert [c.body for c in pr.get_issue_comments()][-1] == "second thoughts"


def test_pygithub_adds_and_removes_a_label(shared: SandboxProcess) -> None:
    pr = gh(shared, BOT).get_repo("acme/bench").get_pull(7)
    pr.add_to_labels("sweep-requested")
    assert "sweep-requested" in shared.state()["labels"]["7"]
    assert last_write(shared, "issues/add-labels")["body"] == ["sweep-requested"]
    pr.remove_from_labels("sweep-requested")
    assert "sweep-requested" not in shared.state()["labels"].get("7", [])
    assert last_write(shared, "issues/remove-label")["status"] == 200


def test_pygithub_creates_and_completes_a_check_run_on_the_head_sha(shared: SandboxProcess) -> None:
    repo = gh(shared, BOT).get_repo("acme/bench")
    head = repo.get_pull(7).head.sha
    run = repo.create_check_run(name="recipe-bot / sweep", head_sha=head, status="in_progress",
                                output={"title": "Running", "summary": "2 jobs queued"})
    run.edit(conclusion="success", output={"title": "Done", "summary": "all passed"})
    stored = next(c for c in shared.state()["check_runs"] if c["id"] == run.id)
    assert (stored["head_sha"], stored["status"], stored["conclusion"], stored["summary"]) == (
        head, "completed", "success", "all passed")
    listed = repo.get_commit(head).get_check_runs(check_name="recipe-bot / sweep")
    assert [c.id for c in listed] == [run.id]
    assert last_write(shared, "checks/create")["user"] == BOT


def test_pygithub_dispatches_a_workflow_and_the_run_is_recorded_with_its_inputs(shared: SandboxProcess) -> None:
    repo = gh(shared, BOT).get_repo("acme/bench")
    assert repo.get_workflow("gpu.yml").create_dispatch("feature", {"pr": "7", "command": "sweep"}, throw=True)
    run = shared.state()["workflow_runs"][-1]
    assert (run["workflow"], run["event"], run["status"], run["head_branch"], run["inputs"]) == (
        "gpu.yml", "workflow_dispatch", "queued", "feature", {"pr": "7", "command": "sweep"})
    assert run["head_sha"] == repo.get_branch("feature").commit.sha
    assert last_write(shared, "actions/create-workflow-dispatch")["body"]["inputs"] == {"pr": "7", "command": "sweep"}
    api_run = repo.get_workflow_run(run["id"])
    assert (api_run.status, api_run.event, api_run.head_sha) == ("queued", "workflow_dispatch", run["head_sha"])
    assert api_run.display_title == f"bench pr-7 sweep by {BOT}"  # the workflow's run-name, rendered


@pytest.mark.parametrize("inputs, message", [
    ({"command": "sweep"}, "Required input 'pr' not provided"),
    ({"pr": "7", "sha": "abc"}, "Unexpected inputs provided: ['sha']"),
    ({"pr": "7", "mode": "slow"}, "Provided value 'slow' for input 'mode' not in the list of allowed values"),
], ids=["missing-required", "unexpected-input", "choice-outside-options"])
def test_dispatch_checks_inputs_against_the_workflow_file(shared: SandboxProcess, inputs: dict, message: str) -> None:
    status, _, body = http(shared, "POST", "/repos/acme/bench/actions/workflows/gpu.yml/dispatches",
                           {"ref": "feature", "inputs": inputs}, user=BOT)
    assert (status, body["message"]) == (422, message)


def test_run_lifecycle_jobs_artifacts_cancel_and_rerun(shared: SandboxProcess) -> None:
    repo = gh(shared, BOT).get_repo("acme/bench")
    run_id = repo.get_workflow("gpu.yml").create_dispatch("main", {"pr": "7"}, return_run_details=True).id
    shared.set_run(run_id, status="completed", conclusion="failure",
                   jobs=[{"name": "tiny-c1", "conclusion": "success"}, {"name": "tiny-c2", "conclusion": "failure"}],
                   artifacts=[{"name": "results", "files": {"result.json": '{"status": "failed"}'}}])
    run = repo.get_workflow_run(run_id)
    assert (run.status, run.conclusion) == ("completed", "failure")
    assert {j.name: j.conclusion for j in run.jobs()} == {"tiny-c1": "success", "tiny-c2": "failure"}
    [artifact] = list(run.get_artifacts())
    status, headers, _ = http(shared, "GET", f"/repos/acme/bench/actions/artifacts/{artifact.id}/zip")
    assert status == 302
    with urllib.request.urlopen(headers["Location"]) as resp:
        archive = zipfile.ZipFile(io.BytesIO(resp.read()))
    assert json.loads(archive.read("result.json")) == {"status": "failed"}
    assert run.cancel() is False  # PyGithub reports the 409 for a completed run as False
    assert last_write(shared, "actions/cancel-workflow-run")["status"] == 409
    assert run.rerun_failed_jobs()
    rerun = shared.state()["workflow_runs"]
    rerun = next(r for r in rerun if r["id"] == run_id)
    assert (rerun["status"], rerun["run_attempt"]) == ("queued", 2)
    assert {j["name"]: j["status"] for j in rerun["jobs"]} == {"tiny-c1": "completed", "tiny-c2": "queued"}
    assert run.cancel()
    assert shared.state()["workflow_runs"][-1]["conclusion"] == "cancelled"


def test_pygithub_reads_contents_permissions_teams_and_fork_heads(shared: SandboxProcess) -> None:
    g = gh(shared, "alice")
    repo = g.get_repo("acme/bench")
    assert repo.get_contents("configs/tiny-master.yaml", ref="feature").decoded_content == \
        SAMPLE_FEATURE_FILES["configs/tiny-master.yaml"].encode()
    assert sorted(c.name for c in repo.get_contents("")) == [".github", "README.md", "configs"]
    assert {u: repo.get_collaborator_permission(u) for u in ("alice", "carol", "bob", "mallory")} == {
        "alice": "admin", "carol": "write", "bob": "read", "mallory": "none"}
    fork = repo.get_pull(8)
    assert (fork.head.repo.full_name, fork.head.repo.fork, fork.base.repo.full_name) == (
        "mallory/bench", True, "acme/bench")
    assert repo.compare("main", "feature").ahead_by == 1


def test_team_membership_and_org_membership(shared: SandboxProcess) -> None:
    assert http(shared, "GET", "/orgs/acme/teams/core/memberships/alice")[2]["state"] == "active"
    assert http(shared, "GET", "/orgs/acme/teams/core/memberships/bob")[0] == 404
    assert http(shared, "GET", "/orgs/acme/members/alice")[0] == 204
    assert http(shared, "GET", "/orgs/acme/members/carol")[0] == 404


def test_api_v3_prefix_is_tolerated(shared: SandboxProcess) -> None:
    g = Github(auth=Auth.Token("alice"), base_url=shared.url + "/api/v3", retry=None,
               seconds_between_requests=None, seconds_between_writes=None)
    pr = g.get_repo("acme/bench").get_pull(7)
    assert pr.url.startswith(shared.url + "/api/v3/repos/acme/bench/pulls/7")
    assert pr.get_files().totalCount == 2


# --- GitHub's errors --------------------------------------------------------------------------
@pytest.mark.parametrize("method, path, body, field", [
    ("POST", "/repos/acme/bench/issues/7/comments", {"text": "no body key"}, "body"),
    ("POST", "/repos/acme/bench/issues/7/comments", {"body": 42}, "body"),
    ("POST", "/repos/acme/bench/check-runs", {"name": "x", "head_sha": "0" * 40, "status": "completed"}, "body"),
    ("POST", "/repos/acme/bench/issues/comments/101/reactions", {"content": "thumbs"}, "content"),
    ("POST", "/repos/acme/bench/actions/workflows/gpu.yml/dispatches", {"inputs": {}}, "body"),
    ("GET", "/repos/acme/bench/issues/seven/comments", None, "issue_number"),
    ("POST", "/repos/acme/bench/check-runs", {"name": "x", "head_sha": "0" * 40, "output": {"title": "t", "summary": "x" * 65536}},
     "output.summary"),
], ids=["comment-missing-body", "comment-body-not-string", "completed-check-without-conclusion",
        "unknown-reaction", "dispatch-without-ref", "issue-number-not-integer", "check-summary-over-65535"])
def test_request_breaking_the_openapi_description_gets_422_and_is_logged_invalid(
        shared: SandboxProcess, method: str, path: str, body: Any, field: str) -> None:
    status, _, reply = http(shared, method, path, body, user=BOT)
    assert status == 422
    assert reply["message"].startswith("Invalid request.") and reply["documentation_url"].startswith("https://docs.github.com/")
    assert reply["errors"] and all({"code", "field", "message"} <= set(e) for e in reply["errors"])
    assert any(field in e["field"] or field in e["message"] for e in reply["errors"])
    assert len(json.dumps(reply)) < 4000  # offending values are not echoed back in full
    entry = shared.log(all=True)[-1]
    assert (entry["path"], entry["valid"], entry["status"], entry["response_valid"]) == (path, False, 422, True)


@pytest.mark.parametrize("path", [
    "/repos/acme/bench/pulls/99",
    "/repos/acme/bench/issues/comments/999999",
    "/repos/other/repo",
    "/repos/acme/bench/actions/workflows/nope.yml",
    "/repos/acme/bench/actions/runs/1",
    "/repos/acme/bench/contents/no/such/file.txt",
    "/repos/acme/bench/branches/no-such-branch",
    "/users/nobody",
], ids=["pull", "comment", "repository", "workflow", "run", "file", "branch", "user"])
def test_missing_things_are_404_with_githubs_error_body(shared: SandboxProcess, path: str) -> None:
    status, _, body = http(shared, "GET", path)
    assert status == 404 and body["message"] and body["documentation_url"]
    assert shared.log(all=True)[-1]["response_valid"]


@pytest.mark.parametrize("user, method, path, body, expected", [
    ("mallory", "POST", "/repos/acme/bench/issues/7/labels", {"labels": ["x"]}, 403),
    ("bob", "POST", "/repos/acme/bench/issues/7/labels", {"labels": ["x"]}, 403),
    ("mallory", "POST", "/repos/acme/bench/statuses/{head}", {"state": "success"}, 403),
    ("carol", "POST", "/repos/acme/bench/statuses/{head}", {"state": "success", "context": "c"}, 201),
    ("mallory", "POST", "/repos/acme/bench/actions/workflows/gpu.yml/dispatches", {"ref": "main", "inputs": {"pr": "1"}}, 403),
    ("alice", "POST", "/repos/acme/bench/check-runs", {"name": "n", "head_sha": "{head}"}, 403),
    ("mallory", "POST", "/repos/acme/bench/issues/7/comments", {"body": "anyone may comment"}, 201),
    ("mallory", "PATCH", "/repos/acme/bench/issues/comments/101", {"body": "not my comment"}, 403),
    (None, "POST", "/repos/acme/bench/issues/7/comments", {"body": "anonymous"}, 401),
    ("stranger", "GET", "/repos/acme/bench", None, 401),
], ids=["none-adds-label", "read-adds-label", "none-sets-status", "write-sets-status", "none-dispatches",
        "user-token-creates-check-run", "none-comments", "none-edits-others-comment", "anonymous-writes",
        "unknown-token"])
def test_writes_need_the_right_permission(shared: SandboxProcess, user: str | None, method: str, path: str,
                                          body: Any, expected: int) -> None:
    head = shared.state()["pulls"][0]["head_sha"]
    body = json.loads(json.dumps(body).replace("{head}", head)) if body else body
    status, _, reply = http(shared, method, path.replace("{head}", head), body, user=user)
    assert status == expected, reply
    entry = shared.log(all=True)[-1]
    assert (entry["user"], entry["status"], entry["response_valid"]) == (user, expected, True)


@pytest.mark.parametrize("path, body, message", [
    ("/repos/acme/bench/issues/7/comments", {"body": "x" * 65537}, "body is too long (maximum is 65536 characters)"),
    ("/repos/acme/bench/check-runs", {"name": "n", "head_sha": "f" * 40}, "No commit found for SHA: " + "f" * 40),
    ("/repos/acme/bench/statuses/" + "f" * 40, {"state": "success"}, "No commit found for SHA: " + "f" * 40),
    ("/repos/acme/bench/actions/workflows/gpu.yml/dispatches", {"ref": "nope", "inputs": {"pr": "1"}}, "No ref found for: nope"),
], ids=["comment-too-long", "check-on-unknown-sha", "status-on-unknown-sha", "dispatch-unknown-ref"])
def test_githubs_own_limits_and_lookups_are_422(shared: SandboxProcess, path: str, body: Any, message: str) -> None:
    head = shared.state()["pulls"][0]["head_sha"]
    status, _, reply = http(shared, "POST", path, json.loads(json.dumps(body).replace("{head}", head)), user=BOT)
    assert status == 422 and message in json.dumps(reply), reply["message"]
    entry = shared.log()[-1]
    assert (entry["valid"], entry["response_valid"]) == (True, True)  # valid per the description, refused by GitHub's rules


def test_invalid_json_is_400(shared: SandboxProcess) -> None:
    status, _, body = http(shared, "POST", "/repos/acme/bench/issues/7/comments", raw=b"{not json")
    assert (status, body["message"]) == (400, "Problems parsing JSON")


def test_unknown_operation_is_404_and_reported_as_a_problem(sandbox: Any) -> None:
    sb = sandbox(check=False)
    status, _, _ = http(sb, "GET", "/repos/acme/bench/labels")
    assert status == 404
    [problem] = sb.problems()
    assert (problem["path"], problem["known"]) == ("/repos/acme/bench/labels", False)


# --- pagination, pushes, lifecycle -------------------------------------------------------------------
def test_pagination_follows_github_link_headers(sandbox: Any) -> None:
    comments = [{"id": 5000 + i, "user": "alice", "body": f"comment {i}"} for i in range(120)]
    sb = sandbox(seed_overrides={"pulls": [{"number": 7, "head": "feature", "author": "bob", "comments": comments}]})
    status, headers, page1 = http(sb, "GET", "/repos/acme/bench/issues/7/comments?per_page=50")
    assert (status, len(page1)) == (200, 50)
    assert 'page=2>; rel="next"' in headers["Link"] and 'page=3>; rel="last"' in headers["Link"]
    _, headers3, page3 = http(sb, "GET", "/repos/acme/bench/issues/7/comments?per_page=50&page=3")
    assert len(page3) == 20 and 'rel="next"' not in headers3["Link"] and 'page=2>; rel="prev"' in headers3["Link"]
    bodies = [c.body for c in gh(sb, "alice", per_page=50).get_repo("acme/bench").get_pull(7).get_issue_comments()]
    assert bodies == [f"comment {i}" for i in range(120)]
    pages = [e["query"].get("page", "1") for e in sb.log(all=True) if e["operation"] == "issues/list-comments"]
    assert pages[-3:] == ["1", "2", "3"]


def test_a_commit_to_the_head_branch_moves_the_pull_requests_head_sha(sandbox: Any) -> None:
    sb = sandbox()
    repo = gh(sb, "alice").get_repo("acme/bench")
    before = repo.get_pull(7).head.sha
    pushed = sb.push("feature", {"configs/new.yaml": "new: 1\n", "scripts/launch.sh": None}, "Add a recipe",
                     author="bob")
    assert pushed["before"] == before and pushed["pulls"] == [{"number": 7, "before": before, "after": pushed["after"]}]
    pr = repo.get_pull(7)
    assert pr.head.sha == pushed["after"] != before
    assert sorted(f.filename for f in pr.get_files()) == ["configs/new.yaml", "configs/tiny-master.yaml"]
    assert [c.sha for c in pr.get_commits()][-1] == pushed["after"]
    assert repo.get_commit(pushed["after"]).author.login == "bob"
    assert sb.state()["pulls"][0]["head_sha"] == pushed["after"]


def test_a_pinned_head_sha_holds_until_the_next_push(sandbox: Any, tmp_path: Path) -> None:
    seed = make_seed(tmp_path / "pinned", SAMPLE_MAIN_FILES, SAMPLE_FEATURE_FILES)
    main_sha = subprocess.run(["git", "-C", str(seed.parent / "repo"), "rev-parse", "main"], check=True,
                              capture_output=True, text=True).stdout.strip()
    data = yaml.safe_load(seed.read_text())
    data["pulls"][0]["head_sha"] = main_sha
    seed.write_text(yaml.safe_dump(data))
    sb = sandbox(seed)
    assert sb.state()["pulls"][0]["head_sha"] == main_sha
    after = sb.push("feature", {"x.txt": "x\n"})["after"]
    assert sb.state()["pulls"][0]["head_sha"] == after


def test_sigterm_stops_the_sandbox_cleanly_and_writes_the_log(tmp_path: Path) -> None:
    seed = make_seed(tmp_path / "term", SAMPLE_MAIN_FILES, SAMPLE_FEATURE_FILES)
    sb = SandboxProcess(seed, extra_args=["--log-out", str(tmp_path / "log.json")]).start()
    assert sb.state()["repository"]["full_name"] == "acme/bench"
    http(sb, "POST", "/repos/acme/bench/issues/7/comments", {"body": "bye"})
    sb.proc.send_signal(signal.SIGTERM)
    out, _ = sb.proc.communicate(timeout=10)
    assert sb.proc.returncode == 0
    assert "sandbox stopped: 1 requests, 0 invalid responses" in out
    [entry] = json.loads((tmp_path / "log.json").read_text())
    assert (entry["operation"], entry["status"]) == ("issues/create-comment", 201)
