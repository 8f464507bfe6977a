"""`include:` resolution (lm-eval style, deep-merged, local keys win) and schema errors mapped to lines."""
from __future__ import annotations

import math
import posixpath
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from bot.core.messages import Message, msg
from bot.core.validation import error_message
from bot.recipes.errors import RecipeError, RecipeProblem, dotted
from bot.recipes.yamlsrc import Located, load_yaml


Reader = Callable[[str], "bytes | None"]


@dataclass
class Resolved:
    """A recipe after its includes: the merged data and every file that contributed, highest priority first."""

    path: str
    data: dict
    layers: list[Located]

    @property
    def files(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for layer in self.layers:
            seen.setdefault(layer.file, None)
        return tuple(seen)

    def locate(self, loc: tuple) -> tuple[str, int | None]:
        """The file and line where the value at `loc` (or its closest existing parent) was written."""
        best_file, best_line, best_depth = self.path, None, -1
        for layer in self.layers:  # highest priority first: the first full match wins
            line, depth = layer.find(loc)
            if depth == len(loc):
                return layer.file, line
            if depth > best_depth:
                best_file, best_line, best_depth = layer.file, line, depth
        return best_file, best_line


class YamlCache:
    """Parsed files shared by every recipe of one catalog (bases are read once)."""

    def __init__(self, read: Reader) -> None:
        self.read = read
        self.parsed: dict[str, Located] = {}
        self.resolved: dict[str, Resolved] = {}

    def parse(self, path: str) -> Located | None:
        if path not in self.parsed:
            raw = self.read(path)
            if raw is None:
                return None
            self.parsed[path] = load_yaml(raw, path)
        return self.parsed[path]


def _include_list(located: Located) -> list[str]:
    value = located.data.get("include")
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    raise RecipeError.single(
        located.file, located.line_of(("include",)), "include", msg("must be a path or a list of paths")
    )


def _include_path(including: str, target: str) -> str:
    joined = target.lstrip("/") if target.startswith("/") else posixpath.join(posixpath.dirname(including), target)
    return posixpath.normpath(joined)


def deep_merge(base: dict, override: dict) -> dict:
    """Mappings merge key by key; lists and scalars of `override` replace those of `base`."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def resolve(path: str, cache: YamlCache, _stack: tuple[str, ...] = ()) -> Resolved:
    if path in cache.resolved:
        return cache.resolved[path]
    located = cache.parse(path)
    if located is None:
        raise RecipeError.single(path, None, None, msg("file not found"))
    if not isinstance(located.data, dict):
        raise RecipeError.single(path, located.line_of(()), None, msg("a recipe file must be a YAML mapping"))
    merged: dict = {}
    lower: list[Located] = []
    for index, target in enumerate(_include_list(located)):
        include_path = _include_path(path, target)
        loc = ("include",) if isinstance(located.data["include"], str) else ("include", index)
        line = located.line_of(loc)
        if include_path.startswith("../") or include_path == "..":
            raise RecipeError.single(path, line, "include", msg("%(path)s points outside the repository", path=repr(target)))
        if include_path in _stack or include_path == path:
            chain = " → ".join([*_stack, path, include_path])
            raise RecipeError.single(path, line, "include", msg("include cycle: %(chain)s", chain=chain))
        if cache.parse(include_path) is None:
            raise RecipeError.single(
                path, line, "include", msg("%(path)s not found (looked for %(looked)s)", path=repr(target),
                                           looked=include_path)
            )
        base = resolve(include_path, cache, (*_stack, path))
        merged = deep_merge(merged, base.data)
        lower = [*base.layers, *lower]
    local = {k: v for k, v in located.data.items() if k != "include"}
    resolved = Resolved(path, deep_merge(merged, local), [located, *lower])
    cache.resolved[path] = resolved
    return resolved


# ---- pydantic errors → one located problem ---------------------------------------------------


def _unwrap(annotation: Any) -> list[Any]:
    """The concrete types inside Optional/Union/Annotated."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [t for arg in typing.get_args(annotation) for t in _unwrap(arg) if t is not type(None)]
    return [annotation]


def annotation_at(model: type[BaseModel], loc: tuple) -> Any:
    """The annotation of the field that `loc` points to, walking models, lists and dicts."""

    current: Any = model
    for part in loc:
        found = None
        for candidate in _unwrap(current):
            origin = typing.get_origin(candidate)
            if isinstance(part, str) and isinstance(candidate, type) and issubclass(candidate, BaseModel):
                field = candidate.model_fields.get(part) or next(
                    (f for f in candidate.model_fields.values() if f.alias == part), None
                )
                if field is not None:
                    found = field.annotation
            elif origin is list and isinstance(part, int):
                found = typing.get_args(candidate)[0]
            elif origin is dict and isinstance(part, str):
                found = typing.get_args(candidate)[1]
            if found is not None:
                break
        if found is None:
            return None
        current = found
    return current


def accepted_keys(model: type[BaseModel], loc: tuple) -> tuple[str, ...]:
    for candidate in _unwrap(annotation_at(model, loc) if loc else model):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return tuple(f.alias or name for name, f in candidate.model_fields.items())
    return ()


def accepted_values(model: type[BaseModel], loc: tuple) -> tuple[str, ...]:
    values: list[str] = []
    for candidate in _unwrap(annotation_at(model, loc)):
        if typing.get_origin(candidate) is typing.Literal:
            values.extend(str(v) for v in typing.get_args(candidate))
        elif callable(getattr(candidate, "accepted_values", None)):  # a registry's names (EngineName)
            values.extend(candidate.accepted_values())
    return tuple(values)


_FRIENDLY = {
    "missing": msg("required, but not given"),
    "int_parsing": msg("expected an integer"), "int_type": msg("expected an integer"),
    "int_from_float": msg("expected a whole number"),
    "float_parsing": msg("expected a number"), "float_type": msg("expected a number"),
    "bool_parsing": msg("expected true or false"), "bool_type": msg("expected true or false"),
    "string_type": msg("expected a string"), "list_type": msg("expected a list"),
    "dict_type": msg("expected a mapping"), "model_type": msg("expected a mapping"),
    "model_attributes_type": msg("expected a mapping"),
    "string_pattern_mismatch": msg("must be lower-case letters, digits, '.', '_' or '-', starting with a letter or "
                                   "digit"),
}


_BOUND_ERRORS = {"greater_than_equal", "less_than_equal", "greater_than", "less_than"}


def out_of_bounds(model: type[BaseModel], loc: tuple, value: object) -> Message | None:
    """`must be from 1 to 4096 (got 0)`: the range a bounded number field accepts, from its declared
    bounds, and the value given; None when the field has none (or `loc` names no model field)."""

    if not loc or not isinstance(loc[-1], str):
        return None
    for candidate in _unwrap(annotation_at(model, loc[:-1]) if loc[:-1] else model):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel) and loc[-1] in candidate.model_fields:
            bounds: dict[str, Any] = {}
            for item in candidate.model_fields[loc[-1]].metadata:
                bounds.update({k: getattr(item, k) for k in ("ge", "gt", "le", "lt") if getattr(item, k, None) is not None})
            low = "ge" if "ge" in bounds else "gt" if "gt" in bounds else None
            high = "le" if "le" in bounds else "lt" if "lt" in bounds else None
            if low is None and high is None:
                return None
            values = {name: _number(bounds[key]) for name, key in (("low", low), ("high", high)) if key}
            return _RANGES[low, high](**values, value=_short(value))
    return None


