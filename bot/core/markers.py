"""The bot's hidden markers: the `<!-- recipe-bot:... -->` lines at the head of comments only the bot wrote.

Anyone with write access may edit any comment, the bot's own included: a marker counts only in a comment
the bot wrote and nobody else ever edited (`written_by`, over the edit history bot/core/github.py reads).
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

SHA = "[0-9a-f]{40}"  # a full commit SHA as GitHub writes it: trust is tied to one, never to a prefix
_FULL_SHA = re.compile(SHA)
MARKER_PREFIX = "<!-- recipe-bot:"  # every marker line starts so; a comment holding one opens with it


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
