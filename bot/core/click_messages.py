"""click's own usage errors as catalogue messages, rebuilt from the parts click keeps on its exceptions.

click words its errors in English when it raises them (its gettext calls run in the process's language).
The CLI's edge (bot/cli.py) shows each refusal in both languages, so it rebuilds click's message from the
exception's fields (the option, the parameter, its type's choices or range) as a catalogue message; a
message is used only when its English is exactly click's text, and None means "show click's text as it is".
"""
from __future__ import annotations

import click
from click.core import Parameter

from bot.core.messages import Message, msg, plural

# What a parameter's type says of a value it refuses (click/types.py), by the type's English suffix.
_PATH_PROBLEMS = {
    ("File", "does not exist."): lambda p: msg("File %(path)s does not exist.", path=p),
    ("Directory", "does not exist."): lambda p: msg("Directory %(path)s does not exist.", path=p),
    ("Path", "does not exist."): lambda p: msg("Path %(path)s does not exist.", path=p),
    ("File", "is a directory."): lambda p: msg("File %(path)s is a directory.", path=p),
    ("Directory", "is a file."): lambda p: msg("Directory %(path)s is a file.", path=p),
    ("Path", "is a directory."): lambda p: msg("Path %(path)s is a directory.", path=p),
    ("Path", "is a file."): lambda p: msg("Path %(path)s is a file.", path=p),
}


def catalogue_form(exc: click.ClickException) -> Message | None:
    """The catalogue message that reads exactly as `exc` does in English, or None when there is none."""
    message = _rebuilt(exc)
    if message is None or str(message) != str(exc.format_message()):  # a Refusal formats as its Message
        return None
    return message


def _rebuilt(exc: click.ClickException) -> Message | None:
    if isinstance(exc, click.exceptions.NoSuchOption):
        return _with_possibilities(msg("No such option %(name)s.", name=repr(exc.option_name)), exc.possibilities)
    if isinstance(exc, click.exceptions.NoSuchCommand):
        return _with_possibilities(msg("No such command %(name)s.", name=repr(exc.command_name)),
                                   exc.possibilities)
    if isinstance(exc, click.exceptions.MissingParameter):
        return _missing(exc)
    if isinstance(exc, click.BadParameter):
        problem = exc.message if isinstance(exc.message, Message) else _type_problem(exc.message, exc.param)
        if problem is None:
            return None
        hint = exc.param_hint if exc.param_hint is not None else (
            exc.param.get_error_hint(exc.ctx) if exc.param is not None else None)
        if hint is None:
            return msg("Invalid value: %(problem)s", problem=problem)
        if not isinstance(hint, str):
            hint = " / ".join(repr(x) for x in hint)
        return msg("Invalid value for %(param)s: %(problem)s", param=hint, problem=problem)
    if isinstance(exc.message, Message):
        return exc.message
    if isinstance(exc, click.exceptions.BadOptionUsage):
        nargs = _nargs(exc.ctx, exc.option_name)
        return plural("Option %(name)s requires an argument.", "Option %(name)s requires %(count)s arguments.",
                      nargs, name=repr(exc.option_name))
    if isinstance(exc, click.UsageError):
        return _usage(exc.message)
    return None


def _with_possibilities(message: Message, possibilities: list[str] | None) -> Message:
    if not possibilities:
        return message
    listed = ", ".join(repr(p) for p in sorted(possibilities))
    return plural("%(message)s Did you mean %(possibilities)s?", "%(message)s (Did you mean one of: %(possibilities)s?)",
                  len(possibilities), message=message, possibilities=listed)


def _missing(exc: click.exceptions.MissingParameter) -> Message | None:
    if exc.message or exc.param is not None and exc.param.type.get_missing_message(param=exc.param, ctx=exc.ctx):
        return None  # a message of its own, or a type's list of choices: shown as click words it
    hint = exc.param_hint if exc.param_hint is not None else (
        exc.param.get_error_hint(exc.ctx) if exc.param is not None else None)
    if hint is not None and not isinstance(hint, str):
        hint = " / ".join(repr(x) for x in hint)
    kind = exc.param_type or (exc.param.param_type_name if exc.param is not None else None)
    if kind == "option" and hint:
        return msg("Missing option %(name)s.", name=hint)
    if kind == "argument" and hint:
        return msg("Missing argument %(name)s.", name=hint)
    if kind == "parameter" and hint:
        return msg("Missing parameter %(name)s.", name=hint)
    return None


def _type_problem(text: str, param: Parameter | None) -> Message | None:
    """What a parameter's type said of a value, as a message: the value is what precedes the type's words."""
    kind = param.type if param is not None else None
    if isinstance(kind, click.Choice):
        choices = ", ".join(map(repr, kind.choices))
        for suffix in (f" is not one of {choices}.", f" is not {choices}."):
            if text.endswith(suffix):
                return plural("%(value)s is not %(choices)s.", "%(value)s is not one of %(choices)s.",
                              len(kind.choices), value=text[: -len(suffix)], choices=choices)
    if isinstance(kind, click.IntRange | click.FloatRange):
        suffix = f" is not in the range {kind._describe_range()}."  # the range as click writes it
        if text.endswith(suffix):
            return msg("%(value)s is not in the range %(range)s.", value=text[: -len(suffix)],
                       range=kind._describe_range())
    if isinstance(kind, click.types.IntParamType) and text.endswith(" is not a valid integer."):
        return msg("%(value)s is not a valid integer.", value=text[: -len(" is not a valid integer.")])
    if isinstance(kind, click.Path):
        name = kind.name.title()
        for (type_name, words), make in _PATH_PROBLEMS.items():
            if type_name == name and text.startswith(f"{name} ") and text.endswith(f" {words}"):
                return make(text[len(name) + 1: -len(words) - 1])
    return None


def _nargs(ctx: click.Context | None, option_name: str) -> int:
    for param in ctx.command.params if ctx is not None else ():
        if option_name in getattr(param, "opts", ()):
            return param.nargs
    return 1


_EXTRA = ("Got unexpected extra argument (", "Got unexpected extra arguments (")


def _usage(text: str) -> Message | None:
    if text == "Missing command.":
        return msg("Missing command.")
    for prefix in _EXTRA:
        if text.startswith(prefix) and text.endswith(")"):
            extra = text[len(prefix):-1]
            return plural("Got unexpected extra argument (%(arguments)s)", "Got unexpected extra arguments (%(arguments)s)",
                          len(extra.split(" ")), arguments=extra)
    return None
