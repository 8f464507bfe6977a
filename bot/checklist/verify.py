"""`recipe-bot checklist verify`: gather a PR's evidence through the GitHub client, judge, and post per head SHA.

One comment per head SHA (first line: the sign-off marker, author: the bot's own login) is edited in
place on every verification; the `recipe-bot / sign-off` check run on the head SHA says waiting,
success or failure. A sign-off counts for the head it was judged on: the marker records which source
(and which text of it) a SHA's verdict used, so after a push the same text is stale, and so is an
edit of a comment written before the push (an edit does not sign the new head): a new comment is a
new sign-off. A review counts for the commit it was submitted on. Only a text its author wrote and
nobody else edited is a sign-off (GitHub lets any writer edit any comment, under its author's name).
"""
from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any, Protocol

from bot.checklist import render, rules
from bot.core import codeowners
from bot.checklist.diffscan import FileChange
from bot.checklist.render import CHECK_NAME, Verdict
from bot.checklist.signoff import Found, find
from bot.checklist.template import Templates, TemplateError, load_templates
from bot.core.config import Checklist, RepoConfig
from bot.core.github_protocols import ChecksClient, CommentsClient, PeopleClient, RepositoryClient
from bot.core.markers import own_check_runs, written_by
from bot.core.messages import msg
from bot.core.stage_markers import parse_sign_off_marker

BENCHMARKS = "recipe-bot / benchmarks"
PUSHED_AT = "pushed-at:"  # the sign-off check's external_id: when its head SHA was pushed
_EPOCH = dt.datetime.min.replace(tzinfo=dt.timezone.utc)


class SignoffClient(RepositoryClient, CommentsClient, ChecksClient, PeopleClient, Protocol):
    """What verifying a sign-off reads and writes: the PR, its comments and reviews, CODEOWNERS, its checks."""


@dataclasses.dataclass
class Result:
    state: str  # success | failure | waiting | skipped
    sha: str = ""
    comment: str = "none"  # created | edited | unchanged | none
    check: str = "unchanged"  # created | updated | unchanged
    log: list[str] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class Candidate:
    source: rules.Source
    body: str
    found: Found
    when: dt.datetime
    order: int
    fresh: bool
    sha: str | None  # the commit it was for, when known to be another one
    problem: str | None = None  # why it does not count: "edited-by-other" | "edited-after-push"
    editors: tuple[str, ...] = ()  # who else edited it (for "edited-by-other")


def read_templates(client: SignoffClient, settings: Checklist, branch: str) -> Templates:
    texts: dict[str, tuple[str, str]] = {}
    for lang, path in (("en", settings.template), ("zh", settings.template_zh)):
        if path is None:
            continue
        text = client.get_text(path, ref=branch)
        if text is None:
            raise TemplateError(f"{path}@{branch}", None, msg("the checklist template does not exist on the default branch"))
        texts[lang] = (f"{path}@{branch}", text)
    return load_templates(texts, settings.version)


def verify(client: SignoffClient, *, pr: int, config: RepoConfig, default_branch: str, bot_login: str,
           sha: str | None = None, trigger: str | None = None, pushed_at: str | None = None) -> Result:
    settings = config.checklist
    if settings is None:
        return Result("skipped", sha or "", log=["sign-off: no `checklist:` section in the config"])
    pull = client.get_pull(pr)
    if pull.closed:
        return Result("skipped", pull.head_sha, log=[f"sign-off: PR #{pr} is closed"])
    head = pull.head_sha
    if sha is not None and sha != head:
        return Result("skipped", sha, log=[f"sign-off: {sha} is no longer the head of PR #{pr} ({head} is)"])
    comments = client.list_issue_comments(pr)
    runs = _own_checks(client, head, CHECK_NAME, bot_login)
    anchor = _pushed_at(runs, pushed_at)
    own = {m.sha: (c, m) for c in sorted(comments, key=lambda c: c.id)
           if written_by(c, bot_login) and (m := parse_sign_off_marker(c.body))}
    try:
        templates = read_templates(client, settings, default_branch)
    except TemplateError as exc:
        note = {"code": "template-error", "source": exc.source, "line": exc.line, "message": exc.message}
        return _publish(client, pr, Verdict("failure", head, notes=(note,)), "none", "0", own, runs, anchor)
    template_url = settings.template
    candidates = _candidates(client, pr, head, comments, bot_login, templates, own, anchor)
    chosen = next((c for c in reversed(candidates) if c.fresh and (c.found.signoff or c.found.problem == "two")), None)
    notes = _notes(candidates, chosen, head, trigger)
    if chosen is None:
        verdict = Verdict("waiting", head, notes=tuple(notes), template=template_url)
        return _publish(client, pr, verdict, "none", "0", own, runs, anchor)
    digest = render.digest(chosen.body)
    if chosen.found.signoff is None:  # two sign-offs in one comment: say which lines, judge nothing
        two = {"code": "two", "lines": list(chosen.found.lines), "where": chosen.source.key}
        verdict = Verdict("failure", head, chosen.source, notes=(two, *notes), template=template_url)
        return _publish(client, pr, verdict, chosen.source.key, digest, own, runs, anchor)
    files = _files(client, pr)
    evidence = rules.Evidence(
        pr=pr, head_sha=head, author=pull.author, source=chosen.source, signoff=chosen.found.signoff,
        body=chosen.body, templates=templates,
        ownership=_ownership(client, files, default_branch, chosen.source.author),
        benchmark=_benchmark(client, head, bot_login), files=tuple(files), settings=settings,
        bot_logins=(bot_login,))
    checks = rules.evaluate(evidence)
    verdict = Verdict(rules.conclusion(checks), head, chosen.source, chosen.found.signoff.lang, tuple(checks),
                      tuple(notes), template_url)
    return _publish(client, pr, verdict, chosen.source.key, digest, own, runs, anchor)


