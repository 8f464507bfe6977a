"""A command's refusal built from a catalogue message reads as text everywhere: str(), f-strings, logs,
pytest's match; and the code builds such refusals only through the classes that make it so."""
from __future__ import annotations

import ast
import pathlib

import click
import pytest

from bot.core.messages import Refusal, UsageRefusal, msg, refusal

BOT = pathlib.Path(__file__).resolve().parent.parent / "bot"
MESSAGE_FUNCS = {"msg", "plural"}
CLICK_ERRORS = {"ClickException", "UsageError", "BadParameter", "FileError"}


@pytest.mark.parametrize("make", [Refusal, UsageRefusal, refusal], ids=["refusal", "usage", "either"])
def test_a_refusal_of_a_catalogue_message_is_its_english_text(make):
    exc = make(msg("%(path)s: the results directory does not exist", path="out/r"))
    assert str(exc) == "out/r: the results directory does not exist"
    assert f"{exc}" == str(exc)
    with pytest.raises(click.ClickException, match="results directory does not exist"):
        raise exc


def test_a_refusal_of_plain_text_stays_click_own():
    assert type(refusal("plain words")) is click.ClickException


def click_errors_given_a_message(source: str) -> list[int]:
    """Lines where click's own error class is handed a msg()/plural() value (its str() would not be text)."""
    lines = []
    tree = ast.parse(source)
    from_click = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                  and (node.module or "").startswith("click") for alias in node.names}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            if isinstance(node.func, ast.Attribute):  # click.UsageError(...), not commands.UsageError(...)
                owner = node.func.value
                name = node.func.attr if isinstance(owner, ast.Name) and owner.id == "click" else ""
            else:  # a bare name only when it was imported from click (bot.core.registry has its own UsageError)
                name = node.func.id if getattr(node.func, "id", "") in from_click else ""
            first = node.args[0]
            called = first.func if isinstance(first, ast.Call) else None
            if name in CLICK_ERRORS and isinstance(called, ast.Name) and called.id in MESSAGE_FUNCS:
                lines.append(node.lineno)
    return lines


def test_the_scan_finds_click_own_error_given_a_message():
    assert click_errors_given_a_message("raise click.ClickException(msg('x'))\nraise Refusal(msg('y'))\n") == [1]
    assert click_errors_given_a_message("from click import UsageError\nraise UsageError(msg('x'))\n") == [2]
    assert click_errors_given_a_message("raise UsageError(msg('x'))\n") == []  # a UsageError of the bot's own


def test_no_module_hands_click_own_error_a_catalogue_message():
    found = {str(p.relative_to(BOT)): lines for p in sorted(BOT.rglob("*.py"))
             if (lines := click_errors_given_a_message(p.read_text(encoding="utf-8")))}
    assert found == {}, f"raise Refusal(msg(...)) / UsageRefusal(msg(...)) instead: {found}"
