"""The sandbox's control plane under /_sandbox/: what tests and the demo use to look inside and to act as GitHub.

    GET  /_sandbox/log[?all=1&since=SEQ]  writes received (all=1: every request), oldest first
    GET  /_sandbox/state                  the documented state view (docs/sandbox.md)
    GET  /_sandbox/health                 {"ok": true, "api": {"api", "package", "version"}} (the description served)
    POST /_sandbox/push                   {branch, files: {path: text|null}, message?, author?, from?}
    POST /_sandbox/runs                   {workflow, branch?, head_sha?, event?, status?, conclusion?, actor?,
                                           inputs?, jobs?, artifacts?}  → a new workflow run
    POST /_sandbox/runs/{id}              {status?, conclusion?, jobs?: [{name, status?, conclusion?, labels?, created_at?, started_at?}],
                                           artifacts?: [{name, files: {path: text}, zip_base64?}]}
    POST /_sandbox/reviews                {pull, user, state: APPROVED|CHANGES_REQUESTED|COMMENTED, body?, commit?}
    POST /_sandbox/pulls/{n}              {title?, body?, draft?, state?, merged?, merged_by?}
    POST /_sandbox/webhook                {event, action, sender?, comment_id?, pull?, label?, before?, after?,
                                           review_id?, run_id?, changes_from?, deliver?}  → the payload
    POST /_sandbox/webhooks/target        {url, secret}: send signed webhooks there (sandbox/github_sandbox/deliver.py)
    GET  /_sandbox/webhooks/deliveries    what was sent, with the receiver's status
    GET  /_sandbox/artifacts/{id}.zip     an artifact's archive (where download-artifact redirects)
    POST /_sandbox/faults                 {rules: [rule...]} or one rule (sandbox/github_sandbox/faults.py) → active rules
    GET  /_sandbox/faults, DELETE /_sandbox/faults   list / remove every rule
"""
from __future__ import annotations

import json
import re
from typing import Any, Callable, Literal, Protocol
from urllib.parse import parse_qs

from pydantic import BaseModel, ConfigDict, ValidationError

from .faults import parse_rules
from .gitrepo import GitError
from .seed import Conclusion, RunStatus, SeedArtifact, SeedJob, SeedRun
from .shapes import Shapes
from .state import Review, SandboxState, utcnow
from .webhooks import WebhookError, build_event
from .wire import RawResponse


class App(Protocol):
    """What the control endpoints need of the sandbox app: its state and its request log."""

    state: SandboxState
    deliverer: Any  # github_sandbox.deliver.Deliverer

    def log(self, *, everything: bool, since: int) -> Any: ...


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PushBody(_Strict):
    branch: str
    files: dict[str, str | None]  # path → new text; null deletes the file
    message: str = "Update from the sandbox"
    author: str | None = None  # default: the author of a pull with this head branch, else the repository owner
    start_from: str | None = None  # "from" in the JSON: where a new branch starts (default: default branch)

    @classmethod
    def parse(cls, data: dict[str, Any]) -> "PushBody":
        data = dict(data)
        if "from" in data:
            data["start_from"] = data.pop("from")
        return cls.model_validate(data)


class RunUpdate(_Strict):
    status: RunStatus | None = None
    conclusion: Conclusion | None = None
    jobs: list[SeedJob] = []
    artifacts: list[SeedArtifact] = []


class ReviewBody(_Strict):
    pull: int
    user: str
    state: Literal["APPROVED", "CHANGES_REQUESTED", "COMMENTED"]
    body: str = ""
    commit: str | None = None


class PullUpdate(_Strict):
    title: str | None = None
    body: str | None = None
    draft: bool | None = None
    state: Literal["open", "closed"] | None = None
    merged: bool | None = None
    merged_by: str | None = None