def _pushed_at(checks: list, pushed_at: str | None) -> dt.datetime | None:
    """When the head SHA was pushed, as GitHub's synchronize event said (kept in the check's external_id)."""
    stamps = [r.external_id.removeprefix(PUSHED_AT) for r in checks if r.external_id.startswith(PUSHED_AT)]
    for stamp in sorted(stamps) + ([pushed_at] if pushed_at else []):
        try:
            when = dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
        except ValueError:
            continue
        return when if when.tzinfo else when.replace(tzinfo=dt.timezone.utc)
    return None


def _candidates(client: SignoffClient, pr: int, head: str, comments: list, bot_login: str,
                templates: Templates, own: dict, anchor: dt.datetime | None) -> list[Candidate]:
    bound: dict[tuple[str, str], str] = {(m.source, m.digest): sha for sha, (_, m) in own.items()}
    out: list[Candidate] = []
    for c in comments:
        if c.user.lower() == bot_login.lower() or parse_sign_off_marker(c.body):
            continue
        found = find(c.body, templates)
        if found is None:
            continue
        key = f"comment-{c.id}"
        judged = bound.get((key, render.digest(c.body)))
        source = rules.Source(key, c.user, c.user_type == "Bot", c.html_url)
        # Written for an earlier head, never judged; its author's later edit does not move it to this head.
        before_push = anchor is not None and (c.created_at or _EPOCH) < anchor
        # REST's times are whole seconds: an edit within the push's own second reads as before it (the
        # sign-off is stale for the new head either way; only the reason shown differs).
        edited_since = before_push and c.edited and (c.updated_at or _EPOCH) > anchor
        problem = _foreign(c) or ("edited-after-push" if edited_since else None)
        out.append(Candidate(source, c.body, found, c.created_at or _EPOCH, c.id,
                             judged in (None, head) and not before_push and problem is None,
                             judged if judged not in (None, head) else None, problem, _others(c)))
    for r in client.list_reviews(pr):
        found = find(r.body, templates)
        if found is None:
            continue
        source = rules.Source(f"review-{r.id}", r.user, r.user_type == "Bot", r.html_url)
        problem = _foreign(r)
        out.append(Candidate(source, r.body, found, r.submitted_at or _EPOCH, r.id,
                             r.commit_id == head and problem is None,
                             None if r.commit_id == head else r.commit_id, problem, _others(r)))
    return sorted(out, key=lambda c: (c.when, c.order))


def _foreign(item: Any) -> str | None:
    """"edited-by-other" when anyone but its author (or an account GitHub cannot name) edited the text."""
    return None if written_by(item, item.user) else "edited-by-other"


def _others(item: Any) -> tuple[str, ...]:
    return tuple(sorted({e or "ghost" for e in item.editors if e.lower() != item.user.lower()}))


