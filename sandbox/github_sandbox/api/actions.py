"""GitHub Actions operations: workflows, dispatch (which records a queued run), runs, jobs and artifacts."""
from __future__ import annotations

from .. import workflows
from ..state import Workflow, WorkflowRun
from . import ApiError, Call, Reply, check_repo, int_param, not_found, operation, paginate, require_push

# A status filter may also name a conclusion (GitHub's list-workflow-runs accepts both vocabularies).
_STATUSES = {"queued", "in_progress", "completed", "waiting", "requested", "pending"}


def _workflow(call: Call) -> Workflow:
    check_repo(call)
    wf = call.state.workflow(call.params["workflow_id"])
    if wf is None:
        raise not_found()
    return wf


def _run(call: Call) -> WorkflowRun:
    check_repo(call)
    run = call.state.runs.get(int_param(call, "run_id"))
    if run is None:
        raise not_found()
    return run


@operation("actions/list-repo-workflows")
def list_workflows(call: Call) -> Reply:
    check_repo(call)
    return paginate(call, [call.shapes.workflow(w) for w in call.state.workflows.values()], wrap="workflows")


@operation("actions/get-workflow")
def get_workflow(call: Call) -> Reply:
    return Reply(200, call.shapes.workflow(_workflow(call)))


@operation("actions/create-workflow-dispatch")
def dispatch(call: Call) -> Reply:
    wf = _workflow(call)
    user = require_push(call)
    if wf.state != "active":
        raise ApiError(422, "Cannot trigger a 'workflow_dispatch' on a disabled workflow")
    ref = call.body["ref"]
    name = ref.removeprefix("refs/heads/").removeprefix("refs/tags/")
    git = call.state.git
    sha = git.branch_sha(name) or git.tag_sha(name)
    if sha is None:
        raise ApiError(422, f"No ref found for: {ref}")
    inputs = dict(call.body.get("inputs") or {})
    try:
        # A workflow the git repository does not contain (a seed-only workflow) accepts any inputs.
        doc = workflows.parse(git.read_file(sha, wf.path))
        context = workflows.resolve_inputs(doc, inputs) if doc is not None else inputs
    except workflows.WorkflowFileError as exc:
        raise ApiError(422, str(exc)) from None
    run = call.state.create_run(wf, name, sha, "workflow_dispatch", user, inputs, input_context=context)
    if call.body.get("return_run_details"):
        return Reply(200, {"workflow_run_id": run.id, "run_url": f"{call.shapes.repo_api}/actions/runs/{run.id}",
                           "html_url": f"{call.shapes.repo_web}/actions/runs/{run.id}"})
    return Reply(204)


def _filtered_runs(call: Call, workflow_id: int | None) -> list[WorkflowRun]:
    runs = [r for r in call.state.runs.values() if workflow_id is None or r.workflow_id == workflow_id]
    q = call.query
    if q.get("actor"):
        runs = [r for r in runs if r.actor == q["actor"]]
    if q.get("branch"):
        runs = [r for r in runs if r.head_branch == q["branch"]]
    if q.get("event"):
        runs = [r for r in runs if r.event == q["event"]]
    if q.get("head_sha"):
        runs = [r for r in runs if r.head_sha == q["head_sha"]]
    if q.get("status"):
        want = q["status"]
        runs = [r for r in runs if (r.status == want if want in _STATUSES else r.conclusion == want)]
    return sorted(runs, key=lambda r: r.id, reverse=True)


@operation("actions/list-workflow-runs")
def list_runs(call: Call) -> Reply:
    wf = _workflow(call)
    return paginate(call, [call.shapes.run(r) for r in _filtered_runs(call, wf.id)], wrap="workflow_runs")


@operation("actions/list-workflow-runs-for-repo")
def list_repo_runs(call: Call) -> Reply:
    check_repo(call)
    return paginate(call, [call.shapes.run(r) for r in _filtered_runs(call, None)], wrap="workflow_runs")


@operation("actions/get-workflow-run")
def get_run(call: Call) -> Reply:
    return Reply(200, call.shapes.run(_run(call)))


@operation("actions/cancel-workflow-run")
def cancel_run(call: Call) -> Reply:
    run = _run(call)
    require_push(call)
    if run.status == "completed":
        raise ApiError(409, "Cannot cancel a workflow run that is completed.")
    for job_id in run.job_ids:
        job = call.state.jobs[job_id]
        if job.status != "completed":
            job.status, job.conclusion = "completed", "cancelled"
    call.state.update_run(run, status="completed", conclusion="cancelled")
    return Reply(202, {})


@operation("actions/re-run-workflow-failed-jobs")
def rerun_failed(call: Call) -> Reply:
    run = _run(call)
    require_push(call)
    if run.status != "completed":
        raise ApiError(403, "This workflow run is not completed")
    failed = {"failure", "cancelled", "timed_out"}
    if run.conclusion not in failed:
        raise ApiError(403, "This workflow run has no failed jobs to re-run")
    for job_id in run.job_ids:
        job = call.state.jobs[job_id]
        if job.conclusion in failed:
            job.status, job.conclusion, job.completed_at = "queued", None, None
    run.run_attempt += 1
    call.state.update_run(run, status="queued")
    return Reply(201, {})


@operation("actions/list-jobs-for-workflow-run")
def list_jobs(call: Call) -> Reply:
    run = _run(call)
    jobs = [call.shapes.job(call.state.jobs[j]) for j in run.job_ids]
    return paginate(call, jobs, wrap="jobs")


@operation("actions/list-workflow-run-artifacts")
def list_run_artifacts(call: Call) -> Reply:
    run = _run(call)
    arts = [call.state.artifacts[a] for a in run.artifact_ids]
    if call.query.get("name"):
        arts = [a for a in arts if a.name == call.query["name"]]
    return paginate(call, [call.shapes.artifact(a) for a in arts], wrap="artifacts")


@operation("actions/list-artifacts-for-repo")
def list_artifacts(call: Call) -> Reply:
    check_repo(call)
    arts = sorted(call.state.artifacts.values(), key=lambda a: a.id, reverse=True)
    if call.query.get("name"):
        arts = [a for a in arts if a.name == call.query["name"]]
    return paginate(call, [call.shapes.artifact(a) for a in arts], wrap="artifacts")


@operation("actions/get-artifact")
def get_artifact(call: Call) -> Reply:
    check_repo(call)
    art = call.state.artifacts.get(int_param(call, "artifact_id"))
    if art is None:
        raise not_found()
    return Reply(200, call.shapes.artifact(art))


@operation("actions/download-artifact")
def download_artifact(call: Call) -> Reply:
    check_repo(call)
    art = call.state.artifacts.get(int_param(call, "artifact_id"))
    if art is None or call.params["archive_format"] != "zip":
        raise not_found()
    if art.expired:
        raise ApiError(410, "Artifact has expired")
    return Reply(302, None, {"Location": f"{call.shapes.web}/_sandbox/artifacts/{art.id}.zip"})
