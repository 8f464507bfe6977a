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
        located.file, located.line_of(("include",)), "include", "must be a path or a list of paths"
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
        raise RecipeError.single(path, None, None, "file not found")
    if not isinstance(located.data, dict):
        raise RecipeError.single(path, located.line_of(()), None, "a recipe file must be a YAML mapping")
    merged: dict = {}
    lower: list[Located] = []
    for index, target in enumerate(_include_list(located)):
        include_path = _include_path(path, target)
        loc = ("include",) if isinstance(located.data["include"], str) else ("include", index)
        line = located.line_of(loc)
        if include_path.startswith("../") or include_path == "..":
            raise RecipeError.single(path, line, "include", f"{target!r} points outside the repository")
        if include_path in _stack or include_path == path:
            chain = " → ".join([*_stack, path, include_path])
            raise RecipeError.single(path, line, "include", f"include cycle: {chain}")
        if cache.parse(include_path) is None:
            raise RecipeError.single(
                path, line, "include", f"{target!r} not found (looked for {include_path})"
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
    "missing": "required, but not given",
    "int_parsing": "expected an integer", "int_type": "expected an integer",
    "int_from_float": "expected a whole number",
    "float_parsing": "expected a number", "float_type": "expected a number",
    "bool_parsing": "expected true or false", "bool_type": "expected true or false",
    "string_type": "expected a string", "list_type": "expected a list",
    "dict_type": "expected a mapping", "model_type": "expected a mapping",
    "model_attributes_type": "expected a mapping",
    "string_pattern_mismatch": "must be lower-case letters, digits, '.', '_' or '-', starting with a letter or digit",
}


_BOUND_ERRORS = {"greater_than_equal", "less_than_equal", "greater_than", "less_than"}


def field_range(model: type[BaseModel], loc: tuple) -> str | None:
    """`from 1 to 4096`, `at least 0`, `at most 30`: the range a bounded number field accepts, from
    its declared bounds; None when the field has none (or `loc` names no model field)."""

    if not loc or not isinstance(loc[-1], str):
        return None
    for candidate in _unwrap(annotation_at(model, loc[:-1]) if loc[:-1] else model):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel) and loc[-1] in candidate.model_fields:
            bounds: dict[str, Any] = {}
            for item in candidate.model_fields[loc[-1]].metadata:
                bounds.update({k: getattr(item, k) for k in ("ge", "gt", "le", "lt") if getattr(item, k, None) is not None})
            low = _number(bounds["ge"]) if "ge" in bounds else (f"more than {_number(bounds['gt'])}" if "gt" in bounds else None)
            high = _number(bounds["le"]) if "le" in bounds else (f"less than {_number(bounds['lt'])}" if "lt" in bounds else None)
            if low and high:
                return f"from {low} to {high}"
            if low or high:
                return f"at least {low}" if low else f"at most {high}"
    return None


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
    if kind == "extra_forbidden":
        message = "unknown key"
        accepted = accepted_keys(model, loc[:-1])
    elif kind == "literal_error":
        message = f"{error['input']!r} is not accepted"
        accepted = accepted_values(model, loc)
    elif kind in _BOUND_ERRORS and field_range(model, loc):
        message = f"must be {field_range(model, loc)} (got {_short(error.get('input'))})"
    elif kind in _FRIENDLY:
        message = _FRIENDLY[kind]
        if kind == "missing":
            accepted = accepted_values(model, loc)
        elif "input" in error:
            message += f", got {_short(error['input'])}"
    else:
        message = error["msg"].removeprefix("Value error, ")
        if kind != "value_error" and "input" in error:
            message += f"; got {_short(error['input'])}"
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
                                         f"{_short(huge[1])} is out of range: numbers up to {MAX_EXACT_INT} are accepted")])
    return validated
