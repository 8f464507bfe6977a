"""The part of GitHub's expression language InferenceX's benchmark templates use, evaluated without a shell.

`${{ inputs.x }}`, literals, `!`, `==`/`!=`/`<`..., `&&`/`||` (which return an operand, not a bool, as
GitHub's do), property access (`a.b-c`, `a['b']`), and the functions format, contains, startsWith,
endsWith, join, toJSON and fromJSON. Anything else (status functions, hashFiles, `*` filters) is an
ExpressionError that names what it met, so a template that outgrows the subset fails loudly, never
silently differently. Semantics follow GitHub's documentation: loose equality converts to numbers,
strings compare case-insensitively, and a missing property is null.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any, Callable

from bot.core.messages import Message, msg

FUNCTIONS = ("format", "contains", "startsWith", "endsWith", "join", "toJSON", "fromJSON")
_TOKEN = re.compile(r"""\s*(?:(?P<num>0x[0-9a-fA-F]+|-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)
                    |(?P<str>'(?:[^']|'')*')
                    |(?P<op>==|!=|<=|>=|&&|\|\||[<>!()\[\].,*])
                    |(?P<name>[A-Za-z_][A-Za-z0-9_-]*))""", re.X)
_EMBEDDED = re.compile(r"\$\{\{(.*?)\}\}", re.S)


class ExpressionError(ValueError):
    """An expression outside the subset, or one that cannot be evaluated; `what` says which part."""

    def __init__(self, expression: str, what: Message) -> None:
        super().__init__(f"{what} in ${{{{ {expression.strip()} }}}}")
        self.expression = expression.strip()
        self.what = what


@dataclass(frozen=True)
class Node:
    kind: str  # lit, ctx, prop, index, not, and, or, cmp, call
    args: tuple = ()


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            match = _TOKEN.match(text, pos)
            if match is None or match.end() == pos:
                raise ExpressionError(text, msg("unexpected text %(text)s", text=repr(text[pos:].strip()[:20])))
            kind = match.lastgroup or ""
            self.tokens.append((kind, match.group(kind)))
            pos = match.end()
        self.i = 0

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.i] if self.i < len(self.tokens) else ("end", "")

    def take(self, value: str | None = None) -> tuple[str, str]:
        token = self.peek()
        if value is not None and token[1] != value:
            raise ExpressionError(self.text, msg("%(expected)s where %(found)s is written", expected=repr(value), found=repr(token[1] or "end")))
        self.i += 1
        return token

    def parse(self) -> Node:
        node = self.or_()
        if self.peek()[0] != "end":
            raise ExpressionError(self.text, msg("unexpected text %(text)s", text=repr(self.peek()[1])))
        return node

    def or_(self) -> Node:
        node = self.and_()
        while self.peek() == ("op", "||"):
            self.take()
            node = Node("or", (node, self.and_()))
        return node

    def and_(self) -> Node:
        node = self.cmp()
        while self.peek() == ("op", "&&"):
            self.take()
            node = Node("and", (node, self.cmp()))
        return node

    def cmp(self) -> Node:
        node = self.unary()
        while self.peek()[0] == "op" and self.peek()[1] in ("==", "!=", "<", "<=", ">", ">="):
            op = self.take()[1]
            node = Node("cmp", (op, node, self.unary()))
        return node

    def unary(self) -> Node:
        if self.peek() == ("op", "!"):
            self.take()
            return Node("not", (self.unary(),))
        return self.postfix(self.primary())

    def primary(self) -> Node:
        kind, value = self.take()
        if kind == "num":
            return Node("lit", (float(int(value, 16)) if value.startswith("0x") else float(value),))
        if kind == "str":
            return Node("lit", (value[1:-1].replace("''", "'"),))
        if (kind, value) == ("op", "("):
            node = self.or_()
            self.take(")")
            return node
        if kind == "name":
            if value in ("true", "false"):
                return Node("lit", (value == "true",))
            if value == "null":
                return Node("lit", (None,))
            if self.peek() == ("op", "("):
                return self.call(value)
            return Node("ctx", (value,))
        raise ExpressionError(self.text, msg("unexpected text %(text)s", text=repr(value or "end")))

    def call(self, name: str) -> Node:
        canonical = next((f for f in FUNCTIONS if f.lower() == name.lower()), None)
        if canonical is None:
            raise ExpressionError(self.text, msg("the function %(name)s()", name=name))
        self.take("(")
        args: list[Node] = []
        if self.peek() != ("op", ")"):
            args.append(self.or_())
            while self.peek() == ("op", ","):
                self.take()
                args.append(self.or_())
        self.take(")")
        return Node("call", (canonical, tuple(args)))

    def postfix(self, node: Node) -> Node:
        while True:
            if self.peek() == ("op", "."):
                self.take()
                kind, value = self.take()
                if (kind, value) == ("op", "*"):
                    raise ExpressionError(self.text, msg("the object filter %(filter)s", filter=".*"))
                if kind != "name":
                    raise ExpressionError(self.text, msg("unexpected text %(text)s", text=repr(value)))
                node = Node("prop", (node, value))
            elif self.peek() == ("op", "["):
                self.take()
                if self.peek() == ("op", "*"):
                    raise ExpressionError(self.text, msg("the object filter %(filter)s", filter="[*]"))
                index = self.or_()
                self.take("]")
                node = Node("index", (node, index))
            else:
                return node


_PARSED: dict[str, Node] = {}


def parse(expression: str) -> Node:
    node = _PARSED.get(expression)
    if node is None:
        node = _PARSED[expression] = _Parser(expression).parse()
    return node


def truthy(value: Any) -> bool:
    if isinstance(value, float) and math.isnan(value):
        return False
    return value not in (None, False, 0, "")


def to_text(value: Any) -> str:
    """A value as GitHub renders it into a string (an env value, a format argument)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, (dict, list)):
        return to_json(value)
    return str(value)


