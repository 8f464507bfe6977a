"""The markers the later stages keep in the bot's comments: estimates, budget waits, reuse, sign-offs, accepted regressions, reports, infra runners.

bot/core/markers.py holds the dispatch ledger's markers and the run titles; every other
`<!-- recipe-bot:... -->` line is built and parsed here, so each marker has one format in the code base.
Whether a marker counts (the bot wrote the comment and nobody edited it) is the reader's check:
markers.written_by / markers.header_markers.
"""
from __future__ import annotations

import dataclasses
import hashlib
import re
import urllib.parse
from collections.abc import Iterator

from bot.core.markers import MARKER_PREFIX


def marker_lines(body: str) -> Iterator[str]:
    """A comment's header lines that are the bot's markers: the first line that is not one ends them."""
    for line in body.replace("\r\n", "\n").split("\n"):
        line = line.strip()
        if not line.startswith(MARKER_PREFIX):
            return
        yield line


# -- estimate: a reply's record of its request's GPU-hours (the per-PR-per-day budget sums them) ------

ESTIMATE_MARKER = "<!-- recipe-bot:estimate comment={key} sha={sha} gpu_hours={hours} -->"
_ESTIMATE = re.compile(r"^<!-- recipe-bot:estimate comment=(\S+) sha=([0-9a-f]{40}) gpu_hours=([0-9.]+) -->$")


def estimate_marker(key: str, sha: str, gpu_hours: float) -> str:
    return ESTIMATE_MARKER.format(key=key, sha=sha, hours=f"{gpu_hours:.2f}")


def read_estimate_markers(body: str) -> list[tuple[str, str, float]]:
    """(key, sha, GPU-hours) of the estimate markers in a comment's header."""
    out = []
    for line in marker_lines(body):
        match = _ESTIMATE.match(line)
        if match:
            out.append((match.group(1), match.group(2), float(match.group(3))))
    return out


# -- budget-wait: a request above the GPU budget, waiting for `/approve-budget <sha>` ------------------

WAIT_MARKER = "<!-- recipe-bot:budget-wait comment={key} sha={sha} by={by} gpu_hours={hours} cmd={cmd}{label} -->"
_WAIT = re.compile(r"^<!-- recipe-bot:budget-wait comment=(\S+) sha=([0-9a-f]{40}) by=(\S+) gpu_hours=([0-9.]+) "
                   r"cmd=(\S+)(?: label=(\S+))? -->$")


@dataclasses.dataclass(frozen=True)
class Waiting:
    key: str
    sha: str
    requester: str
    gpu_hours: float
    command: str
    label: str | None


def wait_marker(w: Waiting) -> str:
    label = f" label={urllib.parse.quote(w.label, safe='')}" if w.label else ""
    return WAIT_MARKER.format(key=w.key, sha=w.sha, by=w.requester, hours=f"{w.gpu_hours:.2f}",
                              cmd=urllib.parse.quote(w.command, safe=""), label=label)


def parse_wait_marker(line: str) -> Waiting | None:
    match = _WAIT.match(line)
    if match is None:
        return None
    label = urllib.parse.unquote(match.group(6)) if match.group(6) else None
    return Waiting(match.group(1), match.group(2), match.group(3), float(match.group(4)),
                   urllib.parse.unquote(match.group(5)), label)


# -- reuse: a maintainer's `/reuse <run-id>`, pinned to the full head SHA --------------------------------

_REUSE = re.compile(r"^<!-- recipe-bot:reuse sha=([0-9a-f]{40}) run=(\d+) run_sha=([0-9a-f]{40}) by=(\S+) "
                    r"state=(applies|ended) -->$")


@dataclasses.dataclass(frozen=True)
class Reuse:
    """One reuse decision: run `run_id`, which measured `run_sha`, counts for head `sha` (or has ended)."""

    sha: str
    run_id: int
    run_sha: str
    by: str
    state: str = "applies"  # "applies" | "ended"


def reuse_marker(record: Reuse) -> str:
    return (f"<!-- recipe-bot:reuse sha={record.sha} run={record.run_id} run_sha={record.run_sha} "
            f"by={record.by} state={record.state} -->")


