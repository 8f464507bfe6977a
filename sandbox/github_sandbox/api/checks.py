"""Check run operations: create, update, get, list for a ref. Only an App writes them, as on GitHub: the bot's,
or another one (any workflow's GITHUB_TOKEN posts as the `github-actions` App); each updates only its own."""
from __future__ import annotations

from typing import Any

from ..state import CheckRun, utcnow
from . import ApiError, Call, Reply, check_repo, int_param, not_found, operation, paginate, require_user


def _require_app(call: Call) -> str:
    """The acting App's login (`<slug>[bot]`): the bot's, or another App's installation token."""
    user = require_user(call)
    if user != call.state.bot and not user.endswith("[bot]"):
        raise ApiError(403, "You must authenticate via a GitHub App.")
    return user


def _apply(run: CheckRun, body: dict[str, Any]) -> None:
    for key in ("name", "details_url", "external_id", "started_at", "completed_at"):
        if key in body:
            setattr(run, key, body[key])
    # Lengths (output.summary/text at most 65535 characters) are the description's maxLength, checked earlier.
    output = body.get("output") or {}
    if output:
        run.title = output.get("title", run.title)
        run.summary = output.get("summary", run.summary)
        run.text = output.get("text", run.text)
    if "status" in body:
        run.status = body["status"]
    if body.get("conclusion"):
        run.conclusion = body["conclusion"]
        run.status = "completed"
    if run.status == "completed":
        if run.conclusion is None:
            raise ApiError(422, "Invalid request.\n\nconclusion is required when status is completed.",
                           [{"resource": "CheckRun", "field": "conclusion", "code": "missing_field"}])
        run.completed_at = run.completed_at or utcnow()
    if run.status == "in_progress" and run.started_at is None:
        run.started_at = utcnow()


@operation("checks/create")
def create(call: Call) -> Reply:
    check_repo(call)
    app = _require_app(call)
    body = call.body
    sha = call.state.git.resolve(body["head_sha"]) if len(body["head_sha"]) == 40 else None
    if sha is None:
        raise ApiError(422, f"No commit found for SHA: {body['head_sha']}")
    run = CheckRun(call.state.new_id(), body["name"], sha, "queued", None, None, None, utcnow(), None,
                   None, None, None, app)
    _apply(run, body)
    call.state.check_runs[run.id] = run
    return Reply(201, call.shapes.check_run(run))


def _find(call: Call) -> CheckRun:
    check_repo(call)
    run = call.state.check_runs.get(int_param(call, "check_run_id"))
    if run is None:
        raise not_found()
    return run


@operation("checks/get")
def get(call: Call) -> Reply:
    return Reply(200, call.shapes.check_run(_find(call)))


@operation("checks/update")
def update(call: Call) -> Reply:
    run = _find(call)
    if _require_app(call) != run.app:  # an App cannot touch another App's check run
        raise ApiError(403, "Resource not accessible by integration")
    _apply(run, call.body)
    return Reply(200, call.shapes.check_run(run))


@operation("checks/list-for-ref")
def list_for_ref(call: Call) -> Reply:
    check_repo(call)
    sha = call.state.git.ref_sha(call.params["ref"])
    if sha is None:
        raise ApiError(422, f"No commit found for SHA: {call.params['ref']}")
    runs = sorted((r for r in call.state.check_runs.values() if r.head_sha == sha), key=lambda r: r.id, reverse=True)
    if call.query.get("check_name"):
        runs = [r for r in runs if r.name == call.query["check_name"]]
    if call.query.get("status"):
        runs = [r for r in runs if r.status == call.query["status"]]
    if call.query.get("filter", "latest") == "latest":
        seen: set[tuple[str, str]] = set()  # the latest of each name in each App's check suite
        runs = [r for r in runs if not ((r.app, r.name) in seen or seen.add((r.app, r.name)))]
    return paginate(call, [call.shapes.check_run(r) for r in runs], wrap="check_runs")
