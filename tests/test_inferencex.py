"""InferenceX compatibility: the sample's configs give exactly the rows InferenceX's own generator gave."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bot.inferencex.changelog import appended_entries, appended_text, changelog_rows
from bot.inferencex.generate import ConfigKeyError, expand_config_keys, generate, trim_conc
from bot.inferencex.contract import matrix_row
from bot.inferencex.launches import launch_groups, names_file, shared_reason
from bot.inferencex.repo import load_inferencex
from bot.plan.labels import filters_for_labels
from bot.plan.model import PlanError
from bot.recipes.errors import RecipeError
from bot.recipes.sources import DirSource

FIXTURE = Path(__file__).parent / "fixtures" / "inferencex"
EXPECTED = json.loads((FIXTURE / "expected-test-config.json").read_text())
CASES = [(key, mode) for key, modes in EXPECTED.items() for mode in modes]
AGENTIC = "qwen3.5-fp4-b200-sglang-agentic-mtp"


def lay_out(root: Path) -> Path:
    """The sample as an InferenceX repository: configs/*-master.yaml, configs/runners.yaml, the changelog."""
    (root / "configs").mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURE / "nvidia-master.sample.yaml", root / "configs" / "nvidia-master.yaml")
    shutil.copy(FIXTURE / "amd-master.sample.yaml", root / "configs" / "amd-master.yaml")
    shutil.copy(FIXTURE / "runners.yaml", root / "configs" / "runners.yaml")
    shutil.copy(FIXTURE / "perf-changelog.sample.yaml", root / "perf-changelog.yaml")
    return root


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return load_inferencex(DirSource(lay_out(tmp_path_factory.mktemp("ix"))))


def canonical(rows) -> list[str]:
    return sorted(json.dumps(row, sort_keys=True) for row in rows)


@pytest.mark.parametrize("key,mode", CASES, ids=[f"{k}[{m}]" for k, m in CASES])
def test_rows_match_inferencex_generator(repo, key, mode):
    rows = generate(repo.configs, repo.runners, [key], mode)
    assert canonical(rows) == canonical(EXPECTED[key][mode])


def test_the_sample_covers_every_key_and_mode():
    assert len(CASES) == 24 and {m for _, m in CASES} == {"default", "no-evals", "evals-only"}


def test_agentic_entry_has_32_points_that_need_4_launches_when_packed(repo):
    rows = generate(repo.configs, repo.runners, [AGENTIC], "no-evals")
    groups = launch_groups(rows, {i: AGENTIC for i in range(len(rows))})
    assert len(rows) == 32
    assert sorted(g.points for g in groups) == [5, 5, 7, 15]
    evals = generate(repo.configs, repo.runners, [AGENTIC], "evals-only")
    assert [r["exp-name"] for r in evals] == ["qwen3.5_tp4_conc72_kvdram-hicache_spec-mtp"]


def test_dram_budget_matches_the_worked_example(repo):
    rows = generate(repo.configs, repo.runners, [AGENTIC], "no-evals")
    budget = {(r["tp"], r["kv-offloading"]): r["total-cpu-dram-gb"] for r in rows}
    assert budget == {(4, "none"): 0, (4, "dram"): 1199, (2, "none"): 0, (2, "dram"): 599}


@pytest.mark.parametrize("patterns,expected", [
    (["qwen3.5-fp4-b200-sglang"], ["qwen3.5-fp4-b200-sglang"]),
    (["qwen3.5-fp4-b200-sglang*"], ["qwen3.5-fp4-b200-sglang", "qwen3.5-fp4-b200-sglang-agentic-mtp",
                                    "qwen3.5-fp4-b200-sglang-mtp"]),
    (["*-mi355x-*"], ["qwen3.5-fp4-mi355x-sglang-agentic-mtp", "qwen3.5-fp4-mi355x-sglang-disagg"]),
], ids=["exact", "trailing-wildcard", "inner-wildcards"])
def test_config_key_wildcards(repo, patterns, expected):
    assert sorted(expand_config_keys(patterns, list(repo.configs))) == expected


@pytest.mark.parametrize("pattern", ["no-such-key", "gpt*"], ids=["unknown-key", "wildcard-matching-nothing"])
def test_config_keys_that_match_nothing_are_errors(repo, pattern):
    with pytest.raises(ConfigKeyError):
        expand_config_keys([pattern], list(repo.configs))


# ---- perf-changelog.yaml: only appended entries run --------------------------------------------------

BASE_LOG = (FIXTURE / "perf-changelog.sample.yaml").read_bytes()
ENTRY = b"""- config-keys:
    - qwen3.5-fp4-b200-sglang*
  description:
    - "Bump the image"
  pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/XXX
"""


def test_only_appended_entries_run(repo):
    entries = appended_entries(repo, BASE_LOG, BASE_LOG + ENTRY)
    assert [sorted(e.keys) for e in entries] == [["qwen3.5-fp4-b200-sglang", "qwen3.5-fp4-b200-sglang-agentic-mtp",
                                                  "qwen3.5-fp4-b200-sglang-mtp"]]
    assert entries[0].line == len(BASE_LOG.splitlines()) + 1


def test_an_unchanged_changelog_runs_nothing(repo):
    assert appended_entries(repo, BASE_LOG, BASE_LOG) == []


def test_a_deleted_line_is_an_error_naming_the_line():
    lines = BASE_LOG.splitlines(keepends=True)
    head = b"".join(lines[:2] + lines[3:]) + ENTRY
    with pytest.raises(RecipeError) as caught:
        appended_text(BASE_LOG, head, "perf-changelog.yaml")
    (problem,) = caught.value.problems
    assert problem.line == 3 and "deletions are not allowed" in problem.message


def test_removing_a_blank_line_is_not_a_deletion():
    lines = BASE_LOG.splitlines(keepends=True)
    blank = next(i for i, line in enumerate(lines) if not line.strip())
    text, _ = appended_text(BASE_LOG, b"".join(lines[:blank] + lines[blank + 1:]), "perf-changelog.yaml")
    assert text == ""


@pytest.mark.parametrize("entry,words", [
    (ENTRY.replace(b"  pr-link", b"  pr-lnk"), "unknown key"),
    (ENTRY.replace(b"qwen3.5-fp4-b200-sglang*", b"llama*"), "matches no config key"),
    (ENTRY.replace(b"  description:\n    - \"Bump the image\"\n", b""), "required"),
], ids=["unknown-field", "wildcard-matching-nothing", "missing-description"])
def test_a_bad_appended_entry_names_its_line(repo, entry, words):
    with pytest.raises(RecipeError) as caught:
        appended_entries(repo, BASE_LOG, BASE_LOG + entry)
    (problem,) = caught.value.problems
    assert words in str(problem)
    assert problem.file == "perf-changelog.yaml" and problem.line > len(BASE_LOG.splitlines())


def test_changelog_rows_are_no_evals_plus_evals_only(repo):
    entries = appended_entries(repo, BASE_LOG, BASE_LOG + ENTRY.replace(b"sglang*", b"sglang-mtp"))
    rows = changelog_rows(repo, entries)
    expected = EXPECTED["qwen3.5-fp4-b200-sglang-mtp"]
    # InferenceX's changelog processor adds recipe-fingerprint to throughput rows only
    assert all(len(r.pop("recipe-fingerprint")) == 64 for _, r in rows.throughput)
    # ... and its output contract fills eval-only: false into fixed-seq-len rows
    assert canonical([r for _, r in rows.throughput]) == canonical(map(matrix_row, expected["no-evals"]))
    assert canonical([r for _, r in rows.evals]) == canonical(map(matrix_row, expected["evals-only"]))
    assert set(rows.buckets()) == {"single_node.8k1k", "evals"}


def test_an_evals_only_entry_runs_only_evals(repo):
    entry = ENTRY.replace(b"sglang*", b"sglang-mtp") + b"  evals-only: true\n"
    rows = changelog_rows(repo, appended_entries(repo, BASE_LOG, BASE_LOG + entry))
    assert rows.throughput == [] and len(rows.evals) == 4


def test_an_agentic_scenario_entry_limits_the_rows(repo):
    entry = ENTRY + b"  scenario-type:\n    - agentic-coding\n"
    rows = changelog_rows(repo, appended_entries(repo, BASE_LOG, BASE_LOG + entry))
    assert {r.get("scenario-type") for _, r in rows.throughput} == {"agentic-coding"}
    assert set(rows.buckets()) == {"single_node.agentic", "agentic_evals"}


# ---- sweep labels ---------------------------------------------------------------------------------

def test_sweep_enabled_keeps_the_lowest_concurrency_of_each_parallelism_group(repo):
    rows = generate(repo.configs, repo.runners, ["qwen3.5-fp4-b200-sglang-mtp"], "no-evals")
    trimmed = trim_conc(rows)
    assert sorted((r["tp"], r["ep"], r["conc"]) for r in trimmed) == [(2, 1, 4), (2, 2, 16), (4, 1, 4)]


def test_sweep_enabled_trims_multinode_concurrency_lists(repo):
    rows = generate(repo.configs, repo.runners, ["qwen3.5-fp4-mi355x-sglang-disagg"], "no-evals")
    assert [r["conc"] for r in trim_conc(rows)] == [[8]]


@pytest.mark.parametrize("labels,scope,canary,fail_fast", [
    (["sweep-enabled"], "lowest", False, False),
    (["full-sweep-fail-fast"], "full", True, True),
    (["full-sweep-enabled"], "full", True, False),
    (["full-sweep-fail-fast-no-canary"], "full", False, True),
    (["non-canary-full-sweep-enabled"], "full", False, False),
], ids=lambda v: v[0] if isinstance(v, list) else None)
def test_primary_labels_set_scope_canary_and_fail_fast(labels, scope, canary, fail_fast):
    filters = filters_for_labels(labels)
    assert (filters.scope, filters.canary, filters.fail_fast) == (scope, canary, fail_fast)


def test_modifier_labels():
    filters = filters_for_labels(["full-sweep-enabled", "evals-only", "all-evals", "unrelated"])
    assert filters.evals_only and filters.all_evals


def test_two_primary_labels_are_refused():
    with pytest.raises(PlanError, match="Pick exactly one"):
        filters_for_labels(["sweep-enabled", "full-sweep-enabled"])


# ---- configs as files: validation and what each config uses ---------------------------------------

def test_an_unknown_key_in_a_master_config_names_file_line_and_field(tmp_path):
    root = lay_out(tmp_path)
    path = root / "configs" / "nvidia-master.yaml"
    path.write_text(path.read_text().replace("  model-prefix: dsr1\n", "  model-prefix: dsr1\n  modle: x\n", 1))
    repo = load_inferencex(DirSource(root))
    (problem,) = repo.problems["dsr1-fp4-b200-dynamo-trt"]
    assert "dsr1-fp4-b200-dynamo-trt" not in repo.configs
    assert (problem.file, problem.line) == ("configs/nvidia-master.yaml", 5)
    assert problem.field == "dsr1-fp4-b200-dynamo-trt.modle"
    assert "model-prefix" in problem.accepted


def test_an_unknown_runner_label_is_recorded_and_the_config_kept(tmp_path):
    root = lay_out(tmp_path)
    path = root / "configs" / "amd-master.yaml"
    path.write_text(path.read_text().replace("runner: cluster:mi355x-amds", "runner: cluster:mi999"))
    repo = load_inferencex(DirSource(root))
    problems = repo.all_problems()
    assert problems and all("cluster:mi999" in str(p) for p in problems)
    assert "mi355x-disagg" in problems[0].accepted
    assert all(k in repo.configs for k in repo.problems)  # InferenceX still generates its rows


@pytest.mark.parametrize("path,key,expected", [
    ("benchmarks/single_node/agentic/qwen3.5_fp4_b200_sglang_mtp.sh", AGENTIC, True),
    ("benchmarks/single_node/agentic/qwen3.5_fp4_b200_sglang_mtp.sh", "qwen3.5-fp4-b200-sglang-mtp", False),
    ("benchmarks/single_node/fixed_seq_len/qwen3.5_fp4_b200_mtp.sh", "qwen3.5-fp4-b200-sglang-mtp", True),
    ("benchmarks/single_node/fixed_seq_len/qwen3.5_fp4_b200_mtp.sh", "qwen3.5-fp4-b200-sglang", False),
    ("benchmarks/single_node/fixed_seq_len/qwen3.5_fp4_b200_trt.sh", "qwen3.5-fp4-b200-sglang", False),
    ("benchmarks/single_node/fixed_seq_len/qwen3.5_fp4_b200_trt.sh", "qwen3.5-fp4-b200-trt", True),
    ("benchmarks/multi_node/srt-slurm-recipes/trtllm/b200-fp4/8k1k/mtp/ctx1_gen1_dep8_batch8_eplb0_mtp3.yaml",
     "dsr1-fp4-b200-dynamo-trt", True),
], ids=["agentic-script", "agentic-script-not-fixed-seq", "mtp-script", "mtp-script-not-plain",
        "trt-script-not-sglang", "trt-script", "srt-slurm-recipe"])
def test_files_a_config_names(repo, path, key, expected):
    assert names_file(repo, key, path) is expected


def test_runner_launch_scripts_and_the_benchmark_library_are_shared_infra(repo):
    assert shared_reason(repo, AGENTIC, "runners/launch_b200-dgxc.sh")
    assert shared_reason(repo, "qwen3.5-fp4-b200-sglang", "runners/launch_b200-dgxc.sh")  # b200 holds b200-dgxc_*
    assert shared_reason(repo, "qwen3.5-fp4-mi355x-sglang-agentic-mtp", "runners/launch_b200-dgxc.sh") is None
    assert shared_reason(repo, "qwen3.5-fp4-mi355x-sglang-agentic-mtp", "benchmarks/benchmark_lib.sh")
