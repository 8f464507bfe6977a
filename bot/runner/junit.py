"""The verdict of a pytest run from its JUnit XML report: every expected node passed, none skipped or errored."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from bot.core.messages import Message, msg
from bot.core.results import NodeOutcome

MESSAGE_CHARS = 300


def node_parts(node_id: str) -> tuple[str, str | None]:
    """The (classname, name) pytest's JUnit writer gives a node id; name None for a module or class.

    `tests/e2e/test_x.py::TestA::test_b[p]` -> (`tests.e2e.test_x.TestA`, `test_b[p]`)."""
    path, _, rest = node_id.partition("::")
    module = path.removesuffix(".py").replace("/", ".").replace("\\", ".")
    parts = [p for p in rest.split("::") if p] if rest else []
    if not parts:
        return module, None
    *classes, name = parts
    if name[:1].isupper() and "[" not in name and not classes:  # a class node: every test in it
        return f"{module}.{name}", None
    return ".".join([module, *classes]), name


def testcase_node_id(classname: str, name: str) -> str:
    """A readable node id back from a testcase: module path, classes, name (best effort for classes)."""
    parts = classname.split(".")
    classes = []
    while parts and parts[-1][:1].isupper():
        classes.insert(0, parts.pop())
    path = "/".join(parts) + ".py" if parts else ""
    return "::".join([p for p in [path, *classes, name] if p])


def _outcome(case: ET.Element) -> tuple[str, str | None]:
    for tag, outcome in (("failure", "failed"), ("error", "error"), ("skipped", "skipped")):
        found = case.find(tag)
        if found is not None:
            text = found.get("message") or (found.text or "").strip().splitlines()[-1:] or [""]
            message = text if isinstance(text, str) else text[0]
            return outcome, (message or tag)[:MESSAGE_CHARS]
    return "passed", None


def _matches(node_id: str, classname: str, name: str) -> bool:
    want_class, want_name = node_parts(node_id)
    if want_name is None:
        return classname == want_class or classname.startswith(want_class + ".")
    return classname == want_class and name == want_name


def read_report(path: Path, expected: list[str]) -> list[NodeOutcome]:
    """Every testcase of the report, each named by the expected node id it belongs to, then each expected
    node with no testcase as `missing`. Raises ValueError when the file is not a JUnit report."""
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as exc:
        raise ValueError(msg("the harness's JUnit report %(file)s cannot be read: %(why)s", file=path.name,
                             why=str(exc))) from None
    outcomes: list[NodeOutcome] = []
    seen: set[str] = set()
    for case in root.iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        owner = next((n for n in expected if _matches(n, classname, name)), None)
        node_id = testcase_node_id(classname, name) if owner is None or node_parts(owner)[1] is None else owner
        if owner is not None:
            seen.add(owner)
        outcome, message = _outcome(case)
        try:
            seconds = round(float(case.get("time", "")), 3)
        except ValueError:
            seconds = None
        outcomes.append(NodeOutcome(node_id=node_id, outcome=outcome, message=message, seconds=seconds))
    outcomes += [NodeOutcome(node_id=n, outcome="missing", message=msg("no result in the JUnit report"))
                 for n in expected if n not in seen]
    return outcomes


def verdict(exit_code: int | None, outcomes: list[NodeOutcome], expect_passed: int,
            cut_short: Message | str | None = None, nodes: list[str] = ()) -> list[Message]:
    """Why the run fails, one sentence per problem, each naming its node id; empty: it passed."""
    problems: list[Message] = []
    for node in outcomes:
        if node.outcome == "missing":
            problems.append(msg("node %(node)s did not finish (%(why)s)", node=node.node_id,
                                why=cut_short or node.message))
        elif node.outcome == "skipped":
            problems.append(msg("node %(node)s was skipped (%(why)s); a skip fails the gate", node=node.node_id,
                                why=node.message))
        elif node.outcome == "failed":
            problems.append(msg("node %(node)s failed: %(why)s", node=node.node_id, why=node.message))
        elif node.outcome == "error":
            problems.append(msg("node %(node)s errored: %(why)s", node=node.node_id, why=node.message))
    passed = sum(1 for n in outcomes if n.outcome == "passed")
    if not problems and passed != expect_passed:
        problems.append(msg("%(passed)s test(s) passed where %(expected)s were expected", passed=passed,
                            expected=expect_passed))
    stopped = cut_short or msg("no exit status")
    if exit_code is None:
        problems.append(msg("node %(nodes)s: the harness was stopped before it exited (%(why)s)",
                            nodes=", ".join(nodes), why=stopped) if nodes
                        else msg("the harness was stopped before it exited (%(why)s)", why=stopped))
    elif exit_code != 0 and not problems:
        problems.append(msg("node %(nodes)s: the harness exited with code %(code)s", nodes=", ".join(nodes),
                            code=exit_code) if nodes
                        else msg("the harness exited with code %(code)s", code=exit_code))
    return problems
