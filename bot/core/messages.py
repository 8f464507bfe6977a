"""A user-visible message: a catalogue id with named parameters, rendered in each language at the edge.

Code that finds a fact builds `msg("node %(node)s failed: %(why)s", node=..., why=...)` instead of an
English sentence; the comment, the check and the terminal render it per language through the catalogue
(bot/core/catalogue.py). `pybabel extract` finds the ids through the `msg` and `plural` keywords
(babel.cfg). str() of a message is its English form, for logs and for code that still compares text.
"""
from __future__ import annotations

import dataclasses
import pathlib

import click

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
