"""One template set rendered per language through gettext catalogs (English, then 简体中文)."""
from __future__ import annotations

import functools
import hashlib
import pathlib

import jinja2
import jinja2.meta

from bot.core import catalogue, messages
from bot.core.settings import setting

TEMPLATES = pathlib.Path(__file__).parent.parent / "templates"
LANGUAGES = ("en", "zh")  # the order of a bilingual comment
SEPARATOR = "\n\n---\n\n"


def inline_code(value: object) -> str:
    """Quote untrusted text as inline code that no backtick inside can break out of."""
    text = str(value).replace("\r", " ").replace("\n", " ")
    fence = "`"
    while fence in text:
        fence += "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


WORD_JOINER = "\u2060"  # invisible; after `@` or `#` it stops GitHub from linking a mention or a reference


def neutral(value: object) -> str:
    """Text from a PR or a result file with `@` and `#` neutralised: no @team mention, no #123 link."""
    return str(value).replace("@", "@" + WORD_JOINER).replace("#", "#" + WORD_JOINER)


def inert(value: object) -> str:
    """Untrusted text as inert inline code: quoted so no backtick breaks out, and neutralised."""
    return inline_code(neutral(value))


_OPTIONS = {"extensions": ("jinja2.ext.i18n",), "trim_blocks": True, "lstrip_blocks": True, "keep_trailing_newline": False,
            "autoescape": False}  # Markdown, not HTML; untrusted text goes through |code


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """Compiled templates kept between processes, as Python keeps .pyc files: compiling the
    report's templates is a fifth of a large report's time. Jinja's own per-user cache folder
    (created 0700 and checked to be this user's); an entry is used only for the same template
    source, Jinja and Python, and the file name carries these options. None where it cannot be
    made, or with RECIPE_BOT_TEMPLATE_CACHE=0."""

    # the edge of this setting: the template environment is built once per process, on its first render,
    # whichever command (or library caller) renders; no command's settings reach that far down
    if not setting("TEMPLATE_CACHE"):
        return None

    class Cache(jinja2.FileSystemBytecodeCache):
        """A cache that cannot be read or written (a full disk) only means compiling again."""

        def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
            try:
                super().load_bytecode(bucket)
            except OSError:
                pass

        def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
            try:
                super().dump_bytecode(bucket)
            except OSError:
                pass

    options = hashlib.sha256(repr(sorted(_OPTIONS.items())).encode()).hexdigest()[:12]
    try:
        return Cache(pattern=f"recipe-bot-{options}-%s.cache")
    except (OSError, RuntimeError):
        return None


def _message_filter(lang: str):
    """`|msg`: a catalogue message in `lang`; any other value (a path, a name, a number) as it is."""
    def render(value: object) -> str:
        return messages.render(value, lang)
    return render


def environment(lang: str = "en", locale_dir: pathlib.Path | None = None) -> jinja2.Environment:
    """The templates with `lang`'s catalog installed; one environment per language and catalog folder."""
    return _environment(lang, str(locale_dir or catalogue.LOCALE_DIR))


@functools.cache
def _environment(lang: str, locale_dir: str) -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        bytecode_cache=_bytecode_cache(),
        **_OPTIONS,
    )
    env.filters["code"] = inline_code
    env.filters["neutral"] = neutral
    env.filters["inert"] = inert
    env.filters["msg"] = _message_filter(lang)
    env.globals["lang"] = lang
    env.install_gettext_translations(catalogue.translations(lang, pathlib.Path(locale_dir)), newstyle=False)
    return env


def template_path(name: str, lang: str | None = None) -> str:
    """The one template of `name` (every language renders the same file)."""
    return f"{name}.md.j2"


def render(name: str, lang: str, *, locale_dir: pathlib.Path | None = None, **context: object) -> str:
    return environment(lang, locale_dir).get_template(template_path(name)).render(**context).strip()


def render_bilingual(name: str, **context: object) -> str:
    """English first, then 简体中文, from the same data."""
    return SEPARATOR.join(render(name, lang, **context) for lang in LANGUAGES)


def template_names() -> list[str]:
    return sorted(str(p.relative_to(TEMPLATES))[: -len(".md.j2")] for p in TEMPLATES.rglob("*.md.j2"))


def placeholders(name: str, lang: str | None = None) -> set[str]:
    env = environment()
    source = env.loader.get_source(env, template_path(name))[0]
    return jinja2.meta.find_undeclared_variables(env.parse(source))
