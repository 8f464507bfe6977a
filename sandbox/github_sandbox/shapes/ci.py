"""Check runs and GitHub Actions objects (workflows, runs, jobs, artifacts) as the REST API returns them."""
from __future__ import annotations

from typing import Any
from urllib.parse import quote

from ..state import Artifact, CheckRun, Job, Workflow, WorkflowRun
from .base import ShapesBase, node_id, stable_id


class CiShapes(ShapesBase):
    # pulls_with_head comes from IssueShapes in the composed Shapes class.
    def check_run(self, c: CheckRun) -> dict[str, Any]:
        url = f"{self.repo_api}/check-runs/{c.id}"
        return {
            "id": c.id, "head_sha": c.head_sha, "node_id": node_id("CheckRun", c.id), "external_id": c.external_id,
            "url": url, "html_url": f"{self.repo_web}/runs/{c.id}", "details_url": c.details_url,
            "status": c.status, "conclusion": c.conclusion, "started_at": c.started_at,
            "completed_at": c.completed_at,
            "output": {"title": c.title, "summary": c.summary, "text": c.text, "annotations_count": 0,
                       "annotations_url": f"{url}/annotations"},
            "name": c.name, "check_suite": {"id": stable_id("suite", c.head_sha)},
            "app": self.app(c.app), "pull_requests": self.pulls_with_head(c.head_sha),  # type: ignore[attr-defined]
        }

    def workflow(self, w: Workflow) -> dict[str, Any]:
        return {"id": w.id, "node_id": node_id("Workflow", w.id), "name": w.name, "path": w.path, "state": w.state,
                "created_at": w.created, "updated_at": w.created,
                "url": f"{self.repo_api}/actions/workflows/{w.id}",
                "html_url": f"{self.repo_web}/blob/{self.state.default_branch}/{w.path}",
                "badge_url": f"{self.repo_web}/workflows/{quote(w.name)}/badge.svg"}

    def head_commit(self, sha: str) -> dict[str, Any]:
        info = self.state.git.commit(sha)
        return {"id": sha, "tree_id": info.tree, "message": info.message, "timestamp": info.committer.date,
                "author": {"name": info.author.name, "email": info.author.email},
                "committer": {"name": info.committer.name, "email": info.committer.email}}

    def run(self, r: WorkflowRun) -> dict[str, Any]:
        wf = self.state.workflows[r.workflow_id]
        url = f"{self.repo_api}/actions/runs/{r.id}"
        suite = stable_id("suite", f"{r.id}")
        repo = self.repository()
        return {
            "id": r.id, "name": r.name, "node_id": node_id("WorkflowRun", r.id), "head_branch": r.head_branch,
            "head_sha": r.head_sha, "path": wf.path, "display_title": r.display_title or r.name,
            "run_number": r.run_number,
            "run_attempt": r.run_attempt, "event": r.event, "status": r.status, "conclusion": r.conclusion,
            "workflow_id": r.workflow_id, "check_suite_id": suite, "check_suite_node_id": node_id("CheckSuite", suite),
            "url": url, "html_url": f"{self.repo_web}/actions/runs/{r.id}",
            "pull_requests": self.pulls_with_head(r.head_sha),  # type: ignore[attr-defined]
            "created_at": r.created, "updated_at": r.updated, "run_started_at": r.created,
            "actor": self.simple_user(r.actor), "triggering_actor": self.simple_user(r.actor),
            "jobs_url": f"{url}/jobs", "logs_url": f"{url}/logs",
            "check_suite_url": f"{self.repo_api}/check-suites/{suite}", "artifacts_url": f"{url}/artifacts",
            "cancel_url": f"{url}/cancel", "rerun_url": f"{url}/rerun", "previous_attempt_url": None,
            "workflow_url": f"{self.repo_api}/actions/workflows/{r.workflow_id}",
            "head_commit": self.head_commit(r.head_sha), "repository": repo, "head_repository": repo,
        }

    def job(self, j: Job) -> dict[str, Any]:
        run = self.state.runs[j.run_id]
        url = f"{self.repo_api}/actions/jobs/{j.id}"
        return {
            "id": j.id, "run_id": j.run_id, "run_url": f"{self.repo_api}/actions/runs/{j.run_id}",
            "run_attempt": run.run_attempt, "node_id": node_id("CheckRun", j.id), "head_sha": run.head_sha,
            "url": url, "html_url": f"{self.repo_web}/actions/runs/{j.run_id}/job/{j.id}", "status": j.status,
            "conclusion": j.conclusion, "created_at": j.created_at or j.started_at, "started_at": j.started_at,
            "completed_at": j.completed_at, "name": j.name, "steps": [],
            "check_run_url": f"{self.repo_api}/check-runs/{j.id}", "labels": list(j.labels), "runner_id": None,
            "runner_name": None, "runner_group_id": None, "runner_group_name": None,
            "workflow_name": run.name, "head_branch": run.head_branch,
        }

    def artifact(self, a: Artifact) -> dict[str, Any]:
        run = self.state.runs[a.run_id]
        url = f"{self.repo_api}/actions/artifacts/{a.id}"
        repo_id = stable_id("repo", self.state.full_name)
        return {
            "id": a.id, "node_id": node_id("Artifact", a.id), "name": a.name, "size_in_bytes": len(a.data),
            "url": url, "archive_download_url": f"{url}/zip", "expired": a.expired, "created_at": a.created,
            "expires_at": "2099-01-01T00:00:00Z", "updated_at": a.created,
            "workflow_run": {"id": run.id, "repository_id": repo_id, "head_repository_id": repo_id,
                             "head_branch": run.head_branch or "", "head_sha": run.head_sha},
        }
