"""The control plane's request context is typed: no untyped or `Any` handler, no attribute set on it from
outside its class, and the client Protocols it is written against are the real client's methods."""
from __future__ import annotations

import ast
import datetime as dt
import inspect
import pathlib
import typing

import pytest

import bot
from bot.core import github_protocols
from bot.checklist.hooks import SignoffContext
from bot.control import client as control_client
from bot.control.context import RequestState
from bot.control.handler import Handler
from bot.core.github import GitHubClient

BOT = pathlib.Path(bot.__file__).parent
# The names the control plane gives the per-event objects it passes around.
CONTEXT_PARAMETERS = {"h", "handler", "reply"}


def _sources(*packages: str) -> list[pathlib.Path]:
    return sorted(p for package in packages for p in (BOT / package).rglob("*.py"))


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.arg]:
    args = fn.args
    return [*args.posonlyargs, *args.args, *args.kwonlyargs]


def _where(path: pathlib.Path, line: int) -> str:
    return f"{path.relative_to(BOT.parent) if path.is_relative_to(BOT.parent) else path.name}:{line}"


def _is_any(annotation: ast.expr | None) -> bool:
    text = ast.unparse(annotation) if annotation is not None else ""
    return text in ("Any", "typing.Any", "'Any'", '"Any"')


def untyped_context_parameters(path: pathlib.Path) -> list[str]:
    """`file:line name` of each handler or reply parameter that is unannotated or annotated Any."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [f"{_where(path, arg.lineno)} {fn.name}({arg.arg})"
            for fn in _functions(tree) for arg in _parameters(fn)
            if arg.arg in CONTEXT_PARAMETERS and (arg.annotation is None or _is_any(arg.annotation))]


def attributes_set_on_parameters(path: pathlib.Path) -> list[str]:
    """`file:line target` of each `param.x = ...` (or `param.x.y = ...`) where param is not self/cls: an
    object handed in is changed through its own methods, never by setting its attributes from outside."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for fn in _functions(tree):
        params = {arg.arg for arg in _parameters(fn)} - {"self", "cls"}
        for node in ast.walk(fn):
            targets = node.targets if isinstance(node, ast.Assign) else \
                [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
            for target in (t for group in targets for t in (group.elts if isinstance(group, ast.Tuple) else [group])):
                root = target
                while isinstance(root, ast.Attribute):
                    root = root.value
                if isinstance(target, ast.Attribute) and isinstance(root, ast.Name) and root.id in params:
                    found.append(f"{_where(path, target.lineno)} {ast.unparse(target)}")
    return found


def test_the_scans_find_what_they_look_for(tmp_path: pathlib.Path) -> None:
    sample = tmp_path / "sample.py"
    text = ("from typing import Any\n"
            "def untyped(h, reply: Any) -> None:\n"
            "    h.ledger = None\n"
            "    h.state.comments, reply.silent = [], True\n"
            "def typed(h: 'Handler') -> None:\n"
            "    h.state.read_comments([])\n"
            "    local = object()\n")
    sample.write_text(text, encoding="utf-8")
    assert untyped_context_parameters(sample) == ["sample.py:2 untyped(h)", "sample.py:2 untyped(reply)"]
    assert attributes_set_on_parameters(sample) == ["sample.py:3 h.ledger", "sample.py:4 h.state.comments",
                                                    "sample.py:4 reply.silent"]


def test_no_handler_or_reply_parameter_is_untyped_or_any() -> None:
    # bot/control, bot/checklist and bot/serve: where one event's handler and reply are passed (elsewhere a
    # `handler` is another library's, e.g. pydantic's schema hook in bot/engines).
    found = [hit for path in _sources("control", "checklist", "serve") for hit in untyped_context_parameters(path)]
    assert found == []


def test_the_control_plane_sets_no_attribute_on_an_object_it_was_handed() -> None:
    found = [hit for path in _sources("control", "checklist", "serve") for hit in attributes_set_on_parameters(path)]
    assert found == []


def _members(protocol: type) -> dict[str, object]:
    """The Protocol's own methods and data attributes, its bases' included."""
    members: dict[str, object] = {}
    for klass in reversed(protocol.__mro__):
        if klass is object or klass is typing.Protocol or not getattr(klass, "_is_protocol", False):
            continue
        members.update({name: value for name, value in vars(klass).items() if callable(value)
                        and not name.startswith("_")})
        members.update({name: "attribute" for name in klass.__dict__.get("__annotations__", {})})
    return members


PROTOCOLS = [*github_protocols.NARROW, control_client.DispatchClient, control_client.ClaimClient,
             control_client.ControlClient]


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.__name__)
def test_the_github_client_has_every_method_a_protocol_names_with_its_parameters(protocol: type) -> None:
    client = GitHubClient(base_url="http://127.0.0.1:9", token="unused", repository="owner/repo")
    members = _members(protocol)
    assert members, protocol
    for name, declared in members.items():
        assert hasattr(client, name), f"{protocol.__name__}.{name} is not a GitHubClient member"
        if declared == "attribute":
            continue
        wanted = [(p.name, p.kind, p.default) for p in inspect.signature(declared).parameters.values()]
        real = [(p.name, p.kind, p.default) for p in inspect.signature(getattr(GitHubClient, name)).parameters.values()]
        assert wanted == real, f"{protocol.__name__}.{name}"


def test_the_control_client_is_every_narrow_group() -> None:
    assert set(github_protocols.NARROW) <= set(control_client.ControlClient.__mro__)


def test_a_handler_is_the_context_the_sign_off_asks_for() -> None:
    client = GitHubClient(base_url="http://127.0.0.1:9", token="unused", repository="owner/repo")
    h = Handler(client, "main", dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc))
    for name in _members(SignoffContext) | {"client": None}:
        assert hasattr(h, name), name


def test_the_request_state_records_the_claim_and_then_counts_older_claims() -> None:
    state = RequestState()
    assert (state.comments, state.taken, state.claimed, state.older) == ([], None, False, [])
    state.decide_request("label-sweep", "a" * 40)
    assert (state.request_key, state.request_sha) == ("label-sweep", "a" * 40)
    state.decide_request("123")
    assert (state.request_key, state.request_sha) == ("123", None)
    older = [object()]
    state.count_claims(older)  # type: ignore[list-item]
    assert state.claimed and state.older is older
