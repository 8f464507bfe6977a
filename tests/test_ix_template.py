"""A row's environment read from the repository's benchmark template: the expression subset, the env
blocks in order, the run script's leading lines read (never run), secrets listed and kept out of files."""
from __future__ import annotations

from pathlib import Path

import pytest

from bot.inferencex import expr
from bot.inferencex import template as tmpl
from bot.inferencex.rowenv import environment, template_file
from bot.recipes.errors import RecipeError

FIXTURE = Path(__file__).parent / "fixtures" / "ix-repo"
INPUTS = {"scenario-type": "agentic-coding", "agentx-fast": False, "conc-list": '[\n  4,\n  16\n]', "tp": "8",
          "router": "", "backend": {"name": "hicache"}, "labels": ["a", "Full-Sweep"]}


def look(name: str):  # noqa: ANN201
    contexts = {"inputs": INPUTS, "github": {"run_attempt": "2"}, "runner": {"name": "h200-cw_0"}}
    if name not in contexts:
        raise expr.ExpressionError(name, expr.msg("the context %(name)s", name=name))
    return contexts[name]


@pytest.mark.parametrize(("expression", "value"), [
    ("inputs.scenario-type == 'agentic-coding' && 'agentic/' || 'fixed_seq_len/'", "agentic/"),
    ("inputs.scenario-type != 'agentic-coding' && 'agentic/' || 'fixed_seq_len/'", "fixed_seq_len/"),
    ("inputs.agentx-fast && '1' || '0'", "0"),
    ("!inputs.agentx-fast", True),
    ("inputs.scenario-type == 'AGENTIC-CODING'", True),  # GitHub compares strings ignoring case
    ("inputs.tp == 8", True),  # loose equality: the string converts to a number
    ("format('ci-attempt-{0}-{1}', github.run_attempt, inputs.tp)", "ci-attempt-2-8"),
    ("format('{{0}} {0}', 'x')", "{0} x"),
    ("join(fromJson(inputs.conc-list), ' ')", "4 16"),
    ("join(fromJson(inputs.conc-list), 'x')", "4x16"),
    ("toJSON(inputs.backend)", '{\n  "name": "hicache"\n}'),
    ("inputs['backend'].name", "hicache"),
    ("inputs.backend.nosuch", None),
    ("contains(inputs.labels, 'full-sweep')", True),
    ("contains('abc', 'B')", True),
    ("inputs.router && toJSON(inputs.router) || ''", ""),
    ("fromJSON('true') && 780 || 480", 780.0),
    ("runner.name", "h200-cw_0"),
], ids=lambda v: str(v)[:40])
def test_the_templates_expressions_evaluate_as_github_does(expression, value):
    assert expr.evaluate(expression, look) == value


@pytest.mark.parametrize(("expression", "names"), [
    ("hashFiles('**/x')", "hashFiles"),
    ("success()", "success"),
    ("github.event.pull_request.labels.*.name", ".*"),
    ("inputs.tp ==", "end"),
    ("steps.x.outputs.y", "steps"),
    ("format('{1}', 'a')", "{1}"),
], ids=["hashFiles", "a status function", "an object filter", "a cut expression", "an unknown context",
        "format without the argument"])
def test_an_expression_outside_the_subset_is_refused_naming_what(expression, names):
    with pytest.raises(expr.ExpressionError) as caught:
        expr.evaluate(expression, look)
    assert names in str(caught.value.what)


def _fixture(name: str) -> tmpl.Template:
    path = FIXTURE / name
    return tmpl.load(path.read_text(), name)


ROW = {"exp-name": "tinyq_1k1k", "precision": "bf16", "framework": "vllm", "tp": 2, "pp": 1, "dcp-size": 1,
       "pcp-size": 2, "ep": 1, "dp-attn": False, "disagg": False, "spec-decoding": "none", "conc": 4, "isl": 1024,
       "osl": 1024, "max-model-len": 2048, "runner": "cpu", "image": "i", "model": "m", "model-prefix": "tinyq",
       "recipe-fingerprint": "ab" * 32}


def test_a_rows_environment_is_the_templates_blocks_then_its_scripts_exports():
    made = environment(_fixture(template_file(ROW)), ROW, "cpu-local_0")
    env = made.env
    assert (env["RESULT_DIR"], env["AIPERF_FAILED_REQUEST_THRESHOLD"], env["SCENARIO_SUBDIR"]) == (
        "/workspace/results", "0.10", "fixed_seq_len/")
    assert env["DP_ATTENTION"] == "false" and env["RUNNER_NAME"] == "cpu-local_0"  # a boolean input, rendered
    assert env["GPU_COUNT"] == "4"  # the script's $((TP * PP_SIZE * PCP_SIZE)), read, not run
    assert env["RESULT_FILENAME"] == (
        "tinyq_1k1k_bf16_vllm_tp2-pp1-dcp1-pcp2-ep1-dpafalse_disagg-false_spec-none_conc4_cpu-local_0"
        "_recipe-abababababababab")
    assert made.computed == ["RESULT_FILENAME", "RESULT_FILENAME", "GPU_COUNT"] and made.unread == []


