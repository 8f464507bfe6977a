"""A pydantic error as a catalogue message: a validator's own refusal, or pydantic's wording for its checks."""
from __future__ import annotations

from typing import Any

from bot.core.messages import Message, msg, plural


class Invalid(ValueError):
    """A validator's refusal as a catalogue message (its first argument, as bot/core/config.py reads a
    validator's error). pydantic keeps the exception it was raised with, so whoever shows the error can
    show the message in each language; str() is its English form (pydantic's own text of the error)."""

    def __init__(self, message: Message) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return str(self.message)


def _number(value: object) -> object:
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _pydantic_wording(error: dict[str, Any]) -> Message | None:
    """pydantic's own sentence for the checks the schemas declare (ge=, min_length=, pattern=)."""
    kind, ctx = error["type"], error.get("ctx") or {}
    if kind == "missing":
        return msg("Field required")
    if kind == "extra_forbidden":
        return msg("Extra inputs are not permitted")
    if kind == "greater_than_equal":
        return msg("Input should be greater than or equal to %(limit)s", limit=_number(ctx["ge"]))
    if kind == "greater_than":
        return msg("Input should be greater than %(limit)s", limit=_number(ctx["gt"]))
    if kind == "less_than_equal":
        return msg("Input should be less than or equal to %(limit)s", limit=_number(ctx["le"]))
    if kind == "less_than":
        return msg("Input should be less than %(limit)s", limit=_number(ctx["lt"]))
    if kind == "too_short" and ctx.get("field_type") == "List":
        return plural("List should have at least %(count)s item after validation, not %(actual)s",
                      "List should have at least %(count)s items after validation, not %(actual)s",
                      ctx["min_length"], actual=ctx["actual_length"])
    if kind == "too_long" and ctx.get("field_type") == "List":
        return plural("List should have at most %(count)s item after validation, not %(actual)s",
                      "List should have at most %(count)s items after validation, not %(actual)s",
                      ctx["max_length"], actual=ctx["actual_length"])
    if kind == "string_pattern_mismatch":
        return msg("String should match pattern %(pattern)s", pattern=repr(ctx["pattern"]))
    return None


def error_message(error: dict[str, Any]) -> Message | str:
    """One error of `ValidationError.errors()` as it reads: the Message a validator raised (Invalid, or
    any ValueError whose argument is a Message), pydantic's own wording as a catalogue message, or
    pydantic's text where the catalogue has no form of it. The English is pydantic's, byte for byte
    (a form that would read otherwise is not used)."""
    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, ValueError) and cause.args and isinstance(cause.args[0], Message):
        return cause.args[0]
    text = error["msg"].removeprefix("Value error, ")
    try:
        wording = _pydantic_wording(error)
    except (KeyError, TypeError):
        wording = None
    return wording if wording is not None and str(wording) == text else text
