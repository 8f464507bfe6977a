"""The plan's JSON as the workflow reads it: json.dumps(indent=2)'s layout in UTF-8, valid for any JSON reader."""
from __future__ import annotations

import collections
import json

import pytest

from bot.plan.render import dump_json

SHAPES = {
    "empty mapping": {},
    "empty list": [],
    "scalars only": {"a": 1, "b": "x", "c": None, "d": True, "e": 2.5},
    "nested empties": {"a": {}, "b": [], "c": [[], {}]},
    "scalars around a container": {"a": 1, "b": [1], "c": 2, "d": {"e": 1}, "f": 3},
    "list mixing scalars and containers": [1, [2, [3, {}]], {"k": (1, 2)}, 4, 5],
    "tuples as lists": ((1, 2), (), [(3,)]),
    "non-ASCII and escapes": {"é": "\u2028 \"quoted\" \\ tab\t", "中文": ["量化", "\x00"]},
    "non-string keys": {1: "one", None: "null", 2.5: [True], False: {}},
    "floats": [-0.0, 1e300, 0.1, 27.6667, 1500.0],
    "dict subclass": {"a": collections.OrderedDict(b=1, c=[2])},
    "deep": {"a": [{"b": [{"c": [{"d": [1, {"e": None}]}]}]}]},
}


@pytest.mark.parametrize("document", SHAPES.values(), ids=SHAPES.keys())
def test_reads_back_as_the_document_it_was_written_from(document):
    assert json.loads(dump_json(document)) == json.loads(json.dumps(document))


@pytest.mark.parametrize("document", [d for k, d in SHAPES.items() if k != "floats"],
                         ids=[k for k in SHAPES if k != "floats"])
def test_lays_out_every_line_as_json_dumps_indent_2(document):
    assert dump_json(document) == (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode()


def test_writes_non_finite_numbers_as_null_which_every_json_reader_accepts():
    # json.dumps would write NaN and Infinity, which GitHub's fromJSON and jq refuse.
    assert json.loads(dump_json({"a": [float("nan"), float("inf"), -float("inf")]})) == {"a": [None, None, None]}


NOT_JSON = {
    "object value": {"a": object()},
    "set in a list": [set()],
    "object after scalars": {"a": [1, object()]},
}


@pytest.mark.parametrize("document", NOT_JSON.values(), ids=NOT_JSON.keys())
def test_refuses_a_value_json_cannot_hold(document):
    with pytest.raises(TypeError):
        dump_json(document)
