"""The plan's JSON writer: the very text `json.dumps(doc, indent=2)` writes, for every shape a document takes."""
from __future__ import annotations

import json

import pytest

from bot.plan.jsonout import dumps_indented

SHAPES = {
    "empty mapping": {},
    "empty list": [],
    "scalars only": {"a": 1, "b": "x", "c": None, "d": True, "e": 2.5},
    "nested empties": {"a": {}, "b": [], "c": [[], {}]},
    "scalars around a container": {"a": 1, "b": [1], "c": 2, "d": {"e": 1}, "f": 3},
    "container first and last": {"a": {"b": 1}, "c": 2, "d": [3]},
    "list mixing scalars and containers": [1, [2, [3, {}]], {"k": (1, 2)}, 4, 5],
    "tuples as lists": ((1, 2), (), [(3,)]),
    "non-ASCII and escapes": {"é": "\u2028 \"quoted\" \\ tab\t", "中文": ["量化", "\x00"]},
    "non-string keys": {1: "one", None: "null", 2.5: [True], False: {}},
    "special floats": [float("nan"), float("inf"), -float("inf"), -0.0, 1e300, 0.1],
    "bare scalar": "text",
    "bare number": 3,
    "dict subclass": {"a": __import__("collections").OrderedDict(b=1, c=[2])},
    "deep": {"a": [{"b": [{"c": [{"d": [1, {"e": None}]}]}]}]},
}


@pytest.mark.parametrize("document", SHAPES.values(), ids=SHAPES.keys())
def test_writes_what_json_dumps_indent_2_writes(document):
    assert dumps_indented(document) == json.dumps(document, indent=2)


NOT_JSON = {
    "object value": {"a": object()},
    "set in a list": [set()],
    "object after scalars": {"a": [1, object()]},
}


@pytest.mark.parametrize("document", NOT_JSON.values(), ids=NOT_JSON.keys())
def test_refuses_what_json_dumps_refuses(document):
    with pytest.raises(TypeError, match="not JSON serializable"):
        json.dumps(document, indent=2)
    with pytest.raises(TypeError, match="not JSON serializable"):
        dumps_indented(document)
