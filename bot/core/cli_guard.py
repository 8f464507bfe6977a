"""The last line of the CLI: an exception no subcommand handled becomes one clear bilingual line, not a traceback."""
from __future__ import annotations

import os
import re
import sys

from bot.core.messages import Message, msg

DEBUG_ENV = "RECIPE_BOT_DEBUG"
# Every command takes -h. Each command says so itself: click keeps a command's help option from the
# first context it ran in, so a command first run on its own (a test, a library caller) would
# otherwise refuse -h for the rest of the process, even under `recipe-bot`.
HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}
_ERRNO = re.compile(r"\[Errno -?\d+\] [^'\")]+")


def _chain(exc: BaseException) -> list[BaseException]:
    """The exception and what caused it, outermost first (a wrapper often hides the useful one)."""
    seen: list[BaseException] = []
    while exc is not None and exc not in seen:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return seen


def _is(exc: BaseException, module: str, names: tuple[str, ...]) -> bool:
    """isinstance by name, so the CLI never imports requests or PyGithub just to classify an error."""
    mod = sys.modules.get(module)
    classes = tuple(getattr(mod, n) for n in names if mod is not None and hasattr(mod, n))
    return bool(classes) and isinstance(exc, classes)


def _network_reason(exc: BaseException) -> str | Message:
    found = _ERRNO.search(str(exc))
    if found:
        return found.group(0).strip()  # the operating system's own words
    return msg("timed out") if "Timeout" in type(exc).__name__ else type(exc).__name__


def explain(exc: BaseException, environ: dict[str, str] | None = None) -> Message:
    """What went wrong with an exception that escaped a subcommand; one line in every language."""
    env = environ if environ is not None else os.environ
    api = env.get("GITHUB_API_URL") or "https://api.github.com"
    for link in _chain(exc):
        if _is(link, "requests.exceptions", ("ConnectionError", "Timeout")):
            return msg("cannot reach the GitHub API at %(api)s (%(reason)s); check the network and GITHUB_API_URL",
                       api=api, reason=_network_reason(link))
        if _is(link, "github.GithubException", ("GithubException",)):
            status = getattr(link, "status", "?")
            data = getattr(link, "data", None)
            message = data.get("message", "") if isinstance(data, dict) else ""
            if message:
                return msg("the GitHub API answered HTTP %(status)s: %(message)s", status=status, message=message)
            return msg("the GitHub API answered HTTP %(status)s", status=status)
        if isinstance(link, UnicodeDecodeError):
            return msg("an input file is not UTF-8 text (byte %(byte)s); save it as UTF-8", byte=link.start)
        if _is(link, "bot.core.settings", ("SettingsError",)):
            return link.message  # type: ignore[attr-defined]
    detail = " ".join(str(exc).split())[:300] or type(exc).__name__
    return msg("unexpected error: %(kind)s: %(detail)s", kind=type(exc).__name__, detail=detail)


def one_line(exc: BaseException, environ: dict[str, str] | None = None) -> str:
    """What the user sees: the English line, then the Chinese line, each pointing at the traceback switch."""
    line = msg("%(why)s (run with %(switch)s=1 for the traceback)", why=explain(exc, environ), switch=DEBUG_ENV)
    return f"{line.render('en')}\n{line.render('zh')}"
