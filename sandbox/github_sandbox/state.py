"""The sandbox's mutable world: seeded users, pulls and comments plus everything written since, behind one lock."""
from __future__ import annotations

import base64
import io
import itertools
import threading
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from . import workflows
from .gitrepo import GitError, GitRepo
from .seed import PERMISSIONS, SeedFile, SeedRun

ROLE_OF = {"admin": "admin", "maintain": "write", "write": "write", "triage": "read", "read": "read", "none": "none"}


# GitHub's own App: every workflow's GITHUB_TOKEN acts as it (and may post check runs as it).
ACTIONS_APP = "github-actions[bot]"


def utcnow() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Issue:
    """An issue or pull request (GitHub numbers them in one sequence; a pull is an issue with a head)."""

    number: int
    title: str
    body: str | None
    author: str
    state: str
    labels: list[str]
    created: str
    updated: str
    closed_at: str | None = None
    is_pull: bool = False
    head: str = ""
    base: str = ""
    fork: bool = False
    draft: bool = False
    merged: bool = False
    merged_at: str | None = None
    merged_by: str | None = None
    pinned_head_sha: str | None = None  # seed's head_sha, until the next push to `head`


@dataclass
class Comment:
    id: int
    issue: int
    user: str
    body: str
    created: str
    updated: str
    # Every save of the body, as GraphQL's userContentEdits lists them: empty until the first edit,
    # which adds the created version too (GitHub's includesCreatedEdit); each {"editor", "edited_at"}.
    edits: list[dict[str, str]] = field(default_factory=list)


@dataclass
class Reaction:
    id: int
    subject: str  # "comment" or "issue"
    subject_id: int
    issue: int
    user: str
    content: str
    created: str


@dataclass
class Review:
    id: int
    pull: int
    user: str
    state: str  # APPROVED, CHANGES_REQUESTED, COMMENTED
    body: str
    commit_id: str
    submitted: str
    edits: list[dict[str, str]] = field(default_factory=list)  # as Comment.edits


def record_edit(item: Comment | Review, editor: str, now: str) -> None:
    """Note one save of an issue comment's or review's body by `editor` (who, when: the edit history)."""
    if not item.edits:
        item.edits.append({"editor": item.user, "edited_at": getattr(item, "created", None) or item.submitted})
    item.edits.append({"editor": editor, "edited_at": now})


@dataclass
class Status:
    id: int
    sha: str
    state: str
    context: str
    description: str | None
    target_url: str | None
    creator: str
    created: str
    updated: str


@dataclass
class CheckRun:
    id: int
    name: str
    head_sha: str
    status: str
    conclusion: str | None
    details_url: str | None
    external_id: str | None
    started_at: str | None
    completed_at: str | None
    title: str | None
    summary: str | None
    text: str | None
    app: str  # login of the app (bot) that owns it


@dataclass
class Workflow:
    id: int
    file: str
    name: str
    state: str
    created: str

    @property
    def path(self) -> str:
        return f".github/workflows/{self.file}"


@dataclass
class Job:
    id: int
    run_id: int
    name: str
    status: str
    conclusion: str | None
    started_at: str  # a queued job repeats created_at here, as GitHub does
    completed_at: str | None
    created_at: str = ""
    labels: list[str] = field(default_factory=lambda: ["self-hosted"])


@dataclass
class Artifact:
    id: int
    run_id: int
    name: str
    data: bytes  # the zip archive
    created: str
    expired: bool = False


@dataclass
class WorkflowRun:
    id: int
    workflow_id: int
    name: str
    event: str
    status: str
    conclusion: str | None
    head_branch: str | None
    head_sha: str
    actor: str
    inputs: dict[str, Any]
    run_number: int
    run_attempt: int
    created: str
    updated: str
    display_title: str = ""
    job_ids: list[int] = field(default_factory=list)
    artifact_ids: list[int] = field(default_factory=list)


@dataclass
class RepoLabel:
    id: int
    name: str
    color: str
    description: str | None


