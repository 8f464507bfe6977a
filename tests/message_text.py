"""A message as the tests compare it: result.json's message data, a Message, or text, in English."""
from __future__ import annotations

from bot.core.messages import Message, from_data


def english(value: object) -> str:
    """What a reader of the English report sees for a reason, a failure or a note."""
    if isinstance(value, dict):
        return str(from_data(value))
    if isinstance(value, Message):
        return str(value)
    return str(value)