def to_json(value: Any) -> str:
    def plain(v: Any) -> Any:
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        if isinstance(v, list):
            return [plain(x) for x in v]
        return v
    return json.dumps(plain(value), indent=2, ensure_ascii=False)


def _number(value: Any) -> float:
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if text == "":
            return 0.0
        try:
            return float(int(text, 16)) if text.lower().startswith("0x") else float(text)
        except ValueError:
            return math.nan
    return math.nan


def _compare(op: str, left: Any, right: Any) -> bool:
    a: Any
    b: Any
    if isinstance(left, str) and isinstance(right, str):
        a, b = left.casefold(), right.casefold()
    elif type(left) is type(right) and isinstance(left, (dict, list)):
        a, b = id(left), id(right)  # objects and arrays are equal only to themselves
        if op not in ("==", "!="):
            return False
    else:
        a, b = _number(left), _number(right)
        if math.isnan(a) or math.isnan(b):
            return op == "!="
    return {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]


def _format(expression: str, template: Any, *args: Any) -> str:
    text, out, i = to_text(template), [], 0
    while i < len(text):
        c = text[i]
        if c == "{" and text[i:i + 2] == "{{":
            out.append("{")
            i += 2
        elif c == "}" and text[i:i + 2] == "}}":
            out.append("}")
            i += 2
        elif c == "{":
            end = text.find("}", i)
            index = text[i + 1:end] if end > 0 else ""
            if not index.isdigit() or int(index) >= len(args):
                raise ExpressionError(expression, msg("the format() placeholder %(placeholder)s without an argument", placeholder=text[i:end + 1]))
            out.append(to_text(args[int(index)]))
            i = end + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def evaluate(expression: str, lookup: Callable[[str], Any]) -> Any:
    """The value of one expression (the text inside `${{ }}`); `lookup(name)` gives a context's value
    (inputs, env, secrets, ...) or raises ExpressionError for a context it does not have."""
    return _eval(parse(expression), expression, lookup)


