"""Trust decisions as a table: live permission, allow-list, author rights, SHA-pinned approval, state."""
import datetime as dt
import re

import pytest

from bot.core.events import Pull
from bot.core import i18n
from bot.control.trust import REFUSALS, Actor, Permission, check_ok_to_test, decide
from bot.core.markers import Approval

HEAD = "a" * 40
OLD = "b" * 40
NOW = dt.datetime(2026, 1, 1, 12, 0, tzinfo=dt.timezone.utc)


def pull(**overrides):
    base = dict(number=7, state="open", draft=False, merged=False, author="bob", head_sha=HEAD,
                head_repo="acme/bench", base_repo="acme/bench", base_ref="main", base_sha="c" * 40)
    base.update(overrides)
    return Pull(**base)


def actor(login, permission, listed=False):
    return Actor(login, Permission.parse(permission), listed)


FORK = dict(head_repo="mallory/bench")
CASES = [
    # id, command, actor, pull overrides, author trusted, approvals, extra, expected reason
    ("maintainer-sweeps", "sweep", actor("alice", "admin"), {}, True, [], {}, "trusted"),
    ("write-sweeps", "sweep", actor("carol", "write"), {}, True, [], {}, "trusted"),
    ("maintain-role-sweeps", "sweep", actor("carol", "maintain"), {}, True, [], {}, "trusted"),
    ("listed-user-sweeps", "sweep", actor("dave", "read", listed=True), {}, True, [], {}, "trusted"),
    ("read-user-refused", "sweep", actor("bob", "read"), {}, True, [], {}, "permission"),
    ("triage-refused", "sweep", actor("tina", "triage"), {}, True, [], {}, "permission"),
    ("no-permission-refused", "sweep", actor("mallory", "none"), {}, True, [], {}, "permission"),
    ("draft-refused", "sweep", actor("alice", "admin"), {"draft": True}, True, [], {}, "draft"),
    ("closed-refused", "sweep", actor("alice", "admin"), {"state": "closed"}, True, [], {}, "closed"),
    ("fork-needs-approval", "sweep", actor("alice", "admin"), FORK, True, [], {}, "needs-approval"),
    ("fork-approved-maintainer", "sweep", actor("alice", "admin"), FORK, True,
     [Approval(HEAD, "alice")], {}, "trusted"),
    ("fork-approval-for-old-sha", "sweep", actor("alice", "admin"), FORK, True,
     [Approval(OLD, "alice")], {}, "approval-stale"),
    ("untrusted-author-needs-approval", "sweep", actor("alice", "admin"), {}, False, [], {}, "needs-approval"),
    ("approved-author-runs-own-pr", "sweep", actor("bob", "read"), {}, False,
     [Approval(HEAD, "alice")], {}, "approved-author"),
    ("approved-pr-stranger-refused", "sweep", actor("eve", "read"), {}, False,
     [Approval(HEAD, "alice")], {}, "permission"),
    ("author-rerun-failed-own-pr", "rerun", actor("bob", "read"), {}, False, [], {"failed_only": True}, "author"),
    ("author-rerun-failed-fork", "rerun", actor("bob", "none"), FORK, False, [], {"failed_only": True}, "author"),
    ("author-full-rerun-needs-approval", "rerun", actor("bob", "read"), {}, False, [], {}, "needs-approval"),
    ("stranger-rerun-failed-refused", "rerun", actor("eve", "read"), {}, True, [], {"failed_only": True},
     "permission"),
    ("author-cancels-own-pr", "cancel", actor("bob", "read"), {}, False, [], {}, "author"),
    ("stranger-cancel-refused", "cancel", actor("eve", "read"), {}, True, [], {}, "permission"),
    ("cancel-on-closed-pr", "cancel", actor("alice", "admin"), {"state": "closed"}, True, [], {}, "trusted"),
    ("status-anyone", "status", actor("eve", "none"), {"state": "closed"}, True, [], {}, "anyone"),
    ("help-anyone", "help", actor("eve", "none"), {"draft": True}, True, [], {}, "anyone"),
    ("ok-to-test-by-maintainer", "ok-to-test", actor("alice", "write"), FORK, False, [], {}, "trusted"),
    ("ok-to-test-by-author-refused", "ok-to-test", actor("bob", "read"), {}, False, [], {}, "permission"),
    ("ok-to-test-on-closed-pr", "ok-to-test", actor("alice", "admin"), {"state": "closed"}, True, [], {},
     "closed"),
    ("cooldown-applies-to-author", "sweep", actor("bob", "read"), {}, False, [Approval(HEAD, "alice")],
     {"cooldown_s": 600, "last_run_at": NOW - dt.timedelta(seconds=60), "now": NOW}, "cooldown"),
    ("cooldown-over", "sweep", actor("bob", "read"), {}, False, [Approval(HEAD, "alice")],
     {"cooldown_s": 600, "last_run_at": NOW - dt.timedelta(seconds=601), "now": NOW}, "approved-author"),
    ("write-user-exempt-from-cooldown", "sweep", actor("carol", "write"), {}, True, [],
     {"cooldown_s": 600, "last_run_at": NOW, "now": NOW}, "trusted"),
]


