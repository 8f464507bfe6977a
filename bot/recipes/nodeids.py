"""E2E cases from `pytest --collect-only -q` output: one case per node id, named by its parameter id."""
from __future__ import annotations

import re

import click
import yaml

from bot.core.cli_guard import HELP_OPTIONS
from bot.core.messages import Refusal, msg

_NODE = re.compile(r"^(?P<path>[^\s:]+\.py)::(?P<rest>\S+)$")
_NAME = re.compile(r"[^a-z0-9._-]+")


def node_ids(collect_output: str) -> list[str]:
    """The node ids in `pytest --collect-only -q` output (its summary and warnings are not node ids)."""
    return list(dict.fromkeys(line.strip() for line in collect_output.splitlines() if _NODE.match(line.strip())))


def case_name(node_id: str) -> str:
    """`...::test_x[baseline-eager]` -> `baseline-eager`; without a parameter, the test's name."""
    tail = node_id.rsplit("::", 1)[-1]
    inner = tail[tail.index("[") + 1:-1] if tail.endswith("]") and "[" in tail else tail
    name = _NAME.sub("-", inner.lower()).strip("-._")
    return name or "case"


def cases_from_collect(collect_output: str) -> list[dict]:
    """`cases:` entries for a harness suite, names made unique where two nodes share a parameter id."""
    cases, seen = [], set()
    for node in node_ids(collect_output):
        name, index = case_name(node), 2
        while name in seen:
            name, index = f"{case_name(node)}-{index}", index + 1
        seen.add(name)
        cases.append({"name": name, "node": node})
    return cases


def cases_yaml(collect_output: str) -> str:
    return yaml.safe_dump({"cases": cases_from_collect(collect_output)}, sort_keys=False, width=200)


@click.command(name="e2e-cases", context_settings=HELP_OPTIONS)
@click.argument("collect_output", type=click.File("r", encoding="utf-8"))
def e2e_cases_cmd(collect_output) -> None:
    """Print a harness suite's `cases:` from `pytest --collect-only -q` output (a file, or - for stdin)."""
    text = cases_yaml(collect_output.read())
    if text.strip() == "cases: []":
        raise Refusal(msg("no pytest node ids in the input; give the output of pytest --collect-only -q"))
    click.echo(text, nl=False)
