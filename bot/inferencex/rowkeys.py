"""Which fields of an InferenceX row are its server configuration: recipe-bot's own packing reads rows by them."""
from __future__ import annotations

import hashlib
import json

# Row fields that vary between points of one server configuration (InferenceX's rows carry them per point).
POINT_FIELDS = frozenset({"conc", "exp-name", "run-eval", "eval-only", "eval-conc", "eval-all-concs"})


def freeze(value: object) -> object:
    """A row value in hashable form (dicts as sorted pairs, lists as tuples), for keys over rows."""
    if isinstance(value, dict):
        return tuple(sorted((k, freeze(v)) for k, v in value.items()))
    if isinstance(value, list):
        return tuple(freeze(v) for v in value)
    return value


def launch_key(row: dict) -> frozenset:
    """A row's server configuration: everything except the concurrency and the fields derived from it.
    A set of (field, value) pairs: equal exactly when the fields are, and hashed without sorting them."""
    return frozenset([(k, freeze(v) if isinstance(v, (dict, list)) else v)
                      for k, v in row.items() if k not in POINT_FIELDS])


def server_digest(row: dict) -> str:
    """recipe-bot's own id of a row's server configuration, for a row without InferenceX's recipe-fingerprint
    (its tools before they added one): the SHA-256 of its fields but the point's."""
    server = {k: v for k, v in row.items() if k not in POINT_FIELDS}
    return hashlib.sha256(json.dumps(server, sort_keys=True).encode()).hexdigest()
