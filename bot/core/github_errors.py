"""What a failed GitHub call raises: GitHubError (ambiguous or not, throttled or not), and BotLoginMismatch."""
from __future__ import annotations

from bot.core.messages import Message


class GitHubError(RuntimeError):
    """A GitHub call failed; the message names the call, the status and GitHub's own message.

    `ambiguous`: the request may have taken effect although it failed (a 5xx, a time-out, a dropped
    connection), so a non-idempotent write must be checked, not repeated. `throttled_s`: GitHub
    rate-limited the bot and asked for that many seconds, more than the retry budget allows.
    """

    def __init__(self, message: Message | str, status: int | None = None, *, ambiguous: bool = False,
                 throttled_s: float | None = None):
        super().__init__(message)
        self.message = message  # rendered per language where it is shown; str() is its English form
        self.status = status
        self.ambiguous = ambiguous
        self.throttled_s = throttled_s

    def __str__(self) -> str:
        return str(self.message)

    @property
    def throttled(self) -> bool:
        return self.throttled_s is not None


class BotLoginMismatch(GitHubError):
    """The bot wrote a comment and then did not recognise it: its token posts as one login while it
    looks for its own comments as another (bot_login in the config). GitHub did nothing wrong."""

    def __init__(self, message: Message | str, *, posted_as: str, bot_login: str):
        super().__init__(message, 200)
        self.posted_as, self.bot_login = posted_as, bot_login
