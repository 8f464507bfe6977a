"""A GitHub failure during a handle becomes one clear line in the log and, if GitHub lets us, a reply."""
from __future__ import annotations

from typing import TYPE_CHECKING

from bot.core import i18n
from bot.core.events import CommentEvent, PullRequestEvent
from bot.core.config import CONFIG_PATH as CONFIG_FILE
from bot.core.github import BotLoginMismatch, GitHubError

if TYPE_CHECKING:  # the handler imports this module; its annotation only
    from bot.control.handler import Handler


def wait_text(seconds: float | None) -> str:
    if not seconds:
        return ""
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.0f} min"


def what(event: CommentEvent | PullRequestEvent) -> str:
    if isinstance(event, CommentEvent):
        first = event.body.strip().splitlines()[0] if event.body.strip() else "comment"
        return first[:80]
    return f"pull_request {event.action}" + (f" {event.label}" if event.label else "")


def report(h: Handler, event: CommentEvent | PullRequestEvent, exc: GitHubError) -> None:
    """Sets the outcome's failure line (English, then 简体中文) and tries once to tell the PR."""
    context = {"throttled": exc.throttled, "wait": wait_text(exc.throttled_s), "what": what(event),
               "error": exc.message, "mismatch": isinstance(exc, BotLoginMismatch),
               "posted_as": getattr(exc, "posted_as", ""), "bot_login": getattr(exc, "bot_login", ""),
               "config_file": CONFIG_FILE}
    en, zh = (i18n.render("control/github-failed", lang, **context).splitlines()[0] for lang in ("en", "zh"))
    h.outcome.fail(f"{en} / {zh}".replace("\n", " "))
    number = event.number if isinstance(event, CommentEvent) else event.pull.number
    try:
        h.client.create_comment(number, i18n.render_bilingual("control/github-failed", **context) + "\n")
    except GitHubError as second:
        h.log(f"could not post the failure on #{number} either: {second}")
