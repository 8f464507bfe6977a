"""A user-visible message: a catalogue id with named parameters, rendered in each language at the edge.

Code that finds a fact builds `msg("node %(node)s failed: %(why)s", node=..., why=...)` instead of an
English sentence; the comment, the check and the terminal render it per language through the catalogue
(bot/core/catalogue.py). `pybabel extract` finds the ids through the `msg` and `plural` keywords
(babel.cfg). str() of a message is its English form, for logs and for code that still compares text.
"""
from __future__ import annotations

import dataclasses
import pathlib
from typing import Annotated, Any

import click
from pydantic import PlainSerializer, PlainValidator, WithJsonSchema

from bot.core import catalogue


@dataclasses.dataclass(frozen=True, slots=True)
class Message:
    """One catalogue entry and its values; a value may itself be a message, rendered in the same language."""

    id: str
    params: tuple[tuple[str, object], ...] = ()
    plural_id: str | None = None
    count: int | None = None

    def render(self, lang: str = "en", locale_dir: pathlib.Path = catalogue.LOCALE_DIR) -> str:
        translations = catalogue.translations(lang, locale_dir)
        if self.plural_id is None:
            text = translations.gettext(self.id)
        else:
            text = translations.ngettext(self.id, self.plural_id, self.count or 0)
        values = {name: render(value, lang, locale_dir) for name, value in self.params}
        if self.count is not None:
            values.setdefault("count", self.count)
        return text % values  # every message id is %-formatted: a literal % is written %%

    def __str__(self) -> str:
        return self.render("en")


    def to_data(self) -> dict[str, Any]:
        """The message as JSON data (plan.json, result.json): rendered in each language by whoever reads it."""
        data: dict[str, Any] = {"id": self.id, "params": {name: to_data(value) for name, value in self.params}}
        if self.plural_id is not None:
            data["plural"] = self.plural_id
            data["count"] = self.count
        return data


def to_data(value: object) -> object:
    return value.to_data() if isinstance(value, Message) else value


# A message's value may be a message: a job's reason names its case's, which joins its points' reasons
# (bot.core.results.joined), each with its own cause. Deeper than this is a broken file.
MAX_DEPTH = 12


def from_data(data: object, *, depth: int = 0, locale_dir: pathlib.Path = catalogue.LOCALE_DIR) -> Message:
    """A message read back from JSON data. The data may come from a runner that ran PR code, so the id
    must be one of the catalogue's and the parameters exactly its own; anything else is a ValueError
    naming what is wrong (never a message that would fail later, when a comment is rendered)."""
    if not isinstance(data, dict) or not isinstance(data.get("id"), str):
        raise ValueError("a message is {\"id\": <catalogue id>, \"params\": {...}}")
    unknown = set(data) - {"id", "params", "plural", "count"}
    if unknown:
        raise ValueError(f"a message has only id, params, plural and count (got {', '.join(sorted(unknown))})")
    message_id, params = data["id"], data.get("params", {})
    if message_id not in catalogue.known_ids(locale_dir):
        raise ValueError(f"{message_id!r} is not a message of the catalogue")
    if not isinstance(params, dict):
        raise ValueError(f"the params of {message_id!r} are not an object")
    plural_id, count = data.get("plural"), data.get("count")
    if (plural_id is None) != (count is None) or (count is not None and (type(count) is not int or count < 0)):
        raise ValueError(f"{message_id!r}: a plural message has both plural (text) and count (an integer >= 0)")
    expected = catalogue.parameters(message_id) | catalogue.parameters(plural_id or "")
    if plural_id is not None:  # a plural's count is its own field, filled in when it is rendered
        expected -= {"count"}
    if set(params) - ({"count"} if plural_id is not None else set()) != expected:
        raise ValueError(f"{message_id!r} takes the parameters {', '.join(sorted(expected)) or 'none'} "
                         f"(got {', '.join(sorted(params)) or 'none'})")
    values = {}
    for name, value in params.items():
        if isinstance(value, dict):
            if depth + 1 >= MAX_DEPTH:
                raise ValueError(f"{message_id!r}: messages nested more than {MAX_DEPTH} deep")
            values[name] = from_data(value, depth=depth + 1, locale_dir=locale_dir)
        elif value is None or isinstance(value, (str, int, float)) and not isinstance(value, bool):
            values[name] = value
        else:
            raise ValueError(f"{message_id!r}: parameter {name} is a {type(value).__name__}, not text, a number "
                             "or a message")
    return Message(message_id, tuple(values.items()), plural_id, count)


def message_from_data(value: object) -> Message | str:
    """A message read from a file the bot wrote: its catalogue id and parameters, or the English text of an
    older file; anything else (an id the catalogue does not have) is shown as the text it is, never raised."""
    if isinstance(value, dict):
        try:
            return from_data(value)
        except ValueError:
            pass
    return str(value)


def _text_or_message(value: object) -> Message | str:
    if isinstance(value, (Message, str)):
        return value
    return from_data(value)


# A field of a file the bot writes and reads back (a point's reason, a plan note): English text from an
# older file, or a catalogue message kept as its id and parameters, rendered per language by the reader.
Text = Annotated[
    Message | str,
    PlainValidator(_text_or_message),
    PlainSerializer(to_data),
    WithJsonSchema({"anyOf": [{"type": "string"}, {"type": "object", "required": ["id"],
                                                  "properties": {"id": {"type": "string"},
                                                                 "params": {"type": "object"}}}]}),
]


def msg(message_id: str, /, **params: object) -> Message:
    return Message(message_id, tuple(params.items()))


def plural(singular: str, plural_id: str, count: int, /, **params: object) -> Message:
    """ngettext: the form for `count` (its value is the parameter `count`)."""
    return Message(singular, tuple(params.items()), plural_id, count)


def render(value: object, lang: str, locale_dir: pathlib.Path = catalogue.LOCALE_DIR) -> str:
    """A message in `lang`; any other value as it is."""
    return value.render(lang, locale_dir) if isinstance(value, Message) else str(value)


def bilingual(message: Message) -> str:
    """A message as a terminal line pair: English, then 简体中文 (for text written straight to stderr)."""
    return f"{message.render('en')}\n{message.render('zh')}"


class Refusal(click.ClickException):
    """A command's refusal as a catalogue message. The CLI's edge (bot/cli.py) shows it in both
    languages; str() is its English form, where click's own would hand back the Message object (and
    `str(exc)`, an f-string or a log line would raise TypeError)."""

    def __init__(self, message: Message) -> None:
        super().__init__(message)  # type: ignore[arg-type]  # kept as it is, rendered at the edge

    def __str__(self) -> str:
        return render(self.message, "en")


class UsageRefusal(click.UsageError):
    """A usage error (exit code 2, click's usage line) as a catalogue message; str() is its English form."""

    def __init__(self, message: Message, ctx: click.Context | None = None) -> None:
        super().__init__(message, ctx)  # type: ignore[arg-type]

    def __str__(self) -> str:
        return render(self.message, "en")


def refusal(text: Message | str) -> click.ClickException:
    """The click error for a catalogue message or, until each is converted, English text."""
    return Refusal(text) if isinstance(text, Message) else click.ClickException(text)
