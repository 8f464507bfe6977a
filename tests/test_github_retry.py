"""The retry policy (bot/core/github_retry.py): what is repeated, how long it waits, and where it stops."""
from __future__ import annotations

import random

import pytest

from bot.core.github_retry import RetryPolicy, decide, rate_limit_wait

POLICY = RetryPolicy(attempts=4, budget_s=60, base_s=1, cap_s=20)
NOW = 1_700_000_000.0


@pytest.mark.parametrize(("status", "headers", "expected"), [
    pytest.param(403, {"Retry-After": "3"}, 3.0, id="secondary-limit-retry-after"),
    pytest.param(429, {"retry-after": "0"}, 0.0, id="429-retry-after-zero"),
    pytest.param(403, {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(NOW) + 10)}, 10.0,
                 id="primary-limit-reset"),
    pytest.param(429, {}, 60.0, id="429-without-header-waits-a-minute"),
    pytest.param(403, {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0, id="http-date-in-the-past"),
    pytest.param(403, {}, 60.0, id="secondary-limit-named-only-in-the-message"),
    # negative cases: not a rate limit
    pytest.param(403, {}, None, id="403-without-headers-is-a-permission-problem"),
    pytest.param(403, {"X-RateLimit-Remaining": "12", "X-RateLimit-Reset": "1"}, None, id="403-with-quota-left"),
    pytest.param(502, {"Retry-After": "3"}, None, id="5xx-is-no-rate-limit"),
])
def test_rate_limit_wait_reads_githubs_headers(request, status, headers, expected):
    message = "You have exceeded a secondary rate limit." if "message" in request.node.callspec.id else \
        "Resource not accessible by integration"
    assert rate_limit_wait(status, headers, now=NOW, message=message) == expected


@pytest.mark.parametrize(("status", "headers", "safe", "attempt", "waited", "retry", "throttled"), [
    pytest.param(502, {}, True, 0, 0, True, False, id="read-5xx-is-retried"),
    pytest.param(None, {}, True, 0, 0, True, False, id="read-without-answer-is-retried"),
    pytest.param(403, {"Retry-After": "2"}, False, 0, 0, True, True, id="throttled-write-waits-github-refused-it"),
    # negative cases
    pytest.param(502, {}, False, 0, 0, False, False, id="write-5xx-is-never-repeated"),
    pytest.param(None, {}, False, 0, 0, False, False, id="write-time-out-is-never-repeated"),
    pytest.param(404, {}, True, 0, 0, False, False, id="read-404-is-an-answer"),
    pytest.param(422, {}, True, 0, 0, False, False, id="422-is-an-answer"),
    pytest.param(502, {}, True, 3, 0, False, False, id="attempts-exhausted"),
    pytest.param(502, {}, True, 0, 59.9, False, False, id="budget-nearly-spent"),
    pytest.param(403, {"Retry-After": "3600"}, True, 0, 0, False, True, id="retry-after-past-the-budget"),
    pytest.param(403, {"Retry-After": "30"}, True, 0, 40, False, True, id="retry-after-past-what-is-left"),
])
def test_decide(status, headers, safe, attempt, waited, retry, throttled):
    verdict = decide(status=status, headers=headers, safe=safe, attempt=attempt, waited_s=waited,
                     policy=POLICY, rng=random.Random(1))
    assert (verdict.retry, verdict.throttled) == (retry, throttled)
    if retry:
        assert 0 <= verdict.wait_s <= POLICY.budget_s - waited
    if throttled and not retry:
        assert verdict.wait_s == float(headers["Retry-After"])  # what the user is told to wait


def test_backoff_is_jittered_below_an_exponential_ceiling():
    rng = random.Random(7)
    for attempt in range(8):
        ceiling = min(POLICY.cap_s, POLICY.base_s * 2 ** attempt)
        waits = [POLICY.backoff(attempt, rng) for _ in range(200)]
        assert all(0 <= w <= ceiling for w in waits)
        assert max(waits) > 0.8 * ceiling  # it reaches up to the ceiling: the spread is real
        assert len(set(waits)) == 200  # jitter: no two clients wait alike


def test_policy_from_env_is_bounded_and_names_a_bad_variable():
    policy = RetryPolicy.from_env({"RECIPE_BOT_GITHUB_RETRY_BUDGET_S": "600", "RECIPE_BOT_GITHUB_ATTEMPTS": "50",
                                   "RECIPE_BOT_GITHUB_TIMEOUT_S": "0"})
    assert (policy.budget_s, policy.attempts, policy.timeout_s) == (60.0, 10, 1)
    assert RetryPolicy.from_env({}) == RetryPolicy()
    with pytest.raises(ValueError, match="RECIPE_BOT_GITHUB_ATTEMPTS='many'"):
        RetryPolicy.from_env({"RECIPE_BOT_GITHUB_ATTEMPTS": "many"})