def make_zip(files: dict[str, str | bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, content in sorted(files.items()):
            zf.writestr(name, content)
    return buf.getvalue()


class SandboxState:
    """Everything the sandbox knows. Handlers hold `lock` while they read or change it."""

    def __init__(self, seed_file: SeedFile):
        seed = seed_file.seed
        self.lock = threading.RLock()
        self.seed_path = seed_file.path
        self.owner, self.name = seed.owner, seed.name
        self.full_name = seed.repository
        self.owner_type = seed.owner_type
        self.default_branch = seed.default_branch
        self.bot = seed.bot
        self.started = utcnow()
        try:
            self.git = GitRepo(seed_file.git_dir)
        except GitError as exc:
            raise seed_file.error(("git",), str(exc)) from None
        if self.git.branch_sha(self.default_branch) is None:
            raise seed_file.error(("default_branch",), f"no branch {self.default_branch!r} in {seed_file.git_dir}")
        self.permissions: dict[str, str] = dict(seed.users)
        self.permissions.setdefault(self.bot, "write")
        self.teams = {k: list(v) for k, v in seed.teams.items()}
        self._ids = itertools.count(_first_free_id(seed))
        self.repo_labels: dict[str, RepoLabel] = {}
        for label in seed.labels:
            self.ensure_label(label.name, label.color, label.description)
        self.issues: dict[int, Issue] = {}
        self.comments: dict[int, Comment] = {}
        self.reactions: dict[int, Reaction] = {}
        self.reviews: dict[int, Review] = {}
        self.statuses: dict[int, Status] = {}
        self.check_runs: dict[int, CheckRun] = {}
        self.runs: dict[int, WorkflowRun] = {}
        self.jobs: dict[int, Job] = {}
        self.artifacts: dict[int, Artifact] = {}
        self.repository_dispatches: list[dict[str, Any]] = []
        self.workflows: dict[int, Workflow] = {}
        for n, wf in enumerate(seed.workflows):
            wid = wf.id or 161335 + n
            self.workflows[wid] = Workflow(wid, wf.file, wf.name or wf.file.rsplit(".", 1)[0], wf.state, self.started)
        self._load_items(seed_file)
        for n, run in enumerate(seed.workflow_runs):
            self._load_run(seed_file, n, run)

    # --- seed -------------------------------------------------------------------------------
    def _load_items(self, seed_file: SeedFile) -> None:
        seed = seed_file.seed
        for kind, items in (("pulls", seed.pulls), ("issues", seed.issues)):
            for n, item in enumerate(items):
                created = self.started
                issue = Issue(number=item.number, title=item.title, body=item.body, author=item.author,
                              state=item.state, labels=[], created=created, updated=created,
                              closed_at=created if item.state == "closed" else None)
                if kind == "pulls":
                    issue.is_pull = True
                    issue.head, issue.base = item.head, item.base or self.default_branch
                    issue.fork, issue.draft, issue.merged = item.fork, item.draft, item.merged
                    issue.merged_at = created if item.merged else None
                    for field_name, branch in (("head", issue.head), ("base", issue.base)):
                        if self.git.branch_sha(branch) is None:
                            raise seed_file.error((kind, n, field_name), f"no branch {branch!r} in {seed_file.git_dir}; "
                                                  f"branches: {', '.join(self.git.branches())}")
                    if item.head_sha:
                        sha = self.git.resolve(item.head_sha)
                        if sha is None:
                            raise seed_file.error((kind, n, "head_sha"), f"no commit {item.head_sha!r} in {seed_file.git_dir}")
                        issue.pinned_head_sha = sha
                for name in item.labels:
                    self.ensure_label(name)
                    issue.labels.append(name)
                self.issues[issue.number] = issue
                for c in item.comments:
                    cid = c.id or self.new_id()
                    self.comments[cid] = Comment(cid, issue.number, c.user, c.body, c.created or created, c.created or created)
                for r in getattr(item, "reviews", []):
                    rid = r.id or self.new_id()
                    commit = self.git.resolve(r.commit) if r.commit else self.head_sha(issue)
                    self.reviews[rid] = Review(rid, issue.number, r.user, r.state, r.body, commit or self.head_sha(issue), created)

    def _load_run(self, seed_file: SeedFile, n: int, run: SeedRun) -> None:
        wf = self.workflow(run.workflow)
        if wf is None:
            raise seed_file.error(("workflow_runs", n, "workflow"), f"no workflow {run.workflow!r}; workflows: "
                                  f"{', '.join(w.file for w in self.workflows.values())}")
        branch = run.branch or self.default_branch
        sha = self.git.resolve(run.head_sha) if run.head_sha else self.git.ref_sha(branch)
        if sha is None:
            raise seed_file.error(("workflow_runs", n), f"no commit for branch {branch!r} / head_sha {run.head_sha!r}")
        wr = self.create_run(wf, branch, sha, run.event, run.actor or self.bot, dict(run.inputs), run_id=run.id)
        self.update_run(wr, status=run.status, conclusion=run.conclusion,
                        jobs=[j.model_dump() for j in run.jobs],
                        artifacts=[a.model_dump() for a in run.artifacts])

    # --- ids, users, teams ------------------------------------------------------------------
    def new_id(self) -> int:
        return next(self._ids)

    def is_known(self, login: str) -> bool:
        if login in self.permissions or login == self.owner or login == ACTIONS_APP:
            return True
        if any(login in members for members in self.teams.values()):
            return True
        return any(i.author == login for i in self.issues.values()) or any(
            c.user == login for c in self.comments.values()) or any(r.user == login for r in self.reviews.values())

    def permission(self, login: str | None) -> str:
        if login is None:
            return "none"
        return self.permissions.get(login, "none")

    def can(self, login: str | None, level: str) -> bool:
        return PERMISSIONS.index(self.permission(login)) >= PERMISSIONS.index(level)

    def org_members(self, org: str) -> set[str]:
        return {m for key, members in self.teams.items() if key.split("/")[0] == org for m in members}

    def association(self, login: str) -> str:
        if login == self.owner:
            return "OWNER"
        if self.owner_type == "Organization" and login in self.org_members(self.owner):
            return "MEMBER"
        if self.permission(login) != "none" and login != self.bot:
            return "COLLABORATOR"
        if any(i.is_pull and i.merged and i.author == login for i in self.issues.values()):
            return "CONTRIBUTOR"
        return "NONE"

    def user_type(self, login: str) -> str:
        if login.endswith("[bot]"):
            return "Bot"
        if login == self.owner and self.owner_type == "Organization":
            return "Organization"
        return "User"

    # --- pulls ------------------------------------------------------------------------------
    def head_sha(self, issue: Issue) -> str:
        return issue.pinned_head_sha or self.git.branch_sha(issue.head) or ""

    def base_sha(self, issue: Issue) -> str:
        return self.git.branch_sha(issue.base) or ""

    def head_repo_full_name(self, issue: Issue) -> str:
        return f"{issue.author}/{self.name}" if issue.fork else self.full_name

    def push(self, branch: str, files: dict[str, str | None], message: str, author: str,
             start_from: str | None = None) -> dict[str, Any]:
        """Commit to a branch as a push would; pulls whose head is that branch move to the new commit."""
        before_heads = {i.number: self.head_sha(i) for i in self.issues.values() if i.is_pull and i.head == branch}
        before, after = self.git.commit_files(branch, files, message, author, start_from=start_from or self.default_branch)
        now = utcnow()
        moved = []
        for number in before_heads:
            issue = self.issues[number]
            issue.pinned_head_sha = None
            issue.updated = now
            moved.append({"number": number, "before": before_heads[number], "after": after})
        return {"branch": branch, "before": before, "after": after, "pulls": moved}

    # --- labels -----------------------------------------------------------------------------
    def ensure_label(self, name: str, color: str = "ededed", description: str | None = None) -> RepoLabel:
        label = self.repo_labels.get(name)
        if label is None:
            label = self.repo_labels[name] = RepoLabel(self.new_id(), name, color, description)
        return label

    # --- actions ----------------------------------------------------------------------------
    def workflow(self, ident: str | int) -> Workflow | None:
        text = str(ident)
        if text.isdigit() and int(text) in self.workflows:
            return self.workflows[int(text)]
        return next((w for w in self.workflows.values() if w.file == text or w.path == text), None)

    def create_run(self, wf: Workflow, branch: str | None, sha: str, event: str, actor: str,
                   inputs: dict[str, Any], run_id: int | None = None,
                   input_context: dict[str, Any] | None = None) -> WorkflowRun:
        """A queued run. Its display title is the workflow file's `run-name` at sha, as GitHub renders it."""
        now = utcnow()
        number = 1 + sum(1 for r in self.runs.values() if r.workflow_id == wf.id)
        rid = run_id or self.new_id()
        try:
            doc = workflows.parse(self.git.read_file(sha, wf.path))
        except workflows.WorkflowFileError:
            doc = None
        context = input_context if input_context is not None else inputs
        github = {"actor": actor, "triggering_actor": actor, "event_name": event, "sha": sha,
                  "ref_name": branch, "ref": f"refs/heads/{branch}" if branch else None,
                  "repository": self.full_name, "repository_owner": self.owner, "workflow": wf.name,
                  "run_number": number, "run_attempt": 1, "event": {"inputs": context}}
        title = workflows.run_name(doc, wf.name, {"inputs": context, "github": github})
        run = WorkflowRun(rid, wf.id, wf.name, event, "queued", None, branch, sha, actor, inputs,
                          number, 1, now, now, display_title=title)
        self.runs[rid] = run
        return run

    def update_run(self, run: WorkflowRun, *, status: str | None = None, conclusion: str | None = None,
                   jobs: list[dict[str, Any]] | None = None, artifacts: list[dict[str, Any]] | None = None) -> None:
        now = utcnow()
        if conclusion is not None and status is None:
            status = "completed"
        if status is not None:
            run.status = status
            run.conclusion = conclusion if status == "completed" else None
        for spec in jobs or []:
            job = next((self.jobs[j] for j in run.job_ids if self.jobs[j].name == spec["name"]), None)
            if job is None:
                job = Job(self.new_id(), run.id, spec["name"], "queued", None, now, None, now)
                self.jobs[job.id] = job
                run.job_ids.append(job.id)
            if spec.get("labels") is not None:
                job.labels = list(spec["labels"])
            if spec.get("created_at"):
                job.created_at = job.started_at = spec["created_at"]
            if spec.get("started_at"):
                job.started_at = spec["started_at"]
            job.status = spec.get("status") or "completed"
            job.conclusion = spec.get("conclusion") if job.status == "completed" else None
            job.completed_at = now if job.status == "completed" else None
        for spec in artifacts or []:
            raw = spec.get("zip_base64")
            data = base64.b64decode(raw) if raw is not None else make_zip(spec.get("files") or {})
            art = Artifact(self.new_id(), run.id, spec["name"], data, now)
            self.artifacts[art.id] = art
            run.artifact_ids.append(art.id)
        run.updated = now

    # --- the documented state view ------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """GET /_sandbox/state (shape documented in docs/sandbox.md)."""
        with self.lock:
            pulls, issues = [], []
            for issue in sorted(self.issues.values(), key=lambda i: i.number):
                item = {"number": issue.number, "title": issue.title, "body": issue.body, "author": issue.author,
                        "state": issue.state, "labels": list(issue.labels), "created": issue.created,
                        "updated": issue.updated, "closed_at": issue.closed_at}
                if issue.is_pull:
                    item.update(head=issue.head, base=issue.base, head_sha=self.head_sha(issue),
                                base_sha=self.base_sha(issue), head_repo=self.head_repo_full_name(issue),
                                fork=issue.fork, draft=issue.draft, merged=issue.merged, merged_at=issue.merged_at)
                    pulls.append(item)
                else:
                    issues.append(item)
            return {
                "repository": {"full_name": self.full_name, "owner": self.owner, "name": self.name,
                               "owner_type": self.owner_type, "default_branch": self.default_branch,
                               "default_branch_sha": self.git.branch_sha(self.default_branch)},
                "bot": self.bot,
                "users": dict(self.permissions),
                "teams": {k: list(v) for k, v in self.teams.items()},
                "workflows": [{"id": w.id, "file": w.file, "path": w.path, "name": w.name, "state": w.state}
                              for w in self.workflows.values()],
                "pulls": pulls,
                "issues": issues,
                "comments": [{**vars(c), "edits": [dict(e) for e in c.edits]}
                             for c in sorted(self.comments.values(), key=lambda c: c.id)],
                "labels": {str(i.number): list(i.labels) for i in self.issues.values() if i.labels},
                "reactions": [vars(r).copy() for r in self.reactions.values()],
                "reviews": [{**vars(r), "edits": [dict(e) for e in r.edits]} for r in self.reviews.values()],
                "statuses": [vars(s).copy() for s in self.statuses.values()],
                "check_runs": [vars(c).copy() for c in self.check_runs.values()],
                "workflow_runs": [self._run_view(r) for r in self.runs.values()],
                "repository_dispatches": list(self.repository_dispatches),
            }

    def _run_view(self, run: WorkflowRun) -> dict[str, Any]:
        wf = self.workflows.get(run.workflow_id)
        view = {k: v for k, v in vars(run).items() if k not in ("job_ids", "artifact_ids")}
        view["workflow"] = wf.file if wf else None
        view["jobs"] = [{k: v for k, v in vars(self.jobs[j]).items() if k != "run_id"} for j in run.job_ids]
        view["artifacts"] = [{"id": a.id, "name": a.name, "size_in_bytes": len(a.data)}
                             for a in (self.artifacts[i] for i in run.artifact_ids)]
        return view


def _first_free_id(seed: Any) -> int:
    used = [c.id or 0 for item in [*seed.pulls, *seed.issues] for c in item.comments]
    used += [r.id or 0 for p in seed.pulls for r in p.reviews]
    used += [r.id or 0 for r in seed.workflow_runs]
    return max([1000, *used]) + 1
