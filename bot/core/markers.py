"""The bot's hidden markers (`<!-- recipe-bot:... -->` lines of its own comments) and its run titles.

Anyone with write access may edit any comment, the bot's own included: a marker counts only in a comment
the bot wrote and nobody else ever edited (`written_by`, over the edit history bot/core/github.py reads).
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import hashlib
import re
import urllib.parse
from collections.abc import Iterable, Iterator
from typing import Protocol, TypeVar

from bot.core.github_records import Comment, Run

SHA = "[0-9a-f]{40}"  # a full commit SHA as GitHub writes it: trust is tied to one, never to a prefix
_FULL_SHA = re.compile(SHA)
MARKER_PREFIX = "<!-- recipe-bot:"  # every marker line starts so; a comment holding one opens with it


# -- the marker kinds: one table that every marker is built from and parsed with ----------------------

VALUE = r"[^\s=]+"  # a ledger field's value: the ledger checks which fields a marker has, not their shape
ANY = r"\S+"


@dataclasses.dataclass(frozen=True)
class MarkerKind:
    """One kind of marker line, `<!-- recipe-bot:NAME f1=v1 f2=v2 [o1=v3] -->`: its fields in order, each with
    the pattern its value must match; the optional ones last, written only when they have a value."""

    name: str
    fields: tuple[tuple[str, str], ...]
    optional: tuple[tuple[str, str], ...] = ()
    # the dispatch reply writes it in its header: the ledger reads on past it (bot/core/stage_markers.py
    # reads the estimate and budget-wait lines themselves)
    in_reply_header: bool = False

    @property
    def prefix(self) -> str:
        return f"{MARKER_PREFIX}{self.name}"

    def build(self, **values: object) -> str:
        parts = [f"{key}={values[key]}" for key, _ in self.fields]
        parts += [f"{key}={values[key]}" for key, _ in self.optional if values.get(key) not in (None, "")]
        return f"{self.prefix} {' '.join(parts)} -->"

    @functools.cached_property
    def _pattern(self) -> re.Pattern[str]:
        required = " ".join(f"{key}=(?P<{key}>{value})" for key, value in self.fields)
        optional = "".join(f"(?: {key}=(?P<{key}>{value}))?" for key, value in self.optional)
        return re.compile(f"^{re.escape(self.prefix)} {required}{optional} -->$")

    def parse(self, line: str) -> dict[str, str] | None:
        """The fields of a line of exactly this kind's shape (optional ones only where written), else None."""
        match = self._pattern.match(line)
        return None if match is None else {k: v for k, v in match.groupdict().items() if v is not None}


KINDS = {kind.name: kind for kind in (
    # the dispatch ledger (read_ledger, below)
    MarkerKind("ack", (("comment", VALUE), ("sha", VALUE)), in_reply_header=True),
    MarkerKind("reply", (("comment", VALUE), ("digest", VALUE)), in_reply_header=True),
    MarkerKind("ok-to-test", (("sha", VALUE), ("by", VALUE)), in_reply_header=True),
    # `/approve-runners <sha>`: the runner labels a head adds to configs/runners.yaml, approved by their owner
    MarkerKind("runners-approved", (("sha", VALUE), ("by", VALUE), ("labels", VALUE)), in_reply_header=True),
    # `/approve-planner <sha> --max-gpu-hours N`: a head's own InferenceX planner, approved by the code owners of
    # the planner files it changes, with the GPU-hours its rows may use
    MarkerKind("planner-approved", (("sha", VALUE), ("by", VALUE), ("max_gpu_hours", VALUE), ("files", VALUE)),
               in_reply_header=True),
    MarkerKind("claim", (("comment", VALUE), ("sha", VALUE), ("nonce", VALUE)),
               (("run", VALUE), ("by", VALUE), ("gpu_hours", VALUE)), in_reply_header=True),
    # the later stages' markers (bot/core/stage_markers.py)
    MarkerKind("estimate", (("comment", ANY), ("sha", SHA), ("gpu_hours", r"[0-9.]+")), in_reply_header=True),
    MarkerKind("budget-wait", (("comment", ANY), ("sha", SHA), ("by", ANY), ("gpu_hours", r"[0-9.]+"),
                               ("cmd", ANY)), (("label", ANY),), in_reply_header=True),
    MarkerKind("reuse", (("sha", SHA), ("run", r"\d+"), ("run_sha", SHA), ("by", ANY),
                         ("state", "applies|ended"))),
    MarkerKind("sign-off", (("sha", SHA), ("source", "[a-z0-9-]+"), ("digest", "[0-9a-f]+"))),
    MarkerKind("accept-regression", (("sha", SHA), ("recipe", ANY), ("by", ANY), ("reason", r"\S*"))),
    MarkerKind("report", (("sha", "[0-9a-f]{7,64}|unknown"), ("failures", "-|[0-9a-f]{10}(?:,[0-9a-f]{10})*"))),
    # its one field is a list of host=count pairs, not one value: stage_markers reads it with its own pattern
    MarkerKind("infra-runners", ()),
)}


