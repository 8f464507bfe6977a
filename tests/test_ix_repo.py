"""An InferenceX repository as it is (tests/fixtures/ix-repo): strict where a PR touches, honest packing,
InferenceX's own rows and labels, jobs that fit their limits, per-label matrices."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from bot.inferencex.launches import launch_groups
from bot.plan import PlanFilters, plan_change
from bot.plan.labels import KNOWN_LABELS, filters_for_labels
from bot.plan.limits import chunk_sizes, limit_for, slurm_seconds
from bot.recipes import RecipeError
from bot.recipes.errors import RecipeProblem
from ix_repo_helpers import AGENTIC, append_entry, commit, make_repo


def write_outputs(plan, jobs_dir: Path) -> dict[str, str]:
    """What the plan step of gpu.yml does with a typed plan: every job file, then the matrix outputs."""
    from bot.plan.outputs import actions_outputs, write_row_files
    from bot.plan.render import write_jobs

    made = actions_outputs(plan)
    write_jobs(plan, jobs_dir)
    write_row_files(made, jobs_dir)
    return made.outputs

VLLM = "tinyq-bf16-cpu-vllm"
SGLANG = "tinyq-bf16-cpu-sglang"
SLURM = "tinyq-bf16-slurm-vllm"
GHOST = "tinyq-bf16-ghost-vllm"


@pytest.fixture
def ix(tmp_path: Path) -> tuple[Path, str]:
    return make_repo(tmp_path)


def rows_of(plan, bucket_filter=lambda name: True) -> list[dict]:
    return [r for name, rows in plan.inferencex.rows.items() if bucket_filter(name) for r in rows]


def throughput(plan) -> list[dict]:
    return rows_of(plan, lambda name: "." in name)


def evals(plan) -> list[dict]:
    return rows_of(plan, lambda name: "." not in name)


# ---- 1. validation that fits a real repository ------------------------------------------------------

def test_an_unlisted_runner_label_in_an_untouched_config_plans_with_a_warning(ix):
    repo, base = ix
    plan = plan_change(repo, base, append_entry(repo, [VLLM]))
    assert [t.name for t in plan.touched] == [VLLM]
    (warning,) = plan.warnings
    assert warning["file"] == "configs/cpu-master.yaml" and warning["field"] == f"{GHOST}.runner"
    assert warning["line"] == (repo / "configs/cpu-master.yaml").read_text().splitlines().index(
        "  runner: cpu-ghost") + 1
    assert "cpu-ghost" in str(RecipeProblem.from_dict(warning).message) and "cpu" in warning["accepted"]
    assert GHOST not in {r["runner"] for r in rows_of(plan)}


def test_an_unlisted_runner_label_in_a_config_the_pr_runs_plans_as_inferencex_does_with_a_warning(ix):
    repo, base = ix  # InferenceX's generator expands it; --allowed-from still decides where it may run
    plan = plan_change(repo, base, append_entry(repo, [GHOST]))
    assert [r.recipe for r in plan.recipes] == [GHOST]
    assert [w["field"] for w in plan.warnings] == [f"{GHOST}.runner"]


@pytest.mark.parametrize("edit,field", [
    (lambda text: text.replace("  runner: cpu-ghost\n", "  runner: cpu-ghost\n  modle: x\n"), f"{GHOST}.modle"),
], ids=["unknown-key"])
def test_a_problem_in_a_config_the_pr_touches_stops_the_plan_naming_file_line_field(ix, edit, field):
    repo, base = ix
    path = repo / "configs/cpu-master.yaml"
    path.write_text(edit(path.read_text()))
    commit(repo)
    with pytest.raises(RecipeError) as caught:
        plan_change(repo, base, append_entry(repo, [GHOST]))
    problem = caught.value.problems[0]
    assert (problem.file, problem.field) == ("configs/cpu-master.yaml", field) and problem.line


def test_a_broken_untouched_config_stops_a_pr_plan_as_inferencex_does(ix):
    repo, base = ix  # InferenceX's processor validates every master-config entry before it plans anything
    path = repo / "configs/cpu-master.yaml"
    path.write_text(path.read_text().replace("  runner: cpu-ghost\n", "  runner: cpu-ghost\n  modle: x\n"))
    base = commit(repo)  # broken on the base branch already; the PR does not touch it
    with pytest.raises(RecipeError) as caught:
        plan_change(repo, base, append_entry(repo, [VLLM]))
    assert [(p.file, p.field) for p in caught.value.problems] == [("configs/cpu-master.yaml", f"{GHOST}.modle")]


def test_without_a_base_a_broken_config_is_left_out_with_a_warning(ix):
    repo, _ = ix
    path = repo / "configs/cpu-master.yaml"
    path.write_text(path.read_text().replace("  runner: cpu-ghost\n", "  runner: cpu-ghost\n  modle: x\n"))
    plan = plan_change(repo, None, commit(repo))
    assert f"{GHOST}.modle" in {w["field"] for w in plan.warnings}
    assert GHOST not in [r.recipe for r in plan.recipes] and VLLM in [r.recipe for r in plan.recipes]


@pytest.mark.parametrize("edit,message", [
    (lambda e: e.replace("  multinode: true\n", "  multinode: true\n  kv-p2p-transfer: nixl\n", 1)
     .replace("      - conc-list:", "      - kv-p2p-transfer: nixl\n        conc-list:", 1),
     "kv-p2p-transfer must be declared either at the top level or in search-space entries, not both"),
    (lambda e: e.replace("  kv-p2p-transfer: nixl\n", "", 1),
     "disagg=true requires kv-p2p-transfer at the top level or in every search-space entry"),
], ids=["both-places", "disagg-without-transfer"])
def test_inferencex_component_placement_rules_refuse_in_its_words(tmp_path, edit, message):
    from bot.inferencex.schema import component_scope_problem

    entry = ("k:\n  image: i\n  model: m\n  model-prefix: p\n  runner: r\n  precision: fp4\n  framework: dynamo-trt\n"
             "  multinode: true\n  disagg: true\n  kv-p2p-transfer: nixl\n  scenarios:\n    fixed-seq-len:\n"
             "    - isl: 1024\n      osl: 1024\n      search-space:\n      - conc-list: [4]\n"
             "        prefill: { num-worker: 1, tp: 4 }\n        decode: { num-worker: 1, tp: 4 }\n")
    import yaml

    raw = yaml.safe_load(edit(entry))["k"]
    assert str(component_scope_problem(raw)) == message
    assert component_scope_problem(yaml.safe_load(entry)["k"]) is None


# ---- 2. rows as InferenceX's generator and changelog processor make them -----------------------------

def test_pr_2420_entry_plans_32_agentic_rows_and_one_eval_row_with_recipe_fingerprints(ix):
    repo, base = ix
    plan = plan_change(repo, base, append_entry(repo, [AGENTIC]), PlanFilters(canary=False))
    assert len(throughput(plan)) == 32 and len(evals(plan)) == 1
    for row in throughput(plan):
        recipe = {k: v for k, v in row.items() if k not in ("conc", "exp-name", "recipe-fingerprint")}
        canonical = json.dumps(recipe, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        assert row["recipe-fingerprint"] == hashlib.sha256(canonical.encode()).hexdigest()
    (eval_row,) = evals(plan)
    assert eval_row["eval-only"] is True and eval_row["conc"] == 72 and "recipe-fingerprint" not in eval_row


@pytest.mark.parametrize("extra,labels,n_throughput,n_evals", [
    ("", [], 7, 1),
    ("  all-evals: true\n", [], 0, 3),
    ("", ["all-evals"], 7, 3),
    ("  evals-only: true\n", [], 0, 1),
    ("", ["evals-only"], 0, 1),
    ("", ["sweep-enabled"], 2, 1),
], ids=["plain", "entry-all-evals-runs-only-evals", "label-all-evals-every-concurrency", "entry-evals-only",
        "label-evals-only", "label-sweep-enabled-trims"])
def test_changelog_flags_and_labels_pick_rows_as_inferencex_does(ix, extra, labels, n_throughput, n_evals):
    repo, base = ix
    head = append_entry(repo, [VLLM], extra)
    plan = plan_change(repo, base, head, filters_for_labels(labels, PlanFilters(canary=False)))
    assert (len(throughput(plan)), len(evals(plan))) == (n_throughput, n_evals)
    assert all(r["eval-only"] is True and r["isl"] == 8192 for r in evals(plan))
    assert all(r["eval-only"] is False for r in throughput(plan))


@pytest.mark.parametrize("extra,words", [
    ("  append-only: true\n", "did not add any generated points"),
    ("  append-only: true\n  all-evals: true\n", "cannot be combined"),
], ids=["adds-nothing", "with-all-evals"])
def test_append_only_entries_inferencex_refuses_are_refused_in_its_own_words(ix, extra, words):
    repo, base = ix
    with pytest.raises(RecipeError) as caught:
        plan_change(repo, base, append_entry(repo, [VLLM], extra))
    assert words in str(caught.value)


def test_append_only_runs_only_the_new_concurrency(ix):
    repo, base = ix
    path = repo / "configs/cpu-master.yaml"
    path.write_text(path.read_text().replace("conc-list: [4, 16, 32]", "conc-list: [4, 16, 32, 64]"))
    plan = plan_change(repo, base, append_entry(repo, [VLLM], "  append-only: true\n"), PlanFilters(canary=False))
    assert [(r["isl"], r["conc"]) for r in throughput(plan)] == [(8192, 64)] and evals(plan) == []


def test_every_label_inferencex_workflows_know_is_accepted():
    for label in KNOWN_LABELS:
        filters_for_labels([label])
    assert {"full-sweep-enabled", "non-canary-full-sweep-enabled", "full-sweep-fail-fast-no-canary",
            "all-evals", "evals-only", "agentx-fast", "sweep-enabled"} <= set(KNOWN_LABELS)
    assert filters_for_labels(["full-sweep-fail-fast-no-canary"]).canary is False
    assert filters_for_labels(["agentx-fast"]).agentx_fast is True


# ---- 3. honest packing --------------------------------------------------------------------------------

def test_only_configurations_whose_server_never_reads_the_concurrency_pack(ix):
    repo, base = ix
    plan = plan_change(repo, base, append_entry(repo, [VLLM, SGLANG, AGENTIC]), PlanFilters(canary=False))
    by_key: dict[str, set[bool]] = {}
    for item in plan.inferencex.packing:
        by_key.setdefault(item["config_key"], set()).add(item["packs"])
    assert by_key == {VLLM: {True}, SGLANG: {False}, AGENTIC: {False}}
    reasons = {i["config_key"]: str(i["why"]) for i in plan.inferencex.packing if not i["packs"]}
    assert reasons[SGLANG].startswith("benchmarks/single_node/fixed_seq_len/tinyq_bf16_cpu_sglang.sh:7 reads $CONC")
    assert "--max-num-seqs" in reasons[AGENTIC]
    row = next(r for r in plan.recipes if r.recipe == AGENTIC)
    assert row.packed_launches == row.server_launches == 33  # nothing of #2420's shape may claim to pack


def test_a_launcher_that_reads_the_concurrency_stops_packing(ix):
    repo, base = ix
    launcher = repo / "runners/launch_cpu-local.sh"
    launcher.write_text(launcher.read_text().replace("set -euo pipefail", "set -euo pipefail\nexport BATCH=$CONC"))
    plan = plan_change(repo, base, append_entry(repo, [VLLM]), PlanFilters(canary=False))
    assert plan.inferencex.packing and not any(i["packs"] for i in plan.inferencex.packing)
    assert all("runners/launch_cpu-local.sh:5 reads $CONC" in str(i["why"]) for i in plan.inferencex.packing)


def test_launch_groups_without_a_repository_claim_nothing():
    rows = [{"runner": "cpu", "tp": 1, "conc": c, "exp-name": "x"} for c in (1, 2)]
    (group,) = launch_groups(rows, {0: "k", 1: "k"})
    assert not group.packs


# ---- 4. jobs that fit their limits --------------------------------------------------------------------

@pytest.mark.parametrize("points,startup,point,limit,tail,expected", [
    (4, 100, 100, 1000, 0, [4]),
    (15, 1200, 3600, 21600, 0, [5, 5, 5]),
    (7, 1200, 3600, 21600, 0, [5, 2]),
    (5, 1200, 3600, 21600, 3000, [4, 1]),
    (2, 100, 5000, 1000, 0, [1, 1]),
], ids=["fits", "agentx-tp4", "agentx-tp2-hicache", "gate-on-the-last", "a-point-longer-than-the-limit"])
def test_chunk_sizes(points, startup, point, limit, tail, expected):
    assert chunk_sizes(points, startup, point, limit, tail) == expected


@pytest.mark.parametrize("text,seconds", [("08:00:00", 28800), ("90", 5400), ("1-00:00:00", 86400),
                                          ("30:00", 1800), ("UNLIMITED", None)])
def test_slurm_time_formats(text, seconds):
    assert slurm_seconds(text) == seconds


def test_the_tighter_of_the_workflow_and_cluster_limits_holds():
    assert limit_for(None) == (21600.0, "gpu.yml timeout-minutes: 360")
    assert limit_for("02:00:00") == (7200.0, "Slurm time limit 02:00:00")
    assert limit_for("08:00:00")[0] == 21600.0


def test_every_row_shows_its_estimate_and_the_limit_it_is_held_to(ix):
    repo, base = ix
    plan = plan_change(repo, base, append_entry(repo, [AGENTIC, SLURM]), PlanFilters(canary=False))
    entries = [e for m in plan.inferencex.matrices for e in m.include]
    assert all(e.estimate_s and e.limit_s for e in entries)
    slurm = [e for e in entries if e.runner_label == "cluster:cpu-slurm"]
    assert slurm and all((e.backend, e.limit_s) == ("slurm", 7200.0) for e in slurm)
    assert all(e.backend == "local" and e.limit_s == 21600.0 for e in entries if e.runner_label == "cpu")


# ---- 5/6. the rows become runnable jobs, one matrix per runner label ----------------------------------

def test_pr_2420_entry_yields_33_runnable_jobs_and_per_label_matrices(ix, tmp_path):
    repo, base = ix
    plan = plan_change(repo, base, append_entry(repo, [AGENTIC, SLURM]), PlanFilters(canary=False))
    outputs = write_outputs(plan, tmp_path / "jobs")
    labels = json.loads(outputs["labels"])["include"]
    assert [(m["runner_label"], m["backend"], len(json.loads(m["include"])["include"])) for m in labels] == [
        ("cluster:cpu-slurm", "slurm", 2), ("cpu", "local", 33)]
    files = sorted((tmp_path / "jobs").iterdir())
    assert len(files) == 35 and outputs["jobs"] == "35"
    from bot.runner.ix_row import RowJob
    jobs = [RowJob.model_validate(json.loads(f.read_text())["inferencex"]) for f in files]
    assert sum(1 for j in jobs if j.config_key == AGENTIC) == 33


def test_the_warnings_reach_the_bilingual_plan_summary(ix):
    from bot.plan.render import plan_markdown
    repo, base = ix
    text = plan_markdown(plan_change(repo, base, append_entry(repo, [VLLM])))
    assert "Warnings (1 problem(s) the plan reads past, as InferenceX's generator does" in text
    assert "警告（有 1 个问题被忽略" in text and f"{GHOST}.runner" in text
    chinese = text.split("警告（", 1)[1]
    assert "runner 'cpu-ghost' 不是 configs/runners.yaml 中的标签" in chinese and "is not a label" not in chinese


def test_an_inferencex_canary_beside_a_native_canary_still_runs(tmp_path):
    from bot.plan.model import InferenceXPlan, MatrixEntry, Plan
    from bot.plan.outputs import actions_outputs
    from tests import synthetic

    native = MatrixEntry(job_id="n-c1", recipe="n", runner_label="cpu",
                         job=synthetic.sweep_plan("n", concurrencies=(1,), runner_label="cpu", job_id="n-c1"))
    row = MatrixEntry(job_id="ix-c1", recipe="k", runner_label="cpu", row={"conc": 1})
    plan = Plan(base=None, head="h", filters=PlanFilters(), jobs=[native.job], canary=native,
                inferencex=InferenceXPlan(canary=row))
    outputs = actions_outputs(plan).outputs
    assert json.loads(outputs["canary"])["include"][0]["job_id"] == "n-c1"
    assert [e["job_id"] for e in json.loads(outputs["matrix"])["include"]] == ["ix-c1"]
    assert outputs["jobs"] == "2"


def test_the_plan_table_shows_each_jobs_estimate_and_its_limit(ix):
    import io

    from rich.console import Console

    from bot.plan.render import print_table
    repo, base = ix
    plan = plan_change(repo, base, append_entry(repo, ["tinyq-bf16-slurm-vllm"]), PlanFilters(canary=False))
    buffer = io.StringIO()
    print_table(plan, Console(file=buffer, width=200))
    lines = [line for line in buffer.getvalue().splitlines() if line.startswith("job ")]
    assert len(lines) == 2 and all(line.endswith("fits 7200 s (Slurm time limit 02:00:00)") for line in lines)


@pytest.mark.parametrize("in_base,stops", [(True, False), (False, True)], ids=["broken-before", "broken-by-the-pr"])
def test_an_unreadable_master_config_stops_only_the_pr_that_breaks_it(ix, in_base, stops):
    repo, base = ix
    (repo / "configs" / "extra-master.yaml").write_text("key: [unclosed\n")
    if in_base:
        base = commit(repo)
    head = append_entry(repo, [VLLM])
    if stops:
        with pytest.raises(RecipeError) as caught:
            plan_change(repo, base, head)
        assert caught.value.problems[0].file == "configs/extra-master.yaml"
    else:
        plan = plan_change(repo, base, head)
        assert "configs/extra-master.yaml" in {w["file"] for w in plan.warnings}


# ---- 5. where a job may run: the default branch's own files ------------------------------------------

def test_allowed_from_reads_the_default_branchs_runners_yaml_and_master_config_labels(ix):
    from bot.plan.allowed import allowed_at, check_plan
    from bot.plan.model import PlanError

    repo, base = ix  # no recipes/_runners.yaml and no .github/recipe-bot.yaml: nothing to add to adopt recipe-bot
    allowed = allowed_at(repo, base)
    assert {"cpu", "cluster:cpu-slurm"} <= allowed.runner_labels  # runners.yaml
    assert "cpu-ghost" in allowed.runner_labels  # not in runners.yaml, but a master config on main uses it
    check_plan(plan_change(repo, base, append_entry(repo, [VLLM, GHOST])), allowed)
    path = repo / "configs/cpu-master.yaml"
    path.write_text(path.read_text().replace("  runner: cpu-ghost\n", "  runner: cpu-invented\n"))
    commit(repo)
    with pytest.raises(PlanError) as caught:  # a label the PR itself invents still cannot choose a runner
        check_plan(plan_change(repo, base, append_entry(repo, [GHOST])), allowed)
    assert "'cpu-invented'" in str(caught.value) and "configs/runners.yaml and the master configs" in str(caught.value)
