"""The message catalogue: gettext catalogs (bot/core/locale/<locale>/LC_MESSAGES/bot.po), one per language.

The .po file is the source; beside it the compiled bot.mo is committed, because compiling a catalog
with Babel takes a few hundred milliseconds that every command rendering a comment would pay again
(Actions runners start from a clean cache), while reading a .mo takes about one.
tests/test_catalogue.py fails when a committed .mo is not what its .po compiles to. A catalog with no
.mo (a language being added) is compiled in memory. After editing messages (babel.cfg at the
repository root; the catalogs are kept sorted, one location a file, unwrapped, so that an update
changes only the entries that changed):
    pybabel extract -F babel.cfg -k msg -k plural:1,2 --sort-output --add-location=file --no-wrap -o bot.pot .
    pybabel update -i bot.pot -d bot/core/locale -D bot --no-wrap --ignore-pot-creation-date --no-fuzzy-matching
    pybabel compile -d bot/core/locale -D bot
"""
from __future__ import annotations

import functools
import gettext
import io
import pathlib
import re

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

LOCALE_DIR = pathlib.Path(__file__).parent / "locale"
DOMAIN = "bot"
LOCALES = {"en": "en", "zh": "zh_CN"}  # the bot's language names -> the catalog's locale folder


def locale_name(lang: str) -> str:
    return LOCALES.get(lang, lang)


def catalog_path(lang: str, locale_dir: pathlib.Path = LOCALE_DIR) -> pathlib.Path:
    return locale_dir / locale_name(lang) / "LC_MESSAGES" / f"{DOMAIN}.po"


def compile_catalog(po: pathlib.Path, lang: str) -> bytes:
    """The .mo bytes a .po file compiles to (what `pybabel compile` writes)."""

    with po.open("rb") as source:
        catalog = read_po(source, locale=locale_name(lang), domain=DOMAIN)
    compiled = io.BytesIO()
    write_mo(compiled, catalog, use_fuzzy=False)
    return compiled.getvalue()


@functools.cache
def translations(lang: str, locale_dir: pathlib.Path = LOCALE_DIR) -> gettext.GNUTranslations:
    """`lang`'s catalog; a missing catalog is an error, never silent English."""
    po = catalog_path(lang, locale_dir)
    try:
        compiled = po.with_suffix(".mo").read_bytes()
    except FileNotFoundError:
        if not po.exists():
            raise LookupError(f"no message catalog for language {lang!r} (expected {po})") from None
        compiled = compile_catalog(po, lang)
    return gettext.GNUTranslations(io.BytesIO(compiled))


PLACEHOLDER = re.compile(r"%\((\w+)\)[sdifr]")


@functools.cache
def known_ids(locale_dir: pathlib.Path = LOCALE_DIR) -> frozenset[str]:
    """Every message id of the English catalog (singular ids; a plural's id is its singular form)."""
    catalog = translations("en", locale_dir)._catalog  # gettext keeps (id or (id, n)) -> text here
    return frozenset(key if isinstance(key, str) else key[0] for key in catalog if key)


def parameters(message_id: str) -> frozenset[str]:
    """The named parameters a message id takes (`%(node)s` -> node)."""
    return frozenset(PLACEHOLDER.findall(message_id))
