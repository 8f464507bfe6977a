"""A user-visible message: a catalogue id with named parameters, rendered in each language at the edge.

Code that finds a fact builds `msg("node %(node)s failed: %(why)s", node=..., why=...)` instead of an
English sentence; the comment, the check and the terminal render it per language through the catalogue
(bot/core/catalogue.py). `pybabel extract` finds the ids through the `msg` and `plural` keywords
(babel.cfg). str() of a message is its English form, for logs and for code that still compares text.
"""
from __future__ import annotations

import dataclasses
import pathlib

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
