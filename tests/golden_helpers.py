"""Golden files: compare a rendered text with its file, or rewrite it under RECIPE_BOT_UPDATE_GOLDEN=1."""
from __future__ import annotations

import os
import pathlib

UPDATE = os.environ.get("RECIPE_BOT_UPDATE_GOLDEN") == "1"


def assert_golden(path: pathlib.Path, text: str) -> None:
    """The text equals the golden file at path (written first when updating)."""
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no golden file {path}; run with RECIPE_BOT_UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8")
