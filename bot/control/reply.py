"""The reply a handler builds for one event: marker header, sections, the reaction, the claims it replaces."""
from __future__ import annotations

import dataclasses
from typing import Any

from bot.core import i18n
from bot.control import trust


@dataclasses.dataclass
class Reply:
    """One bilingual comment: marker header, then every section in English, then in Chinese."""

    markers: list[str] = dataclasses.field(default_factory=list)
    sections: list[tuple[str, dict[str, Any]]] = dataclasses.field(default_factory=list)
    dispatched: bool = False
    refused: bool = False
    claims: list[int] = dataclasses.field(default_factory=list)  # claim comments the reply replaces
    silent: bool = False  # another handler owns this event's reply

    def add(self, template: str, **context: Any) -> None:
        self.sections.append((f"control/{template}", context))

    def refuse(self, code: str, **context: Any) -> None:
        if code not in trust.REFUSALS:
            raise ValueError(f"no refusal {code!r}")
        self.refused = True
        self.add(f"refused-{code}", **context)

    def mark_refused(self) -> None:
        """A section of the reply refuses something (the reaction says so)."""
        self.refused = True

    def mark_dispatched(self) -> None:
        """The reply acknowledges a started run (its reaction; the comment gets no other)."""
        self.dispatched = True

    def stay_silent(self, silent: bool = True) -> None:
        """Another handler of the same request owns its reply: this one posts nothing."""
        self.silent = silent

    def render(self) -> str:
        languages = ["\n\n".join(i18n.render(name, lang, **ctx) for name, ctx in self.sections)
                     for lang in i18n.LANGUAGES]
        return "\n".join(self.markers) + "\n" + i18n.SEPARATOR.join(languages).strip() + "\n"

    @property
    def reaction(self) -> str:
        return "rocket" if self.dispatched else "confused" if self.refused else "+1"
