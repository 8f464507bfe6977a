"""The markers the later stages keep in the bot's comments: estimates, budget waits, reuse, sign-offs, accepted regressions, reports, infra runners.

bot/core/markers.py holds the dispatch ledger's markers, the run titles and the table of every marker kind
(markers.KINDS: name, fields, the pattern of each value); every other marker line is built and parsed here
from that table, so each marker has one format in the code base.
Whether a marker counts (the bot wrote the comment and nobody edited it) is the reader's check:
markers.written_by / markers.header_markers.
"""
from __future__ import annotations

import dataclasses
import hashlib
import re
import urllib.parse
from collections.abc import Iterator

from bot.core.markers import KINDS, MARKER_PREFIX


def marker_lines(body: str) -> Iterator[str]:
    """A comment's header lines that are the bot's markers: the first line that is not one ends them."""
    for line in body.replace("\r\n", "\n").split("\n"):
        line = line.strip()
        if not line.startswith(MARKER_PREFIX):
            return
        yield line


# -- estimate: a reply's record of its request's GPU-hours (the per-PR-per-day budget sums them) ------

_ESTIMATE, _WAIT, _REUSE, _SIGN_OFF, _ACK, _REPORT = (KINDS[name] for name in (
    "estimate", "budget-wait", "reuse", "sign-off", "accept-regression", "report"))


def estimate_marker(key: str, sha: str, gpu_hours: float) -> str:
    return _ESTIMATE.build(comment=key, sha=sha, gpu_hours=f"{gpu_hours:.2f}")


def read_estimate_markers(body: str) -> list[tuple[str, str, float]]:
    """(key, sha, GPU-hours) of the estimate markers in a comment's header."""
    out = []
    for line in marker_lines(body):
        fields = _ESTIMATE.parse(line)
        if fields:
            out.append((fields["comment"], fields["sha"], float(fields["gpu_hours"])))
    return out


# -- budget-wait: a request above the GPU budget, waiting for `/approve-budget <sha>` ------------------

@dataclasses.dataclass(frozen=True)
class Waiting:
    key: str
    sha: str
    requester: str
    gpu_hours: float
    command: str
    label: str | None


def wait_marker(w: Waiting) -> str:
    return _WAIT.build(comment=w.key, sha=w.sha, by=w.requester, gpu_hours=f"{w.gpu_hours:.2f}",
                       cmd=urllib.parse.quote(w.command, safe=""),
                       label=urllib.parse.quote(w.label, safe="") if w.label else None)


def parse_wait_marker(line: str) -> Waiting | None:
    fields = _WAIT.parse(line)
    if fields is None:
        return None
    label = urllib.parse.unquote(fields["label"]) if fields.get("label") else None
    return Waiting(fields["comment"], fields["sha"], fields["by"], float(fields["gpu_hours"]),
                   urllib.parse.unquote(fields["cmd"]), label)


# -- reuse: a maintainer's `/reuse <run-id>`, pinned to the full head SHA --------------------------------

@dataclasses.dataclass(frozen=True)
class Reuse:
    """One reuse decision: run `run_id`, which measured `run_sha`, counts for head `sha` (or has ended)."""

    sha: str
    run_id: int
    run_sha: str
    by: str
    state: str = "applies"  # "applies" | "ended"


def reuse_marker(record: Reuse) -> str:
    return _REUSE.build(sha=record.sha, run=record.run_id, run_sha=record.run_sha, by=record.by,
                        state=record.state)


def parse_reuse_marker(line: str) -> Reuse | None:
    fields = _REUSE.parse(line)
    if fields is None:
        return None
    return Reuse(fields["sha"], int(fields["run"]), fields["run_sha"], fields["by"], fields["state"])


# -- sign-off: the checklist verdict's first line, which sign-off text of which head it judged ----------

@dataclasses.dataclass(frozen=True)
class SignOffMarker:
    sha: str
    source: str  # comment-<id> | review-<id> | none
    digest: str


def sign_off_marker(sha: str, source: str, digest: str) -> str:
    return _SIGN_OFF.build(sha=sha, source=source, digest=digest)


def parse_sign_off_marker(body: str) -> SignOffMarker | None:
    """Only a first line counts, so a quoted marker in someone's reply is text."""
    fields = _SIGN_OFF.parse((body or "").split("\n", 1)[0].strip())
    return SignOffMarker(fields["sha"], fields["source"], fields["digest"]) if fields else None


# -- accept-regression: a maintainer's `/accept-regression`, for one recipe on one head commit ----------

@dataclasses.dataclass(frozen=True)
class Ack:
    """A maintainer's `/accept-regression`: for one recipe on exactly one head commit."""

    sha: str
    recipe: str
    by: str
    reason: str


def ack_marker(ack: Ack) -> str:
    return _ACK.build(sha=ack.sha, recipe=ack.recipe, by=ack.by, reason=urllib.parse.quote(ack.reason, safe=""))


def parse_ack_marker(line: str) -> Ack | None:
    fields = _ACK.parse(line)
    if fields is None:
        return None
    return Ack(fields["sha"], fields["recipe"], fields["by"], urllib.parse.unquote(fields["reason"]))


# -- report: the sticky comment's first line, which head SHA it reports and which failures --------------

REPORT_PREFIX = _REPORT.prefix
_REPORT_SHA = re.compile(r"^[0-9a-f]{7,64}$")


@dataclasses.dataclass(frozen=True)
class ReportMarker:
    sha: str
    failures: frozenset[str]  # digests of failure keys


def failure_digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:10]


def report_marker(sha: str | None, failure_keys: list[str]) -> str:
    digests = ",".join(sorted({failure_digest(k) for k in failure_keys}))
    safe_sha = sha if sha and _REPORT_SHA.match(sha) else "unknown"
    return _REPORT.build(sha=safe_sha, failures=digests or "-")


def parse_report_marker(body: str) -> ReportMarker | None:
    """Only the first line counts: a marker quoted further down (a log tail, a reply) is text."""
    fields = _REPORT.parse(body.split("\n", 1)[0].rstrip("\r"))
    if fields is None:
        return None
    failures = fields["failures"]
    return ReportMarker(fields["sha"], frozenset() if failures == "-" else frozenset(failures.split(",")))


def strip_report_marker(body: str) -> str:
    return body.split("\n", 1)[1] if parse_report_marker(body) is not None and "\n" in body else body


# -- infra-runners: a report comment's second line, infrastructure failures per runner host -------------

INFRA_RECORD_PREFIX = KINDS["infra-runners"].prefix
_INFRA_RECORD = re.compile("^" + re.escape(INFRA_RECORD_PREFIX) + r" (?P<pairs>(?:[A-Za-z0-9._-]{1,80}=\d{1,6}"
                           r"(?:,|(?= -->)))+) -->$")


def infra_record_line(record: dict[str, int]) -> str | None:
    """The hidden second line of a report comment: infrastructure failures per runner host."""
    if not record:
        return None
    return f"{INFRA_RECORD_PREFIX} {','.join(f'{h}={n}' for h, n in sorted(record.items()))} -->"


def parse_infra_record(body: str) -> dict[str, int]:
    """The record of one report comment: its second line only, under a report marker (any later
    line may be quoted log text). Hosts are [A-Za-z0-9._-]; anything else is no record."""
    lines = body.split("\n", 2)
    if len(lines) < 2 or not lines[0].startswith(REPORT_PREFIX + " "):
        return {}
    match = _INFRA_RECORD.match(lines[1].rstrip("\r"))
    if match is None:
        return {}
    pairs = (pair.split("=") for pair in match["pairs"].split(","))
    return {host: int(count) for host, count in pairs}