def _notes(candidates: list[Candidate], chosen: Candidate | None, head: str, trigger: str | None) -> list[dict[str, Any]]:
    notes: list[dict[str, Any]] = []
    later = candidates[candidates.index(chosen) + 1:] if chosen else candidates
    # Only the comment that was just written gets the note: an old quote is not news on a later push.
    quoted = [c for c in later if c.fresh and c.found.problem == "quoted" and c.source.key == trigger]
    if quoted:
        q = quoted[-1]
        notes.append({"code": "quoted", "lines": list(q.found.lines), "where": q.source.key})
    if chosen is None:
        stale = [c for c in candidates if not c.fresh and c.found.signoff]
        if stale:
            s = stale[-1]
            notes.append({"code": s.problem or "stale", "author": s.source.author, "where": s.source.key,
                          "sha": s.sha or "", "head": head, "editors": list(s.editors)})
    return notes


def _ownership(client: SignoffClient, changed: list[FileChange], branch: str, signer: str) -> rules.Ownership:
    for location in codeowners.LOCATIONS:
        text = client.get_text(location, ref=branch)
        if text is not None:
            break
    else:
        return rules.Ownership(None)
    source = f"{location}@{branch}"
    try:
        parsed = codeowners.parse_codeowners(text, source)
    except codeowners.CodeownersError as exc:
        return rules.Ownership(source, exc)
    files = tuple((f.filename, *parsed.of(f.filename)) for f in changed)
    needed = sorted({team for _, owners, _ in files if signer.lower() not in codeowners.users_in(owners)
                     for team in codeowners.teams_in(owners)})
    teams = tuple((team, client.team_membership(team, signer)) for team in needed)
    return rules.Ownership(source, None, files, teams)  # type: ignore[arg-type]


def _own_checks(client: SignoffClient, head: str, name: str, bot_login: str) -> list:
    """The check runs called `name` on head that the bot's own App posted: another App's check of the
    same name (any workflow's token can post one) says nothing about the bot's gate or sign-off."""

    return [r for r in own_check_runs(client.list_check_runs(head, name), bot_login) if r.name == name]


def _benchmark(client: SignoffClient, head: str, bot_login: str) -> rules.Benchmark | None:
    runs = _own_checks(client, head, BENCHMARKS, bot_login)
    if not runs:
        return None
    run = max(runs, key=lambda r: r.id)
    return rules.Benchmark(run.status, run.conclusion, run.title, run.details_url or run.html_url)


def _files(client: SignoffClient, pr: int) -> list[FileChange]:
    return [FileChange(f.filename, f.status, f.patch) for f in client.list_pull_files(pr)]


def _publish(client: SignoffClient, pr: int, verdict: Verdict, source: str, digest: str, own: dict,
             runs: list, anchor: dt.datetime | None) -> Result:
    result = Result(verdict.state, verdict.sha)
    body = render.comment(verdict, source, digest)
    existing = own.get(verdict.sha)
    if existing is not None:
        if existing[0].body.strip() != body.strip():
            client.edit_comment(existing[0].id, body)
            result.comment = "edited"
        else:
            result.comment = "unchanged"
    elif verdict.state != "waiting" or verdict.notes and any(n["code"] != "stale" for n in verdict.notes):
        client.create_comment(pr, body)
        result.comment = "created"
    result.check = _check(client, verdict, result.comment in ("created", "edited"), runs, anchor)
    result.log.append(f"sign-off for PR #{pr} at {verdict.sha}: {verdict.state} "
                      f"(comment {result.comment}, check {result.check})")
    return result


def _check(client: SignoffClient, verdict: Verdict, changed: bool, runs: list, anchor: dt.datetime | None) -> str:
    status = "in_progress" if verdict.state == "waiting" else "completed"
    conclusion = None if verdict.state == "waiting" else verdict.state
    title, summary = render.title(verdict), render.summary(verdict)
    latest = max(runs, key=lambda r: r.id) if runs else None
    tag = PUSHED_AT + anchor.strftime("%Y-%m-%dT%H:%M:%SZ") if anchor else None
    if not changed and latest is not None and latest.external_id == (tag or latest.external_id) \
            and latest.status == status and latest.conclusion == conclusion and latest.title == title:
        return "unchanged"
    if latest is None or (latest.status == "completed" and status != "completed"):
        client.create_check_run(name=CHECK_NAME, head_sha=verdict.sha, status=status, conclusion=conclusion,
                                title=title, summary=summary, external_id=tag)
        return "created"
    client.update_check_run(latest.id, status=status, conclusion=conclusion, title=title, summary=summary,
                            external_id=tag)
    return "updated"
