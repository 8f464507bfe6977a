"""GPU runs: SHA-pinned workflow_dispatch, the bot's own markers (idempotency), cancel and rerun."""
from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import re
import urllib.parse
from collections.abc import Iterable

from bot.core.github import Comment, DispatchedRun, GitHubClient, Run
from bot.control.trust import Approval
from bot.core.markers import written_by

# The GPU workflow's `run-name:` renders exactly this, so runs can be matched to a PR, a commit and
# the request key that asked for them (the REST API does not return a run's inputs): the key is how
# a dispatch that may or may not have happened is found again, and the GPU-hours it was estimated at
# are what the per-PR budget counts (a deleted reply cannot reset it). tests/test_workflows.py pins the two.
RUN_TITLE = "recipe-bot pr-{pr} {sha} by {requester} [{key} gpu_hours={gpu_hours}]: {command}"
# Titles without the key or the estimate (runs dispatched before they were added) still parse.
_RUN_TITLE = re.compile(r"^recipe-bot pr-(\d+) ([0-9a-f]{40}) by (\S+?)"
                        r"(?: \[([^\]\s]*)(?: gpu_hours=([0-9.]*))?\])?: (/.*)$")

# Markers sit on the first lines of the bot's own comments, before any text a user could have
# influenced, and count only in comments the bot's login wrote.
_MARKER = re.compile(r"^<!-- recipe-bot:(ack|reply|ok-to-test|claim|estimate|budget-wait) ((?:[a-z_]+=[^\s=]+ ?)+)-->$")
_KEY = re.compile(r"^[A-Za-z0-9._%:-]{1,200}$")


@dataclasses.dataclass(frozen=True)
class RunTitle:
    pr: int
    sha: str
    requester: str
    command: str
    key: str = ""
    gpu_hours: float | None = None  # the estimate the run was started with (None: not recorded)


@dataclasses.dataclass(frozen=True)
class PrRun:
    run: Run
    title: RunTitle


def run_title(pr: int, sha: str, requester: str, command: str, key: str = "", gpu_hours: str = "") -> str:
    return RUN_TITLE.format(pr=pr, sha=sha, requester=requester, command=command, key=key, gpu_hours=gpu_hours)


def parse_run_title(title: str) -> RunTitle | None:
    match = _RUN_TITLE.match(title or "")
    if not match:
        return None
    hours = match.group(5)
    return RunTitle(int(match.group(1)), match.group(2), match.group(3), match.group(6), match.group(4) or "",
                    float(hours) if hours and hours.count(".") <= 1 and hours != "." else None)


def pr_runs(runs: Iterable[Run], pr: int) -> list[PrRun]:
    """This PR's runs among a workflow's runs, newest first."""
    out = []
    for run in runs:
        title = parse_run_title(run.display_title)
        if title is not None and title.pr == pr:
            out.append(PrRun(run, title))
    return sorted(out, key=lambda r: (r.run.created_at is not None, r.run.created_at, r.run.id), reverse=True)


def workflow_path(workflow: str) -> str:
    """The repository path of a workflow named by its file (`gpu.yml`) or by its path."""
    return workflow if "/" in workflow else f".github/workflows/{workflow}"


def started_by_bot(run: Run, *, bot_login: str, default_branch: str, workflow: str) -> bool:
    """Whether the bot itself started `run`: the only runs whose results or title any decision may trust.

    Any writer can dispatch the GPU workflow (from their own branch, with any inputs, so any title):
    the bot's runs are workflow_dispatch events by the bot's login, of the GPU workflow's file on the
    default branch, titled with the request key the bot dispatched them for."""
    title = parse_run_title(run.display_title)
    return (title is not None and bool(title.key) and run.event == "workflow_dispatch"
            and run.actor.lower() == bot_login.lower() and run.head_branch == default_branch
            and run.path.split("@", 1)[0] == workflow_path(workflow))


