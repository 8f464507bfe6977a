"""A PR that brings a new cluster: the rows on the runner label it adds to configs/runners.yaml are planned
and held (not dispatched) until its code owner approves the head; every other row runs (bot/plan/held.py)."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from bot.plan import plan_change
from bot.plan.allowed import allowed_at
from bot.plan.held import approvers_at, hold_for_approval
from bot.plan.model import PlanError
from bot.plan.outputs import actions_outputs
from bot.recipes.sources import GitSource
from ix_repo_helpers import append_entry, commit, edit, make_repo

VLLM = "tinyq-bf16-cpu-vllm"
SLURM = "tinyq-bf16-slurm-vllm"
GHOST = "tinyq-bf16-ghost-vllm"
NEW = "tinyq-bf16-new-vllm"
MASTER = "configs/cpu-master.yaml"
RUNNERS = "configs/runners.yaml"


@pytest.fixture
def ix(tmp_path: Path) -> tuple[Path, str]:
    return make_repo(tmp_path)


def add_label(repo: Path, label: str) -> None:
    edit(repo, RUNNERS, "labels:\n", f"labels:\n  {label}:\n    - {label}_0\n")


def add_config(repo: Path, key: str, runner: str) -> None:
    block = (repo / MASTER).read_text().split(f"{VLLM}:\n", 1)[1].split("\n\n", 1)[0]
    with open(repo / MASTER, "a") as handle:
        handle.write(f"\n{key}:\n" + block.replace("  runner: cpu\n", f"  runner: {runner}\n") + "\n")


def new_cluster(repo: Path) -> str:
    """The PR of the class: a label in configs/runners.yaml and a config on it, in one change."""
    add_label(repo, "cpu-new")
    add_config(repo, NEW, "cpu-new")
    return append_entry(repo, [VLLM, NEW])


def planned(repo: Path, base: str, head: str, approved: frozenset[str] = frozenset()):
    plan = plan_change(repo, base, head)
    hold_for_approval(plan, repo, base, head, allowed_at(repo, base), base, approved)
    return plan


def running(plan) -> list[dict]:
    ix = plan.inferencex
    return [e.row for m in ix.matrices for e in m.include] + ([ix.canary.row] if ix.canary else [])


def held(plan) -> list[dict]:
    return [e.row for e in plan.inferencex.held]


def _counter(rows: list[dict]) -> Counter:
    return Counter(json.dumps(r, sort_keys=True) for r in rows)


def test_rows_on_a_label_the_pr_adds_are_held_and_the_others_run(ix):
    repo, base = ix
    head = new_cluster(repo)
    plan = planned(repo, base, head)
    assert {r["runner"] for r in held(plan)} == {"cpu-new"} and held(plan)
    assert {r["runner"] for r in running(plan)} == {"cpu"} and running(plan)
    assert plan.inferencex.held_labels == ["cpu-new"]
    unheld = plan_change(repo, base, head)  # what InferenceX plans: held and running rows together
    assert _counter(held(plan) + running(plan)) == _counter(running(unheld))
    assert plan.inferencex.canary is not None and plan.inferencex.canary.runner_label == "cpu"
    assert [r.recipe for r in plan.recipes] == [VLLM]  # the GPU-hours count what runs
    assert plan.gpu_hours < unheld.gpu_hours
    note = str(plan.notes[0])
    full_sha = GitSource(repo, head).sha
    assert note.startswith("held for a new runner label: this pull request adds cpu-new to configs/runners.yaml")
    assert f"`/approve-runners {full_sha}`" in note and f"{len(held(plan))} row(s)" in note and NEW in note
    assert "an admin or maintainer" in note  # the fixture has no CODEOWNERS
    outputs = actions_outputs(plan).outputs
    assert "cpu-new" not in outputs["matrix"] + outputs["canary"]  # a held row is never dispatched


def test_the_plan_names_the_code_owner_of_runners_yaml_from_the_default_branch(ix):
    repo, _ = ix
    (repo / ".github").mkdir(exist_ok=True)  # the fixture has .github/workflows
    (repo / ".github/CODEOWNERS").write_text("* @org/everyone\nconfigs/runners.yaml @infra-lead\n")
    base = commit(repo)
    edit(repo, ".github/CODEOWNERS", "@infra-lead", "@pr-author")  # the PR's own CODEOWNERS chooses nobody
    commit(repo)
    head = new_cluster(repo)
    assert approvers_at(GitSource(repo, base)).owners == ("@infra-lead",)
    note = str(planned(repo, base, head).notes[0])
    assert "a code owner of configs/runners.yaml (@infra-lead, .github/CODEOWNERS:2 on the default branch)" in note
    assert "@pr-author" not in note


def test_an_approved_label_runs_every_row(ix):
    repo, base = ix
    head = new_cluster(repo)
    plan = planned(repo, base, head, frozenset({"cpu-new"}))
    assert not plan.inferencex.held and "cpu-new" in {r["runner"] for r in running(plan)}
    assert not any("held for a new runner label" in str(n) for n in plan.notes)


# Named negatives: what is not "a label the PR adds", and what an approval cannot do.
NEGATIVES = {
    # cpu-ghost is not in runners.yaml but an untouched master config on the default branch uses it
    "label added by the PR but also used by an untouched config": "not held",
    "label removed from runners.yaml": "not held",
    "label only in the default branch's master configs": "not held",
    "label only in the PR's master configs": "refused",
    "approval of a label the PR does not add to runners.yaml": "refused",
}


def _negative(case: str, repo: Path) -> tuple[str, frozenset[str]]:
    if case == "label added by the PR but also used by an untouched config":
        add_label(repo, "cpu-ghost")
        return append_entry(repo, [VLLM, GHOST]), frozenset()
    if case == "label removed from runners.yaml":
        edit(repo, RUNNERS, "  cluster:cpu-slurm:\n    - cpu-slurm_0\n", "")
        return append_entry(repo, [SLURM]), frozenset()
    if case == "label only in the default branch's master configs":
        return append_entry(repo, [GHOST]), frozenset()
    add_config(repo, NEW, "cpu-invented")  # a config on a label no configs/runners.yaml lists
    approved = frozenset({"cpu-invented"}) if case.startswith("approval") else frozenset()
    return append_entry(repo, [VLLM, NEW]), approved


@pytest.mark.parametrize("case", list(NEGATIVES))
def test_only_a_label_the_pr_adds_to_runners_yaml_is_held(ix, case):
    repo, base = ix
    head, approved = _negative(case, repo)
    if NEGATIVES[case] == "refused":
        with pytest.raises(PlanError) as caught:
            planned(repo, base, head, approved)
        assert "'cpu-invented'" in str(caught.value) and "cannot choose its own runners" in str(caught.value)
        return
    plan = planned(repo, base, head, approved)
    assert plan.inferencex.held == [] and running(plan)
    assert not any("held for a new runner label" in str(n) for n in plan.notes)


def test_a_label_already_on_the_default_branch_is_not_held(ix):
    repo, base = ix
    head = new_cluster(repo)
    main = GitSource(repo, head).sha  # the default branch has since merged the label
    plan = plan_change(repo, base, head)
    hold_for_approval(plan, repo, base, head, allowed_at(repo, main), main, frozenset())
    assert plan.inferencex.held == []


def test_the_plan_cli_holds_the_rows_and_takes_the_approved_labels(ix, tmp_path):
    from click.testing import CliRunner

    from bot.cli import main

    repo, base = ix
    head = new_cluster(repo)
    args = ["plan", "--repo", str(repo), "--base", base, "--head", head, "--allowed-from", base, "--format", "json"]
    doc = json.loads(CliRunner().invoke(main, args).output)
    assert doc["inferencex"]["held_labels"] == ["cpu-new"] and doc["inferencex"]["held"]
    assert all(e["runner_label"] == "cpu-new" for e in doc["inferencex"]["held"])
    doc = json.loads(CliRunner().invoke(main, [*args, "--approved-runner-labels", "cpu-new"]).output)
    assert doc["inferencex"]["held"] == []