def test_a_multi_node_rows_environment_joins_the_concurrency_list_and_exports_its_settings():
    row = {**ROW, "framework": "dynamo-sglang", "conc": [4, 16], "disagg": True,
           "prefill": {"num-worker": 1, "tp": 2, "ep": 1, "dp-attn": False, "additional-settings": ["A=1", "B=x"]},
           "decode": {"num-worker": 1, "tp": 2, "ep": 1, "dp-attn": False}}
    env = environment(_fixture(template_file(row)), row, "cpu-local_0").env
    assert (env["CONC_LIST"], env["IS_MULTINODE"], env["A"], env["B"]) == ("4 16", "true", "1", "x")
    assert "_conc4x16_cpu-local_0_recipe-" in env["RESULT_FILENAME"] and "GPU_COUNT" not in env


def test_secrets_are_listed_and_filled_only_from_what_the_caller_hands_over():
    template = _fixture(template_file(ROW))
    assert template.secrets == {"HF_TOKEN": ["FIXTURE_HF_TOKEN"]}
    plain = environment(template, ROW, "r_0")
    assert plain.env["HF_TOKEN"] == "" and plain.secret_keys == {"HF_TOKEN": ["FIXTURE_HF_TOKEN"]}
    given = environment(template, ROW, "r_0", secrets={"FIXTURE_HF_TOKEN": "hf_x"})
    assert given.env["HF_TOKEN"] == "hf_x" and "HF_TOKEN" not in given.without_secrets()


def _with(text: str, old: str, new: str) -> tmpl.Template:
    assert old in text
    return tmpl.load(text.replace(old, new), tmpl.SINGLE_NODE)


def test_an_env_value_outside_the_subset_is_one_error_naming_the_template_file_and_line():
    text = (FIXTURE / tmpl.SINGLE_NODE).read_text()
    template = _with(text, "  HF_HUB_CACHE: '/tmp/fixture-hf-cache/'", "  HF_HUB_CACHE: ${{ hashFiles('x') }}")
    line = next(n for n, l in enumerate(text.splitlines(), 1) if l.startswith("  HF_HUB_CACHE:"))
    with pytest.raises(RecipeError) as caught:
        environment(template, ROW, "r_0")
    (problem,) = caught.value.problems
    assert (problem.file, problem.line) == (tmpl.SINGLE_NODE, line)
    english, chinese = problem.message.render("en"), problem.message.render("zh")
    assert "hashFiles('x')" in english and "hashFiles" in chinese and chinese != english


def test_a_script_line_that_would_set_a_variable_is_reported_and_never_run(tmp_path):
    marker = tmp_path / "ran"
    text = (FIXTURE / tmpl.SINGLE_NODE).read_text()
    template = _with(text, "          export GPU_COUNT=$((TP * PP_SIZE * PCP_SIZE))\n",
                     f"          export GPU_COUNT=$((TP * PP_SIZE * PCP_SIZE))\n          export X=$(touch {marker})\n")
    made = environment(template, ROW, "r_0")
    assert "X" not in made.env and len(made.unread) == 1 and "export X=$(touch" in made.unread[0]
    assert not marker.exists()


def test_a_workflow_without_a_launch_step_is_refused():
    with pytest.raises(RecipeError) as caught:
        tmpl.load("on: {workflow_call: {}}\njobs:\n  a:\n    steps:\n      - run: echo hi\n", "t.yml")
    assert "runners/launch_" in str(caught.value)


MULTI = {**ROW, "framework": "dynamo-sglang", "conc": [4, 16], "prefill": {"num-worker": 1, "tp": 2, "ep": 1},
         "decode": {"num-worker": 1, "tp": 2, "ep": 1}, "router": {"name": "dynamo-router"}}


@pytest.mark.parametrize(("row", "expected"), [
    (MULTI, {"run-eval": "false", "conc-list": "[\n  4,\n  16\n]", "router": '{\n  "name": "dynamo-router"\n}'}),
    ({**MULTI, "run-eval": True, "eval-only": True, "eval-conc": 16}, {"run-eval": "true", "eval-conc": "16"}),
    ({**MULTI, "eval-only": True, "eval-all-concs": True}, {"eval-conc": "4 16"}),
    ({**MULTI, "scenario-type": "agentic-coding", "eval-only": True, "eval-conc": 16, "isl": 1024},
     {"conc": "16", "run-eval": "true", "isl": "0", "scenario-type": "agentic-coding"}),
    ({**MULTI, "scenario-type": "agentic-coding", "isl": 1024}, {"conc": "4", "run-eval": "false", "isl": "0"}),
], ids=["throughput", "eval-at-its-concurrency", "eval-all-concs", "agentic-eval", "agentic"])
def test_a_multi_node_rows_inputs_are_what_run_sweeps_jobs_pass(row, expected):
    """run-sweep.yml's multi-node jobs: conc-list and router through toJson (indented), evals with
    run-eval true at eval-conc (all concurrencies under eval-all-concs), agentic rows at isl 0."""
    from bot.inferencex.templates import KIND_MULTI, row_inputs

    kind, inputs = row_inputs(row)
    assert kind == KIND_MULTI and {k: inputs.get(k) for k in expected} == expected