def bot_runs(runs: Iterable[Run], *, bot_login: str, default_branch: str, workflow: str) -> list[Run]:
    """The runs among `runs` that the bot started (started_by_bot), in their order."""
    return [run for run in runs
            if started_by_bot(run, bot_login=bot_login, default_branch=default_branch, workflow=workflow)]


def latest_for_head(runs: list[PrRun], head_sha: str) -> PrRun | None:
    return next((r for r in runs if r.title.sha == head_sha), None)


# -- markers and the ledger ----------------------------------------------------------------------

def request_key(raw: str) -> str:
    """A marker-safe idempotency key: a comment id, review-<id>, label-<name>, push-<sha>."""
    key = urllib.parse.quote(raw, safe="-._:")
    return key if _KEY.match(key) else "h-" + hashlib.sha256(raw.encode()).hexdigest()[:24]


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def ack_marker(key: str, sha: str) -> str:
    return f"<!-- recipe-bot:ack comment={key} sha={sha} -->"


def reply_marker(key: str, body_digest: str) -> str:
    return f"<!-- recipe-bot:reply comment={key} digest={body_digest} -->"


def approval_marker(sha: str, by: str) -> str:
    return f"<!-- recipe-bot:ok-to-test sha={sha} by={by} -->"


def claim_marker(key: str, sha: str, nonce: str, holder: str = "", *, by: str = "",
                 gpu_hours: float | None = None) -> str:
    """Written before a dispatch: the request's lock, and its record if the handler dies after it.
    `holder`: the Actions run (`<run id>.<attempt>`) of the handler that wrote it, when there is one.
    `by`, `gpu_hours`: the requester and the estimate, which later requests count against the limits
    while this one is undecided."""
    run = f" run={holder}" if holder else ""
    run += f" by={by}" if by else ""
    run += f" gpu_hours={gpu_hours:.2f}" if gpu_hours is not None else ""
    return f"<!-- recipe-bot:claim comment={key} sha={sha} nonce={nonce}{run} -->"


@dataclasses.dataclass(frozen=True)
class Claim:
    comment_id: int
    key: str
    sha: str
    nonce: str
    created_at: dt.datetime | None
    holder: str = ""  # `<run id>.<attempt>` of the handler's Actions run; "" outside Actions
    requester: str = ""  # who asked ("" in claims written before it was recorded)
    gpu_hours: float | None = None  # the request's estimate (None: not known when it was claimed)


@dataclasses.dataclass
class Ledger:
    """What the bot's own earlier comments on a PR say it already did."""

    acks: dict[str, set[str]] = dataclasses.field(default_factory=dict)  # key → dispatched SHAs
    replies: set[tuple[str, str]] = dataclasses.field(default_factory=set)  # (key, digest)
    approvals: list[Approval] = dataclasses.field(default_factory=list)  # oldest first
    claims: dict[str, list[Claim]] = dataclasses.field(default_factory=dict)  # key → claims, oldest first

    def acked(self, key: str, sha: str | None = None) -> bool:
        shas = self.acks.get(key, set())
        return bool(shas) if sha is None else sha in shas

    def replied(self, key: str, body_digest: str) -> bool:
        return (key, body_digest) in self.replies

    def claim(self, key: str, sha: str | None = None) -> Claim | None:
        """The first claim of `key` (at `sha`): the one handler that may dispatch for it."""
        return next((c for c in self.claims.get(key, []) if sha is None or c.sha == sha), None)


