"""The one module that talks to GitHub (through PyGithub); returns plain data, honours --dry-run."""
from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import json
import os
import sys
import time
import urllib.parse
from collections.abc import Callable, Iterator
from typing import Any, TextIO

import requests
from github import Auth, Github, GithubException

from bot.core import github_retry
from bot.core.github_cache import CommitReads, EditHistories
from bot.core.events import Pull, pull_from_json
from bot.core.markers import opens_with_marker
from bot.core.messages import msg
from bot.core.github_errors import BotLoginMismatch, GitHubError  # noqa: F401  (callers' names)
from bot.core.github_graphql import PULL_AND_FILE_QUERY, Incomplete, file_from_graphql, pull_from_graphql, variables
from bot.core.github_records import (  # noqa: F401  (the client's records: bot.core.github.Comment etc.)
    ACTIVE_RUN_STATES,
    Comment,
    Run,
    RunJob,
    Artifact,
    CheckRun,
    Review,
    PullFile,
    DispatchedRun,
    EDITS_QUERY,
    _check,
    _check_body,
    _next_link,
    _comment,
    _job,
    _review,
    _run,
    _when,
    edit_history,
)


class GitHubClient:
    """Reads go to GitHub; writes go to GitHub, or, with dry_run, become one JSON line each on `out`.

    Built on PyGithub's Requester (`Github.requester`, PyGithub's way to call endpoints it has no
    object for: auth, base URL, error types): every method is one request, or one per page of a
    list, so a handler's request budget is plain to see.
    """

    def __init__(self, *, base_url: str, token: str, repository: str, dry_run: bool = False,
                 out: TextIO | None = None, policy: github_retry.RetryPolicy | None = None,
                 commit_reads: CommitReads | None = None, edit_histories: EditHistories | None = None):
        self.repository = repository
        self.commit_reads = commit_reads  # serve's reads at full SHAs, shared by its deliveries (github_cache.py)
        self.base_url = base_url.rstrip("/")
        self.dry_run = dry_run
        self._out = out if out is not None else sys.stdout
        self.request_count = 0
        self.policy = policy or github_retry.RetryPolicy()
        self.waited_s = 0.0  # time spent waiting for retries, all requests together
        # who edited a comment version: this client's own, or serve's, shared by its deliveries (github_cache.py)
        self._edit_histories = edit_histories if edit_histories is not None else EditHistories()
        self._written: dict[int, str] = {}  # comment id → the text this client last wrote there
        # One handle makes a handful of writes: PyGithub's default 1 s pause between writes
        # would dominate its wall time, and GitHub's secondary limits are far away. PyGithub's
        # own retry (urllib3's) is off: it would repeat POSTs; _call owns the policy.
        self._requester = Github(auth=Auth.Token(token), base_url=self.base_url, per_page=100,
                                 timeout=self.policy.timeout_s, retry=None, seconds_between_requests=None,
                                 seconds_between_writes=None, lazy=True).requester
        self._repo_path = "/repos/" + "/".join(urllib.parse.quote(p, safe="") for p in repository.split("/"))

    @classmethod
    def from_env(cls, *, dry_run: bool = False, out: TextIO | None = None,
                 environ: dict[str, str] | None = None) -> GitHubClient:
        """Configured like any Actions step: GITHUB_API_URL, GITHUB_TOKEN, GITHUB_REPOSITORY."""
        env = os.environ if environ is None else environ
        missing = [name for name in ("GITHUB_TOKEN", "GITHUB_REPOSITORY") if not env.get(name)]
        if missing:
            raise GitHubError(msg("%(names)s must be set (as GitHub Actions sets them)", names=" and ".join(missing)))
        repository = env["GITHUB_REPOSITORY"]
        if repository.count("/") != 1:
            raise GitHubError(msg("GITHUB_REPOSITORY=%(value)s is not owner/name", value=repr(repository)))
        try:
            policy = github_retry.RetryPolicy.from_env(env)
        except ValueError as exc:
            raise GitHubError(getattr(exc, "message", str(exc))) from None
        return cls(base_url=env.get("GITHUB_API_URL") or "https://api.github.com",
                   token=env["GITHUB_TOKEN"], repository=repository, dry_run=dry_run, out=out, policy=policy)

    # -- transport -------------------------------------------------------------------------

    def _url(self, path: str) -> str:
        if path.startswith(("https://", "http://")):  # a Link header's next page
            return path
        return self.base_url + (path if path.startswith("/") else f"{self._repo_path}/{path}")

    def _call(self, verb: str, path: str, *, params: dict[str, Any] | None = None,
              body: Any = None, safe: bool | None = None) -> tuple[dict[str, Any], Any]:
        """One request, repeated only when that is safe (github_retry); every failure is a GitHubError."""
        url = self._url(path)
        return self._attempts(verb, path, safe=verb == "GET" if safe is None else safe, send=lambda: (
            self._requester.requestJsonAndCheck(verb, url, parameters=params, input=body)))

    def _attempts(self, verb: str, path: str, *, safe: bool, send: Callable[[], Any]) -> Any:
        label = path if len(path) < 120 else path[:117] + "..."
        attempt = 0
        while True:
            self.request_count += 1
            try:
                return send()
            except GithubException as exc:
                message = exc.data.get("message") if isinstance(exc.data, dict) else exc.data
                status, headers, said = exc.status, dict(exc.headers or {}), str(message or "")
                line = msg("%(verb)s %(path)s: HTTP %(status)s: %(said)s", verb=verb, path=label, status=status,
                           said=str(message or "").strip()[:200])
            except requests.RequestException as exc:  # no answer: refused, reset, timed out
                status, headers, said = None, {}, ""
                kind = msg("timed out") if isinstance(exc, requests.Timeout) else msg(
                    "cannot reach the GitHub API at %(api)s", api=self.base_url)
                line = msg("%(verb)s %(path)s: %(problem)s (%(kind)s)", verb=verb, path=label, problem=kind,
                           kind=type(exc).__name__)
            verdict = github_retry.decide(status=status, headers=headers, safe=safe, attempt=attempt,
                                          waited_s=self.waited_s, policy=self.policy, message=said)
            if not verdict.retry:
                ambiguous = status is None or status >= 500
                throttled = verdict.wait_s if verdict.throttled else None
                if throttled is not None:
                    line = msg("%(failure)s (GitHub asks to wait %(wait)s s; the retry budget is %(budget)s s)",
                               failure=line, wait=round(throttled), budget=round(self.policy.budget_s))
                elif attempt:
                    line = msg("%(failure)s (after %(attempts)s attempts)", failure=line, attempts=attempt + 1)
                raise GitHubError(line, status, ambiguous=ambiguous, throttled_s=throttled) from None
            time.sleep(verdict.wait_s)
            self.waited_s += verdict.wait_s
            attempt += 1

    def _pages(self, path: str, params: dict[str, Any] | None = None, *, key: str | None = None,
               max_pages: int | None = None) -> Iterator[dict[str, Any]]:
        """Every page (a list GitHub caps is read to its end: idempotency must not miss an old entry)."""
        for page in self._page_lists(path, params, key=key, max_pages=max_pages):
            yield from page

    def _page_lists(self, path: str, params: dict[str, Any] | None = None, *, key: str | None = None,
                    max_pages: int | None = None) -> Iterator[list[dict[str, Any]]]:
        params = {"per_page": 100, **(params or {})}
        url: str | None = path
        pages = 0
        while url is not None and (max_pages is None or pages < max_pages):
            headers, data = self._call("GET", url, params=params)
            pages += 1
            yield list((data.get(key, []) if key else data) or [])
            url, params = _next_link(headers.get("link", "")), None

    def _with_edits(self, records: list[Any], raw: list[dict[str, Any]]) -> list[Any]:
        """The records, the `edited` ones with who edited them: one GraphQL query for the page, none when
        nothing on it was edited and nothing holds a marker (REST says when, never by whom, and only to the
        second). A read: it happens under dry_run too."""
        out = list(records)
        asked: dict[str, int] = {}
        for n, (r, rec) in enumerate(zip(raw, records)):
            # A text holding markers is asked about even when REST shows no edit: REST's times are whole
            # seconds, so an edit made within the second the bot wrote the comment would not show there.
            if not (rec.edited or opens_with_marker(rec.body)) or not r.get("node_id"):
                continue  # (an edited record without a node_id stays edited by nobody known)
            if self._written.get(rec.id) == rec.body:  # the text is this client's own, word for word
                out[n] = dataclasses.replace(rec, editors=(rec.user,) if rec.edited else ())
                continue
            # Read once per version: a text saved again since has a new updated_at or body, so is asked again.
            known = self._edit_histories.get((r["node_id"], r.get("updated_at") or "", rec.body))
            if known is not None:
                out[n] = dataclasses.replace(rec, edited=known[0], editors=known[1])
            else:
                asked[r["node_id"]] = n
        if not asked:
            return out
        query = {"query": EDITS_QUERY, "variables": {"ids": list(asked)}}
        _, data = self._call("POST", self._graphql_url(), body=query, safe=True)
        nodes = (data or {}).get("data", {}) or {}
        if "nodes" not in nodes:
            said = "; ".join(str(e.get("message")) for e in (data or {}).get("errors") or [] if isinstance(e, dict))
            raise GitHubError(msg("POST /graphql (edit history): %(said)s", said=said) if said
                              else msg("POST /graphql (edit history): no data in the answer"))
        by_id = {n.get("id"): n for n in nodes["nodes"] or [] if isinstance(n, dict)}
        for node_id, n in asked.items():
            edited, editors = edit_history(by_id.get(node_id))
            if node_id in by_id:
                self._edit_histories.put((node_id, raw[n].get("updated_at") or "", out[n].body), (edited, editors))
            out[n] = dataclasses.replace(out[n], edited=edited, editors=editors)
        return out

    def _graphql_url(self) -> str:
        base = self.base_url.removesuffix("/v3") if self.base_url.endswith("/api/v3") else self.base_url
        return f"{base}/graphql"

    def _write(self, action: dict[str, Any], perform: Callable[[], Any]) -> Any:
        if self.dry_run:
            self._out.write(json.dumps(action, ensure_ascii=False, sort_keys=True) + "\n")
            self._out.flush()
            return None
        return perform()

    # -- reads -----------------------------------------------------------------------------

    def authenticated_login(self) -> str:
        return self._call("GET", "/user")[1]["login"]

    def get_text(self, path: str, ref: str) -> str | None:
        """A file's text at `ref`, or None when it does not exist there."""
        data = self.get_bytes(path, ref)
        return None if data is None else data.decode("utf-8")

    def _kept(self, kind: str, path: str, ref: str, read: Callable[[], Any]) -> Any:
        """read(), or what an earlier delivery read at this same full commit SHA (commit_reads)."""
        if self.commit_reads is None or not self.commit_reads.cacheable(ref):
            return read()
        found, answer = self.commit_reads.get(self.repository, ref, kind, path)
        if not found:
            answer = read()
            self.commit_reads.put(self.repository, ref, kind, path, answer)
        return answer

    def get_bytes(self, path: str, ref: str) -> bytes | None:
        """A file's bytes at `ref`, or None when it does not exist there (a PR's file may not be UTF-8:
        whoever parses it says so, naming the file)."""
        return self._kept("file", path, ref, lambda: self._read_bytes(path, ref))

    def _read_bytes(self, path: str, ref: str) -> bytes | None:
        try:
            _, data = self._call("GET", f"contents/{urllib.parse.quote(path)}", params={"ref": ref})
        except GitHubError as exc:
            if exc.status == 404:
                return None
            raise
        if not isinstance(data, dict) or data.get("type") != "file":
            return None
        return base64.b64decode(data.get("content") or "")

    def list_dir(self, path: str, ref: str) -> list[tuple[str, str]]:
        """(path, type) of each entry of a folder at `ref`; [] when there is no such folder."""
        return self._kept("dir", path, ref, lambda: self._read_dir(path, ref))

    def _read_dir(self, path: str, ref: str) -> list[tuple[str, str]]:
        try:
            _, data = self._call("GET", f"contents/{urllib.parse.quote(path)}", params={"ref": ref})
        except GitHubError as exc:
            if exc.status == 404:
                return []
            raise
        return [(e["path"], e["type"]) for e in data] if isinstance(data, list) else []

    def branch_sha(self, branch: str) -> str:
        return self._call("GET", f"branches/{urllib.parse.quote(branch, safe='')}")[1]["commit"]["sha"]

    def list_pull_paths(self, number: int) -> list[str]:
        """Paths a pull request changes (GitHub lists at most 3000); a rename counts both names."""
        files = []
        for entry in self._pages(f"pulls/{number}/files", max_pages=30):
            files.append(entry["filename"])
            if entry.get("previous_filename"):
                files.append(entry["previous_filename"])
        return files

    def get_pull(self, number: int) -> Pull:
        return pull_from_json(self._call("GET", f"pulls/{number}")[1])

    def get_pull_and_text(self, number: int, path: str, ref: str) -> tuple[Pull, str | None]:
        """get_pull(number) and get_text(path, ref) in one GraphQL request (bot/core/github_graphql.py); what
        its answer lacks (or an answer with errors: a number that is no PR) is read through REST."""
        body = {"query": PULL_AND_FILE_QUERY, "variables": variables(self.repository, number, path, ref)}
        _, data = self._call("POST", self._graphql_url(), body=body, safe=True)
        answer = data if isinstance(data, dict) else {}
        repo = (answer.get("data") or {}).get("repository") or {}
        try:
            pull = pull_from_graphql(repo.get("pullRequest"))
        except Incomplete:
            pull = self.get_pull(number)
        # beside errors, a null object may be a field that failed, not a file that is not there: ask REST
        complete = "object" in repo and not answer.get("errors")
        known, text = file_from_graphql(repo["object"]) if complete else (False, None)
        return pull, text if known else self.get_text(path, ref)

    def get_pull_json(self, number: int) -> dict[str, Any]:
        return self._call("GET", f"pulls/{number}")[1]

    def permission(self, login: str) -> str:
        """The login's role on the repository (admin, maintain, write, triage, read, none)."""
        try:
            _, data = self._call("GET", f"collaborators/{urllib.parse.quote(login, safe='')}/permission")
        except GitHubError as exc:
            if exc.status == 404:  # not a collaborator
                return "none"
            raise
        role = data.get("role_name")
        standard = {"admin", "maintain", "write", "triage", "read"}
        return role if role in standard else data.get("permission") or "none"

    def is_team_member(self, team: str, login: str) -> bool:
        org, slug = team.split("/", 1)
        try:
            _, data = self._call("GET", f"/orgs/{org}/teams/{slug}/memberships/{urllib.parse.quote(login)}")
        except GitHubError as exc:
            if exc.status == 404:
                return False
            raise
        return data.get("state") == "active"

    def team_membership(self, team: str, login: str) -> str:
        """member | not-member | unreadable (the token may not read the team, or it does not exist)."""
        org, slug = (urllib.parse.quote(part, safe="") for part in team.split("/", 1))
        try:
            _, data = self._call("GET", f"/orgs/{org}/teams/{slug}/memberships/{urllib.parse.quote(login)}")
            return "member" if data.get("state") == "active" else "not-member"
        except GitHubError as exc:
            if exc.status not in (403, 404):
                raise
            if exc.status == 403:
                return "unreadable"
        try:  # 404 means "not a member" or "no such team for this token": ask about the team itself
            self._call("GET", f"/orgs/{org}/teams/{slug}/members", params={"per_page": 1})
        except GitHubError as exc:
            if exc.status in (403, 404):
                return "unreadable"
            raise
        return "not-member"

    def default_branch(self) -> str:
        return str(self._call("GET", self._repo_path)[1]["default_branch"])

    def list_pull_files(self, number: int) -> list[PullFile]:
        return [PullFile(f["filename"], f.get("status") or "", f.get("patch"))
                for f in self._pages(f"pulls/{number}/files", max_pages=30)]

    def list_reviews(self, number: int) -> list[Review]:
        """Every review; those with a body carry who edited it (REST has no updated_at for a review)."""
        return [review for page in self._page_lists(f"pulls/{number}/reviews")
                for review in self._with_edits([_review(r) for r in page], page)]

    def list_issue_comments(self, number: int, since: dt.datetime | None = None) -> list[Comment]:
        """Every comment, oldest first, an edited one with its editors; with `since`, those created or
        edited at that time or later."""
        params = {"since": since.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")} if since else None
        return [comment for page in self._page_lists(f"issues/{number}/comments", params)
                for comment in self._with_edits([_comment(c) for c in page], page)]

    def list_workflow_runs(self, workflow: str, *, event: str | None = "workflow_dispatch",
                           pages: int | None = None, since: dt.datetime | None = None) -> list[Run]:
        """The workflow's runs, newest first: every page, or those created at `since` or later."""
        return list(self.iter_workflow_runs(workflow, event=event, pages=pages, since=since))

    def iter_workflow_runs(self, workflow: str, *, event: str | None = "workflow_dispatch",
                           pages: int | None = None, since: dt.datetime | None = None) -> Iterator[Run]:
        """Lazily, page by page, newest first; stops at the first run older than `since`."""
        params = {"event": event} if event else {}
        for data in self._pages(f"actions/workflows/{urllib.parse.quote(workflow)}/runs",
                                params, key="workflow_runs", max_pages=pages):
            run = _run(data)
            if since is not None and run.created_at is not None and run.created_at < since:
                return
            yield run

    def get_run(self, run_id: int) -> Run:
        return _run(self._call("GET", f"actions/runs/{run_id}")[1])

    def list_run_jobs(self, run_id: int, *, pages: int | None = None) -> list[RunJob]:
        return [_job(j) for j in self._pages(f"actions/runs/{run_id}/jobs", key="jobs", max_pages=pages)]

    def list_repo_runs(self, status: str, *, pages: int = 1) -> list[Run]:
        """Every workflow's runs in the repository with this status (queued, in_progress, ...), newest first."""
        return [_run(d) for d in self._pages("actions/runs", {"status": status}, key="workflow_runs", max_pages=pages)]

    def list_run_artifacts(self, run_id: int) -> list[Artifact]:
        return [Artifact(a["id"], a["name"], a.get("size_in_bytes", 0), bool(a.get("expired")))
                for a in self._pages(f"actions/runs/{run_id}/artifacts", key="artifacts")]

    def download_artifact(self, artifact_id: int) -> bytes:
        """The artifact's zip archive (GitHub answers with a redirect to storage; it is followed)."""
        def send() -> bytes:
            _, _, chunks = self._requester.getStream(
                self._url(f"actions/artifacts/{artifact_id}/zip"), chunk_size=1 << 16)
            return b"".join(chunks)

        try:
            return self._attempts("GET", f"artifact {artifact_id}", safe=True, send=send)
        except GitHubError:
            raise
        except Exception as exc:  # requests' HTTPError from the storage redirect
            raise GitHubError(msg("GET artifact %(artifact)s: %(problem)s", artifact=artifact_id, problem=str(exc))) from None

    def compare_status(self, base: str, head: str) -> str:
        """GitHub's compare status of head against base: identical, behind (head is in base), ahead, diverged."""
        path = f"compare/{urllib.parse.quote(base, safe='')}...{urllib.parse.quote(head, safe='')}"
        return str(self._call("GET", path, params={"per_page": 1})[1].get("status", ""))

    def list_check_runs(self, ref: str, name: str | None = None) -> list[CheckRun]:
        params = {"check_name": name} if name else {}
        return [_check(c) for c in self._pages(f"commits/{ref}/check-runs", params, key="check_runs")]

    # -- writes ----------------------------------------------------------------------------

    def create_comment(self, number: int, body: str) -> int | None:
        data = self._write({"action": "comment", "op": "create", "pr": number, "body": body},
                           lambda: self._call("POST", f"issues/{number}/comments", body={"body": body})[1])
        if not isinstance(data, dict):
            return None
        self._wrote(data, body)
        return data["id"]

    def edit_comment(self, comment_id: int, body: str) -> None:
        data = self._write({"action": "comment", "op": "edit", "comment_id": comment_id, "body": body},
                           lambda: self._call("PATCH", f"issues/comments/{comment_id}", body={"body": body},
                                              safe=True)[1])
        if not self.dry_run:
            self._wrote(data if isinstance(data, dict) else {"id": comment_id}, body)

    def _wrote(self, data: dict[str, Any], body: str) -> None:
        """This client's text is the comment's now; the version GitHub's answer names is edited by no one else."""
        self._written[data["id"]] = body
        if data.get("node_id") and isinstance(data.get("body"), str):
            mine = _comment(data)
            self._edit_histories.put((data["node_id"], data.get("updated_at") or "", mine.body),
                                     (mine.edited, (mine.user,) if mine.edited else ()))

    def delete_comment(self, comment_id: int) -> None:
        def perform() -> None:
            try:
                self._call("DELETE", f"issues/comments/{comment_id}", safe=True)
            except GitHubError as exc:
                if exc.status != 404:  # already gone (a repeated DELETE whose first answer was lost)
                    raise
        self._write({"action": "comment", "op": "delete", "comment_id": comment_id}, perform)

    def react(self, comment_id: int, content: str) -> None:
        self._write({"action": "react", "comment_id": comment_id, "content": content},
                    lambda: self._call("POST", f"issues/comments/{comment_id}/reactions",
                                       body={"content": content}, safe=True))

    def add_labels(self, number: int, labels: list[str]) -> None:
        self._write({"action": "label", "op": "add", "pr": number, "labels": labels},
                    lambda: self._call("POST", f"issues/{number}/labels", body={"labels": labels}, safe=True))

    def remove_label(self, number: int, label: str) -> None:
        self._write({"action": "label", "op": "remove", "pr": number, "label": label},
                    lambda: self._call("DELETE", f"issues/{number}/labels/{urllib.parse.quote(label, safe='')}"))

    def create_status(self, sha: str, *, state: str, context: str, description: str = "",
                      target_url: str | None = None) -> None:
        body = {"state": state, "context": context, "description": description[:140]}
        if target_url:
            body["target_url"] = target_url
        self._write({"action": "status", "sha": sha, **body},
                    lambda: self._call("POST", f"statuses/{sha}", body=body))

    def create_check_run(self, *, name: str, head_sha: str, status: str = "completed",
                         conclusion: str | None = None, title: str = "", summary: str = "",
                         text: str | None = None, details_url: str | None = None,
                         external_id: str | None = None) -> int | None:
        body = _check_body(name=name, head_sha=head_sha, status=status, conclusion=conclusion,
                           title=title, summary=summary, text=text, details_url=details_url,
                           external_id=external_id)
        return self._write({"action": "check", "op": "create", **body},
                           lambda: self._call("POST", "check-runs", body=body)[1]["id"])

    def update_check_run(self, check_run_id: int, *, status: str | None = None,
                         conclusion: str | None = None, title: str = "", summary: str = "",
                         text: str | None = None, details_url: str | None = None,
                         external_id: str | None = None) -> None:
        body = _check_body(status=status, conclusion=conclusion, title=title, summary=summary,
                           text=text, details_url=details_url, external_id=external_id)
        self._write({"action": "check", "op": "update", "check_run_id": check_run_id, **body},
                    lambda: self._call("PATCH", f"check-runs/{check_run_id}", body=body))

    def dispatch_workflow(self, workflow: str, *, ref: str, inputs: dict[str, str]) -> DispatchedRun:
        body = {"ref": ref, "inputs": inputs, "return_run_details": True}
        result = self._write(
            {"action": "dispatch", "workflow": workflow, "ref": ref, "inputs": inputs},
            lambda: self._call("POST", f"actions/workflows/{urllib.parse.quote(workflow)}/dispatches",
                               body=body)[1])
        if isinstance(result, dict):  # 200 with run details; 204 (older servers) gives nothing
            return DispatchedRun(result.get("workflow_run_id"), result.get("html_url"))
        return DispatchedRun()

    def cancel_run(self, run_id: int) -> None:
        def perform() -> None:
            try:
                self._call("POST", f"actions/runs/{run_id}/cancel", safe=True)
            except GitHubError as exc:
                if exc.status != 409:  # completed meanwhile, or cancelled by a repeat whose answer was lost
                    raise
        self._write({"action": "cancel", "run_id": run_id}, perform)

    def rerun_failed_jobs(self, run_id: int) -> None:
        self._write({"action": "rerun", "run_id": run_id, "failed_only": True},
                    lambda: self._call("POST", f"actions/runs/{run_id}/rerun-failed-jobs"))
