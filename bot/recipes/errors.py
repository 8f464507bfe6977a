"""Recipe errors that name the file, line and field, and say what would be accepted."""
from __future__ import annotations

from dataclasses import dataclass, field

from bot.core.messages import Message, message_from_data, msg, to_data
from bot.core.results import listed
from bot.core.validation import Invalid  # noqa: F401 - the schemas' refusals, raised in their validators


@dataclass(frozen=True)
class RecipeProblem:
    """One thing wrong with one input file, located as precisely as the input allows. The message is a
    catalogue message (text only where it is someone else's wording, such as YAML's or pydantic's)."""

    file: str
    line: int | None
    field: str | None
    message: Message | str
    accepted: tuple[Message | str, ...] = ()  # names, and a message where a list is cut short (`... 3 more`)

    def location(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file

    def as_message(self) -> Message:
        """The problem as one line, in any language (its English is str())."""
        if self.field:
            text = msg("%(where)s: field `%(field)s`: %(message)s", where=self.location(), field=self.field,
                       message=self.message)
        else:
            text = msg("%(where)s: %(message)s", where=self.location(), message=self.message)
        if self.accepted:
            text = msg("%(message)s (accepted: %(accepted)s)", message=text, accepted=listed(self.accepted))
        return text

    def __str__(self) -> str:
        return str(self.as_message())

    def as_dict(self) -> dict:
        """The problem as JSON data (`recipe-bot plan --format json`, plan.json): the message as its
        catalogue id and parameters, rendered in each language by whoever reads it."""
        return {
            "file": self.file,
            "line": self.line,
            "field": self.field,
            "message": to_data(self.message),
            "accepted": [to_data(value) for value in self.accepted],
        }

    @classmethod
    def from_dict(cls, data: dict) -> RecipeProblem:
        """A problem read back from JSON data: its message as a catalogue message, or the text of an
        older file (a message that is not the catalogue's is shown as the text it is)."""
        return cls(str(data.get("file")), data.get("line"), data.get("field"), message_from_data(data.get("message", "")),
                   tuple(message_from_data(value) for value in data.get("accepted") or ()))


@dataclass
class RecipeError(Exception):
    """Raised when recipes or configs cannot be loaded; carries one problem per bad input."""

    problems: list[RecipeProblem] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(str(self))

    def __str__(self) -> str:
        return "\n".join(str(p) for p in self.problems)

    @classmethod
    def single(
        cls,
        file: str,
        line: int | None,
        field_name: str | None,
        message: Message | str,
        accepted: tuple[Message | str, ...] | list[Message | str] = (),
    ) -> "RecipeError":
        return cls([RecipeProblem(file, line, field_name, message, tuple(accepted))])


def dotted(loc: tuple) -> str:
    """`('search_space', 0, 'tp')` → `search_space[0].tp`."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text
