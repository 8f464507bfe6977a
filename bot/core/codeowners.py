"""CODEOWNERS: validated line by line (errors name the line), owners by GitHub's last-match-wins rule."""
from __future__ import annotations

import dataclasses
import re

from codeowners import CodeOwners

from bot.core.messages import Message, msg

LOCATIONS = (".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS")  # GitHub reads the first that exists
_USER = re.compile(r"^@[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$")
_TEAM = re.compile(r"^@[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


class CodeownersError(ValueError):
    def __init__(self, source: str, line: int, text: str, message: Message):
        self.source, self.line, self.text, self.message = source, line, text, message
        super().__init__(f"{source}:{line}: {message}")


@dataclasses.dataclass(frozen=True)
class Owners:
    source: str
    rules: CodeOwners

    def of(self, path: str) -> tuple[tuple[str, ...], int | None]:
        """The owners of `path` (as written: @user, @org/team, email) and the line that decided it."""
        owners, line, _, _ = self.rules.matching_line(path)
        return tuple(owner for _, owner in owners), line


def parse_codeowners(text: str, source: str) -> Owners:
    """Reject what GitHub rejects (it then ignores the line): unknown owner syntax, `!` negation, `[ ]` ranges."""
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        pattern, *owners = line.replace("\\ ", "\0").split()
        if pattern.startswith("!"):
            raise CodeownersError(source, number, raw, msg("`!` negation is not supported in CODEOWNERS"))
        if "[" in pattern:
            raise CodeownersError(source, number, raw, msg("`[ ]` character ranges are not supported in CODEOWNERS"))
        for owner in owners:
            if owner.startswith("#"):
                break  # a trailing comment
            if not (_USER.match(owner) or _TEAM.match(owner) or _EMAIL.match(owner)):
                raise CodeownersError(source, number, raw, msg(
                    "%(owner)s is not an owner; write @user, @org/team or an email address", owner=repr(owner)))
    try:
        return Owners(source, CodeOwners(text))
    except ValueError as exc:  # the parser's own pattern errors carry no line: find it
        for number, raw in enumerate(text.splitlines(), start=1):
            try:
                CodeOwners(raw)
            except ValueError:
                raise CodeownersError(source, number, raw, _invalid_pattern(exc)) from None
        raise CodeownersError(source, 1, "", _invalid_pattern(exc)) from None


def _invalid_pattern(exc: ValueError) -> Message:
    """The parser's own words: the English catalog gives them alone (its msgstr is `%(problem)s`), the
    others say first that the path pattern is invalid."""
    return msg("invalid path pattern: %(problem)s", problem=str(exc))


def teams_in(owners: tuple[str, ...]) -> list[str]:
    return [owner[1:] for owner in owners if _TEAM.match(owner)]


def users_in(owners: tuple[str, ...]) -> list[str]:
    return [owner[1:].lower() for owner in owners if _USER.match(owner)]