class WebhookBody(_Strict):
    event: str
    action: str
    sender: str | None = None
    comment_id: int | None = None
    pull: int | None = None
    label: str | None = None
    before: str | None = None
    after: str | None = None
    review_id: int | None = None
    run_id: int | None = None
    changes_from: str | None = None
    deliver: bool = False  # also send it, signed, to the registered webhook target (sandbox/github_sandbox/deliver.py)


class WebhookTarget(_Strict):
    url: str | None
    secret: str = ""


class ControlError(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class Control:
    def __init__(self, app: App):
        self.app = app
        self.routes: list[tuple[str, re.Pattern[str], Callable[..., Any]]] = [
            ("GET", re.compile(r"/_sandbox/log"), self.log),
            ("GET", re.compile(r"/_sandbox/state"), self.state),
            ("GET", re.compile(r"/_sandbox/health"), lambda **_: {"ok": True, "api": app.validator.source}),
            ("POST", re.compile(r"/_sandbox/push"), self.push),
            ("POST", re.compile(r"/_sandbox/runs"), self.new_run),
            ("POST", re.compile(r"/_sandbox/runs/(?P<run_id>\d+)"), self.update_run),
            ("POST", re.compile(r"/_sandbox/reviews"), self.review),
            ("POST", re.compile(r"/_sandbox/pulls/(?P<number>\d+)"), self.update_pull),
            ("POST", re.compile(r"/_sandbox/webhook"), self.webhook),
            ("POST", re.compile(r"/_sandbox/webhooks/target"),
             lambda body, **_: app.deliverer.target(**WebhookTarget.model_validate(body).model_dump())),
            ("GET", re.compile(r"/_sandbox/webhooks/deliveries"), lambda **_: app.deliverer.deliveries()),
            ("GET", re.compile(r"/_sandbox/artifacts/(?P<artifact_id>\d+)\.zip"), self.artifact),
            ("POST", re.compile(r"/_sandbox/faults"), lambda body, **_: self.app.faults.add(parse_rules(body))),
            ("GET", re.compile(r"/_sandbox/faults"), lambda **_: self.app.faults.view()),
            ("DELETE", re.compile(r"/_sandbox/faults"), lambda **_: self.app.faults.clear()),
        ]

    def handle(self, method: str, path: str, query: str, body: bytes, server: str) -> RawResponse:
        try:
            for verb, pattern, fn in self.routes:
                m = pattern.fullmatch(path)
                if m and verb == method:
                    data = json.loads(body) if body else {}
                    result = fn(body=data, query=parse_qs(query), server=server, **m.groupdict())
                    if isinstance(result, bytes):
                        return RawResponse(200, {"Content-Type": "application/zip"}, result)
                    return RawResponse(200, {"Content-Type": "application/json; charset=utf-8"},
                                       json.dumps(result).encode())
            raise ControlError(404, f"no control endpoint {method} {path}; see sandbox/github_sandbox/control.py")
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(map(str, err["loc"])) or "body"
            failure = ControlError(400, f"{where}: {err['msg']}")
        except (ValueError, GitError, WebhookError) as exc:
            failure = ControlError(400, str(exc))
        except ControlError as exc:
            failure = exc
        return RawResponse(failure.status, {"Content-Type": "application/json; charset=utf-8"},
                           json.dumps({"message": failure.message}).encode())

    # --- endpoints ---------------------------------------------------------------------------
    def log(self, query: dict[str, list[str]], **_: Any) -> list[dict[str, Any]]:
        everything = query.get("all", ["0"])[0] not in ("0", "", "false")
        since = int(query.get("since", ["0"])[0] or 0)
        return self.app.log(everything=everything, since=since)

    def state(self, **_: Any) -> dict[str, Any]:
        return {**self.app.state.snapshot(), "faults": self.app.faults.view()}

    def push(self, body: dict[str, Any], **_: Any) -> dict[str, Any]:
        req = PushBody.parse(body)
        st = self.app.state
        with st.lock:
            author = req.author or next((i.author for i in st.issues.values() if i.is_pull and i.head == req.branch),
                                        st.owner)
            return st.push(req.branch, req.files, req.message, author, start_from=req.start_from)

    def new_run(self, body: dict[str, Any], server: str, **_: Any) -> dict[str, Any]:
        spec = SeedRun.model_validate(body)
        st = self.app.state
        with st.lock:
            wf = st.workflow(spec.workflow)
            if wf is None:
                raise ControlError(404, f"no workflow {spec.workflow!r}")
            branch = spec.branch or st.default_branch
            sha = st.git.resolve(spec.head_sha) if spec.head_sha else st.git.ref_sha(branch)
            if sha is None:
                raise ControlError(400, f"no commit for branch {branch!r} / head_sha {spec.head_sha!r}")
            run = st.create_run(wf, branch, sha, spec.event, spec.actor or st.bot, dict(spec.inputs), run_id=spec.id)
            st.update_run(run, status=spec.status, conclusion=spec.conclusion,
                          jobs=[j.model_dump() for j in spec.jobs], artifacts=[a.model_dump() for a in spec.artifacts])
            return st._run_view(run)

    def update_run(self, body: dict[str, Any], run_id: str, **_: Any) -> dict[str, Any]:
        req = RunUpdate.model_validate(body)
        st = self.app.state
        with st.lock:
            run = st.runs.get(int(run_id))
            if run is None:
                raise ControlError(404, f"no workflow run {run_id}")
            st.update_run(run, status=req.status, conclusion=req.conclusion,
                          jobs=[j.model_dump() for j in req.jobs], artifacts=[a.model_dump() for a in req.artifacts])
            return st._run_view(run)

    def review(self, body: dict[str, Any], **_: Any) -> dict[str, Any]:
        req = ReviewBody.model_validate(body)
        st = self.app.state
        with st.lock:
            issue = st.issues.get(req.pull)
            if issue is None or not issue.is_pull:
                raise ControlError(404, f"no pull request {req.pull}")
            commit = st.git.resolve(req.commit) if req.commit else st.head_sha(issue)
            if commit is None:
                raise ControlError(400, f"no commit {req.commit!r}")
            review = Review(st.new_id(), req.pull, req.user, req.state, req.body, commit, utcnow())
            st.reviews[review.id] = review
            return vars(review).copy()

    def update_pull(self, body: dict[str, Any], number: str, **_: Any) -> dict[str, Any]:
        req = PullUpdate.model_validate(body)
        st = self.app.state
        with st.lock:
            issue = st.issues.get(int(number))
            if issue is None or not issue.is_pull:
                raise ControlError(404, f"no pull request {number}")
            now = utcnow()
            for key in ("title", "body", "draft"):
                if getattr(req, key) is not None:
                    setattr(issue, key, getattr(req, key))
            if req.merged:
                issue.merged, issue.merged_at, issue.merged_by = True, now, req.merged_by or st.bot
                req.state = "closed"
            if req.state is not None:
                issue.state = req.state
                issue.closed_at = now if req.state == "closed" else None
            issue.updated = now
            return next(p for p in st.snapshot()["pulls"] if p["number"] == issue.number)

    def webhook(self, body: dict[str, Any], server: str, **_: Any) -> dict[str, Any]:
        req = WebhookBody.model_validate(body)
        st = self.app.state
        with st.lock:
            shapes = Shapes(st, server, server)
            selectors = req.model_dump(exclude={"event", "action", "deliver"})
            payload = build_event(shapes, req.event, req.action, **selectors)
        if req.deliver:
            self.app.deliverer.enqueue(server, req.event, req.action, selectors)
        return payload

    def build_webhook(self, server: str, event: str, action: str, selectors: dict[str, Any]) -> dict[str, Any]:
        with self.app.state.lock:
            return build_event(Shapes(self.app.state, server, server), event, action, **selectors)

    def artifact(self, artifact_id: str, **_: Any) -> bytes:
        art = self.app.state.artifacts.get(int(artifact_id))
        if art is None:
            raise ControlError(404, f"no artifact {artifact_id}")
        return art.data