# The wording of each pair of bounds (ge/gt below, le/lt above), as the loader has always written it.
_RANGES = {
    ("ge", "le"): lambda **v: msg("must be from %(low)s to %(high)s (got %(value)s)", **v),
    ("gt", "le"): lambda **v: msg("must be from more than %(low)s to %(high)s (got %(value)s)", **v),
    ("ge", "lt"): lambda **v: msg("must be from %(low)s to less than %(high)s (got %(value)s)", **v),
    ("gt", "lt"): lambda **v: msg("must be from more than %(low)s to less than %(high)s (got %(value)s)", **v),
    ("ge", None): lambda **v: msg("must be at least %(low)s (got %(value)s)", **v),
    ("gt", None): lambda **v: msg("must be at least more than %(low)s (got %(value)s)", **v),
    (None, "le"): lambda **v: msg("must be at most %(high)s (got %(value)s)", **v),
    (None, "lt"): lambda **v: msg("must be at most less than %(high)s (got %(value)s)", **v),
}


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def out_of_range(data: Any, path: tuple = ()) -> tuple[tuple, Any] | None:
    """The first number too large to be any count or time (beyond 2**53, or not finite), with its path:
    a bound the schema does not name still keeps the plan's JSON and its arithmetic exact."""
    if isinstance(data, bool):
        return None
    if isinstance(data, int) and abs(data) > MAX_EXACT_INT:
        return path, data
    if isinstance(data, float) and not math.isfinite(data):
        return path, data
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        found = out_of_range(value, (*path, key))
        if found is not None:
            return found
    return None


MAX_EXACT_INT = 2**53


def _short(value: object) -> str:
    shown = repr(value)
    return shown if len(shown) < 60 else shown[:57] + "..."


def problem_from_validation(
    exc: ValidationError, model: type[BaseModel], locate: Callable[[tuple], tuple[str, int | None]]
) -> RecipeProblem:
    """The first schema error of one input, as one line naming file, line, field and accepted values."""
    errors = exc.errors(include_url=False)
    # A misspelt key shows as an unknown key plus a missing one: the unknown key is the cause.
    error = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    loc = tuple(error["loc"])
    kind = error["type"]
    accepted: tuple[str, ...] = ()
    bounded = out_of_bounds(model, loc, error.get("input")) if kind in _BOUND_ERRORS else None
    message: Message | str
    if kind == "extra_forbidden":
        message = msg("unknown key")
        accepted = accepted_keys(model, loc[:-1])
    elif kind == "literal_error":
        message = msg("%(value)s is not accepted", value=repr(error["input"]))
        accepted = accepted_values(model, loc)
    elif bounded is not None:
        message = bounded
    elif kind in _FRIENDLY:
        message = _FRIENDLY[kind]
        if kind == "missing":
            accepted = accepted_values(model, loc)
        elif "input" in error:
            message = msg("%(problem)s, got %(value)s", problem=message, value=_short(error["input"]))
    else:
        message = error_message(error)
        if kind != "value_error" and "input" in error:
            message = msg("%(problem)s; got %(value)s", problem=message, value=_short(error["input"]))
    file, line = locate(loc)
    return RecipeProblem(file, line, dotted(loc) or None, message, accepted)


def validate(model: type[BaseModel], data: Any, locate: Callable[[tuple], tuple[str, int | None]]) -> Any:
    try:
        validated = model.model_validate(data)
    except ValidationError as exc:
        raise RecipeError([problem_from_validation(exc, model, locate)]) from None
    huge = out_of_range(data)  # after the schema, whose own bounds name each field's range
    if huge is not None:
        file, line = locate(huge[0])
        raise RecipeError([RecipeProblem(file, line, dotted(huge[0]) or None,
                                         msg("%(value)s is out of range: numbers up to %(limit)s are accepted",
                                             value=_short(huge[1]), limit=MAX_EXACT_INT))])
    return validated
