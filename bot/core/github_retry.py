"""When a failed GitHub request may be sent again, and how long to wait: bounded backoff with jitter.

Pure decisions for bot/core/github.py. A request is *safe* to repeat when repeating it cannot do a thing
twice: reads, and writes whose second application changes nothing (editing a comment to the same
text, adding a label or a reaction that is there). Creating a comment or dispatching a workflow is
never repeated blindly: an answer lost after GitHub did the work would do it twice. Those callers
look for the effect instead (bot/dispatch.py). A rate limit is the exception: GitHub refuses a
throttled request before doing anything, so every request may wait for it, within the budget.
"""
from __future__ import annotations

import dataclasses
import email.utils
import os
import random
import time
from collections.abc import Mapping

from bot.core.settings import Settings, load_settings

RATE_LIMIT_STATUSES = frozenset({403, 429})
TRANSIENT_STATUSES = frozenset({500, 502, 503, 504})


@dataclasses.dataclass(frozen=True)
class RetryPolicy:
    """A few attempts and at most `budget_s` seconds of waiting in all, per request."""

    attempts: int = 4
    budget_s: float = 60.0
    base_s: float = 1.0
    cap_s: float = 20.0
    timeout_s: int = 30  # seconds per request (PyGithub takes whole seconds)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> RetryPolicy:
        """RECIPE_BOT_GITHUB_{ATTEMPTS,RETRY_BUDGET_S,BACKOFF_S,TIMEOUT_S}; tests shrink them."""

        return cls.from_settings(load_settings({k: v for k, v in (os.environ if environ is None else environ).items()
                                                if k.startswith("RECIPE_BOT_GITHUB_")}))

    @classmethod
    def from_settings(cls, settings: Settings) -> RetryPolicy:
        """The policy of settings an edge has read already, each held to its bounds."""
        policy = cls(attempts=settings.GITHUB_ATTEMPTS, budget_s=settings.GITHUB_RETRY_BUDGET_S,
                     base_s=settings.GITHUB_BACKOFF_S, timeout_s=settings.GITHUB_TIMEOUT_S)
        policy = dataclasses.replace(policy, attempts=max(1, min(policy.attempts, 10)),
                                     budget_s=max(0.0, min(policy.budget_s, 60.0)),
                                     timeout_s=max(1, policy.timeout_s))
        return policy

    def backoff(self, attempt: int, rng: random.Random | None = None) -> float:
        """Full jitter: uniform in [0, min(cap, base·2^attempt)] (attempt 0 is the first retry)."""
        ceiling = min(self.cap_s, self.base_s * (2 ** attempt))
        return (rng or random).uniform(0.0, ceiling)


@dataclasses.dataclass(frozen=True)
class Verdict:
    retry: bool
    wait_s: float = 0.0
    throttled: bool = False  # a rate limit: the wait is GitHub's, not ours


def rate_limit_wait(status: int | None, headers: Mapping[str, str], now: float | None = None,
                    message: str = "") -> float | None:
    """Seconds GitHub asks us to wait, for a rate-limit answer; None when the answer is no rate limit."""
    if status not in RATE_LIMIT_STATUSES:
        return None
    h = {k.lower(): v for k, v in (headers or {}).items()}
    retry_after = h.get("retry-after")
    if retry_after:
        try:
            return max(0.0, float(retry_after))
        except ValueError:
            when = email.utils.parsedate_to_datetime(retry_after) if retry_after else None
            if when is not None:
                return max(0.0, when.timestamp() - (now if now is not None else time.time()))
    if h.get("x-ratelimit-remaining") == "0" and h.get("x-ratelimit-reset"):
        try:
            return max(0.0, float(h["x-ratelimit-reset"]) - (now if now is not None else time.time()))
        except ValueError:
            return None
    if status == 429 or "rate limit" in message.lower():
        return 60.0  # GitHub's advice for a secondary limit without a header: wait at least a minute
    return None  # a 403 without rate-limit headers is a permission problem: never retried


def decide(*, status: int | None, headers: Mapping[str, str], safe: bool, attempt: int, waited_s: float,
           policy: RetryPolicy, rng: random.Random | None = None, message: str = "") -> Verdict:
    """Whether to send a failed request again (`status` None: no answer: connection error or time-out)."""
    limited = rate_limit_wait(status, headers, message=message)
    if limited is not None:
        if attempt + 1 >= policy.attempts or waited_s + limited > policy.budget_s:
            return Verdict(False, limited, throttled=True)
        return Verdict(True, limited + (rng or random).uniform(0.0, 0.5 * policy.base_s), throttled=True)
    if not safe or attempt + 1 >= policy.attempts:
        return Verdict(False)
    if status is None or status in TRANSIENT_STATUSES:
        wait = policy.backoff(attempt, rng)
        if waited_s + wait > policy.budget_s:
            return Verdict(False)
        return Verdict(True, wait)
    return Verdict(False)
