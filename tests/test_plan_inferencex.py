"""Planning an InferenceX repository: its changelog decides, labels narrow, launches are counted."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bot.plan import PlanFilters, plan_change
from bot.plan.labels import filters_for_labels
from bot.recipes import RecipeError
from git_helpers import GIT_ENV, git  # noqa: F401

FIXTURE = Path(__file__).parent / "fixtures" / "inferencex"  # InferenceX-shaped, written for recipe-bot
AGENTIC = "llama5-fp8-h100-sglang-agentic-mtp"
MTP = "llama5-fp8-h100-sglang-mtp"


def commit(repo: Path) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", "change")
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURE, tmp_path, dirs_exist_ok=True)
    (tmp_path / "runners").mkdir()
    (tmp_path / "runners" / "launch_h100-lab.sh").write_text("#!/bin/bash\nexport MODEL=$MODEL_PATH\n")
    git(tmp_path, "init", "-q", "-b", "main")
    commit(tmp_path)
    return tmp_path


def append_entry(repo: Path, keys: list[str], extra: str = "") -> None:
    entry = "- config-keys:\n" + "".join(f"    - {k}\n" for k in keys)
    entry += '  description:\n    - "test"\n  pr-link: https://github.com/example-org/inferencex-fixture/pull/200\n' + extra
    with open(repo / "perf-changelog.yaml", "a") as handle:
        handle.write(entry)


def rows(plan) -> list[dict]:
    return [r for bucket in plan.inferencex.rows.values() for r in bucket]


def test_an_appended_entry_plans_its_config_with_a_point_per_concurrency_and_packed_launches(repo):
    base = git(repo, "rev-parse", "HEAD")
    append_entry(repo, [AGENTIC])
    plan = plan_change(repo, base, commit(repo), PlanFilters(canary=False))
    assert [t.name for t in plan.touched] == [AGENTIC]
    assert str(plan.touched[0].reasons[0]).startswith("perf-changelog.yaml entry appended")
    (row,) = plan.recipes
    assert (row.recipe, row.points) == (AGENTIC, 4 + 3 + 2 + 6)  # its four conc-lists
    assert row.server_launches == 16  # as InferenceX runs it: a launch per row, plus the eval row
    # honest packing: this repository has no benchmark scripts, so no configuration may claim to pack
    assert row.packed_launches == 16
    assert all(not p["packs"] and "no benchmark script" in str(p["why"]) for p in plan.inferencex.packing)
    assert set(plan.inferencex.rows) == {"single_node.agentic", "agentic_evals"}
    assert len(plan.inferencex.rows["single_node.agentic"]) == 15
    assert plan.inferencex.changelog[0].config_keys == [AGENTIC]


def test_the_matrices_carry_the_exact_rows(repo):
    base = git(repo, "rev-parse", "HEAD")
    append_entry(repo, [MTP])
    plan = plan_change(repo, base, commit(repo), PlanFilters(canary=False))
    (matrix,) = plan.inferencex.matrices
    assert matrix.runner_label == "h100"
    # conc-start 4..4; conc-start 8..32 doubling; conc-list [16, 64]
    assert sorted(e.row["conc"] for e in matrix.include if not e.row.get("eval-only")) == [4, 8, 16, 16, 32, 64]
    assert len({e.job_id for e in matrix.include}) == len(matrix.include) == 6 + 2  # + evals at 32 and 64


def test_a_deleted_changelog_line_fails_the_plan(repo):
    base = git(repo, "rev-parse", "HEAD")
    path = repo / "perf-changelog.yaml"
    path.write_text(path.read_text().replace("    - llama5-fp8-h100-dynamo-trt\n", "", 1))
    with pytest.raises(RecipeError, match="Deletions are not allowed in perf-changelog.yaml"):
        plan_change(repo, base, commit(repo))


def test_a_master_config_change_without_a_changelog_entry_is_not_run_but_named(repo):
    base = git(repo, "rev-parse", "HEAD")
    path = repo / "configs" / "nvidia-master.yaml"
    path.write_text(path.read_text().replace("sglang:v1.0.0-cu130", "sglang:v1.0.1-cu130"))
    plan = plan_change(repo, base, commit(repo))
    assert plan.touched == [] and rows(plan) == []  # InferenceX runs what its changelog declares
    assert any(n.startswith(f"{MTP}: changed without a perf-changelog.yaml entry") for n in map(str, plan.notes))


def test_plan_infra_run_in_the_repository_config_plans_what_a_change_touches(repo):
    (repo / ".github").mkdir()
    (repo / ".github" / "recipe-bot.yaml").write_text("plan:\n  infra: run\n")
    base = commit(repo)
    path = repo / "configs" / "nvidia-master.yaml"
    path.write_text(path.read_text().replace("sglang:v1.0.0-cu130", "sglang:v1.0.1-cu130"))
    plan = plan_change(repo, base, commit(repo))
    assert sorted(t.name for t in plan.touched) == ["llama5-fp8-h100-sglang", MTP]


def test_a_reformatted_master_config_plans_nothing(repo):
    base = git(repo, "rev-parse", "HEAD")
    path = repo / "configs" / "amd-master.yaml"
    path.write_text(path.read_text().replace(
        "conc-list: [ 4, 8, 16, 32 ]", "conc-list:\n          - 4\n          - 8\n          - 16\n          - 32"))
    plan = plan_change(repo, base, commit(repo))
    assert plan.touched == [] and rows(plan) == []


def test_an_infra_only_change_plans_nothing_and_names_the_configs_the_command_and_gpu_hours(repo):
    base = git(repo, "rev-parse", "HEAD")
    (repo / "runners" / "launch_h100-lab.sh").write_text("#!/bin/bash\nexport MODEL=\"$MODEL_PATH\"\n")
    plan = plan_change(repo, base, commit(repo))
    assert rows(plan) == [] and plan.gpu_hours == 0
    # h100, h100-multinode and cluster:h100-lab all hold h100-lab_* runners; the mi300x configs do not
    (note,) = [n for n in map(str, plan.notes) if n.startswith("InferenceX infra: runners/launch_h100-lab.sh changed")]
    assert "it affects 6 config(s)" in note
    assert (f"`/sweep gptoss-fp4-h100-sglang-agentic-hicache llama5-fp8-h100-dynamo-trt llama5-fp8-h100-sglang "
            f"{AGENTIC} {MTP} llama5-fp8-h100-trt`") in note
    assert "GPU-hours)" in note and "about 0 GPU-hours" not in note


def test_an_infra_change_beside_an_entry_runs_only_the_entry(repo):
    base = git(repo, "rev-parse", "HEAD")
    (repo / "runners" / "launch_h100-lab.sh").write_text("#!/bin/bash\nexport MODEL=\"$MODEL_PATH\"\n")
    append_entry(repo, [MTP])
    plan = plan_change(repo, base, commit(repo), PlanFilters(canary=False))
    assert [t.name for t in plan.touched] == [MTP]
    assert any("it affects 5 config(s)" in n and MTP not in n.split("(")[1] for n in map(str, plan.notes)
               if n.startswith("InferenceX infra:"))


def test_with_plan_infra_run_a_fleet_launcher_change_plans_every_config_of_its_runners(repo):
    (repo / ".github").mkdir()
    (repo / ".github" / "recipe-bot.yaml").write_text("plan:\n  infra: run\n")
    base = commit(repo)
    (repo / "runners" / "launch_h100-lab.sh").write_text("#!/bin/bash\nexport MODEL=\"$MODEL_PATH\"\n")
    plan = plan_change(repo, base, commit(repo))
    assert sorted(t.name for t in plan.touched) == [
        "gptoss-fp4-h100-sglang-agentic-hicache", "llama5-fp8-h100-dynamo-trt", "llama5-fp8-h100-sglang",
        AGENTIC, MTP, "llama5-fp8-h100-trt",
    ]
    assert "shared infra touched, 6 recipes affected: runners/launch_h100-lab.sh" in map(str, plan.notes)


def test_sweep_enabled_runs_the_lowest_concurrency_of_each_group_without_a_canary(repo):
    base = git(repo, "rev-parse", "HEAD")
    append_entry(repo, [AGENTIC])
    plan = plan_change(repo, base, commit(repo), filters_for_labels(["sweep-enabled"]))
    throughput = plan.inferencex.rows["single_node.agentic"]
    assert sorted((r["tp"], r["kv-offloading"], r["conc"]) for r in throughput) == [
        (4, "dram", 4), (4, "none", 1), (8, "dram", 8), (8, "none", 1)]
    assert plan.inferencex.canary is None


def test_full_sweep_fail_fast_has_a_canary_and_fail_fast_matrices(repo):
    base = git(repo, "rev-parse", "HEAD")
    append_entry(repo, ["llama5-fp8-h100-sglang*"])
    plan = plan_change(repo, base, commit(repo), filters_for_labels(["full-sweep-fail-fast"]))
    canary = plan.inferencex.canary.row
    assert canary["conc"] == 4 and canary.get("scenario-type") is None and canary["eval-only"] is False
    assert all(m.fail_fast for m in plan.inferencex.matrices)
    assert canary not in [e.row for m in plan.inferencex.matrices for e in m.include]


def test_the_evals_only_label_runs_only_eval_rows(repo):
    base = git(repo, "rev-parse", "HEAD")
    append_entry(repo, [MTP])
    plan = plan_change(repo, base, commit(repo), filters_for_labels(["evals-only"]))
    assert all(r.get("eval-only") for r in rows(plan)) and len(rows(plan)) == 2


def test_without_a_base_every_config_is_planned(repo):
    plan = plan_change(repo, None, None, PlanFilters(canary=False))
    assert len(plan.recipes) == 8
    throughput = sum(len(v) for k, v in plan.inferencex.rows.items() if "." in k)
    # per config: dynamo-trt 2 (multi-node rows carry their conc lists), sglang 1 + 5, sglang-mtp 1 + 3 + 2,
    # trt 2 + 2, the agentic one 15, hicache 2 + 2, mi300x agentic 3 + 5, mi300x disagg 1
    assert throughput == 2 + 6 + 6 + 4 + 15 + 4 + 8 + 1
    assert plan.inferencex.packed_launches == plan.inferencex.launches  # no scripts: nothing claims to pack


def test_an_append_only_entry_runs_only_the_rows_the_base_did_not_have(repo):
    base = git(repo, "rev-parse", "HEAD")
    path = repo / "configs" / "nvidia-master.yaml"
    path.write_text(path.read_text().replace("{ tp: 4, ep: 4, conc-list: [16, 64], spec-decoding: mtp }",
                                             "{ tp: 4, ep: 4, conc-list: [16, 64, 128], spec-decoding: mtp }"))
    append_entry(repo, [MTP], "  append-only: true\n")
    plan = plan_change(repo, base, commit(repo), PlanFilters(canary=False))
    assert [(r["tp"], r["ep"], r["conc"]) for r in rows(plan)] == [(4, 4, 128)]
    assert plan.inferencex.changelog[0].append_only


def test_the_infra_note_and_the_deletion_refusal_read_in_chinese(repo):
    from bot.inferencex.changelog import deletion_message

    base = git(repo, "rev-parse", "HEAD")
    (repo / "runners" / "launch_h100-lab.sh").write_text("#!/bin/bash\nexport MODEL=\"$MODEL_PATH\"\n")
    plan = plan_change(repo, base, commit(repo))
    (note,) = [n for n in plan.notes if str(n).startswith("InferenceX infra:")]
    assert note.render("zh").startswith("InferenceX 基础设施：runners/launch_h100-lab.sh 有改动；它影响 6 个")
    chinese = deletion_message("perf-changelog.yaml", "  pr-link: x").render("zh")
    assert chinese == "perf-changelog.yaml 中不允许删除。变更记录只允许追加。被删除的行：  pr-link: x"
