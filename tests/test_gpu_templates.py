"""InferenceX rows through the repository's own benchmark templates: the plan's kinds, limits and inputs, the
InferenceX gpu-run.yml that calls the templates (linted in an InferenceX-shaped tree), and the report's reading
of the templates' bmk_* artifacts."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bot.inferencex.templates import TemplateError, parse_template
from bot.report.template_results import row_result
from git_helpers import git
from ix_repo_helpers import append_entry, make_repo

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = ROOT / "tests" / "fixtures" / "ix-templates"
IX_GPU_RUN = ROOT / ".github" / "inferencex" / "gpu-run.yml"
BIN = Path(sys.executable).parent
FIXED = {"priority", "queue-token", "ref"}  # what gpu-run.yml fills itself, not from the row

MULTI_TEMPLATE = """on:
  workflow_call:
    inputs:
      scenario-type: {type: string, default: fixed-seq-len}
jobs:
  benchmark:
    runs-on: x
    timeout-minutes: ${{ inputs.scenario-type == 'agentic-coding' && 780 || 480 }}
    steps: [{run: 'true'}]
"""


def load(path: Path) -> dict:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    doc["on"] = doc.pop(True, doc.get("on"))
    return doc


@pytest.mark.parametrize("scenario, minutes", [("agentic-coding", 780), ("fixed-seq-len", 480)])
def test_a_multi_node_rows_limit_is_the_templates_timeout_for_its_scenario(scenario, minutes):
    assert parse_template("m.yml", MULTI_TEMPLATE).minutes({"scenario-type": scenario}) == minutes


@pytest.mark.parametrize("timeout", ["${{ inputs.tp * 60 }}", "'soon'"])
def test_a_timeout_recipe_bot_cannot_evaluate_is_refused_naming_the_file(timeout):
    template = parse_template("t.yml", MULTI_TEMPLATE.replace(
        "${{ inputs.scenario-type == 'agentic-coding' && 780 || 480 }}", timeout))
    with pytest.raises(TemplateError, match="t.yml: timeout-minutes"):
        template.minutes({})


def _plan(tmp_path: Path, with_templates: bool) -> tuple[dict[str, str], dict]:
    repo, _ = make_repo(tmp_path)
    if with_templates:  # the rehearsal's template (its inputs: everything gpu-run.yml passes) over the fixture's
        shutil.copytree(TEMPLATES, repo, dirs_exist_ok=True)
    else:
        shutil.rmtree(repo / ".github" / "workflows")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", "templates")
    base = git(repo, "rev-parse", "HEAD")
    head = append_entry(repo, ["tinyq-bf16-cpu-vllm"])
    out = tmp_path / "outputs.txt"
    done = subprocess.run([sys.executable, "-m", "bot", "plan", "--repo", str(repo), "--base", base, "--head", head,
                           "--allowed-from", base, "--format", "json", "--scope", "lowest", "--jobs-dir",
                           str(tmp_path / "jobs"), "--actions-outputs", str(out)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = dict(line.split("=", 1) for line in out.read_text().splitlines())
    return lines, json.loads(done.stdout)


def test_rows_of_a_repository_with_templates_run_through_them_with_the_templates_limit_and_inputs(tmp_path):
    outputs, plan = _plan(tmp_path, with_templates=True)
    (label,) = json.loads(outputs["labels"])["include"]
    assert label["kind"] == "single-node"
    rows = json.loads(label["include"])["include"]
    assert rows and all(r["backend"] == "single-node" and r["limit_s"] == "30000.0" for r in rows)
    entries = [e for m in plan["inferencex"]["matrices"] for e in m["include"]]
    assert {e["limit_source"] for e in entries} == {".github/workflows/benchmark-tmpl.yml timeout-minutes: 500"}
    declared = load(TEMPLATES / ".github/workflows/benchmark-tmpl.yml")["on"]["workflow_call"]["inputs"]
    for made in rows:
        assert set(made["inputs"]) <= set(declared)
        missing = {k for k, v in declared.items() if v.get("required") and k not in FIXED} - set(made["inputs"])
        assert not missing, missing
        assert isinstance(made["inputs"]["dp-attn"], bool) and made["inputs"]["tp"] == "1"


def test_rows_of_a_repository_without_templates_keep_recipe_bots_own_run(tmp_path):
    outputs, plan = _plan(tmp_path, with_templates=False)
    (label,) = json.loads(outputs["labels"])["include"]
    assert "kind" not in label
    assert all("inputs" not in r and r["backend"] == "local" for r in json.loads(label["include"])["include"])
    assert all(e["limit_source"].startswith("gpu.yml") for m in plan["inferencex"]["matrices"] for e in m["include"])


def test_the_inferencex_gpu_run_keeps_gpu_runs_own_job_and_inputs():
    ours, theirs = load(ROOT / ".github/workflows/gpu-run.yml"), load(IX_GPU_RUN)
    assert theirs["on"]["workflow_call"]["inputs"].keys() == ours["on"]["workflow_call"]["inputs"].keys()
    run = dict(theirs["jobs"]["run"])
    assert run.pop("if") == "inputs.kind == 'recipe-bot'"
    assert run == ours["jobs"]["run"]


@pytest.mark.parametrize("job, template", [("single-node", "./.github/workflows/benchmark-tmpl.yml"),
                                           ("multi-node", "./.github/workflows/benchmark-multinode-tmpl.yml")])
def test_each_template_job_passes_the_rows_inputs_with_least_privilege(job, template):
    called = load(IX_GPU_RUN)["jobs"][job]
    assert called["uses"] == template and called["if"] == f"inputs.kind == '{job}'"
    assert called["permissions"] == {"contents": "read"} and called["secrets"] == "inherit"
    assert "environment" not in called  # the App's key is the recipe-bot environment's, never the template's
    assert called["with"]["ref"] == "${{ inputs.sha }}"
    for name, value in called["with"].items():
        assert name in FIXED or value == f"${{{{ matrix.inputs['{name}'] }}}}", name


def test_the_single_node_template_job_passes_only_what_the_fixture_template_declares():
    declared = load(TEMPLATES / ".github/workflows/benchmark-tmpl.yml")["on"]["workflow_call"]["inputs"]
    assert set(load(IX_GPU_RUN)["jobs"]["single-node"]["with"]) <= set(declared)


def test_the_inferencex_workflows_lint_clean_beside_a_template(tmp_path):
    workflows = tmp_path / ".github" / "workflows"
    workflows.mkdir(parents=True)
    shutil.copy(ROOT / ".github/workflows/gpu.yml", workflows)
    shutil.copy(IX_GPU_RUN, workflows / "gpu-run.yml")
    shutil.copy(TEMPLATES / ".github/workflows/benchmark-tmpl.yml", workflows)
    lint = subprocess.run([str(BIN / "actionlint"), "-no-color", *sorted(map(str, workflows.glob("*.yml")))],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert lint.returncode == 0 and lint.stdout == "", lint.stdout + lint.stderr
    audit = subprocess.run([str(BIN / "zizmor"), "--offline", "--no-progress", "--format", "json", str(workflows)],
                           capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert audit.returncode == 0 and json.loads(audit.stdout) == [], audit.stdout + audit.stderr


ROW = {"exp-name": "tinyq_1k1k", "runner": "cpu", "image": "i", "model": "m", "model-prefix": "tinyq", "precision": "bf16",
       "framework": "vllm", "tp": 2, "ep": 1, "dp-attn": False, "conc": 4, "isl": 1024, "osl": 1024,
       "max-model-len": 2048, "spec-decoding": "none", "disagg": False, "recipe-fingerprint": "ab" * 20}
ENTRY = {"job_id": "tinyq--c4", "recipe": "tinyq-bf16-cpu-vllm", "runner_label": "cpu", "backend": "single-node", "row": ROW}
NAME = ("agg_tinyq_1k1k_bf16_vllm_tp2-pp1-dcp1-pcp1-ep1-dpafalse_disagg-false_spec-none_conc4_cpu-local_0"
        f"_recipe-{'ab' * 8}.json")
AGG = {"conc": 4, "isl": 1024, "osl": 1024, "tput_per_gpu": 50.0, "output_tput_per_gpu": 25.0,
       "input_tput_per_gpu": 25.0, "median_ttft": 0.5, "median_intvty": 20.0}


def test_a_rows_agg_file_from_any_runner_becomes_its_passed_result_with_the_templates_figures():
    result = row_result(ENTRY, {NAME: AGG}, "f" * 40, "/sweep")
    assert result.status == "passed" and result.gpus == 2
    (point,) = result.cases[0].points
    assert point.concurrency == 4 and point.metrics.tput_per_gpu == 50.0
    assert point.metrics.total_token_throughput == 100.0 and point.metrics.ttft_ms["median"] == 500.0


@pytest.mark.parametrize("files", [
    pytest.param({}, id="no-artifact"),
    pytest.param({NAME.replace("_conc4_", "_conc8_"): AGG}, id="another-rows-file"),
    pytest.param({NAME.replace(f"_recipe-{'ab' * 8}", f"_recipe-{'cd' * 8}"): AGG}, id="another-fingerprint"),
])
def test_a_row_without_its_agg_file_fails_naming_the_bmk_artifact(files):
    result = row_result(ENTRY, files, None, None)
    assert result.status == "failed" and "no bmk_ artifact" in str(result.reason)


def test_the_retry_job_reads_past_inferencex_row_job_files(tmp_path):
    # plan/jobs holds one file per InferenceX row ({"inferencex": ...}); the retry job retries only
    # recipe-bot's own jobs, and a row's file must not stop it (it did: "not a readable plan").
    from bot.runner.retry import load_plan

    (tmp_path / "row.json").write_text(json.dumps({"inferencex": {"job_id": "r", "row": ROW}}), encoding="utf-8")
    assert load_plan(tmp_path) == []
