"""The sign-off's checks, each PASS, FAIL or N/A with a reason code: pure functions of the gathered evidence."""
from __future__ import annotations

import dataclasses
from typing import Any, Literal

from bot.checklist import diffscan
from bot.core.codeowners import CodeownersError, teams_in, users_in
from bot.checklist.signoff import SignOff
from bot.checklist.template import Templates
from bot.core.config import Checklist

Status = Literal["pass", "fail", "na"]
CHECKS = ("template", "boxes", "codeowner", "signed", "signer", "benchmarks", "engine", "images")
Membership = Literal["member", "not-member", "unreadable"]


@dataclasses.dataclass(frozen=True)
class Check:
    name: str
    status: Status
    reason: str  # a code the templates turn into a sentence in each language
    ctx: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Source:
    """Where the sign-off was written: an issue comment or a review."""

    key: str  # comment-<id> | review-<id>
    author: str
    author_is_bot: bool
    url: str = ""


@dataclasses.dataclass(frozen=True)
class Benchmark:
    """The latest `recipe-bot / benchmarks` check run on the head SHA."""

    status: str
    conclusion: str | None
    title: str = ""
    url: str = ""


@dataclasses.dataclass(frozen=True)
class Ownership:
    source: str | None  # the CODEOWNERS file read; None when the default branch has none
    error: CodeownersError | None = None
    files: tuple[tuple[str, tuple[str, ...], int | None], ...] = ()  # (path, owners, deciding line)
    teams: tuple[tuple[str, Membership], ...] = ()  # the signer's membership of each owning team


@dataclasses.dataclass(frozen=True)
class Evidence:
    pr: int
    head_sha: str
    author: str  # the PR's author
    source: Source
    signoff: SignOff
    body: str
    templates: Templates
    ownership: Ownership
    benchmark: Benchmark | None
    files: tuple[diffscan.FileChange, ...]
    settings: Checklist
    bot_logins: tuple[str, ...] = ()


def evaluate(ev: Evidence) -> list[Check]:
    return [template(ev), boxes(ev), codeowner(ev), signed(ev), signer(ev), benchmarks(ev), engine(ev), images(ev)]


def conclusion(checks: list[Check]) -> Literal["success", "failure"]:
    """N/A counts as a pass; any FAIL fails the sign-off."""
    return "failure" if any(c.status == "fail" for c in checks) else "success"


def template(ev: Evidence) -> Check:
    current, found = ev.templates.version, ev.signoff.version
    written = [item_id for item_id, _ in ev.signoff.items]
    ids = ev.templates.ids_for(ev.signoff.lang)
    missing = [item_id for item_id in ids if item_id not in written]
    extra = [item_id for item_id in written if item_id not in ids]
    ctx = {"current": current, "found": found, "missing": missing, "extra": extra}
    if found != current:
        return Check("template", "fail", "stale-version", ctx)
    if missing:
        return Check("template", "fail", "missing-items", ctx)
    return Check("template", "pass", "current", ctx)


def boxes(ev: Evidence) -> Check:
    ticked, reasons = ev.signoff.ticked, ev.signoff.reasons
    open_ids = [item_id for item_id in ev.templates.ids_for(ev.signoff.lang)
                if item_id in ticked and not ticked[item_id]]
    unexplained = [item_id for item_id in open_ids if item_id not in reasons]
    if unexplained:
        return Check("boxes", "fail", "unexplained", {"ids": unexplained})
    if open_ids:
        return Check("boxes", "pass", "explained", {"ids": open_ids})
    return Check("boxes", "pass", "all-ticked", {"count": len(ticked)})


