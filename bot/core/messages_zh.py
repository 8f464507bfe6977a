"""简体中文 for the messages the planner, the recipe loader and the command line write (errors, notes, reasons).

Those messages are built in English where the fact is found; the Chinese half of a comment shows
them through the templates' `zh` filter, which matches each against the English patterns below and
fills the Chinese form with the same values. Terms follow docs/glossary.md. tests/test_glossary.py
checks that every message the code can write has a pattern here.
"""
from __future__ import annotations

import functools
import re

# (English, 简体中文): `{}` in English is a value; `{0}`, `{1}` ... in Chinese place them.
PATTERNS: tuple[tuple[str, str], ...] = (
    # E2E suites over the repository's own harness (bot/runner/command_case.py)
    # what a glob was for (bot/control/gate_events.py: `/sweep: no recipe matches ...`)
    ("no {} matches {}", "没有{0}符合 {1}"),
    # why a case could not start on the runner (bot/runner: environment.py, engines.py, local.py)
    # pydantic's own wording, while bot/core/config.py and bot/runner/cli.py show it as text (bot/core/validation.py
    # has the catalogue's messages)
    ("Input should be greater than or equal to {}", "应大于或等于 {0}"),
    ("Input should be greater than {}", "应大于 {0}"),
    ("Input should be less than or equal to {}", "应小于或等于 {0}"),
    ("Input should be less than {}", "应小于 {0}"),
    ("List should have at least {} item after validation, not {}", "列表至少应有 {0} 项，实际为 {1} 项"),
    ("List should have at least {} items after validation, not {}", "列表至少应有 {0} 项，实际为 {1} 项"),
    ("String should match pattern {}", "字符串应符合模式 {0}"),
    # refusals still written in English (recipe sources, git, squeue), shown by bot/cli.py
    ("unknown revision {} in {}", "{1} 中没有修订版本 {0}"),
    ("git {}: {}", "git {0} 失败：{1}"),
    ("squeue failed: {}", "squeue 失败：{0}"),
)
CJK = re.compile(r"[\u4e00-\u9fff]")  # a text that already has its Chinese
# A message that names where first (`file:line: message`, `--flag: message`): the place stays as it is.
_LOCATED = re.compile(r"^(\S+?): (.+)$", re.S)
# Suffixes the loader adds to a message: the value that was given.
_SUFFIXES = ((re.compile(r"^(.*), got (.*)$", re.S), "{0}，实际为 {1}"), (re.compile(r"^(.*); got (.*)$", re.S), "{0}；实际为 {1}"))
_WORDS = {"recipe": "配方", "case": "用例"}  # `no {} matches {}`: what the glob was for


_MAX_PLACES = 3  # `file:line: field: message` names two places; a value is a message at most two deep
_MAX_DEPTH = 2
_MAX_PARTS = 16  # reasons joined with "; " in one message


def _match(parts: list[str], text: str) -> list[str] | None:
    """The values of `text` under one English pattern split at its `{}`s, or None.

    What `^p0(.+?)p1(.+?)...pn$` matches, found in one pass of str.find: each literal part found leftmost
    after a value of at least one character, the last part a suffix. Leftmost is what the regex would
    settle on, and no backtracking means a long text (a PR's comment, a recipe's value) costs a scan per
    pattern, never a scan per pair of its characters.
    """
    first, last = parts[0], parts[-1]
    if len(parts) == 1:
        return [] if text == first else None
    end = len(text) - len(last)
    if end <= len(first) or not text.startswith(first) or not text.endswith(last):
        return None
    values, position = [], len(first)
    for part in parts[1:-1]:
        found = text.find(part, position + 1, end)
        if found < 0:
            return None
        values.append(text[position:found])
        position = found + len(part)
    if position >= end:
        return None
    values.append(text[position:end])
    return values


@functools.cache
def _compiled() -> tuple[tuple[list[str], str], ...]:
    return tuple((en.split("{}"), zh) for en, zh in PATTERNS)


def known(text: str) -> bool:
    """Whether `text` has a Chinese form (a test checks that every message the code writes does)."""
    return translate(text) != text


def translate(text: str) -> str:
    """The Chinese form of one message; unknown text is returned as it is (it may be a path or a name).

    A message that names where first (`file:line: field: message`) keeps its places and has the rest
    translated."""
    text = str(text)
    places, rest = [], text
    for _ in range(_MAX_PLACES + 1):
        chinese = _translated(rest, 0)
        if chinese is not None:
            return "".join(f"{place}：" for place in places) + chinese
        located = _LOCATED.match(rest)
        if located is None:
            break
        places.append(located.group(1))
        rest = located.group(2)
    return text


def _value(text: str, depth: int) -> str:
    """A value inside a message: a word the glossary has, a message of its own, or as it is."""
    if text in _WORDS:
        return _WORDS[text]
    if depth >= _MAX_DEPTH:
        return text
    chinese = _translated(text, depth + 1)
    return text if chinese is None else chinese


def _translated(text: str, depth: int) -> str | None:
    for parts, zh in _compiled():
        values = _match(parts, text)
        if values is not None:
            # A value may itself be a message (`{}: this case is opt-in ...`): shown in Chinese too.
            return zh.format(*[_value(v, depth) for v in values])
    for regex, zh in _SUFFIXES:
        found = regex.match(text)
        if found and depth < _MAX_DEPTH:
            head = _translated(found.group(1), depth + 1)
            if head is not None:
                return zh.format(head, found.group(2))
    if "; " in text and depth < _MAX_DEPTH:  # reasons joined into one line (`recipe changed; include ...`)
        parts = text.split("; ")
        if len(parts) > _MAX_PARTS:
            return None
        chinese = []
        for part in parts:
            found = _translated(part, depth + 1)
            if found is None:
                return None
            chinese.append(found)
        return "；".join(chinese)
    return None
