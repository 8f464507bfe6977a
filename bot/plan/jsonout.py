"""`json.dumps(doc, indent=2)`, byte for byte, at the speed of the C encoder (a plan is megabytes of JSON)."""
from __future__ import annotations

import json
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]

_CONTAINERS = (dict, list, tuple)
_SCALARS = frozenset({str, int, float, bool, type(None)})  # exact types: a container is never among them
_ENCODERS: dict[int, object] = {}


def _default(value: object) -> object:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def _run(items: dict | list, level: int) -> str:
    """A run of scalars of one container, joined as indent=2 joins them, in one C-encoder call.

    Python's C encoder is used only without `indent`, but it honours any separators: with ",\\n" and
    the indentation as the item separator, scalars come out exactly as indent=2 writes them.
    """
    encoder = _ENCODERS.get(level)
    if encoder is None:
        encoder = _ENCODERS[level] = c_make_encoder(
            None, _default, encode_basestring_ascii, None, ": ", ",\n" + "  " * level, False, False, True)
    return "".join(encoder(items, 0))[1:-1]  # type: ignore[operator]


def _key(key: object) -> str:
    if isinstance(key, str):
        return encode_basestring_ascii(key)
    return json.dumps({key: 0})[1:-4]  # a non-string key becomes a string, as json.dumps makes it


def _reindent(text: str, shift: int) -> str:
    """A container's indent=2 text moved `shift` levels. Its lines start at its own level or deeper, and
    no string in it holds a raw newline (the encoder escapes them), so each line moves alike."""
    if shift > 0:
        return text.replace("\n", "\n" + "  " * shift)
    if shift < 0:
        return text.replace("\n" + "  " * -shift, "\n")
    return text


def _encode(value: object, level: int, out: list[str], seen: dict[int, tuple[int, str]]) -> None:
    if isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        done = seen.get(id(value))
        if done is not None:  # the same dict again (a plan lists each InferenceX row twice): re-indented
            out.append(_reindent(done[1], level - done[0]))
            return
        inner = "\n" + "  " * (level + 1)
        if _SCALARS.issuperset(map(type, value.values())):  # the common case, without a loop in Python
            text = "{" + inner + _run(value, level + 1) + "\n" + "  " * level + "}"
        else:
            mine: list[str] = []
            _encode_dict(value, level, inner, mine, seen)
            text = "".join(mine)
        seen[id(value)] = (level, text)
        out.append(text)
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[]")
            return
        inner = "\n" + "  " * (level + 1)
        if _SCALARS.issuperset(map(type, value)):
            out.append("[" + inner + _run(value, level + 1) + "\n" + "  " * level + "]")
            return
        out.append("[" + inner)
        scalars: list = []
        first = True
        for item in value:
            if not isinstance(item, _CONTAINERS):
                scalars.append(item)
                continue
            if scalars:
                out.append(("" if first else "," + inner) + _run(scalars, level + 1))
                scalars, first = [], False
            if not first:
                out.append("," + inner)
            _encode(item, level + 1, out, seen)
            first = False
        if scalars:
            out.append(("" if first else "," + inner) + _run(scalars, level + 1))
        out.append("\n" + "  " * level + "]")
    else:
        out.append(json.dumps(value))


def _encode_dict(value: dict, level: int, inner: str, out: list[str], seen: dict[int, tuple[int, str]]) -> None:
    out.append("{" + inner)
    run: dict = {}
    first = True
    for key, item in value.items():
        if not isinstance(item, _CONTAINERS):
            run[key] = item
            continue
        if run:
            out.append(("" if first else "," + inner) + _run(run, level + 1))
            run, first = {}, False
        out.append(("" if first else "," + inner) + _key(key) + ": ")
        _encode(item, level + 1, out, seen)
        first = False
    if run:
        out.append(("" if first else "," + inner) + _run(run, level + 1))
    out.append("\n" + "  " * level + "}")


def dumps_indented(document: object) -> str:
    """Exactly `json.dumps(document, indent=2)` (ensure_ascii, NaN allowed, key order kept)."""
    if c_make_encoder is None:  # a Python without the C accelerator
        return json.dumps(document, indent=2)
    out: list[str] = []
    _encode(document, 0, out, {})  # the document lives until the end: an id names one dict throughout
    return "".join(out)