def read_ledger(comments: Iterable[Comment], bot_login: str) -> Ledger:
    ledger = Ledger()
    for comment in comments:
        if not written_by(comment, bot_login):
            continue  # anyone can type a marker or edit the bot's comment; only the bot's own, unedited, count
        for kind, fields in _header_markers(comment.body):
            if kind == "ack" and "comment" in fields and "sha" in fields:
                ledger.acks.setdefault(fields["comment"], set()).add(fields["sha"])
            elif kind == "reply" and "comment" in fields and "digest" in fields:
                ledger.replies.add((fields["comment"], fields["digest"]))
            elif kind == "ok-to-test" and "sha" in fields and "by" in fields:
                ledger.approvals.append(Approval(fields["sha"], fields["by"]))
            elif kind == "claim" and {"comment", "sha", "nonce"} <= set(fields):
                ledger.claims.setdefault(fields["comment"], []).append(
                    Claim(comment.id, fields["comment"], fields["sha"], fields["nonce"], comment.created_at,
                          fields.get("run", ""), fields.get("by", ""), _hours(fields.get("gpu_hours"))))
    for claims in ledger.claims.values():
        claims.sort(key=lambda c: c.comment_id)
    return ledger


def _hours(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def _header_markers(body: str) -> Iterable[tuple[str, dict[str, str]]]:
    for line in body.replace("\r\n", "\n").split("\n"):
        match = _MARKER.match(line.strip())
        if not match:
            return  # the header ends at the first line that is not a marker
        fields = dict(pair.split("=", 1) for pair in match.group(2).split())
        yield match.group(1), fields


# -- dispatch, cancel, rerun ---------------------------------------------------------------------

class HeadMoved(Exception):
    def __init__(self, authorized_sha: str, head_sha: str, state: str = "open"):
        super().__init__(f"head moved from {authorized_sha} to {head_sha}")
        self.authorized_sha, self.head_sha, self.state = authorized_sha, head_sha, state
        self.claim_id: int | None = None  # set when a claim comment was written for the request


def dispatch_inputs(*, pr: int, sha: str, command: str, requester: str, key: str,
                    gpu_hours: float | None = None) -> dict[str, str]:
    """The GPU workflow's inputs (all strings, as workflow_dispatch takes them)."""
    return {"pr": str(pr), "sha": sha, "command": command, "requester": requester, "comment_id": key,
            "gpu_hours": "" if gpu_hours is None else f"{gpu_hours:.2f}"}


def dispatch(client: GitHubClient, *, workflow: str, default_branch: str, pr: int, authorized_sha: str,
             command: str, requester: str, key: str, gpu_hours: float | None = None) -> DispatchedRun:
    """Re-read the PR head right before dispatching; refuse if it moved since authorization.

    The workflow runs from the default branch (never the PR's, so a PR cannot change what runs
    with the bot's privileges) and receives the head SHA to check out and plan from.
    """
    pull = client.get_pull(pr)
    if pull.head_sha != authorized_sha or pull.closed:
        raise HeadMoved(authorized_sha, pull.head_sha, pull.state)
    inputs = dispatch_inputs(pr=pr, sha=authorized_sha, command=command, requester=requester, key=key,
                             gpu_hours=gpu_hours)
    return client.dispatch_workflow(workflow, ref=default_branch, inputs=inputs)


def cancel_active(client: GitHubClient, workflow: str, pr: int, *, keep_sha: str | None = None,
                  runs: list[PrRun] | None = None) -> list[PrRun]:
    """Cancel the PR's queued and running runs (all, or all but those for `keep_sha`)."""
    runs = pr_runs(client.list_workflow_runs(workflow), pr) if runs is None else runs
    doomed = [r for r in runs if r.run.active and r.title.sha != keep_sha]
    for r in doomed:
        client.cancel_run(r.run.id)
    return doomed


def last_run_by(runs: Iterable[Run], requester: str, *, exclude_key: str | None = None,
                exclude_sha: str | None = None) -> dt.datetime | None:
    """When `requester` last started a GPU run (any PR), for the cooldown; a run of the request being
    resumed (`exclude_key`, at `exclude_sha` for a key that runs once per head) does not count against it."""
    times = [r.created_at for r in runs
             if r.created_at is not None and (t := parse_run_title(r.display_title)) and t.requester == requester
             and not (exclude_key and t.key == exclude_key and exclude_sha in (None, t.sha))]
    return max(times, default=None)