def parse_reuse_marker(line: str) -> Reuse | None:
    match = _REUSE.match(line)
    if match is None:
        return None
    return Reuse(match.group(1), int(match.group(2)), match.group(3), match.group(4), match.group(5))


# -- sign-off: the checklist verdict's first line, which sign-off text of which head it judged ----------

_SIGN_OFF = re.compile(r"^<!-- recipe-bot:sign-off sha=([0-9a-f]{40}) source=([a-z0-9-]+) digest=([0-9a-f]+) -->$")


@dataclasses.dataclass(frozen=True)
class SignOffMarker:
    sha: str
    source: str  # comment-<id> | review-<id> | none
    digest: str


def sign_off_marker(sha: str, source: str, digest: str) -> str:
    return f"<!-- recipe-bot:sign-off sha={sha} source={source} digest={digest} -->"


def parse_sign_off_marker(body: str) -> SignOffMarker | None:
    """Only a first line counts, so a quoted marker in someone's reply is text."""
    match = _SIGN_OFF.match((body or "").split("\n", 1)[0].strip())
    return SignOffMarker(*match.groups()) if match else None


# -- accept-regression: a maintainer's `/accept-regression`, for one recipe on one head commit ----------

_ACK = re.compile(r"^<!-- recipe-bot:accept-regression sha=([0-9a-f]{40}) recipe=(\S+) by=(\S+) "
                  r"reason=(\S*) -->$")


@dataclasses.dataclass(frozen=True)
class Ack:
    """A maintainer's `/accept-regression`: for one recipe on exactly one head commit."""

    sha: str
    recipe: str
    by: str
    reason: str


def ack_marker(ack: Ack) -> str:
    reason = urllib.parse.quote(ack.reason, safe="")
    return f"<!-- recipe-bot:accept-regression sha={ack.sha} recipe={ack.recipe} by={ack.by} reason={reason} -->"


def parse_ack_marker(line: str) -> Ack | None:
    match = _ACK.match(line)
    if match is None:
        return None
    return Ack(match.group(1), match.group(2), match.group(3), urllib.parse.unquote(match.group(4)))


# -- report: the sticky comment's first line, which head SHA it reports and which failures --------------

REPORT_PREFIX = "<!-- recipe-bot:report"
_REPORT_SHA = re.compile(r"^[0-9a-f]{7,64}$")
_REPORT = re.compile(r"^<!-- recipe-bot:report sha=(?P<sha>[0-9a-f]{7,64}|unknown) "
                     r"failures=(?P<failures>-|[0-9a-f]{10}(?:,[0-9a-f]{10})*) -->$")


@dataclasses.dataclass(frozen=True)
class ReportMarker:
    sha: str
    failures: frozenset[str]  # digests of failure keys


def failure_digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:10]


def report_marker(sha: str | None, failure_keys: list[str]) -> str:
    digests = ",".join(sorted({failure_digest(k) for k in failure_keys}))
    safe_sha = sha if sha and _REPORT_SHA.match(sha) else "unknown"
    return f"{REPORT_PREFIX} sha={safe_sha} failures={digests or '-'} -->"


def parse_report_marker(body: str) -> ReportMarker | None:
    """Only the first line counts: a marker quoted further down (a log tail, a reply) is text."""
    match = _REPORT.match(body.split("\n", 1)[0].rstrip("\r"))
    if match is None:
        return None
    failures = match["failures"]
    return ReportMarker(match["sha"], frozenset() if failures == "-" else frozenset(failures.split(",")))


def strip_report_marker(body: str) -> str:
    return body.split("\n", 1)[1] if parse_report_marker(body) is not None and "\n" in body else body


# -- infra-runners: a report comment's second line, infrastructure failures per runner host -------------

INFRA_RECORD_PREFIX = "<!-- recipe-bot:infra-runners"
_INFRA_RECORD = re.compile(r"^<!-- recipe-bot:infra-runners (?P<pairs>(?:[A-Za-z0-9._-]{1,80}=\d{1,6}"
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
