"""GitHub's OpenAPI description from the pinned npm package: routing, the judge of every response, and its provenance."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from github_sandbox.api import HANDLERS, Reply
from github_sandbox.harness import SAMPLE_FEATURE_FILES, SAMPLE_MAIN_FILES, describe, make_seed
from github_sandbox import upstream
from github_sandbox.openapi import (SpecValidator, UnknownAPI, accept_documented_bare_arrays, allow_null_in_nullable_enums,
                                 available_apis, description_path, drop_unresolvable_discriminators, load_spec,
                                 require_documented_conclusion)
from github_sandbox.trim import OPERATIONS, TrimError, trim
from github_sandbox.seed import load_seed
from github_sandbox.server import Sandbox
from github_sandbox.wire import RawRequest

VALIDATOR = SpecValidator()


def test_every_operation_in_the_description_has_a_handler_and_no_handler_is_extra() -> None:
    described = {r.operation_id for r in VALIDATOR.router.routes}
    assert len(described) == 53
    assert set(HANDLERS) == described


def test_the_description_is_the_pinned_octokit_package_trimmed_to_the_served_operations() -> None:
    assert VALIDATOR.source == {"api": "api.github.com", "package": upstream.OPENAPI,
                                "version": upstream.pinned_version(upstream.OPENAPI)}
    assert VALIDATOR.spec["info"]["x-github-plan"] == "api.github.com"
    assert len(VALIDATOR.spec["x-trimmed-from"]) == len(OPERATIONS) == 53
    # octokit's name for GitHub's compare operation is mapped back to GitHub's own
    assert "repos/compare-commits" in VALIDATOR.router.by_operation


def test_only_the_known_quirks_of_githubs_description_are_adjusted_in_memory() -> None:
    raw = trim(json.loads(description_path().read_text()))
    assert drop_unresolvable_discriminators(raw) == [
        "#/paths//repos/{owner}/{repo}/contents/{path}/get/responses/200/content/application/json/schema",
    ]
    assert allow_null_in_nullable_enums(raw) == [
        "#/components/schemas/issue-type/properties/color", "#/components/schemas/issue/properties/state_reason",
        "#/components/schemas/job/properties/conclusion", "#/components/schemas/check-run/properties/conclusion",
    ]
    assert require_documented_conclusion(raw) == ["#/paths//repos/{owner}/{repo}/check-runs/post/requestBody"]
    assert accept_documented_bare_arrays(raw) == ["#/paths//repos/{owner}/{repo}/issues/{issue_number}/labels/post/requestBody/labels"]


@pytest.mark.parametrize("operations, missing", [
    ((("get", "/repos/{owner}/{repo}"),), None),
    ((("get", "/repos/{owner}/{repo}"), ("put", "/repos/{owner}/{repo}")), "PUT /repos/{owner}/{repo}"),
    ((("get", "/no/such/path"),), "GET /no/such/path"),
], ids=["served-operation", "wrong-method-is-missing", "unknown-path-is-missing"])
def test_trimming_keeps_the_operations_and_names_any_the_description_lacks(operations: Any, missing: Any) -> None:
    full = json.loads(description_path().read_text())
    if missing is not None:
        with pytest.raises(TrimError, match=re.escape(missing)):
            trim(full, operations)
        return
    out = trim(full, operations)
    assert list(out["paths"]) == ["/repos/{owner}/{repo}"] and list(out["paths"]["/repos/{owner}/{repo}"]) == ["get"]
    assert "full-repository" in out["components"]["schemas"] and "issue" not in out["components"]["schemas"]


def test_ghes_mode_answers_a_request_with_the_enterprise_description(tmp_path: Path) -> None:
    ghes = sorted(a for a in available_apis() if a.startswith("ghes-"))[-1]
    app = Sandbox(load_seed(make_seed(tmp_path, SAMPLE_MAIN_FILES, SAMPLE_FEATURE_FILES)), api=ghes)
    resp = app.handle(RawRequest("GET", "/api/v3/repos/acme/bench/pulls/7", {"authorization": "token alice"},
                                 b"", "127.0.0.1:9"))
    [entry] = app.log(everything=True)
    assert resp.status == 200 and entry["operation"] == "pulls/get" and entry["response_valid"], entry
    assert app.validator.spec["info"]["x-github-plan"] == "ghes"
    health = app.handle(RawRequest("GET", "/_sandbox/health", {}, b"", "127.0.0.1:9"))
    assert json.loads(health.body)["api"] == {"api": ghes, "package": upstream.OPENAPI,
                                              "version": upstream.pinned_version(upstream.OPENAPI)}


@pytest.mark.parametrize("api, says", [
    ("ghes-2.0", "unknown GitHub API description 'ghes-2.0'"),
    ("api.github.com.deref", "unknown GitHub API description"),
], ids=["version-not-shipped", "dereferenced-copy-is-not-a-choice"])
def test_an_unknown_api_is_one_bilingual_error_naming_the_shipped_ones(api: str, says: str) -> None:
    with pytest.raises(UnknownAPI) as err:
        load_spec(api)
    assert says in str(err.value) and "api.github.com" in str(err.value) and "未知的 GitHub API 描述" in str(err.value)


def test_a_missing_package_says_to_run_the_setup_in_both_languages(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(upstream.ENV_VAR, str(tmp_path))
    with pytest.raises(upstream.UpstreamMissing) as err:
        available_apis()
    assert "scripts/dev setup" in str(err.value) and "请运行 `scripts/dev setup`" in str(err.value)
    assert str(tmp_path) in str(err.value)


@pytest.mark.parametrize("method, path, operation, params", [
    ("GET", "/repos/o/r/commits/abc/statuses", "repos/list-commit-statuses-for-ref", {"ref": "abc"}),
    ("GET", "/repos/o/r/commits/abc/status", "repos/get-combined-status-for-ref", {"ref": "abc"}),
    ("GET", "/repos/o/r/commits/feature/x", "repos/get-commit", {"ref": "feature/x"}),
    ("GET", "/repos/o/r/contents/configs/a/b.yaml", "repos/get-content", {"path": "configs/a/b.yaml"}),
    ("GET", "/repos/o/r/git/ref/heads/user/topic", "git/get-ref", {"ref": "heads/user/topic"}),
    ("GET", "/repos/o/r/issues/comments/5", "issues/get-comment", {"comment_id": "5"}),
    ("GET", "/repos/o/r/issues/5/comments", "issues/list-comments", {"issue_number": "5"}),
    ("DELETE", "/repos/o/r/issues/5/labels/a%2Fb", "issues/remove-label", {"name": "a%2Fb"}),
], ids=["statuses-before-commit", "status-before-commit", "slashed-ref", "nested-path", "slashed-git-ref",
        "comment-by-id", "comments-of-issue", "encoded-label"])
def test_the_most_specific_path_of_the_description_wins(method: str, path: str, operation: str,
                                                         params: dict[str, str]) -> None:
    route, found, _ = VALIDATOR.router.match(method, path)
    assert route is not None and route.operation_id == operation
    assert {k: v for k, v in found.items() if k in params} == params


def test_a_wrong_method_on_a_known_path_is_not_an_operation() -> None:
    route, _, path_known = VALIDATOR.router.match("PUT", "/repos/o/r/issues/5/comments")
    assert (route, path_known) == (None, True)


@pytest.mark.parametrize("operation, status, body, valid, schema", [
    ("issues/create-comment", 201, {"id": 1}, False, "operation"),
    ("issues/create-comment", 422, {"message": "Validation Failed"}, False, "operation"),
    ("checks/create", 403, {"message": "You must authenticate via a GitHub App.",
                            "documentation_url": "https://docs.github.com/rest"}, True, "basic-error"),
    ("checks/create", 422, {"message": "Validation Failed"}, False, "validation-error"),
    ("checks/create", 202, {}, False, "operation"),
], ids=["comment-missing-required-fields", "documented-422-without-documentation-url",
        "undocumented-403-in-githubs-error-shape", "undocumented-422-without-documentation-url",
        "undocumented-success-status"])
def test_responses_are_judged_by_the_operation_or_by_githubs_error_shapes(operation: str, status: int, body: Any,
                                                                          valid: bool, schema: str) -> None:
    route = VALIDATOR.router.by_operation[operation]
    verdict = VALIDATOR.check_response(route, {"owner": "o", "repo": "r", "issue_number": "1"}, [], status,
                                       "application/json; charset=utf-8", {}, json.dumps(body).encode())
    assert (verdict.valid, verdict.schema) == (valid, schema), verdict.messages()


def test_a_sandbox_bug_that_breaks_a_response_is_recorded_and_reported(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    app = Sandbox(load_seed(make_seed(tmp_path, SAMPLE_MAIN_FILES, SAMPLE_FEATURE_FILES)))
    monkeypatch.setitem(HANDLERS, "repos/get", lambda call: Reply(200, {"id": "not-a-number", "name": "bench"}))
    resp = app.handle(RawRequest("GET", "/repos/acme/bench", {"authorization": "token alice"}, b"", "127.0.0.1:9"))
    [entry] = app.log(everything=True)
    assert resp.status == 200 and entry["response_valid"] is False and entry["response_errors"]
    assert "repos/get" in describe([entry]) and "response breaks the OpenAPI description" in describe([entry])


def test_log_keeps_writes_by_default_and_everything_on_request(tmp_path: Path) -> None:
    app = Sandbox(load_seed(make_seed(tmp_path, SAMPLE_MAIN_FILES, SAMPLE_FEATURE_FILES)))
    headers = {"authorization": "token carol", "content-type": "application/json"}
    app.handle(RawRequest("GET", "/repos/acme/bench/pulls/7", headers, b"", "h:1"))
    app.handle(RawRequest("POST", "/repos/acme/bench/issues/7/comments", headers, b'{"body": "hi"}', "h:1"))
    [write] = app.log()
    assert {k: write[k] for k in ("method", "path", "operation", "user", "body", "status", "valid")} == {
        "method": "POST", "path": "/repos/acme/bench/issues/7/comments", "operation": "issues/create-comment",
        "user": "carol", "body": {"body": "hi"}, "status": 201, "valid": True}
    assert [e["method"] for e in app.log(everything=True)] == ["GET", "POST"]
    assert app.log(everything=True, since=write["seq"]) == []
