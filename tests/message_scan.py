"""Messages as the code builds them, read from its source: what the Chinese-form tests scan."""
from __future__ import annotations

import ast

STAND_IN = "X"  # each formatted value of an f-string


def sample(node: ast.AST) -> str | None:
    """A message literal, each formatted value replaced by a stand-in; None when it is not a literal."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else STAND_IN for v in node.values)
    if isinstance(node, ast.IfExp):  # `a if x else "fallback"`: the literal branch
        return sample(node.orelse) or sample(node.body)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = sample(node.left), sample(node.right)
        return None if left is None or right is None else left + right
    return None
