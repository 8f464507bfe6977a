"""From recipes to jobs: packing, accuracy gates, filters, the canary, matrices and GPU-hours."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bot.core.jobs import Job
from bot.plan import PlanError, PlanFilters, plan_catalog
from bot.inferencex.catalog import load_catalog
from bot.recipes.errors import RecipeError

ROOT = Path(__file__).resolve().parents[1]
AGENTX = "qwen3.5-397b-fp4-b200-sglang-mtp-agentx"


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(ROOT, inferencex=False)


def plan_of(catalog, **filters):
    return plan_catalog(catalog, PlanFilters(**filters))


def test_a_packed_sweep_is_one_launch_running_its_points_in_ascending_order(catalog):
    plan = plan_of(catalog, recipes=("tiny-cpu",))
    (job,) = plan.jobs
    assert job.server_launches == 1 and job.kind == "sweep"
    assert [p.concurrency for p in job.points] == [1, 2, 4, 8, 16, 32]
    assert [p.point_id for p in job.points][:2] == ["tp1-c1", "tp1-c2"]
    server = job.cases[0].servers[0]
    assert server.model == "${RECIPE_BOT_TINY_MODEL}" and server.served_model_name == "tiny"
    assert server.args[:2] == ["--tensor-parallel-size", "1"] and "--enforce-eager" in server.args
    assert job.cases[0].required_env == ["RECIPE_BOT_TINY_MODEL"]


def test_without_packing_every_point_is_its_own_launch(catalog):
    plan = plan_of(catalog, recipes=("tiny-cpu",), pack=False, canary=False)
    assert [len(j.points) for j in plan.jobs] == [1] * 6
    assert len({j.job_id for j in plan.jobs}) == 6
    (row,) = plan.recipes
    assert (row.server_launches, row.packed_launches, row.unpacked_launches) == (6, 1, 6)


def test_a_launch_that_depends_on_concurrency_is_never_packed(tmp_path):
    shutil.copytree(ROOT / "recipes", tmp_path / "recipes")
    path = tmp_path / "recipes" / "tiny-cpu.yaml"
    path.write_text(path.read_text().replace(
        "    tp: 1\n", "    tp: 1\n    args: [--max-num-seqs, '{concurrency}']\n"
    ) + "launch:\n  depends_on_concurrency: true\n")
    plan = plan_catalog(load_catalog(tmp_path, inferencex=False), PlanFilters(recipes=("tiny-cpu",), canary=False))
    assert len(plan.jobs) == 6
    assert [j.cases[0].servers[0].args[-1] for j in plan.jobs] == ["1", "2", "4", "8", "16", "32"]
    assert plan.recipes[0].packed_launches == 6


def test_agentx_plans_its_32_points_in_launches_that_fit_the_workflow_limit_and_a_separate_gsm8k_launch(catalog):
    plan = plan_of(catalog, recipes=(AGENTX,), canary=False)
    (row,) = plan.recipes
    assert row.points == 32
    sweeps = [j for j in plan.jobs if j.points]
    # 15 one-hour points (55,200 s) and 7 (26,400 s) exceed gpu.yml's 360 minutes: split to fit it
    assert sorted(len(j.points) for j in sweeps) == [2, 5, 5, 5, 5, 5, 5]
    assert all(j.estimate_s <= j.limit_s == 21600 and j.timeout_s <= j.limit_s for j in plan.jobs)
    assert {j.gpus for j in sweeps} == {2, 4}
    (gsm8k,) = [j for j in plan.jobs if not j.points]
    assert gsm8k.job_id == f"{AGENTX}--tp4-hicache--gsm8k"
    case = gsm8k.cases[0]
    assert case.accuracy.num_samples == 1319
    assert not any(k.startswith("SGLANG_SIMULATE") for k in case.servers[0].env)
    assert all(j.cases[0].accuracy is None for j in sweeps)
    assert all(j.cases[0].servers[0].env["SGLANG_SIMULATE_ACC_LEN"] == "3.39" for j in sweeps)
    assert (row.server_launches, row.packed_launches, row.unpacked_launches) == (8, 8, 33)


def test_scope_lowest_keeps_the_lowest_concurrency_of_each_arm(catalog):
    plan = plan_of(catalog, recipes=("tiny-cpu", AGENTX), scope="lowest", accuracy=False)
    points = sorted((j.recipe, p.point_id) for j in plan.jobs for p in j.points)
    assert points == [
        (AGENTX, "tp2-c1"), (AGENTX, "tp2-hicache-c16"), (AGENTX, "tp4-c1"), (AGENTX, "tp4-hicache-c64"),
        ("tiny-cpu", "tp1-c1"),
    ]
    assert plan.canary is None  # no canary for a lowest-scope sweep


@pytest.mark.parametrize("conc,expected", [
    ((1, 4), [1, 4]),
    ((32,), [32]),
    ((3,), []),
], ids=["two-points", "one-point", "no-such-point"])
def test_conc_keeps_only_those_points(catalog, conc, expected):
    plan = plan_of(catalog, recipes=("tiny-cpu",), conc=conc)
    assert [p.concurrency for j in plan.jobs for p in j.points] == expected
    if not expected:
        assert any("no point matches --conc 3" in n for n in map(str, plan.notes))


def test_an_unknown_recipe_glob_is_an_error_listing_the_recipes(catalog):
    with pytest.raises(PlanError) as caught:
        plan_of(catalog, recipes=("tiny-gpu*",))
    assert "tiny-cpu" in caught.value.accepted


def test_kind_and_case_filters(catalog):
    plan = plan_of(catalog, kind="e2e", cases=("baseline-*",))
    afd = next(j for j in plan.jobs if j.recipe == "qwen3.5-122b-a10b-afd")
    assert [c.name for c in afd.cases] == ["baseline-eager"]
    assert all(j.kind == "e2e" for j in plan.jobs)


def test_the_afd_suite_is_one_job_whose_node_ids_run_in_order(catalog):
    plan = plan_of(catalog, recipes=("qwen3.5-122b-a10b-afd",))
    (job,) = plan.jobs
    assert job.kind == "e2e" and job.gpus == 8 and job.runner_label == "h200-x8"
    assert job.manual  # named, so planned; never for a touch
    assert [c.name for c in job.cases] == ["baseline-eager", "afd-eager-4a4f"]
    for case in job.cases:
        assert case.servers == [] and case.command.nodes[0].endswith(f"[{case.name}]")
        assert case.required_env[:2] == ["AFD_E2E_BACKEND=gpu", "AFD_E2E_LARGE_MODEL=1"]
        assert "VLLM_MOE_ROUTING_SIMULATION_STRATEGY" in case.unset_env
        assert case.accuracy is None and case.points == []  # the harness runs GSM8K through lm-eval
        assert case.command.devices == list(range(8)) and case.command.ports == [8000, 8001, 1239]
    # 2 cases x 8 GPUs x (900 s start-up + 600 s GSM8K)
    assert job.estimated_gpu_hours == pytest.approx(8 * 2 * 1500 / 3600, abs=0.01)


def test_a_touched_manual_suite_is_left_out_with_its_reason(catalog):
    from bot.plan.planner import plan_native
    from bot.plan.touched import Touched

    touched = Touched()
    touched.add("qwen3.5-122b-a10b-afd", "uses tests/e2e/runner.py, which changed")
    plan = plan_native(catalog, PlanFilters(kind="e2e"), touched)
    assert plan.jobs == []
    assert any(n.startswith("qwen3.5-122b-a10b-afd: manual (8 GPUs") and "/e2e qwen3.5-122b-a10b-afd" in n
               for n in map(str, plan.notes))


def test_gpu_smoke_e2e_cases_share_the_two_devices(catalog):
    (job,) = plan_of(catalog, recipes=("gpu-smoke-e2e",)).jobs
    assert job.gpus == 2
    assert [[s.devices for s in c.servers] for c in job.cases] == [[[0, 1]], [[0], [1]]]


def test_the_canary_is_the_lowest_concurrency_point_and_leaves_its_packed_job(catalog):
    plan = plan_of(catalog, recipes=(AGENTX,))
    canary = plan.canary.job
    assert [p.point_id for p in canary.points] == ["tp4-c1"] and canary.cases[0].accuracy is None
    assert plan.jobs[0].job_id == canary.job_id
    tp4 = next(j for j in plan.jobs if j.job_id == f"{AGENTX}--tp4--part1of3")
    assert len(tp4.points) == 4 and "tp4-c1" not in [p.point_id for p in tp4.points]
    assert canary.estimate_s == 1200 + 3600 and tp4.estimate_s == 1200 + 4 * 3600
    in_matrices = [e.job_id for m in plan.matrices for e in m.include]
    assert canary.job_id not in in_matrices and len(in_matrices) == len(plan.jobs) - 1
    assert sum(len(j.points) for j in plan.jobs) == 32
    unsplit = plan_of(catalog, recipes=(AGENTX,), canary=False)
    startup_hours = 4 * 1200 / 3600  # the canary's own launch of a TP4 server
    assert plan.gpu_hours == pytest.approx(unsplit.gpu_hours + startup_hours, abs=1e-3)


def test_evals_only_runs_only_the_gates(catalog):
    plan = plan_of(catalog, recipes=(AGENTX, "tiny-cpu-e2e"), evals_only=True)
    assert all(not j.points for j in plan.jobs)
    assert sorted(j.job_id for j in plan.jobs) == [f"{AGENTX}--tp4-hicache--gsm8k", "tiny-cpu-e2e"]


def test_all_evals_puts_a_gate_on_every_arm(catalog):
    plan = plan_of(catalog, recipes=(AGENTX,), all_evals=True, canary=False)
    assert len([j for j in plan.jobs if j.job_id.endswith("--gsm8k")]) == 4


def test_gpu_hours_are_gpus_times_estimated_seconds(catalog):
    plan = plan_of(catalog, recipes=("gpu-smoke-vllm", "tiny-cpu"), canary=False)
    hours = {j.recipe: j.estimated_gpu_hours for j in plan.jobs}
    # 1 GPU x (start-up + 3 points x 3 repeats x 60 s)
    assert hours["gpu-smoke-vllm"] == pytest.approx(1 * (120 + 3 * 3 * 60) / 3600, abs=1e-3)
    assert hours["tiny-cpu"] == 0.0  # a CPU runner spends no GPU-hours
    assert plan.gpu_hours == pytest.approx(sum(hours.values()), abs=1e-3)


def test_matrices_hold_at_most_256_jobs_of_one_runner_label(tmp_path):
    shutil.copytree(ROOT / "recipes", tmp_path / "recipes")
    path = tmp_path / "recipes" / "tiny-cpu.yaml"
    path.write_text(path.read_text().replace("concurrency: [1, 2, 4, 8, 16, 32]",
                                             f"concurrency: [{', '.join(map(str, range(1, 301)))}]"))
    plan = plan_catalog(load_catalog(tmp_path, inferencex=False),
                        PlanFilters(recipes=("tiny-cpu*",), pack=False, canary=False))
    assert [(m.runner_label, m.index, len(m.include)) for m in plan.matrices] == [("cpu", 0, 256), ("cpu", 1, 45)]
    assert all(Job.model_validate(e.job.model_dump()) == e.job for m in plan.matrices for e in m.include)


def test_plans_are_deterministic(catalog):
    first = plan_of(catalog).model_dump_json()
    assert first == plan_of(catalog).model_dump_json()


def test_gpu_smoke_sglang_packs_its_sweep_and_gate_into_one_sglang_launch(catalog):
    plan = plan_of(catalog, recipes=("gpu-smoke-sglang",), canary=False)
    (job,) = plan.jobs
    (case,) = job.cases
    assert job.server_launches == 1 and case.servers[0].engine == "sglang"
    assert [p.concurrency for p in case.points] == [1, 16, 64]
    assert case.accuracy is not None and case.accuracy.num_samples == 7
    assert all(p.client is None for p in case.points)  # the engine's own client: sglang.bench_serving
    assert case.servers[0].args[:2] == ["--tp-size", "1"]


@pytest.mark.parametrize(("line", "expected"), [
    pytest.param("  client: vllm\n", "vllm", id="recipe-names-vllm-client"),
    pytest.param("  client: sglang\n", "sglang", id="recipe-names-sglang-client"),
    pytest.param("", None, id="no-client-named"),
])
def test_a_recipe_names_its_benchmark_client_on_every_point(tmp_path, line, expected):
    shutil.copytree(ROOT / "recipes", tmp_path / "recipes")
    path = tmp_path / "recipes" / "gpu-smoke-sglang.yaml"
    path.write_text(path.read_text().replace("  min_prompts: 32\n", "  min_prompts: 32\n" + line))
    plan = plan_catalog(load_catalog(tmp_path, inferencex=False),
                        PlanFilters(recipes=("gpu-smoke-sglang",), canary=False))
    assert {p.client for p in plan.jobs[0].points} == {expected}


def test_an_unknown_benchmark_client_is_a_recipe_error(tmp_path):
    shutil.copytree(ROOT / "recipes", tmp_path / "recipes")
    path = tmp_path / "recipes" / "gpu-smoke-sglang.yaml"
    path.write_text(path.read_text().replace("  min_prompts: 32\n", "  min_prompts: 32\n  client: trtllm\n"))
    with pytest.raises(RecipeError, match=r"gpu-smoke-sglang.yaml:\d+.*workload\.client"):
        plan_catalog(load_catalog(tmp_path, inferencex=False), PlanFilters(recipes=("gpu-smoke-sglang",)))