def opens_with_marker(body: str) -> bool:
    """Whether a text opens with one of the bot's markers: its edit history decides whether they count."""
    return body.lstrip().startswith(MARKER_PREFIX)


def is_full_sha(text: object) -> bool:
    """Whether `text` is exactly one full lower-case commit SHA: no prefix, no upper case, no newline after."""
    return isinstance(text, str) and _FULL_SHA.fullmatch(text) is not None


def written_by(comment: object, login: str) -> bool:
    """Whether `login` wrote the comment (or review) and made every edit in its history.

    The one test of who wrote a text: the bot's markers count only where `login` is the bot, a sign-off
    only where it is the signer. An edit whose editor is unknown ("", or an edited record without its
    history) counts as someone else's.
    """
    who = login.lower()
    if str(getattr(comment, "user", "")).lower() != who:
        return False
    editors = tuple(getattr(comment, "editors", ()) or ())
    if getattr(comment, "edited", False) and not editors:
        return False
    return all(str(editor).lower() == who for editor in editors)


class _PostedByApp(Protocol):
    app: str | None  # the GitHub App that created the check run (None: not recorded)


_AppRun = TypeVar("_AppRun", bound=_PostedByApp)


def own_check_runs(runs: Iterable[_AppRun], bot_login: str) -> list[_AppRun]:
    """Check runs the bot's own App created: `<slug>[bot]` posts as the App `<slug>`.

    Any workflow's token can create a check run with the same name; one by another App is never the
    bot's to complete (and branch protection should require the check from the bot's App only).
    """
    slug = bot_login.removesuffix("[bot]")
    return [run for run in runs if run.app is None or run.app == slug]


def foreign_edits(comments: Iterable[object], bot_login: str) -> list[str]:
    """Log lines for the bot's comments that someone else edited (their markers are ignored)."""
    lines = []
    for comment in comments:
        if str(getattr(comment, "user", "")).lower() == bot_login.lower() and not written_by(comment, bot_login):
            others = sorted({e or "an unknown account" for e in getattr(comment, "editors", ())
                             if e.lower() != bot_login.lower()}) or ["an unknown account"]
            lines.append(f"comment {getattr(comment, 'id', '?')} of the bot was edited by {', '.join(others)}: "
                         "its markers are ignored")
    return lines


def header_markers(comments: Iterable[object], bot_login: str) -> Iterator[str]:
    """Each marker line of the bot's own comments, oldest comment first. Only the bot's identity
    counts: a marker typed by anyone else is never seen, nor one in a bot comment someone else edited.
    Markers sit in a comment's header, so the first line that is not one ends the comment's markers."""
    for comment in comments:
        if not written_by(comment, bot_login):
            continue
        for line in getattr(comment, "body", "").replace("\r\n", "\n").split("\n"):
            line = line.strip()
            if not line.startswith("<!--"):
                break
            yield line


@dataclasses.dataclass(frozen=True)
class Approval:
    """A `/ok-to-test` the bot accepted: for exactly one head commit, by one trusted login."""

    sha: str
    by: str


@dataclasses.dataclass(frozen=True)
class RunnerApproval:
    """An `/approve-runners` the bot accepted: the runner labels one head commit adds, by their code owner."""

    sha: str
    by: str
    labels: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class PlannerApproval:
    """An `/approve-planner` the bot accepted: one head commit's own InferenceX planner, by the code owners
    of the planner files it changes, with the GPU-hours its rows may use."""

    sha: str
    by: str
    max_gpu_hours: float
    files: tuple[str, ...]


def approved_planner(approvals: Iterable[PlannerApproval], head_sha: str) -> PlannerApproval | None:
    """The newest approval of exactly `head_sha`'s planner (a push leaves the older approvals behind)."""
    return next((a for a in reversed(list(approvals)) if a.sha == head_sha), None)


def approved_runner_labels(approvals: Iterable[RunnerApproval], head_sha: str) -> tuple[str, ...]:
    """The labels approved for exactly `head_sha` (a push leaves the older approvals behind)."""
    return tuple(sorted({label for a in approvals if a.sha == head_sha for label in a.labels}))


# -- run titles: which GPU runs are the bot's, for which PR, commit and request --------------------

# The GPU workflow's `run-name:` renders exactly this, so runs can be matched to a PR, a commit and
# the request key that asked for them (the REST API does not return a run's inputs): the key is how
# a dispatch that may or may not have happened is found again, and the GPU-hours it was estimated at
# are what the per-PR budget counts (a deleted reply cannot reset it). tests/test_workflows.py pins the two.
RUN_TITLE = "recipe-bot pr-{pr} {sha} by {requester} [{key} gpu_hours={gpu_hours}]: {command}"
# Titles without the key or the estimate (runs dispatched before they were added) still parse.
_RUN_TITLE = re.compile(r"^recipe-bot pr-(\d+) ([0-9a-f]{40}) by (\S+?)"
                        r"(?: \[([^\]\s]*)(?: gpu_hours=([0-9.]*))?\])?: (/.*)$")

