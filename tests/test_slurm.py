"""The Slurm backend against a real cluster (scripts/slurm-up.sh): GPUs, faults, /cancel, tiny-cpu.

Every job here is a real sbatch job whose step runs the local backend. The fault jobs use a
stand-in server (tests/fake_servers/slurm_standin.py, launched by slurm_standin.sh) that starts in milliseconds and reports
where it ran; the `tiny-cpu` sweep runs the real CPU engine. Without a cluster these tests skip
and say why; with RECIPE_BOT_CI=1 or RECIPE_BOT_REQUIRE_SLURM=1 a missing cluster fails them.

The time-limit job costs 60-90 s (slurmctld checks limits every 30 s), so it is submitted first
and checked near the end; the tests in between run while it waits. The node-down test comes
last because taking the node down ends every job on it.
"""
from __future__ import annotations

import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from bot.core.jobs import Case, Job, LoadPoint, ServerSpec, SlurmSpec
from bot.core.results import JobResult
from bot.runner.slurm import backend as slurm, query as slurm_query
from bot.runner.slurm import commands as sc
from bot.runner.provenance import checkout_head

pytestmark = pytest.mark.slurm

REPO = Path(__file__).resolve().parents[1]
STANDIN = "tests/fake_servers/slurm_standin.sh"
SHA_A = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"
SHA_B = "b2c3d4e5f60718293a4b5c6d7e8f901234567890"
REPOSITORY = "octo/bench"
POLL_S = 0.2
REQUIRED = os.environ.get("RECIPE_BOT_CI") == "1" or os.environ.get("RECIPE_BOT_REQUIRE_SLURM") == "1"


@functools.cache
def standin_repo() -> Path:
    """The stand-in's launch script in a folder that is not a git checkout: the fault jobs carry
    made-up SHAs (SHA_A, SHA_B), which the runner would refuse to run from this repository's
    checkout at another commit (bot/runner/provenance.py)."""
    root = Path(tempfile.mkdtemp(prefix="recipe-bot-standin-"))
    (root / "tests" / "fake_servers").mkdir(parents=True)
    for name in ("slurm_standin.sh", "slurm_standin.py"):
        shutil.copy2(REPO / "tests" / "fake_servers" / name, root / "tests" / "fake_servers" / name)
    return root


def _slurm_out(*argv: str) -> str:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=30).stdout


@pytest.fixture(scope="module")
def cluster() -> str:
    """The single node's name; skip (or, where Slurm is required, fail) without a cluster."""
    problem = slurm.cluster_problem()
    if problem is None and "gpu:2" not in _slurm_out("sinfo", "-h", "-o", "%G"):
        problem = "the cluster has no node with gpu:2 (scripts/slurm-up.sh configures two fake GPUs)"
    if problem:
        message = f"no usable Slurm cluster: {problem}. Start one with scripts/slurm-up.sh (as root)."
        if REQUIRED:
            pytest.fail(f"{message} Slurm is required here (RECIPE_BOT_CI or RECIPE_BOT_REQUIRE_SLURM).")
        pytest.skip(message)
    node = _slurm_out("sinfo", "-h", "-o", "%N").split()[0]
    _resume(node)
    return node


def _resume(node: str) -> None:
    """Bring the node back to idle, whatever a previous test did to it."""
    if _slurm_out("sinfo", "-h", "-n", node, "-o", "%T").strip() != "idle":
        subprocess.run(["scontrol", "update", f"nodename={node}", "state=resume"], capture_output=True)
    wait_for(lambda: _slurm_out("sinfo", "-h", "-n", node, "-o", "%T").strip() == "idle", 30,
             f"node {node} to be idle again")


