"""InferenceX configs, changelog and labels, on InferenceX-shaped fixtures written for recipe-bot.

The rows are what the fixture's own tools (tests/fixtures/ix-tools/utils, our scripts with the CLI of
InferenceX's) print, run the way recipe-bot runs InferenceX's; compatibility with InferenceX's real tools
is by construction (recipe-bot runs them) and shown by bench/replay_inferencex_prs.py. Every expected
value is derived by hand from tests/fixtures/inferencex.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bot.inferencex.changelog import ConfigKeyError, appended_entries, appended_text, changelog_rows, expand_config_keys
from bot.inferencex.own_tools import ToolInputs
from bot.inferencex.launches import launch_groups, names_file, shared_reason
from bot.inferencex.repo import load_inferencex
from bot.plan.labels import filters_for_labels
from bot.plan.model import PlanError
from bot.recipes.errors import RecipeError
from bot.recipes.sources import DirSource
from ix_repo_helpers import tool_rows

FIXTURE = Path(__file__).parent / "fixtures" / "inferencex"
AGENTIC = "llama5-fp8-h100-sglang-agentic-mtp"
MTP = "llama5-fp8-h100-sglang-mtp"


def lay_out(root: Path) -> Path:
    """A copy of the fixture repository (configs/*-master.yaml, configs/runners.yaml, the changelog) to edit."""
    shutil.copytree(FIXTURE, root, dirs_exist_ok=True)
    return root


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return load_inferencex(DirSource(lay_out(tmp_path_factory.mktemp("ix"))))


def canonical(rows) -> list[str]:
    return sorted(json.dumps(row, sort_keys=True) for row in rows)


def test_agentic_entry_has_a_point_per_concurrency_and_a_launch_per_server_configuration(repo):
    rows = tool_rows(FIXTURE, [AGENTIC])
    groups = launch_groups(rows, {i: AGENTIC for i in range(len(rows))})
    assert len(rows) == 4 + 3 + 2 + 6  # the four conc-lists
    assert sorted(g.points for g in groups) == [2, 3, 4, 6]
    evals = tool_rows(FIXTURE, [AGENTIC], "evals-only")  # the highest concurrency
    assert [r["exp-name"] for r in evals] == ["llama5_tp8_conc16_kvdram-hicache_spec-mtp"]


@pytest.mark.parametrize("key, budget", [
    # cluster:h100-lab: 1,000,000 MiB x 1,048,576 B x 0.50 x tp/8 GPUs = 524.288 GB (tp 8), 262.144 GB (tp 4)
    (AGENTIC, {(8, "none"): 0, (8, "dram"): 524, (4, "none"): 0, (4, "dram"): 262}),
    # cluster:mi300x-lab has 4,000,000 MiB, capped at 2,861,022 MiB: x 1,048,576 x 0.80 = 2399.999 GB
    ("llama5-fp8-mi300x-sglang-agentic-mtp", {(4, "none"): 0, (8, "dram"): 2399}),
], ids=["share-of-node", "capped-node-dram"])
def test_dram_budget_is_the_capped_node_dram_times_utilisation_times_gpu_share(repo, key, budget):
    rows = tool_rows(FIXTURE, [key])
    assert {(r["tp"], r["kv-offloading"]): r["total-cpu-dram-gb"] for r in rows} == budget


@pytest.mark.parametrize("patterns,expected", [
    (["llama5-fp8-h100-sglang"], ["llama5-fp8-h100-sglang"]),
    (["llama5-fp8-h100-sglang*"], ["llama5-fp8-h100-sglang", "llama5-fp8-h100-sglang-agentic-mtp",
                                   "llama5-fp8-h100-sglang-mtp"]),
    (["*-mi300x-*"], ["llama5-fp8-mi300x-sglang-agentic-mtp", "llama5-fp8-mi300x-sglang-disagg"]),
], ids=["exact", "trailing-wildcard", "inner-wildcards"])
def test_config_key_wildcards(repo, patterns, expected):
    assert sorted(expand_config_keys(patterns, list(repo.configs))) == expected


@pytest.mark.parametrize("pattern", ["no-such-key", "mistral*"], ids=["unknown-key", "wildcard-matching-nothing"])
def test_config_keys_that_match_nothing_are_errors(repo, pattern):
    with pytest.raises(ConfigKeyError):
        expand_config_keys([pattern], list(repo.configs))


# ---- perf-changelog.yaml: only appended entries run --------------------------------------------------

BASE_LOG = (FIXTURE / "perf-changelog.yaml").read_bytes()
ENTRY = b"""- config-keys:
    - llama5-fp8-h100-sglang*
  description:
    - "Bump the image"
  pr-link: https://github.com/example-org/inferencex-fixture/pull/200
"""


def test_only_appended_entries_run(repo):
    entries = appended_entries(repo, BASE_LOG, BASE_LOG + ENTRY)
    assert [sorted(e.keys) for e in entries] == [["llama5-fp8-h100-sglang", "llama5-fp8-h100-sglang-agentic-mtp",
                                                  "llama5-fp8-h100-sglang-mtp"]]
    assert entries[0].line == len(BASE_LOG.splitlines()) + 1


def test_an_unchanged_changelog_runs_nothing(repo):
    assert appended_entries(repo, BASE_LOG, BASE_LOG) == []


def test_a_deleted_line_is_an_error_naming_the_line():
    lines = BASE_LOG.splitlines(keepends=True)
    head = b"".join(lines[:2] + lines[3:]) + ENTRY
    with pytest.raises(RecipeError) as caught:
        appended_text(BASE_LOG, head, "perf-changelog.yaml")
    (problem,) = caught.value.problems
    assert problem.line == 3 and "Deletions are not allowed in perf-changelog.yaml" in str(problem.message)


def test_removing_a_blank_line_is_not_a_deletion():
    lines = BASE_LOG.splitlines(keepends=True)
    blank = next(i for i, line in enumerate(lines) if not line.strip())
    text, _ = appended_text(BASE_LOG, b"".join(lines[:blank] + lines[blank + 1:]), "perf-changelog.yaml")
    assert text == ""


@pytest.mark.parametrize("entry,words", [
    (ENTRY.replace(b"  pr-link", b"  pr-lnk"), "unknown key"),
    (ENTRY.replace(b"llama5-fp8-h100-sglang*", b"mistral*"), "matches no config key"),
    (ENTRY.replace(b"  description:\n    - \"Bump the image\"\n", b""), "required"),
], ids=["unknown-field", "wildcard-matching-nothing", "missing-description"])
def test_a_bad_appended_entry_names_its_line(repo, entry, words):
    with pytest.raises(RecipeError) as caught:
        appended_entries(repo, BASE_LOG, BASE_LOG + entry)
    (problem,) = caught.value.problems
    assert words in str(problem)
    assert problem.file == "perf-changelog.yaml" and problem.line > len(BASE_LOG.splitlines())


def logged_rows(tmp_path: Path, entry: bytes, **flags):
    """The rows of the fixture's own processor for the head changelog BASE_LOG + entry, each with its key."""
    head = lay_out(tmp_path / "head")
    (head / "perf-changelog.yaml").write_bytes(BASE_LOG + entry)
    repo = load_inferencex(DirSource(head))
    entries = appended_entries(repo, BASE_LOG, BASE_LOG + entry)
    inputs = ToolInputs(tools=DirSource(FIXTURE), head=DirSource(head), base=DirSource(FIXTURE), repo=repo)
    return changelog_rows(inputs, entries, **flags)


def test_changelog_rows_are_the_processors_throughput_and_eval_rows_each_with_its_config(tmp_path):
    rows = logged_rows(tmp_path, ENTRY.replace(b"sglang*", b"sglang-mtp"))
    # the processor adds recipe-fingerprint to throughput rows only
    assert all(len(r["recipe-fingerprint"]) == 64 for _, r in rows.throughput)
    assert not any("recipe-fingerprint" in r for _, r in rows.evals)
    assert canonical([r for _, r in rows.throughput]) == canonical(tool_rows(FIXTURE, [MTP]))
    assert len(rows.throughput) == 1 + 3 + 2 and len(rows.evals) == 2
    assert {k for k, _ in [*rows.throughput, *rows.evals]} == {MTP}
    assert set(rows.buckets()) == {"single_node.8k1k", "evals"}


def test_rows_of_several_configs_are_each_given_to_the_config_that_makes_them(tmp_path):
    rows = logged_rows(tmp_path, ENTRY)
    owners = {(r["exp-name"], r["spec-decoding"], r.get("scenario-type")): k for k, r in rows.throughput}
    assert set(owners.values()) == {"llama5-fp8-h100-sglang", MTP, AGENTIC}
    assert all(k == AGENTIC for (_, _, scenario), k in owners.items() if scenario == "agentic-coding")
    assert all(k == MTP for (_, spec, scenario), k in owners.items() if spec == "mtp" and scenario is None)


def test_an_evals_only_entry_runs_only_evals(tmp_path):
    entry = ENTRY.replace(b"sglang*", b"sglang-mtp") + b"  evals-only: true\n"
    rows = logged_rows(tmp_path, entry)
    # one eval group (tp and ep vary, dp-attn does not); eligible concurrencies 16, 32, 64: the highest
    # (64) and the median (32) run their evals
    assert rows.throughput == [] and sorted(r["conc"] for _, r in rows.evals) == [32, 64]


def test_an_agentic_scenario_entry_limits_the_rows(tmp_path):
    entry = ENTRY + b"  scenario-type:\n    - agentic-coding\n"
    rows = logged_rows(tmp_path, entry)
    assert {r.get("scenario-type") for _, r in rows.throughput} == {"agentic-coding"}
    assert set(rows.buckets()) == {"single_node.agentic", "agentic_evals"}


# ---- sweep labels ---------------------------------------------------------------------------------

def test_sweep_enabled_keeps_the_lowest_concurrency_of_each_parallelism_group(repo):
    trimmed = tool_rows(FIXTURE, [MTP], trim=True)
    assert sorted((r["tp"], r["ep"], r["conc"]) for r in trimmed) == [(4, 1, 8), (4, 4, 16), (8, 1, 4)]


def test_sweep_enabled_trims_multinode_concurrency_lists(repo):
    assert [r["conc"] for r in tool_rows(FIXTURE, ["llama5-fp8-mi300x-sglang-disagg"], trim=True)] == [[4]]


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
    path.write_text(path.read_text().replace("  model-prefix: llama5\n", "  model-prefix: llama5\n  modle: x\n", 1))
    repo = load_inferencex(DirSource(root))
    (problem,) = repo.problems["llama5-fp8-h100-dynamo-trt"]
    assert "llama5-fp8-h100-dynamo-trt" not in repo.configs
    assert (problem.file, problem.line) == ("configs/nvidia-master.yaml", 9)
    assert problem.field == "llama5-fp8-h100-dynamo-trt.modle"
    assert "model-prefix" in problem.accepted


def test_an_unknown_runner_label_is_recorded_and_the_config_kept(tmp_path):
    root = lay_out(tmp_path)
    path = root / "configs" / "amd-master.yaml"
    path.write_text(path.read_text().replace("runner: cluster:mi300x-lab", "runner: cluster:mi999"))
    repo = load_inferencex(DirSource(root))
    problems = repo.all_problems()
    assert problems and all("cluster:mi999" in str(p) for p in problems)
    assert "mi300x-disagg" in problems[0].accepted
    assert all(k in repo.configs for k in repo.problems)  # InferenceX still generates its rows


@pytest.mark.parametrize("path,key,expected", [
    ("benchmarks/single_node/agentic/llama5_fp8_h100_sglang_mtp.sh", AGENTIC, True),
    ("benchmarks/single_node/agentic/llama5_fp8_h100_sglang_mtp.sh", MTP, False),
    ("benchmarks/single_node/fixed_seq_len/llama5_fp8_h100_mtp.sh", MTP, True),
    ("benchmarks/single_node/fixed_seq_len/llama5_fp8_h100_mtp.sh", "llama5-fp8-h100-sglang", False),
    ("benchmarks/single_node/fixed_seq_len/llama5_fp8_h100_trt.sh", "llama5-fp8-h100-sglang", False),
    ("benchmarks/single_node/fixed_seq_len/llama5_fp8_h100_trt.sh", "llama5-fp8-h100-trt", True),
    ("benchmarks/multi_node/srt-slurm-recipes/trtllm/h100-fp8/8k1k/mtp/ctx1_gen2_dep8_mtp2.yaml",
     "llama5-fp8-h100-dynamo-trt", True),
], ids=["agentic-script", "agentic-script-not-fixed-seq", "mtp-script", "mtp-script-not-plain",
        "trt-script-not-sglang", "trt-script", "srt-slurm-recipe"])
def test_files_a_config_names(repo, path, key, expected):
    assert names_file(repo, key, path) is expected


def test_runner_launch_scripts_and_the_benchmark_library_are_shared_infra(repo):
    assert shared_reason(repo, AGENTIC, "runners/launch_h100-lab.sh")
    assert shared_reason(repo, "llama5-fp8-h100-sglang", "runners/launch_h100-cloud.sh")  # h100 holds h100-cloud_0
    assert shared_reason(repo, AGENTIC, "runners/launch_h100-cloud.sh") is None  # cluster:h100-lab does not
    assert shared_reason(repo, "llama5-fp8-mi300x-sglang-agentic-mtp", "runners/launch_h100-lab.sh") is None
    assert shared_reason(repo, "llama5-fp8-mi300x-sglang-agentic-mtp", "benchmarks/benchmark_lib.sh")
