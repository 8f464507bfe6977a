"""`json.dumps(value, sort_keys=True, ...)` from one prebuilt C encoder: rows are hashed by their JSON text.

`json.JSONEncoder.encode` builds a new C encoder (and its float formatter) on every call, which costs
more than encoding a 20-field row; an InferenceX plan encodes every row for its id and every curve for
its fingerprint. The encoder built once gives the same text (same separators, ASCII escapes, float
repr, NaN allowed, keys sorted).
"""
from __future__ import annotations

import json
from collections.abc import Callable
from json.encoder import c_make_encoder, encode_basestring, encode_basestring_ascii  # type: ignore[attr-defined]


def _refuse(value: object) -> object:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def sorted_json(item_separator: str = ", ", key_separator: str = ": ", ensure_ascii: bool = True
                ) -> Callable[[object], str]:
    """A function giving json.dumps(value, sort_keys=True, separators=(item, key), ensure_ascii=...)."""
    slow = json.JSONEncoder(sort_keys=True, separators=(item_separator, key_separator), ensure_ascii=ensure_ascii)
    if c_make_encoder is None:  # a Python without the C accelerator
        return slow.encode
    encoder = c_make_encoder(None, _refuse, encode_basestring_ascii if ensure_ascii else encode_basestring, None,
                             key_separator, item_separator, True, False, True)

    def encode(value: object) -> str:
        if isinstance(value, (dict, list, tuple)):
            return "".join(encoder(value, 0))
        return slow.encode(value)  # a bare scalar: as json.dumps writes it

    return encode
