"""Recipe errors that name the file, line and field, and say what would be accepted."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class RecipeProblem:
    """One thing wrong with one input file, located as precisely as the input allows."""

    file: str
    line: int | None
    field: str | None
    message: str
    accepted: tuple[str, ...] = ()

    def location(self) -> str:
        return f"{self.file}:{self.line}" if self.line else self.file

    def __str__(self) -> str:
        where = self.location()
        what = f"field `{self.field}`: " if self.field else ""
        text = f"{where}: {what}{self.message}"
        if self.accepted:
            text += f" (accepted: {', '.join(self.accepted)})"
        return text

    def as_dict(self) -> dict:
        return {
            "file": self.file,
            "line": self.line,
            "field": self.field,
            "message": self.message,
            "accepted": list(self.accepted),
        }


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
        message: str,
        accepted: tuple[str, ...] | list[str] = (),
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
