"""The bot's hidden markers: the `<!-- recipe-bot:... -->` lines at the head of comments only the bot wrote."""
from __future__ import annotations

from collections.abc import Iterable, Iterator


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
