"""The message catalogue: every message the code and the templates write has a non-empty translation in
every catalog; a generated pseudo-locale shows no text that skipped the catalogue; a new language is
one catalog file."""
from __future__ import annotations

import pathlib
import re

import pytest
from babel.messages.extract import DEFAULT_KEYWORDS, extract_from_dir
from babel.messages.pofile import read_po, write_po

from bot.core import catalogue, i18n

ROOT = pathlib.Path(__file__).resolve().parents[1]
METHODS = [("bot/templates/**.j2", "jinja2"), ("bot/**.py", "python")]
KEYWORDS = {**DEFAULT_KEYWORDS, "msg": None, "plural": (1, 2)}  # bot.core.messages (babel.cfg)
OPTIONS = {"bot/templates/**.j2": {"extensions": "jinja2.ext.i18n", "trim_blocks": "true", "lstrip_blocks": "true"}}
LOCALES = sorted(p.name for p in catalogue.LOCALE_DIR.iterdir() if (p / "LC_MESSAGES" / "bot.po").exists())
PLACEHOLDER = re.compile(r"%\((\w+)\)[sd]|%%")


def extracted() -> dict[tuple[str | None, str], list[str]]:
    """(context, msgid) -> where, for every message pybabel finds in bot/ and the templates."""
    found: dict[tuple[str | None, str], list[str]] = {}
    for path, line, message, _comments, context in extract_from_dir(str(ROOT), METHODS, OPTIONS, KEYWORDS):
        msgid = message[0] if isinstance(message, tuple) else message
        found.setdefault((context, msgid), []).append(f"{path}:{line}")
    return found


def load(locale: str):
    with catalogue.catalog_path(locale).open("rb") as source:
        return read_po(source, locale=locale)


MESSAGES = extracted()


def test_the_extraction_finds_the_templates_messages():
    ids = {msgid for _, msgid in MESSAGES}
    assert "What works: " in ids or any(i.startswith("What works") for i in ids)
    assert len(MESSAGES) > 400


@pytest.mark.parametrize("locale", LOCALES)
def test_every_message_has_a_non_empty_translation(locale):
    catalog = load(locale)
    missing = []
    for (context, msgid), where in sorted(MESSAGES.items(), key=lambda item: (item[0][0] or "", item[0][1])):
        entry = catalog.get(msgid, context=context)
        strings = [] if entry is None else (list(entry.string) if isinstance(entry.string, (list, tuple))
                                            else [entry.string])
        if entry is None or entry.fuzzy or not strings or not all(s.strip() for s in strings):
            missing.append(f"{where[0]}: {msgid!r}" + (f" (context {context!r})" if context else ""))
    assert missing == [], f"{locale}: {len(missing)} message(s) without a translation:\n" + "\n".join(missing[:30])


@pytest.mark.parametrize("locale", LOCALES)
def test_a_catalog_holds_only_messages_the_code_writes(locale):
    stale = [entry.id for entry in load(locale) if entry.id and
             ((entry.context, entry.id if isinstance(entry.id, str) else entry.id[0]) not in MESSAGES)]
    assert stale == [], f"{locale}: entries no source writes (run pybabel update): {stale[:20]}"


@pytest.mark.parametrize("locale", LOCALES)
def test_a_translation_uses_only_the_parameters_its_message_has(locale):
    """A misspelt %(name)s in a translation would fail at render time, in one language only."""
    wrong = []
    for entry in load(locale):
        if not entry.id:
            continue
        ids = entry.id if isinstance(entry.id, tuple) else (entry.id,)
        strings = entry.string if isinstance(entry.string, tuple) else (entry.string,)
        known = {name for text in ids for name in PLACEHOLDER.findall(text)}
        for text in strings:
            extra = set(PLACEHOLDER.findall(text)) - known
            if extra:
                wrong.append((ids[0], sorted(extra)))
    assert wrong == []


@pytest.mark.parametrize("locale", LOCALES)
def test_the_committed_mo_is_what_its_po_compiles_to(locale):
    po = catalogue.catalog_path(locale)
    assert po.with_suffix(".mo").read_bytes() == catalogue.compile_catalog(po, locale), \
        f"{po.with_suffix('.mo')} is stale: run pybabel compile -d bot/core/locale -D bot"


def test_the_chinese_catalog_is_written_in_chinese():
    catalog = load("zh_CN")
    cjk = re.compile(r"[\u4e00-\u9fff]")
    prose = [e for e in catalog if e.id and re.search(r"[A-Za-z]{4,}\s+[a-z]{3,}\s+[a-z]{3,}", str(e.id))]
    english = [e.id for e in prose if not any(cjk.search(s) for s in (e.string if isinstance(e.string, tuple)
                                                                           else (e.string,)))]
    assert english == []


# --- a pseudo-locale and a new language, both generated from the English catalog -------------------