def _eval(node: Node, text: str, lookup: Callable[[str], Any]) -> Any:  # noqa: PLR0911 - one case per kind
    kind, args = node.kind, node.args
    if kind == "lit":
        return args[0]
    if kind == "ctx":
        return lookup(args[0])
    if kind in ("prop", "index"):
        base = _eval(args[0], text, lookup)
        key = args[1] if kind == "prop" else _eval(args[1], text, lookup)
        if isinstance(base, dict):
            if isinstance(key, str):
                return next((v for k, v in base.items() if k.casefold() == key.casefold()), None)
            return None
        if isinstance(base, list) and isinstance(key, (int, float)) and not isinstance(key, bool):
            return base[int(key)] if 0 <= int(key) < len(base) else None
        return None
    if kind == "not":
        return not truthy(_eval(args[0], text, lookup))
    if kind == "and":
        left = _eval(args[0], text, lookup)
        return _eval(args[1], text, lookup) if truthy(left) else left
    if kind == "or":
        left = _eval(args[0], text, lookup)
        return left if truthy(left) else _eval(args[1], text, lookup)
    if kind == "cmp":
        return _compare(args[0], _eval(args[1], text, lookup), _eval(args[2], text, lookup))
    name, values = args[0], [_eval(a, text, lookup) for a in args[1]]
    return _call(name, values, text)


_ARITY = {"format": (1, 99), "contains": (2, 2), "startsWith": (2, 2), "endsWith": (2, 2), "join": (1, 2),
          "toJSON": (1, 1), "fromJSON": (1, 1)}


def _call(name: str, values: list[Any], text: str) -> Any:
    low, high = _ARITY[name]
    if not low <= len(values) <= high:
        raise ExpressionError(text, msg("%(name)s() with %(count)s arguments", name=name, count=len(values)))
    if name == "format":
        return _format(text, *values)
    if name == "contains":
        haystack, needle = values
        if isinstance(haystack, list):
            return any(_compare("==", item, needle) for item in haystack)
        return to_text(needle).casefold() in to_text(haystack).casefold()
    if name in ("startsWith", "endsWith"):
        whole, part = to_text(values[0]).casefold(), to_text(values[1]).casefold()
        return whole.startswith(part) if name == "startsWith" else whole.endswith(part)
    if name == "join":
        separator = to_text(values[1]) if len(values) > 1 else ","
        items = values[0]
        return separator.join(to_text(v) for v in items) if isinstance(items, list) else to_text(items)
    if name == "toJSON":
        return to_json(values[0])
    try:
        return _from_json(json.loads(to_text(values[0])))
    except ValueError as exc:
        raise ExpressionError(text, msg("fromJSON() of text that is not JSON (%(why)s)", why=str(exc))) from None


def _from_json(value: Any) -> Any:
    """JSON numbers are GitHub numbers (doubles)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    return {k: _from_json(v) for k, v in value.items()}


def interpolate(value: str, lookup: Callable[[str], Any]) -> Any:
    """A YAML value with `${{ }}` parts: one expression alone keeps its value's type (GitHub then renders
    it), text with expressions in it becomes text."""
    parts = list(_EMBEDDED.finditer(value))
    if not parts:
        return value
    if len(parts) == 1 and parts[0].span() == (0, len(value.rstrip("\n"))) and value.startswith("${{"):
        return evaluate(parts[0].group(1), lookup)
    out, pos = [], 0
    for part in parts:
        out.append(value[pos:part.start()])
        out.append(to_text(evaluate(part.group(1), lookup)))
        pos = part.end()
    out.append(value[pos:])
    return "".join(out)


def expressions(value: str) -> list[str]:
    """The expressions inside one YAML value, as written."""
    return [m.group(1).strip() for m in _EMBEDDED.finditer(value)]
