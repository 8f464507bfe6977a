"""YAML documents that remember where every value came from, so errors can name file and line."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

from bot.core.messages import msg
from bot.recipes.errors import RecipeError

_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _DuplicateKey(Exception):
    def __init__(self, key: object, line: int, first_line: int) -> None:
        super().__init__(key)
        self.key = key
        self.line = line
        self.first_line = first_line


_TAG = "tag:yaml.org,2002:"
_PLAIN_INT = re.compile(r"[-+]?(0|[1-9][0-9_]*)")
_BOOLS = {"yes": True, "true": True, "on": True, "no": False, "false": False, "off": False}
_RESOLVED: dict[tuple[str, tuple[bool, bool]], str] = {}


class _StrictLoader(_BaseLoader):  # type: ignore[misc, valid-type]
    """Safe loading (libyaml when present) whose implicit-tag resolution is memoised: recipes repeat
    the same keys and values thousands of times, and PyYAML resolves each with regular expressions."""

    def resolve(self, kind, value, implicit):  # noqa: ANN001, ANN201 - PyYAML's signature
        if kind is not yaml.ScalarNode:
            return super().resolve(kind, value, implicit)
        key = (value, implicit)
        tag = _RESOLVED.get(key)
        if tag is None:
            tag = super().resolve(kind, value, implicit)
            if len(_RESOLVED) > 200_000:
                _RESOLVED.clear()
            _RESOLVED[key] = tag
        return tag


_STR, _INT, _BOOL, _NULL, _SEQ, _MAP, _MERGE = (_TAG + name for name in ("str", "int", "bool", "null", "seq", "map",
                                                                            "merge"))
_SCALAR, _SEQUENCE, _MAPPING = yaml.ScalarNode, yaml.SequenceNode, yaml.MappingNode


def _to_python(loader: _StrictLoader, node: yaml.Node, duplicates: list | None = None) -> Any:
    """Nodes to plain data: str, int, bool, null, lists and mappings directly; anything rarer (floats,
    timestamps, merge keys, binary) through PyYAML's own safe constructor. Duplicate keys are refused."""
    tag = node.tag
    kind = node.__class__
    if kind is _SCALAR:
        value = node.value
        if tag == _STR:
            return value
        if tag == _INT and _PLAIN_INT.fullmatch(value):
            return int(value.replace("_", ""))
        if tag == _BOOL:
            return _BOOLS[value.lower()]
        if tag == _NULL:
            return None
        return loader.construct_object(node, deep=True)
    if kind is _SEQUENCE and tag == _SEQ:
        return [_to_python(loader, item, duplicates) for item in node.value]
    if kind is _MAPPING and tag == _MAP:
        if any(key.tag == _MERGE for key, _ in node.value):
            return loader.construct_object(node, deep=True)
        out: dict = {}
        lines: dict = {}
        for key_node, value_node in node.value:
            key = _to_python(loader, key_node, duplicates)
            try:
                hash(key)
            except TypeError:
                return loader.construct_object(node, deep=True)  # PyYAML reports it with its mark
            line = key_node.start_mark.line + 1
            if key in lines:
                if duplicates is None:
                    raise _DuplicateKey(key, line, lines[key])
                duplicates.append((key, line, lines[key]))  # PyYAML's safe_load: the last one wins
            lines[key] = line
            out[key] = _to_python(loader, value_node, duplicates)
        return out
    return loader.construct_object(node, deep=True)


@dataclass
class Located:
    """One parsed YAML file: its data and its node tree (kept to map a field path back to a line)."""

    file: str
    data: Any
    root: yaml.Node | None

    def find(self, loc: tuple) -> tuple[int | None, int]:
        """Line of the deepest node on `loc` in this file, and how many parts of `loc` exist here."""
        node = self.root
        if node is None:
            return None, 0
        line = node.start_mark.line + 1
        for depth, part in enumerate(loc):
            child = _child(node, part)
            if child is None:
                return line, depth
            line, node = child
        return line, len(loc)

    def line_of(self, loc: tuple) -> int | None:
        return self.find(loc)[0]


def _child(node: yaml.Node, part: object) -> tuple[int, yaml.Node] | None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.value == str(part):
                return key_node.start_mark.line + 1, value_node
        return None
    if isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
        item = node.value[part]
        return item.start_mark.line + 1, item
    return None


def load_yaml(text: str | bytes, file: str, duplicates: list | None = None) -> Located:
    """Parse one YAML document strictly; any syntax problem or duplicate key is a RecipeError.

    With `duplicates` (a list), a duplicate key is kept as PyYAML's safe_load keeps it (the last one
    wins) and recorded there as (key, line, first line): InferenceX reads its files that way."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            problem = msg("not UTF-8 text (byte %(byte)s: %(reason)s)", byte=exc.start, reason=exc.reason)
            raise RecipeError.single(file, None, None, problem) from None
    loader = _StrictLoader(text)
    try:
        root = loader.get_single_node()
        data = _to_python(loader, root, duplicates) if root is not None else None
    except _DuplicateKey as exc:
        raise RecipeError.single(
            file, exc.line, str(exc.key), msg("duplicate key (first defined on line %(line)s)", line=exc.first_line)
        ) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        problem = " ".join(part for part in (exc.context, exc.problem) if part)
        raise RecipeError.single(file, line, None, msg("YAML syntax error: %(problem)s", problem=problem)) from None
    except yaml.YAMLError as exc:
        raise RecipeError.single(file, None, None, msg("YAML error: %(problem)s", problem=str(exc))) from None
    finally:
        loader.dispose()
    return Located(file, data, root)
