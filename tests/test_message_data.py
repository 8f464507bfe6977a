"""A catalogue message kept in a file (plan.json, result.json) as its id and parameters reads back as the
same message, and data that is not one of the catalogue's messages is refused with the field named."""
from __future__ import annotations

import pydantic
import pytest
from babel.messages.pofile import read_po

from bot.core import catalogue
from bot.core.messages import MAX_DEPTH, Message, Text, from_data, msg, plural

KNOWN = "%(path)s: the results directory does not exist"


class Record(pydantic.BaseModel):
    reason: Text | None = None


def test_a_message_round_trips_through_json_and_renders_in_both_languages():
    record = Record(reason=msg(KNOWN, path="out/r"))
    again = Record.model_validate_json(record.model_dump_json())
    assert again == record
    assert isinstance(again.reason, Message)
    assert again.reason.render("en") == "out/r: the results directory does not exist"
    assert again.reason.render("zh") != again.reason.render("en")


def test_plain_text_from_an_older_file_stays_text():
    assert Record.model_validate_json('{"reason": "the server died"}').reason == "the server died"


def test_a_message_inside_a_message_round_trips():
    outer = msg(KNOWN, path=msg(KNOWN, path="inner"))
    assert from_data(outer.to_data()) == outer


def test_a_plural_message_round_trips():
    some = next(iter(_plural_ids()), None)
    assert some is not None, "the catalogue has plural messages"
    singular, plural_id = some
    params = {name: "x" for name in _names(singular, plural_id)}
    message = plural(singular, plural_id, 3, **params)
    assert from_data(message.to_data()) == message


@pytest.mark.parametrize("data, says", [
    ({"id": "an id nobody wrote"}, "not a message of the catalogue"),
    ({"id": KNOWN, "params": {}}, "takes the parameters path (got none)"),
    ({"id": KNOWN, "params": {"path": "a", "extra": "b"}}, "takes the parameters path (got extra, path)"),
    ({"id": KNOWN, "params": {"path": [1]}}, "parameter path is a list"),
    ({"id": KNOWN, "params": {"path": True}}, "parameter path is a bool"),
    ({"id": KNOWN, "params": "path"}, "params of"),
    ({"id": KNOWN, "params": {"path": "a"}, "shell": "rm"}, "only id, params, plural and count"),
    ({"id": KNOWN, "params": {"path": "a"}, "count": 2}, "both plural (text) and count"),
    ({"params": {}}, "is {\"id\""),
    (5, "is {\"id\""),
], ids=["unknown-id", "missing-param", "extra-param", "list-value", "bool-value", "params-not-object",
        "unknown-key", "count-without-plural", "no-id", "not-an-object"])
def test_data_that_is_not_a_catalogue_message_is_refused(data, says):
    with pytest.raises(pydantic.ValidationError, match=r"reason") as caught:
        Record.model_validate({"reason": data})
    assert says in str(caught.value)


def test_messages_nested_without_end_are_refused():
    data: dict = {"id": KNOWN, "params": {"path": "bottom"}}
    for _ in range(MAX_DEPTH + 2):
        data = {"id": KNOWN, "params": {"path": data}}
    with pytest.raises(ValueError, match="nested more than"):
        from_data(data)


def _plural_ids():
    with catalogue.catalog_path("en").open("rb") as po:
        for entry in read_po(po):
            if entry.id and isinstance(entry.id, tuple):
                yield entry.id


def _names(*ids):
    return set().union(*(catalogue.parameters(i) for i in ids)) - {"count"}
