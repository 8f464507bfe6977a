"""The hidden first line of the sticky comment: which head SHA it reports and which failures."""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

PREFIX = "<!-- recipe-bot:report"
_SHA = re.compile(r"^[0-9a-f]{7,64}$")
_LINE = re.compile(r"^<!-- recipe-bot:report sha=(?P<sha>[0-9a-f]{7,64}|unknown) "
                   r"failures=(?P<failures>-|[0-9a-f]{10}(?:,[0-9a-f]{10})*) -->$")


@dataclass(frozen=True)
class Marker:
    sha: str
    failures: frozenset[str]  # digests of failure keys


def digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()[:10]


def build(sha: str | None, failure_keys: list[str]) -> str:
    digests = ",".join(sorted({digest(k) for k in failure_keys}))
    safe_sha = sha if sha and _SHA.match(sha) else "unknown"
    return f"{PREFIX} sha={safe_sha} failures={digests or '-'} -->"


def parse(body: str) -> Marker | None:
    """Only the first line counts: a marker quoted further down (a log tail, a reply) is text."""
    match = _LINE.match(body.split("\n", 1)[0].rstrip("\r"))
    if match is None:
        return None
    failures = match["failures"]
    return Marker(match["sha"], frozenset() if failures == "-" else frozenset(failures.split(",")))


def strip(body: str) -> str:
    return body.split("\n", 1)[1] if parse(body) is not None and "\n" in body else body