@pytest.mark.parametrize("command, who, overrides, author_trusted, approvals, extra, expected",
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_decision_table(command, who, overrides, author_trusted, approvals, extra, expected):
    from bot.core import commands
    needed = Permission.parse(commands.REGISTRY[command].min_permission)
    decision = decide(command, actor=who, pull=pull(**overrides), author_trusted=author_trusted,
                      approvals=approvals, min_permission=needed, **extra)
    assert decision.reason == expected
    assert decision.allowed == (expected in ("trusted", "permitted", "author", "approved-author", "anyone"))


def test_config_can_lower_the_bar_for_a_command_but_not_lift_the_cooldown():
    args = dict(actor=actor("tina", "triage"), pull=pull(), author_trusted=True, approvals=[],
                min_permission=Permission.TRIAGE, cooldown_s=600, now=NOW)
    assert decide("sweep", **args).reason == "permitted"
    assert decide("sweep", **args, last_run_at=NOW).reason == "cooldown"


def test_allow_list_does_not_reach_admin_only_commands():
    decision = decide("sweep", actor=actor("dave", "read", listed=True), pull=pull(), author_trusted=True,
                      approvals=[], min_permission=Permission.ADMIN)
    assert decision.reason == "permission"


def test_refusals_carry_what_the_reply_needs():
    decision = decide("sweep", actor=actor("bob", "read"), pull=pull(), author_trusted=True, approvals=[],
                      min_permission=Permission.WRITE)
    assert decision.detail == {"needed": "write", "have": "read", "author_path": False}
    stale = decide("sweep", actor=actor("alice", "admin"), pull=pull(**FORK), author_trusted=True,
                   approvals=[Approval(OLD, "alice")], min_permission=Permission.WRITE)
    assert stale.detail == {"approved_sha": OLD, "head_sha": HEAD}


GROUND = "a" * 39 + "f"  # a commit ground to share the reviewed head's first 39 characters


@pytest.mark.parametrize("given, reason", [
    (HEAD, "trusted"),
    # The attack: a prefix of the reviewed head, then a force-push of a commit sharing that prefix.
    (HEAD[:7], "sha-not-full"), (HEAD[:12], "sha-not-full"), (HEAD[:39], "sha-not-full"),
    (GROUND, "sha-mismatch"), (OLD, "sha-mismatch"), (OLD[:7], "sha-not-full"),
    (HEAD + "\n", "sha-not-full"), (HEAD.upper(), "sha-not-full"), (HEAD + "0", "sha-not-full"),
], ids=["full-sha", "prefix-7", "prefix-12", "prefix-39", "ground-collision", "old-commit", "old-prefix",
        "newline-after", "upper-case", "41-characters"])
def test_ok_to_test_approves_only_the_full_sha_of_the_current_head(given, reason):
    decision = check_ok_to_test(given, pull())
    assert decision.reason == reason
    assert decision.allowed is (reason == "trusted")
    if not decision.allowed:
        assert decision.detail["head_sha"] == HEAD  # the refusal shows the full SHA to copy


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("given", [HEAD[:7], HEAD[:12], HEAD[:39]], ids=["7", "12", "39"])
def test_the_short_sha_refusal_shows_the_full_sha_to_copy(lang, given):
    decision = check_ok_to_test(given, pull())
    text = i18n.render("control/refused-sha-not-full", lang, **decision.detail)
    assert f"/ok-to-test {HEAD}`" in text


@pytest.mark.parametrize("name, expected", [
    ("admin", Permission.ADMIN), ("maintain", Permission.MAINTAIN), ("write", Permission.WRITE),
    ("triage", Permission.TRIAGE), ("read", Permission.READ), ("none", Permission.NONE),
    (None, Permission.NONE), ("custom-role", Permission.READ),
], ids=["admin", "maintain", "write", "triage", "read", "none", "missing", "custom"])
def test_permission_names(name, expected):
    assert Permission.parse(name) is expected


@pytest.mark.parametrize("code", REFUSALS)
def test_every_refusal_has_a_reply_in_both_languages(code):
    # One template for both languages: its words are catalogue messages (tests/test_catalogue.py
    # fails on one without a translation), so a reply with none would be English in the Chinese half.
    template = i18n.TEMPLATES / "control" / f"refused-{code}.md.j2"
    assert template.is_file()
    source = template.read_text(encoding="utf-8")
    assert re.search(r"\{%[+-]?\s*(trans|pluralize)\b|\b_\(|\|msg\b", source)


@pytest.mark.parametrize("text, full", [
    ("0123456789abcdef0123456789abcdef01234567", True),
    ("0123456789abcdef0123456789abcdef0123456", False),
    ("0123456789abcdef0123456789abcdef012345678", False),
    ("0123456789abcdef0123456789abcdef01234567\n", False),
    ("0123456789ABCDEF0123456789abcdef01234567", False),
    ("0123456789abcdef0123456789abcdef0123456g", False),
    (" 0123456789abcdef0123456789abcdef01234567", False),
    (None, False),
], ids=["full", "39", "41", "newline-after", "upper-case", "not-hex", "space-before", "none"])
def test_a_full_sha_is_exactly_40_lower_case_hex(text, full):
    from bot.core.markers import is_full_sha

    assert is_full_sha(text) is full
