"""Who may do what on which pull request: pure decisions from live permissions, config and approvals."""
from __future__ import annotations

import dataclasses
import datetime as dt
import enum

from bot.core import commands
from bot.core.events import Pull
from bot.core.markers import Approval, is_full_sha


class Permission(enum.IntEnum):
    NONE = 0
    READ = 1
    TRIAGE = 2
    WRITE = 3
    MAINTAIN = 4
    ADMIN = 5

    @classmethod
    def parse(cls, name: str | None) -> Permission:
        """GitHub's role names (and legacy `permission` values); an unknown custom role counts as read."""
        if not name:
            return cls.NONE
        return cls.__members__.get(name.upper(), cls.READ)

    def __str__(self) -> str:
        return self.name.lower()


@dataclasses.dataclass(frozen=True)
class Actor:
    """Whoever caused the event, with what the API says about them right now."""

    login: str
    permission: Permission
    listed: bool = False  # in the config's trusted users, or a member of a trusted team

    def has(self, needed: Permission) -> bool:
        return self.permission >= needed or (self.listed and needed <= Permission.WRITE)

    @property
    def trusted(self) -> bool:
        return self.has(Permission.WRITE)


@dataclasses.dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str  # allowed: trusted | permitted | author | approved-author | anyone; refused: a code
    detail: dict[str, object] = dataclasses.field(default_factory=dict)

    @classmethod
    def allow(cls, reason: str, **detail: object) -> Decision:
        return cls(True, reason, detail)

    @classmethod
    def refuse(cls, reason: str, **detail: object) -> Decision:
        return cls(False, reason, detail)


# Refusal codes; each has a bilingual template control/refused-<code> that says why and what would
# work. The first row comes from decide(); the rest from the moment of acting.
REFUSALS = ("closed", "draft", "permission", "needs-approval", "approval-stale", "cooldown", "sha-mismatch",
            "head-moved", "not-a-pull", "no-run", "run-active", "no-previous", "one-gpu-command",
            "config-invalid", "sha-not-full", "edited-by-other", "approval-limit", "budget")


def needs_approval(pull: Pull, author_trusted: bool) -> bool:
    """Fork PRs and PRs by authors without write permission run only on an approved head commit."""
    return pull.fork or not author_trusted


def decide(
    command: str,
    *,
    actor: Actor,
    pull: Pull,
    author_trusted: bool,
    approvals: list[Approval],
    min_permission: Permission,
    cooldown_s: int = 0,
    last_run_at: dt.datetime | None = None,
    now: dt.datetime | None = None,
    failed_only: bool = False,
) -> Decision:
    """May `actor` use `command` on `pull` now? Refusals carry what the reply needs to explain."""
    spec = commands.REGISTRY[command]
    if min_permission == Permission.NONE and not spec.starts_gpu_work:
        return Decision.allow("anyone")
    is_author = actor.login == pull.author
    if pull.closed and command != "cancel":
        return Decision.refuse("closed")
    if spec.starts_gpu_work and pull.draft:
        return Decision.refuse("draft")
    if command == "ok-to-test":
        if not actor.has(min_permission):
            return _permission_refusal(actor, min_permission, author_path=False)
        return Decision.allow("trusted")

    author_path = is_author and spec.author_may_use and (command != "rerun" or failed_only)
    if not spec.starts_gpu_work:  # /cancel
        if actor.has(min_permission):
            return Decision.allow("trusted")
        if author_path:
            return Decision.allow("author")
        return _permission_refusal(actor, min_permission, author_path=spec.author_may_use)

    # GPU work. Rerunning the failed jobs of a run reuses that run's head commit, which was
    # authorized when the run started; anything else runs code at the current head.
    gated = needs_approval(pull, author_trusted) and not failed_only
    approved = any(a.sha == pull.head_sha for a in approvals)
    if gated and not approved:
        stale = [a.sha for a in approvals if a.sha != pull.head_sha]
        if stale:
            return Decision.refuse("approval-stale", approved_sha=stale[-1], head_sha=pull.head_sha)
        return Decision.refuse("needs-approval", head_sha=pull.head_sha, fork=pull.fork)
    if actor.has(min_permission):
        # Write collaborators (and the trusted list) have no cooldown; anyone the config lets in
        # below that (say `sweep: triage`) does.
        if actor.trusted:
            return Decision.allow("trusted")
        role = "permitted"
    elif author_path:
        role = "author"
    elif is_author and approved:
        role = "approved-author"
    else:
        return _permission_refusal(actor, min_permission, author_path=spec.author_may_use)
    if cooldown_s and last_run_at is not None and now is not None:
        wait = cooldown_s - (now - last_run_at).total_seconds()
        if wait > 0:
            return Decision.refuse("cooldown", wait_s=int(wait) + 1, cooldown_s=cooldown_s)
    return Decision.allow(role)


def _permission_refusal(actor: Actor, needed: Permission, *, author_path: bool) -> Decision:
    return Decision.refuse("permission", needed=str(needed), have=str(actor.permission),
                           author_path=author_path)


def check_ok_to_test(sha: str, pull: Pull) -> Decision:
    """An approval names the exact current head commit by its full SHA; nothing else approves.

    A prefix is refused even when it matches: a commit sharing the first 7 (or 12) hex characters
    with the reviewed one is minutes of grinding away, and it could be force-pushed in between.
    """
    if not is_full_sha(sha):
        return Decision.refuse("sha-not-full", prefix=sha, head_sha=pull.head_sha)
    if sha == pull.head_sha:
        return Decision.allow("trusted", sha=pull.head_sha)
    return Decision.refuse("sha-mismatch", prefix=sha, head_sha=pull.head_sha)


def cooldown_exempt(decision: Decision) -> bool:
    return decision.reason in ("trusted", "anyone")
