"""InferenceX configs: the schema refuses values it would have to convert, each row's launch environment is
the template's, and the plan's plain records dump as pydantic models do."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
from pydantic import ValidationError

from bot.inferencex.changelog import default_rows
from bot.inferencex.repo import load_inferencex
from bot.inferencex.rowkeys import POINT_FIELDS
from ix_repo_helpers import tool_inputs
from bot.inferencex.rowenv import _fixed_env, env_from_inputs, server_envs, template_env, template_inputs
from bot.inferencex.schema import MultiNodeEntry, SingleNodeEntry
from bot.plan.model import MatrixEntry, PlanFilters, RecipePlan
from bot.recipes.sources import DirSource
from bot.recipes.yamlsrc import load_yaml

FIXTURE = Path(__file__).parent / "fixtures" / "inferencex"
ODD_VALUES = [None, "4", "true", True, False, 0, -1, 1, 2.5, 1.0, [], [1], ["x"], {}, {"name": "x"}, "none", "dram"]


def _entries() -> dict[str, dict]:
    out = {}
    for path in sorted((FIXTURE / "configs").glob("*-master.yaml")):
        out.update(load_yaml(path.read_bytes(), path.name).data)
    return out


def _schema_accepts(entry: object) -> bool:
    model = MultiNodeEntry if isinstance(entry, dict) and entry.get("multinode") is True else SingleNodeEntry
    try:
        model.model_validate(entry)
    except ValidationError:
        return False
    return True


LAX = [
    # (name, field path, a value pydantic's lax mode would have converted)
    ("a quoted integer", ("search-space", "tp"), "4"),
    ("an integer for a bool", ("disagg",), 1),
    ("a float with no fraction for an integer", ("search-space", "ep"), 2.0),
]


@pytest.mark.parametrize(("path", "value"), [c[1:] for c in LAX], ids=[c[0] for c in LAX])
def test_values_of_the_wrong_type_are_refused_not_converted(path, value):
    """The planner reads the YAML's own values, so a value the schema converted would reach it
    unconverted (a quoted tp ended in "unexpected error: TypeError"): the schema is strict."""
    entry = copy.deepcopy(next(e for e in _entries().values() if e.get("multinode") is not True))
    target = entry
    for name in path[:-1]:
        target = next(iter(target["scenarios"].values()))[0][name][0] if name == "search-space" else target[name]
    target[path[-1]] = value
    assert not _schema_accepts(entry)


def test_fixed_seq_len_environments_are_the_templates_mapping():
    repo = load_inferencex(DirSource(FIXTURE))
    for flags in ({}, {"all_evals": True}):
        rows = default_rows(tool_inputs(FIXTURE), sorted(repo.configs), **flags)
        fixed = [r for _, r in [*rows.throughput, *rows.evals]
                 if "prefill" not in r and r.get("scenario-type") != "agentic-coding"]
        assert fixed
        for row in fixed:
            for fast in (False, True):
                built = _fixed_env(row, "h100_0", fast)
                expected = env_from_inputs(template_inputs(row, agentx_fast=fast), "h100_0", fast)
                assert list(built.items()) == list(expected.items())


def test_a_server_configurations_environments_change_only_what_the_point_fields_feed():
    repo = load_inferencex(DirSource(FIXTURE))
    rows = default_rows(tool_inputs(FIXTURE), sorted(repo.configs), all_evals=True)
    checked = 0
    for _, row in [*rows.throughput, *rows.evals]:
        for field in sorted(POINT_FIELDS):
            variants = [{**row, field: value} for value in (None, True, False, 0, 7, [3, 5], "x_y", "")]
            variants.append({k: v for k, v in row.items() if k != field})
            for other in variants:
                try:
                    expected = template_env(other, "runner_0")
                except (KeyError, TypeError):  # a row the template itself cannot run
                    continue
                envs, keys = server_envs([row, other], "runner_0")
                assert list(envs[1].items()) == list(expected.items()), (field, other)
                if keys is not None:  # the keys said to vary are the only ones that do
                    assert {k for k, v in envs[0].items() if expected.get(k) != v} <= set(keys)
                checked += 1
    assert checked > 500


def test_filters_are_checked_and_frozen():
    assert PlanFilters(recipes=["a*"], conc=[1, 4]).recipes == ("a*",)
    for bad in ({"scope": "most"}, {"kind": "bench"}, {"conc": ["4"]}, {"max_matrix_jobs": 257}, {"fail_fast": 1}):
        with pytest.raises(TypeError):
            PlanFilters(**bad)
    filters = PlanFilters()
    with pytest.raises(AttributeError):
        filters.scope = "lowest"  # type: ignore[misc]
    assert filters.model_copy(update={"scope": "lowest"}).scope == "lowest" and filters.scope == "full"
    assert PlanFilters(conc=[4]) == PlanFilters(conc=(4,)) and hash(PlanFilters()) == hash(PlanFilters())


def test_records_dump_as_pydantic_did():
    assert PlanFilters(conc=[4]).model_dump(mode="json")["conc"] == [4]
    assert PlanFilters(conc=[4]).model_dump()["conc"] == (4,)
    row = RecipePlan(recipe="r", source="recipe", kind="sweep", runner_label="h", jobs=1, points=1, server_launches=1,
                     packed_launches=1, unpacked_launches=1, gpu_hours=0)
    assert row.model_dump()["gpu_hours"] == 0.0 and isinstance(row.gpu_hours, float)
    entry = MatrixEntry(job_id="j", recipe="r", runner_label="h", row={"a": None}, estimate_s=900)
    assert entry.model_dump(mode="json", exclude_none=True) == {
        "job_id": "j", "recipe": "r", "runner_label": "h", "row": {"a": None}, "estimate_s": 900.0}
    with pytest.raises(TypeError):
        MatrixEntry(job_id="j", recipe="r")  # runner_label is required
