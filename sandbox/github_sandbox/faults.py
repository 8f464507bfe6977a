"""Fault injection: rules that make the sandbox answer as GitHub does on a bad day (5xx, 403, time-outs).

A rule matches requests by method, path (a regular expression searched in the path, without the
/api/v3 prefix) and, optionally, the acting user. When it fires, the sandbox either answers with the
rule's status *instead of* handling the request, or handles the request first (its effect is made)
and then answers with the rule's status (`after: true`), which is what a 502 from a proxy or a
read time-out after GitHub did the work looks like. `delay_s` waits before answering; with no
`status` the real answer follows the wait (a slow GitHub; a client time-out shorter than the delay
sees a time-out). `skip` lets the first N matching requests through; `count` is how often it fires
(null: every time).
"""
from __future__ import annotations

import itertools
import re
import threading
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

MESSAGES = {
    403: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
    404: "Not Found",
    409: "Conflict",
    422: "Validation Failed",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Server Error",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}


class FaultRule(BaseModel):
    """One rule of `POST /_sandbox/faults` (docs/sandbox.md, "Fault injection")."""

    model_config = ConfigDict(extra="forbid")

    method: str = "*"
    path: str = Field(min_length=1)
    user: str | None = None
    status: int | None = Field(default=None, ge=100, le=599)
    headers: dict[str, str] = {}
    message: str | None = None
    delay_s: float = Field(default=0.0, ge=0.0, le=300.0)
    after: bool = False
    count: int | None = Field(default=1, ge=1)
    skip: int = Field(default=0, ge=0)

    @field_validator("path")
    @classmethod
    def _regex(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
        return value

    @field_validator("method")
    @classmethod
    def _method(cls, value: str) -> str:
        value = value.upper()
        if value != "*" and value not in {"GET", "POST", "PATCH", "PUT", "DELETE", "HEAD"}:
            raise ValueError("one of *, GET, POST, PATCH, PUT, DELETE, HEAD")
        return value

    def matches(self, method: str, path: str, user: str | None) -> bool:
        return (self.method in ("*", method) and (self.user is None or self.user == user)
                and re.search(self.path, path) is not None)

    def body(self) -> dict[str, Any]:
        return {"message": self.message or MESSAGES.get(self.status or 0, "Injected fault"),
                "documentation_url": "https://docs.github.com/rest"}


class Faults:
    """The active rules, in the order they were added; the first that matches and still has shots fires."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._rules: list[dict[str, Any]] = []  # {id, rule, seen, fired}

    def add(self, rules: list[FaultRule]) -> list[dict[str, Any]]:
        with self._lock:
            for rule in rules:
                self._rules.append({"id": next(self._ids), "rule": rule, "seen": 0, "fired": 0})
        return self.view()

    def clear(self) -> list[dict[str, Any]]:
        with self._lock:
            self._rules.clear()
        return []

    def take(self, method: str, path: str, user: str | None) -> tuple[int, FaultRule] | None:
        """The rule that fires for this request (its counters move), or None."""
        with self._lock:
            for entry in self._rules:
                rule: FaultRule = entry["rule"]
                if rule.count is not None and entry["fired"] >= rule.count:
                    continue
                if not rule.matches(method, path, user):
                    continue
                entry["seen"] += 1
                if entry["seen"] <= rule.skip:
                    continue
                entry["fired"] += 1
                return entry["id"], rule
        return None

    def view(self) -> list[dict[str, Any]]:
        with self._lock:
            return [{"id": e["id"], **e["rule"].model_dump(), "seen": e["seen"], "fired": e["fired"],
                     "remaining": None if e["rule"].count is None else e["rule"].count - e["fired"]}
                    for e in self._rules]


def parse_rules(body: Any) -> list[FaultRule]:
    """`{"rules": [...]}` or one rule object."""
    if isinstance(body, dict) and "rules" in body:
        items = body["rules"]
        if not isinstance(items, list):
            raise ValueError("rules: a list of fault rules")
        if set(body) - {"rules"}:
            raise ValueError(f"unknown keys {sorted(set(body) - {'rules'})}; send {{rules: [...]}} or one rule")
    else:
        items = [body]
    return [FaultRule.model_validate(item) for item in items]