FULLWIDTH = {c: chr(ord(c) - ord("!") + 0xFF01) for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"}


def outside_placeholders(text: str, change) -> str:
    """`change` applied to a message's words, never to its %(name)s placeholders."""
    pieces = re.split(r"(%\(\w+\)[sd]|%%)", text)
    return "".join(piece if PLACEHOLDER.fullmatch(piece) else change(piece) for piece in pieces)


def pseudo(text: str) -> str:
    """Latin letters as full-width ones: any plain Latin word left in a render skipped the catalogue."""
    return outside_placeholders(text, lambda words: "".join(FULLWIDTH.get(c, c) for c in words))


def write_catalog(root: pathlib.Path, lang: str, translate) -> pathlib.Path:
    """A new language's whole footprint: one .po file, made here from the English catalog."""
    catalog = load("en")
    catalog.locale = None
    for entry in catalog:
        if entry.id:
            entry.string = tuple(translate(s) for s in entry.string) if isinstance(entry.string, tuple) \
                else translate(entry.string)
    path = catalogue.catalog_path(lang, root)
    path.parent.mkdir(parents=True)
    with path.open("wb") as out:
        write_po(out, catalog)
    return path


class Anything(int):
    """A template value that answers every access, renders with no Latin letter and is never equal to a literal
    (an int, so that it can count a plural)."""

    def __new__(cls) -> Anything:
        return int.__new__(cls, 2)

    def __str__(self) -> str:
        return "‹1›"

    __format__ = lambda self, spec: "‹1›"  # noqa: E731
    __getattr__ = lambda self, name: Anything() if not name.startswith("__") else object.__getattribute__(self, name)  # noqa: E731
    __getitem__ = lambda self, key: Anything()  # noqa: E731
    __call__ = lambda self, *a, **k: Anything()  # noqa: E731
    __iter__ = lambda self: iter((Anything(), Anything()))  # noqa: E731
    __len__ = lambda self: 2  # noqa: E731
    __bool__ = lambda self: True  # noqa: E731
    __add__ = __sub__ = __mul__ = __truediv__ = __radd__ = __rsub__ = __rmul__ = lambda self, other: 2  # noqa: E731
    __lt__ = __gt__ = __le__ = __ge__ = lambda self, other: False  # noqa: E731
    __eq__ = lambda self, other: False  # noqa: E731
    __hash__ = object.__hash__


def render_all(lang: str, root: pathlib.Path) -> dict[str, str]:
    import jinja2

    env = i18n.environment(lang, root).overlay(undefined=jinja2.ChainableUndefined)
    out = {}
    for name in i18n.template_names():
        template = env.get_template(i18n.template_path(name))
        variables = i18n.placeholders(name)
        try:
            out[name] = template.render(**{v: Anything() for v in variables})
        except Exception as error:  # noqa: BLE001 - each template's own test reports it
            out[name] = f"render failed: {error!r}"
    return out


def latin_words(text: str) -> set[str]:
    """Latin words a reader sees: outside code spans, links, markers and file names."""
    text = re.sub(r"<!--.*?-->|</?(details|summary|code)>|```\w*|^\s*line \[", " ", text, flags=re.S | re.M)
    text = re.sub(r"`[^`]*`|<code>.*?</code>|\]\([^)]*\)|https?://\S+", " ", text)
    return set(re.findall(r"(?<![\w/.-])[A-Za-z]{2,}(?![\w/.-])", text))


# Words a template writes outside the catalogue on purpose: names, units and literal values.
KEPT = {"GPU", "GPUs", "PR", "CPU", "TTFT", "TPOT", "p50", "p99", "SHA", "ID", "OK", "CI", "JSON", "YAML", "vs", "Slurm"}


@pytest.fixture(scope="module")
def pseudo_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("locale")
    write_catalog(root, "qps", pseudo)
    return root


@pytest.fixture(scope="module")
def pseudo_renders(pseudo_root):
    return render_all("qps", pseudo_root)


@pytest.mark.parametrize("name", i18n.template_names())
def test_the_pseudo_locale_render_of_a_template_has_no_untranslated_text(pseudo_renders, name):
    left = latin_words(pseudo_renders[name]) - KEPT
    assert not pseudo_renders[name].startswith("render failed"), pseudo_renders[name]
    assert left == set(), f"{name}: text that does not come from the catalogue: {sorted(left)}"


@pytest.mark.parametrize("name", i18n.template_names())
def test_a_templates_own_text_is_all_in_the_catalogue(name):
    """Every branch, not only those the pseudo render takes: text outside {% trans %} and _() is markup."""
    import jinja2.nodes

    env = i18n.environment()
    tree = env.parse(env.loader.get_source(env, i18n.template_path(name))[0])
    left = {word for node in tree.find_all(jinja2.nodes.TemplateData) for word in latin_words(node.data)} - KEPT
    assert left == set(), f"{name}: prose outside the catalogue: {sorted(left)}"


PYTHON_MESSAGES = sorted({key for key, where in MESSAGES.items() if any(w.endswith(".py") or ".py:" in w for w in where)},
                         key=lambda key: key[1])


def test_the_code_raises_catalogue_messages():
    assert len(PYTHON_MESSAGES) >= 10


@pytest.mark.parametrize("key", PYTHON_MESSAGES, ids=[key[1][:60] for key in PYTHON_MESSAGES])
def test_the_pseudo_locale_render_of_a_refusal_has_no_untranslated_text(pseudo_root, key):
    """Each message the code builds (refusals, errors, notes), rendered as the edge renders it."""
    from bot.core.messages import Message

    _context, message_id = key
    names = {name for name in PLACEHOLDER.findall(message_id) if name}
    text = Message(message_id, tuple((name, Anything()) for name in sorted(names))).render("qps", pseudo_root)
    translations = catalogue.translations("qps", pseudo_root)
    if latin_words(PLACEHOLDER.sub(" ", message_id)):  # a place and a message (`%(path)s: %(problem)s`) has no words
        assert translations.gettext(message_id) != message_id
    assert latin_words(text) - KEPT == set(), text


def test_a_new_language_is_one_catalog_file(tmp_path):
    path = write_catalog(tmp_path, "xx", lambda s: outside_placeholders(s, lambda w: w.replace("recipe", "recette")))
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == [path]
    english, new = render_all("en", catalogue.LOCALE_DIR), render_all("xx", tmp_path)
    assert set(new) == set(i18n.template_names())
    changed = [name for name in new if new[name] != english[name]]
    assert "recette" in new["report/comment"] and len(changed) > 10
    assert all(new[name].replace("recette", "recipe") == english[name] for name in new)
