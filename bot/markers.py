"""The bot's hidden markers: the `<!-- recipe-bot:... -->` lines at the head of comments only the bot wrote."""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

SHA = "[0-9a-f]{40}"  # a full commit SHA as GitHub writes it: trust is tied to one, never to a prefix
_FULL_SHA = re.compile(SHA)


def is_full_sha(text: object) -> bool:
    """Whether `text` is exactly one full lower-case commit SHA: no prefix, no upper case, no newline after."""
    return isinstance(text, str) and _FULL_SHA.fullmatch(text) is not None


def header_markers(comments: Iterable[object], bot_login: str) -> Iterator[str]:
    """Each marker line of the bot's own comments, oldest comment first. Only the bot's identity
    counts: a marker typed by anyone else is never seen. Markers sit in a comment's header, so the
    first line that is not one ends the comment's markers."""
    for comment in comments:
        if getattr(comment, "user", "").lower() != bot_login.lower():
            continue
        for line in getattr(comment, "body", "").replace("\r\n", "\n").split("\n"):
            line = line.strip()
            if not line.startswith("<!--"):
                break
            yield line
