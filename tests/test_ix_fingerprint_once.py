"""`recipe-fingerprint` computed once per curve gives, row for row, what computing it for every row gives."""
from __future__ import annotations

import pytest

from bot.inferencex.append_only import recipe_fingerprint, recipe_fingerprint_once

BASE = {"image": "img:1", "model": "m", "runner": "h200", "tp": 4, "ep": 1, "dp-attn": False, "isl": 1024,
        "osl": 1024, "conc": 4, "exp-name": "m_1k1k", "spec-decoding": "none", "disagg": False}

# Each case: rows fingerprinted in order through one shared cache.
CASES = {
    "points of one curve share it": [BASE, {**BASE, "conc": 8, "exp-name": "other"}],
    "another field, another curve": [BASE, {**BASE, "tp": 8}],
    "True is not 1 (JSON writes them apart)": [{**BASE, "dp-attn": True}, {**BASE, "dp-attn": 1}],
    "False is not 0": [{**BASE, "disagg": False}, {**BASE, "disagg": 0}],
    "None is not a missing field": [{**BASE, "router": None}, BASE],
    "a float is fingerprinted as it is (0.0 and -0.0 write apart)": [{**BASE, "r": 0.0}, {**BASE, "r": -0.0}],
    "a nested worker is fingerprinted as it is": [{**BASE, "prefill": {"tp": 4}}, {**BASE, "prefill": {"tp": 8}}],
    "same fields in another order": [BASE, dict(reversed(list(BASE.items())))],
}


@pytest.mark.parametrize("rows", CASES.values(), ids=CASES.keys())
def test_once_per_curve_equals_once_per_row(rows):
    seen: dict = {}
    assert [recipe_fingerprint_once(r, seen) for r in rows] == [recipe_fingerprint(r) for r in rows]


def test_rows_that_differ_outside_the_point_fields_get_different_fingerprints():
    seen: dict = {}
    fingerprints = {recipe_fingerprint_once(r, seen) for r in CASES["True is not 1 (JSON writes them apart)"]}
    assert len(fingerprints) == 2
