"""GitHub Actions matrices: one runner label each, at most 256 entries each."""
from __future__ import annotations

from bot.plan.model import Matrix, MatrixEntry


def matrices_for(entries: list[MatrixEntry], size: int, fail_fast: dict[str, bool]) -> list[Matrix]:
    """Split entries by runner label (sorted), in plan order, into chunks of at most `size`."""
    by_label: dict[str, list[MatrixEntry]] = {}
    for entry in entries:
        by_label.setdefault(entry.runner_label, []).append(entry)
    out = []
    for label in sorted(by_label):
        items = by_label[label]
        for index, start in enumerate(range(0, len(items), size)):
            out.append(Matrix(runner_label=label, index=index, fail_fast=fail_fast.get(label, False),
                              include=items[start:start + size]))
    return out