# Markers sit on the first lines of the bot's own comments, before any text a user could have
# influenced, and count only in comments the bot's login wrote. A dispatch reply's header is read line by
# line as fields of any of the kinds it may hold; read_ledger then asks each kind's own fields of it.
_REPLY_HEADER = re.compile(rf"^{re.escape(MARKER_PREFIX)}("
                           + "|".join(re.escape(k.name) for k in KINDS.values() if k.in_reply_header)
                           + r") ((?:[a-z_]+=[^\s=]+ ?)+)-->$")
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


# -- the ledger: what the bot's own comments say it already did -----------------------------------

def request_key(raw: str) -> str:
    """A marker-safe idempotency key: a comment id, review-<id>, label-<name>, push-<sha>."""
    key = urllib.parse.quote(raw, safe="-._:")
    return key if _KEY.match(key) else "h-" + hashlib.sha256(raw.encode()).hexdigest()[:24]


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def ack_marker(key: str, sha: str) -> str:
    return KINDS["ack"].build(comment=key, sha=sha)


def reply_marker(key: str, body_digest: str) -> str:
    return KINDS["reply"].build(comment=key, digest=body_digest)


def approval_marker(sha: str, by: str) -> str:
    return KINDS["ok-to-test"].build(sha=sha, by=by)


def runners_marker(sha: str, by: str, labels: Iterable[str]) -> str:
    return KINDS["runners-approved"].build(sha=sha, by=by, labels=",".join(labels))


def planner_marker(sha: str, by: str, max_gpu_hours: float, files: Iterable[str]) -> str:
    return KINDS["planner-approved"].build(sha=sha, by=by, max_gpu_hours=f"{max_gpu_hours:g}", files=",".join(files))


def claim_marker(key: str, sha: str, nonce: str, holder: str = "", *, by: str = "",
                 gpu_hours: float | None = None) -> str:
    """Written before a dispatch: the request's lock, and its record if the handler dies after it.
    `holder`: the Actions run (`<run id>.<attempt>`) of the handler that wrote it, when there is one.
    `by`, `gpu_hours`: the requester and the estimate, which later requests count against the limits
    while this one is undecided."""
    return KINDS["claim"].build(comment=key, sha=sha, nonce=nonce, run=holder, by=by,
                                gpu_hours=None if gpu_hours is None else f"{gpu_hours:.2f}")


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
    runner_approvals: list[RunnerApproval] = dataclasses.field(default_factory=list)  # oldest first
    planner_approvals: list[PlannerApproval] = dataclasses.field(default_factory=list)  # oldest first
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
        for kind, fields in _ledger_markers(comment.body):
            if not {key for key, _ in KINDS[kind].fields} <= set(fields):
                continue  # a marker without its kind's fields records nothing
            if kind == "ack":
                ledger.acks.setdefault(fields["comment"], set()).add(fields["sha"])
            elif kind == "reply":
                ledger.replies.add((fields["comment"], fields["digest"]))
            elif kind == "ok-to-test":
                ledger.approvals.append(Approval(fields["sha"], fields["by"]))
            elif kind == "runners-approved" and is_full_sha(fields["sha"]):
                ledger.runner_approvals.append(RunnerApproval(fields["sha"], fields["by"],
                                                              tuple(fields["labels"].split(","))))
            elif kind == "planner-approved" and is_full_sha(fields["sha"]) and _positive(fields["max_gpu_hours"]):
                ledger.planner_approvals.append(PlannerApproval(fields["sha"], fields["by"],
                                                                float(fields["max_gpu_hours"]),
                                                                tuple(fields["files"].split(","))))
            elif kind == "claim":
                ledger.claims.setdefault(fields["comment"], []).append(
                    Claim(comment.id, fields["comment"], fields["sha"], fields["nonce"], comment.created_at,
                          fields.get("run", ""), fields.get("by", ""), _hours(fields.get("gpu_hours"))))
    for claims in ledger.claims.values():
        claims.sort(key=lambda c: c.comment_id)
    return ledger


def _positive(text: str) -> bool:
    hours = _hours(text)
    return hours is not None and 0 < hours < float("inf")


def _hours(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def _ledger_markers(body: str) -> Iterable[tuple[str, dict[str, str]]]:
    for line in body.replace("\r\n", "\n").split("\n"):
        match = _REPLY_HEADER.match(line.strip())
        if not match:
            return  # the header ends at the first line that is not a marker
        fields = dict(pair.split("=", 1) for pair in match.group(2).split())
        yield match.group(1), fields


def last_run_by(runs: Iterable[Run], requester: str, *, exclude_key: str | None = None,
                exclude_sha: str | None = None) -> dt.datetime | None:
    """When `requester` last started a GPU run (any PR), for the cooldown; a run of the request being
    resumed (`exclude_key`, at `exclude_sha` for a key that runs once per head) does not count against it."""
    times = [r.created_at for r in runs
             if r.created_at is not None and (t := parse_run_title(r.display_title)) and t.requester == requester
             and not (exclude_key and t.key == exclude_key and exclude_sha in (None, t.sha))]
    return max(times, default=None)