def wait_for(predicate, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


def standin_job(root: Path, name: str, *, pr: int, sha: str = SHA_A, mode: str = "never-ready",
                gpus: int = 0, time_limit: str = "5", repository: str = REPOSITORY,
                ready_after_s: float = 0.0) -> tuple[Job, Path, Path]:
    out = root / name
    out.mkdir(parents=True)
    reports = root / "reports"
    reports.mkdir(exist_ok=True)
    # engine "sglang": the stand-in is started through launch_script either way, and the local
    # backend's engine-version probe then fails in milliseconds instead of importing vLLM (~8 s).
    server = ServerSpec(engine="sglang", model="standin", served_model_name="standin",
                        launch_script=STANDIN, startup_timeout_s=600,
                        env={"STANDIN_MODE": mode, "STANDIN_REPORT_DIR": str(reports),
                             "STANDIN_READY_AFTER_S": str(ready_after_s)})
    job = Job(job_id=name, kind="e2e", recipe="slurm-standin", recipe_fingerprint="standin",
              runner_label="slurm-ci", gpus=gpus, pr=pr, sha=sha, repository=repository,
              timeout_s=600, slurm=SlurmSpec(time_limit=time_limit),
              cases=[Case(name="standin", servers=[server])])
    job_file = out / "job.json"
    job_file.write_text(job.model_dump_json())
    return job, job_file, out


class Submitted:
    """run_job_slurm in a thread, as a runner would run it, so the test can act meanwhile."""

    def __init__(self, job: Job, job_file: Path, out: Path, **kwargs) -> None:
        self.job, self.out = job, out
        self.result: JobResult | None = None
        self.error: BaseException | None = None
        self.started = time.monotonic()
        self.seconds: float | None = None
        self.thread = threading.Thread(target=self._run, args=(job, job_file, out), kwargs=kwargs,
                                       daemon=True)
        self.thread.start()

    def _run(self, job: Job, job_file: Path, out: Path, **kwargs) -> None:
        try:
            self.result = slurm.run_job_slurm(job, job_file, out, None, repo=standin_repo(), poll_s=POLL_S,
                                              **kwargs)
        except BaseException as exc:  # re-raised in the test's thread by join()
            self.error = exc
        self.seconds = time.monotonic() - self.started

    def slurm_id(self, state: str | None = None, timeout_s: float = 20) -> str:
        return slurm_id_of(self.job, state, timeout_s)

    def join(self, timeout_s: float) -> JobResult:
        self.thread.join(timeout_s)
        assert not self.thread.is_alive(), f"run_job_slurm for {self.job.job_id} still running"
        if self.error is not None:
            raise self.error
        assert self.result is not None
        on_disk = JobResult.model_validate_json((self.out / "result.json").read_text())
        assert on_disk == self.result, "result.json differs from what run_job_slurm returned"
        return self.result


def slurm_id_of(job: Job, state: str | None = None, timeout_s: float = 20) -> str:
    """The Slurm job id of `job`, once squeue lists it (in `state`, when given)."""
    name = sc.job_name(job)

    def listed() -> str | None:
        for line in _slurm_out("squeue", "-h", "-n", name, "-o", "%i|%T").splitlines():
            slurm_id, current = line.split("|")
            if state is None or current == state:
                return slurm_id
        return None

    return wait_for(listed, timeout_s, f"{name} in squeue" + (f" as {state}" if state else ""))


def standin_report(root: Path, slurm_id: str, timeout_s: float = 20) -> dict:
    path = root / "reports" / f"{slurm_id}.json"
    wait_for(path.exists, timeout_s, f"the stand-in server of Slurm job {slurm_id} to start")
    return json.loads(path.read_text())


def processes_of(slurm_id: str) -> list[int]:
    """PIDs on this node whose environment says they belong to the Slurm job."""
    marker = f"SLURM_JOB_ID={slurm_id}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in environ and state != "Z":
            pids.append(int(entry.name))
    return pids


KILL_WAIT_S = 5  # scripts/slurm-up.sh's KillWait


def assert_left_nothing(result: JobResult) -> None:
    assert result.slurm is not None
    slurm_id = result.slurm.job_id
    assert _slurm_out("squeue", "-h", "-j", slurm_id, "-o", "%i").strip() == "", "job still in squeue"
    # slurmd may still be reaping the step when slurmctld has already ended the job.
    wait_for(lambda: not processes_of(slurm_id), KILL_WAIT_S + 3,
             f"no process of Slurm job {slurm_id} on the node (left: {processes_of(slurm_id)})")


def pid_gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.fixture(scope="module")
def time_limit_run(cluster, tmp_path_factory) -> Submitted:
    """A job with a 1-minute Slurm limit whose server never becomes ready; started once, early."""
    root = tmp_path_factory.mktemp("time-limit")
    run = Submitted(*standin_job(root, "time-limit", pr=9001, time_limit="1"))
    yield run
    slurm.cancel_pr_jobs(9001)
    run.thread.join(30)


@pytest.fixture()
def cancel_after(cluster):
    """PRs whose jobs a test leaves behind on failure are cancelled afterwards."""
    prs: list[int] = []
    yield prs
    for pr in prs:
        slurm.cancel_pr_jobs(pr)


def gres_indices(scontrol_detail: str) -> list[int]:
    match = re.search(r"GRES=gpu(?::\w+)?:\d+\(IDX:([\d,-]+)\)", scontrol_detail)
    assert match, f"no GPU indices in scontrol show job -d:\n{scontrol_detail}"
    indices: list[int] = []
    for part in match.group(1).split(","):
        low, _, high = part.partition("-")
        indices.extend(range(int(low), int(high or low) + 1))
    return indices


def test_each_job_sees_cuda_visible_devices_of_its_own_gres_allocation(
        cluster, time_limit_run, tmp_path, cancel_after):
    cancel_after.extend([9101, 9102])
    # Both one-GPU jobs are up at the same time (ready after 2 s), so they must get different GPUs.
    runs = [Submitted(*standin_job(tmp_path, f"gpu-{n}", pr=pr, mode="ready", gpus=1, ready_after_s=2))
            for n, pr in ((1, 9101), (2, 9102))]
    results = [run.join(60) for run in runs]
    seen = []
    for result in results:
        assert result.status == "passed", result.reason
        assert result.slurm.state == "COMPLETED" and result.slurm.exit_code == "0:0"
        assert result.slurm.node == cluster
        report = standin_report(tmp_path, result.slurm.job_id)
        allocated = gres_indices(report["scontrol"])
        assert report["cuda_visible_devices"] == ",".join(map(str, allocated))
        assert f"JobName={sc.job_name(runs[results.index(result)].job)}" in report["scontrol"]
        # Once slurmctld forgets the job (MinJobAge), the record jobcomp/filetxt kept says the same.
        kept = slurm_query._query_sacct(result.slurm.job_id)
        assert kept is not None and (kept.state, kept.exit_code) == ("COMPLETED", "0:0")
        seen.append(report["cuda_visible_devices"])
        assert_left_nothing(result)
    assert sorted(seen) == ["0", "1"]
    both = Submitted(*standin_job(tmp_path, "gpu-both", pr=9103, mode="ready", gpus=2)).join(60)
    assert both.status == "passed", both.reason
    assert standin_report(tmp_path, both.slurm.job_id)["cuda_visible_devices"] == "0,1"


def test_an_image_runs_through_pyxis_only_where_the_cluster_has_it(cluster, tmp_path, cancel_after):
    cancel_after.append(9105)
    job, job_file, out = standin_job(tmp_path, "image", pr=9105, mode="ready")
    job.cases[0].servers[0].image = "nvcr.io/nvidia/vllm:standin"
    job_file.write_text(job.model_dump_json())
    pyxis = "--container-image" in _slurm_out("srun", "--help")
    assert slurm.has_pyxis() is pyxis
    if pyxis:
        pytest.skip("this cluster has pyxis, and the stand-in image does not exist")
    result = Submitted(job, job_file, out).join(60)
    assert result.status == "passed", result.reason
    assert "--container-image" not in (out / "slurm-batch.sh").read_text()
    assert_left_nothing(result)


def _blocker(root: Path, pr: int) -> tuple[Submitted, str]:
    """A job holding both GPUs, so that the next GPU job pends with Reason=Resources."""
    blocker = Submitted(*standin_job(root, f"blocker-{pr}", pr=pr, gpus=2))
    slurm_id = blocker.slurm_id("RUNNING")
    standin_report(root, slurm_id)
    return blocker, slurm_id


def test_cancel_while_pending_ends_cancelled_with_the_reason(cluster, tmp_path, cancel_after):
    cancel_after.extend([9201, 9202])
    blocker, _ = _blocker(tmp_path, 9201)
    waiting = Submitted(*standin_job(tmp_path, "pending", pr=9202, gpus=1))
    slurm_id = waiting.slurm_id("PENDING")
    wait_for(lambda: _slurm_out("squeue", "-h", "-j", slurm_id, "-o", "%r").strip() == "Resources", 10,
             "the scheduler to say the job waits for Resources")
    assert slurm.cancel_pr_jobs(9202) == [slurm_id]
    result = waiting.join(30)
    assert result.status == "cancelled"
    assert "cancelled while pending: /cancel on PR #9202" in str(result.reason)
    assert (result.slurm.job_id, result.slurm.state, result.slurm.node) == (slurm_id, "CANCELLED", None)
    assert [case.status for case in result.cases] == ["skipped"]
    assert not (tmp_path / "reports" / f"{slurm_id}.json").exists(), "a pending job's server started"
    assert_left_nothing(result)
    slurm.cancel_pr_jobs(9201)
    assert blocker.join(30).status == "cancelled"


def test_cancel_while_running_stops_the_server_and_ends_cancelled(cluster, tmp_path, cancel_after):
    cancel_after.append(9301)
    run = Submitted(*standin_job(tmp_path, "running", pr=9301, gpus=1))
    slurm_id = run.slurm_id("RUNNING")
    server_pid = standin_report(tmp_path, slurm_id)["pid"]
    cancelled_at = time.monotonic()
    assert slurm.cancel_pr_jobs(9301) == [slurm_id]
    result = run.join(30)
    print(f"cancel while running: result {time.monotonic() - cancelled_at:.2f} s after scancel")
    assert result.status == "cancelled"
    assert "cancelled while running: /cancel on PR #9301" in str(result.reason)
    assert (result.slurm.state, result.slurm.node) == ("CANCELLED", cluster)
    assert pid_gone(server_pid)
    assert_left_nothing(result)


def test_pending_past_the_deadline_is_cancelled_and_fails_with_the_queue_reason(
        cluster, tmp_path, cancel_after):
    cancel_after.extend([9401, 9402])
    blocker, _ = _blocker(tmp_path, 9401)
    waiting = Submitted(*standin_job(tmp_path, "deadline", pr=9402, gpus=1), pending_timeout_s=2)
    result = waiting.join(30)
    assert result.status == "failed"
    assert "still pending (Resources) after 2 s, past its deadline" in str(result.reason)
    assert result.slurm.state == "CANCELLED" and result.slurm.reason == "Resources"
    assert [case.status for case in result.cases] == ["skipped"]
    assert_left_nothing(result)
    assert waiting.seconds < 10
    slurm.cancel_pr_jobs(9401)
    blocker.join(30)


def test_cancel_pr_cancels_that_prs_jobs_and_only_those(cluster, tmp_path, cancel_after):
    prs = [9501, 950, 95011]
    cancel_after.extend(prs)
    jobs = {
        "old-head": standin_job(tmp_path, "old-head", pr=9501, sha=SHA_A),
        "new-head": standin_job(tmp_path, "new-head", pr=9501, sha=SHA_B),
        "other-repo": standin_job(tmp_path, "other-repo", pr=9501, sha=SHA_A, repository="else/where"),
        "pr-prefix": standin_job(tmp_path, "pr-prefix", pr=950, sha=SHA_A),
        "pr-extension": standin_job(tmp_path, "pr-extension", pr=95011, sha=SHA_A),
    }
    runs = {name: Submitted(*spec) for name, spec in jobs.items()}
    ids = {name: run.slurm_id("RUNNING") for name, run in runs.items()}
    # A superseding push of PR 9501 to SHA_B: only the old head's job of this repository goes.
    assert slurm.cancel_pr_jobs(9501, keep_sha=SHA_B[:7], repository=REPOSITORY) == [ids["old-head"]]
    assert runs["old-head"].join(30).status == "cancelled"
    still = set(_slurm_out("squeue", "-h", "-o", "%i").split())
    assert {ids[name] for name in ("new-head", "other-repo", "pr-prefix", "pr-extension")} <= still
    # /cancel on PR 9501 in octo/bench: its remaining job, not the other repository's.
    assert slurm.cancel_pr_jobs(9501, repository=REPOSITORY) == [ids["new-head"]]
    # /cancel without a repository (one repository per cluster): every job of PR 9501.
    assert slurm.cancel_pr_jobs(9501) == [ids["other-repo"]]
    for name in ("new-head", "other-repo"):
        assert runs[name].join(30).status == "cancelled"
    assert {ids["pr-prefix"], ids["pr-extension"]} <= set(_slurm_out("squeue", "-h", "-o", "%i").split())
    for pr in (950, 95011):
        slurm.cancel_pr_jobs(pr)
    for run in runs.values():
        assert_left_nothing(run.join(30))


def test_stopping_the_runner_cancels_its_slurm_job(cluster, tmp_path, cancel_after):
    """A cancelled workflow sends the runner SIGTERM: the job must not outlive it."""
    cancel_after.append(9601)
    job, job_file, out = standin_job(tmp_path, "runner-stopped", pr=9601)
    entry = Path(sys.executable).parent / "recipe-bot"
    runner = subprocess.Popen([str(entry), "run", "--job", str(job_file), "--out", str(out),
                               "--backend", "slurm", "--repo", str(standin_repo())], cwd=REPO,
                              stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True,
                              env={**os.environ, slurm.POLL_ENV: str(POLL_S)})
    slurm_id = slurm_id_of(job, "RUNNING")
    standin_report(tmp_path, slurm_id)
    runner.send_signal(signal.SIGTERM)
    output, _ = runner.communicate(timeout=30)
    assert runner.returncode == 1, output
    result = JobResult.model_validate_json((out / "result.json").read_text())
    assert result.status == "cancelled"
    assert "the runner was stopped" in str(result.reason)
    assert result.slurm.state == "CANCELLED"
    assert_left_nothing(result)


def _tiny_cpu_job() -> Job:
    server = ServerSpec(engine="vllm", model="${RECIPE_BOT_TINY_MODEL}", served_model_name="tiny",
                        args=["--max-model-len", "2048", "--distributed-executor-backend", "uni",
                              "--enforce-eager"],
                        env={"VLLM_CPU_KVCACHE_SPACE": "1"}, startup_timeout_s=300)
    points = [LoadPoint(point_id=f"c{conc}", concurrency=conc, isl=64, osl=16, num_prompts=2 * conc)
              for conc in (1, 2, 4)]
    return Job(job_id="tiny-cpu-sweep-slurm", kind="sweep", recipe="tiny-cpu",
               recipe_fingerprint="tiny-cpu", runner_label="slurm-ci", pr=9701,
               sha=checkout_head(REPO) or SHA_A,  # runs from this checkout: its own HEAD
               repository=REPOSITORY, timeout_s=900, slurm=SlurmSpec(time_limit="20"),
               cases=[Case(name="tiny-cpu", servers=[server], points=points)])


@pytest.mark.engine
def test_tiny_cpu_sweep_runs_through_slurm_and_writes_the_local_result_plus_slurm_fields(
        cluster, tmp_path, monkeypatch, cancel_after):
    cancel_after.append(9701)
    engine = REPO / ".engine"
    if not (engine / "vllm-cpu" / "bin" / "vllm").exists() or not (engine / "tiny-model").exists():
        message = "the CPU engine is not installed (scripts/setup-cpu-engine.sh)"
        if REQUIRED:
            pytest.fail(message)
        pytest.skip(message)
    monkeypatch.setenv("RECIPE_BOT_TINY_MODEL", os.environ.get("RECIPE_BOT_TINY_MODEL",
                                                               str(engine / "tiny-model")))
    job = _tiny_cpu_job()
    out = tmp_path / "tiny-cpu"
    out.mkdir()
    job_file = out / "job.json"
    job_file.write_text(job.model_dump_json())
    started = time.monotonic()
    result = slurm.run_job_slurm(job, job_file, out, None, repo=REPO, poll_s=1.0)
    print(f"tiny-cpu through Slurm: {time.monotonic() - started:.1f} s")
    assert result.status == "passed", result.reason
    # The local backend's own result, written inside the allocation...
    assert result.engine == "vllm" and result.engine_version
    assert result.hardware is not None and result.hardware.host == cluster
    assert result.server_launches == 1
    case = result.cases[0]
    assert [p.point_id for p in case.points] == ["c1", "c2", "c4"]
    for point in case.points:
        assert point.status == "passed" and point.metrics is not None
        assert point.metrics.completed == 2 * point.concurrency and point.metrics.output_throughput > 0
        assert point.raw_result_file and (out / point.raw_result_file).is_file()
    assert case.cleanup is not None and case.cleanup.clean
    # ...plus the Slurm fields.
    assert result.slurm is not None
    assert (result.slurm.state, result.slurm.exit_code, result.slurm.node) == ("COMPLETED", "0:0", cluster)
    assert (out / f"slurm-{result.slurm.job_id}.out").is_file()
    assert_left_nothing(result)


def test_time_limit_ends_failed_with_the_reason(cluster, time_limit_run):
    result = time_limit_run.join(150)
    print(f"time limit: run_job_slurm returned {time_limit_run.seconds:.1f} s after submission")
    assert result.status == "failed"
    assert "hit its time limit (00:01:00)" in str(result.reason)
    assert (result.slurm.state, result.slurm.reason) == ("TIMEOUT", "TimeLimit")
    assert_left_nothing(result)
    server_pid = standin_report(time_limit_run.out.parent, result.slurm.job_id)["pid"]
    assert pid_gone(server_pid)


def test_node_set_down_ends_the_job_failed_with_the_node_reason(cluster, time_limit_run, tmp_path,
                                                                 cancel_after):
    if os.geteuid() != 0:
        message = "setting a node down takes Slurm's operator rights (root or SlurmUser)"
        if REQUIRED:
            pytest.fail(message)
        pytest.skip(message)
    time_limit_run.thread.join(150)  # taking the node down would end that job too
    cancel_after.append(9801)
    run = Submitted(*standin_job(tmp_path, "node-down", pr=9801, gpus=1))
    slurm_id = run.slurm_id("RUNNING")
    server_pid = standin_report(tmp_path, slurm_id)["pid"]
    try:
        subprocess.run(["scontrol", "update", f"nodename={cluster}", "state=down",
                        "reason=recipe-bot node-down test"], check=True)
        result = run.join(30)
    finally:
        _resume(cluster)
    assert result.status == "failed"
    assert f"node {cluster} failed or was set down" in str(result.reason)
    assert "recipe-bot node-down test" in str(result.reason)
    assert result.slurm.state == "NODE_FAIL" and "NodeDown" in result.slurm.reason
    wait_for(lambda: pid_gone(server_pid), KILL_WAIT_S + 3, "the stand-in server to be gone")
    assert_left_nothing(result)