def codeowner(ev: Evidence) -> Check:
    own = ev.ownership
    if own.error is not None:
        e = own.error
        return Check("codeowner", "fail", "codeowners-error",
                     {"source": e.source, "line": e.line, "text": e.text, "message": e.message})
    if own.source is None:
        return Check("codeowner", "fail", "no-codeowners", {})
    login = ev.source.author.lower()
    teams = dict(own.teams)
    not_owned: list[dict[str, Any]] = []
    unreadable: set[str] = set()
    owned = 0
    for path, owners, line in own.files:
        if not owners:
            continue
        owned += 1
        if login in users_in(owners) or any(teams.get(t) == "member" for t in teams_in(owners)):
            continue
        blocked = [t for t in teams_in(owners) if teams.get(t) == "unreadable"]
        unreadable.update(blocked)
        not_owned.append({"path": path, "owners": list(owners), "line": line})
    ctx = {"login": ev.source.author, "source": own.source, "files": not_owned[:10],
           "more": max(0, len(not_owned) - 10), "teams": sorted(unreadable), "owned": owned}
    if owned == 0:
        return Check("codeowner", "fail", "unowned", ctx)
    if not_owned and unreadable:
        return Check("codeowner", "fail", "team-unreadable", ctx)
    if not_owned:
        return Check("codeowner", "fail", "not-owner", ctx)
    return Check("codeowner", "pass", "owner", ctx)


def signed(ev: Evidence) -> Check:
    name, login = ev.signoff.signed, ev.source.author
    ctx = {"signed": name, "login": login}
    if name is None:
        return Check("signed", "fail", "missing", ctx)
    if name.lower() != login.lower():
        return Check("signed", "fail", "mismatch", ctx)
    return Check("signed", "pass", "matches", ctx)


def signer(ev: Evidence) -> Check:
    login = ev.source.author
    ctx = {"login": login, "author": ev.author}
    if ev.source.author_is_bot or login.lower().endswith("[bot]") or \
            login.lower() in (b.lower() for b in ev.bot_logins):
        return Check("signer", "fail", "bot", ctx)
    if login.lower() == ev.author.lower():
        if ev.settings.allow_author_signoff:
            return Check("signer", "pass", "author-allowed", ctx)
        return Check("signer", "fail", "author", ctx)
    return Check("signer", "pass", "independent", ctx)


def benchmarks(ev: Evidence) -> Check:
    run = ev.benchmark
    if run is None:
        return Check("benchmarks", "fail", "missing", {"sha": ev.head_sha})
    ctx = {"sha": ev.head_sha, "title": run.title, "url": run.url, "conclusion": run.conclusion}
    if run.status != "completed":
        return Check("benchmarks", "fail", "running", ctx)
    if run.conclusion == "success":
        return Check("benchmarks", "pass", "success", ctx)
    if run.conclusion in ("neutral", "skipped"):  # the report's verdict when jobs were skipped or nothing ran
        return Check("benchmarks", "fail", "not-executed", ctx)
    return Check("benchmarks", "fail", "failed", ctx)


def engine(ev: Evidence) -> Check:
    findings = diffscan.engine_patches(list(ev.files))
    unknown = diffscan.unscanned(list(ev.files))  # no patch to read: the scan cannot say "none"
    waiver = ev.settings.waiver.format(pr=ev.pr)
    ctx = {"findings": [dataclasses.asdict(f) for f in findings[:10]], "more": max(0, len(findings) - 10),
           "unknown": [{"path": path, "line": None} for path in unknown[:10]],
           "more_unknown": max(0, len(unknown) - 10), "waiver": waiver}
    if not findings and not unknown:
        return Check("engine", "pass", "none", ctx)
    if waiver in ev.body:
        return Check("engine", "na", "waived", ctx)
    return Check("engine", "fail", "patched" if findings else "unknown", ctx)


def images(ev: Evidence) -> Check:
    found = diffscan.images(list(ev.files))
    registries = list(ev.settings.allowed_registries)
    bad = [f for f in found if not diffscan.allowed(f.text, registries)]
    ctx = {"images": sorted({f.text for f in found}), "registries": registries,
           "bad": [dataclasses.asdict(f) for f in bad[:10]]}
    if not found:
        return Check("images", "na", "no-images", ctx)
    if bad:
        return Check("images", "fail", "disallowed", ctx)
    return Check("images", "pass", "allowed", ctx)
