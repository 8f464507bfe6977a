"""The Slurm backend's pure parts: names, selection for /cancel, command lines, parsing, verdicts."""
from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from bot.core.jobs import Case, Job, ServerSpec, SlurmSpec
from bot.core.messages import msg
from bot.runner.slurm import cluster as slurm_cluster
from bot.runner.slurm import commands as sc

SHA = "0123456789abcdef0123456789abcdef01234567"


def make_job(**overrides) -> Job:
    fields = dict(job_id="tiny-cpu/sweep 1", kind="sweep", recipe="tiny-cpu", recipe_fingerprint="fp",
                  runner_label="slurm", pr=12, sha=SHA, repository="octo/bench",
                  cases=[Case(name="c", servers=[ServerSpec(engine="vllm", model="m")])])
    fields.update(overrides)
    return Job(**fields)


@pytest.mark.parametrize(("overrides", "expected"), [
    ({}, "rb-pr12-0123456789ab-tiny-cpu_sweep_1"),
    ({"pr": None}, "rb-local-0123456789ab-tiny-cpu_sweep_1"),
    ({"sha": None}, "rb-pr12-nosha-tiny-cpu_sweep_1"),
    ({"sha": "not-a-sha"}, "rb-pr12-nosha-tiny-cpu_sweep_1"),
    ({"job_id": "a|b;c$(x)"}, "rb-pr12-0123456789ab-a_b_c_x"),
], ids=["pr-and-sha", "no-pr", "no-sha", "garbage-sha", "shell-and-format-characters"])
def test_job_name_carries_pr_sha_and_job_id_in_safe_characters(overrides, expected):
    name = sc.job_name(make_job(**overrides))
    assert name == expected
    parts = sc.parse_job_name(name)
    assert parts is not None and parts.pr == overrides.get("pr", 12)


@pytest.mark.parametrize(("name", "pr", "keep", "selected"), [
    ("rb-pr12-0123456789ab-j", 12, None, True),
    ("rb-pr12-0123456789ab-j", 12, "fedcba9", True),
    ("rb-pr12-0123456789ab-j", 12, "0123456", False),
    ("rb-pr12-0123456789ab-j", 12, SHA, False),
    ("rb-pr12-0123456789ab-j", 1, None, False),
    ("rb-pr1-0123456789ab-j", 12, None, False),
    ("rb-pr123-0123456789ab-j", 12, None, False),
    ("rb-local-0123456789ab-j", 12, None, False),
    ("rb-pr12-nosha-j", 12, SHA, True),
    ("someone-elses-job", 12, None, False),
    ("rb-pr12", 12, None, False),
], ids=["whole-pr", "other-head-superseded", "kept-head-short", "kept-head-full", "other-pr",
        "pr-1-is-not-pr-12", "pr-123-is-not-pr-12", "local-run", "unknown-sha-is-not-kept",
        "foreign-job", "truncated-name"])
def test_cancel_selects_exactly_the_prs_jobs_except_the_kept_head(name, pr, keep, selected):
    assert sc.selected_for_cancel(sc.parse_job_name(name), pr, keep) is selected


@pytest.mark.parametrize(("comment", "repository"), [
    ("recipe-bot octo/bench", "octo/bench"),
    ("recipe-bot octo/bench; cancelled: /cancel on PR #12", "octo/bench"),
    ("recipe-bot", None),
    ("(null)", None),
    ("someone's note", None),
], ids=["plain", "after-cancel", "no-repository", "null", "foreign"])
def test_repository_is_read_back_from_the_job_comment(comment, repository):
    assert sc.comment_repository(comment) == repository


def test_cancel_comment_keeps_the_repository_and_never_holds_an_equals_sign():
    comment = sc.cancel_comment("recipe-bot octo/bench", "why=because")
    assert "=" not in comment
    assert sc.comment_repository(comment) == "octo/bench"
    assert sc.cancel_reason_from_comment(comment) == "why:because"
    again = sc.cancel_comment(comment, "second")
    assert sc.cancel_reason_from_comment(again) == "second"


@pytest.mark.parametrize(("overrides", "limit"), [
    ({}, "65"),
    ({"timeout_s": 30.0}, "6"),
    ({"slurm": SlurmSpec(time_limit="00:30:00")}, "00:30:00"),
], ids=["timeout-plus-margin", "short-timeout", "explicit"])
def test_time_limit_comes_from_the_slurm_spec_else_the_job_timeout(overrides, limit):
    assert sc.slurm_time_limit(make_job(**overrides)) == limit


@pytest.mark.parametrize(("overrides", "gres", "count"), [
    ({}, None, 0),
    ({"gpus": 2}, "gpu:2", 2),
    ({"gpus": 2, "slurm": SlurmSpec(gres="gpu:h100:4")}, "gpu:h100:4", 4),
    ({"slurm": SlurmSpec(gres="gpu")}, "gpu", 1),
    ({"slurm": SlurmSpec(gres="nic:1")}, "nic:1", 0),
], ids=["cpu-job", "from-gpus", "typed-from-spec", "bare-gpu", "not-a-gpu"])
def test_gres_comes_from_the_spec_else_the_gpu_count(overrides, gres, count):
    assert sc.gres_for(make_job(**overrides)) == gres
    assert sc.gres_gpu_count(gres) == count


def test_sbatch_command_line_has_one_unrequeued_allocation_with_name_limit_gres_and_extras():
    job = make_job(gpus=2, slurm=SlurmSpec(partition="gpu", account="bench", time_limit="10",
                                           extra_args=["--exclusive", "--mem=0"]))
    argv = sc.sbatch_argv(job, Path("/o/slurm-batch.sh"), Path("/o"))
    assert argv[0] == "sbatch" and argv[-1] == "/o/slurm-batch.sh"
    for flag in ("--parsable", "--no-requeue", "--nodes=1", "--ntasks=1", "--time=10",
                 "--gres=gpu:2", "--partition=gpu", "--account=bench", "--exclusive", "--mem=0",
                 "--job-name=rb-pr12-0123456789ab-tiny-cpu_sweep_1", "--output=/o/slurm-%j.out",
                 "--comment=recipe-bot octo/bench"):
        assert flag in argv


@pytest.mark.parametrize(("image", "expect_pyxis"), [(None, False), ("nvcr.io/v:1", True)],
                         ids=["bare-node", "pyxis-image"])
def test_batch_script_runs_one_srun_step_of_the_local_backend(image, expect_pyxis):
    plan = sc.StepPlan(inner_argv=["/venv/bin/recipe-bot", "run", "--job", "/o/j.json", "--out", "/o",
                                   "--backend", "local"], gres="gpu:2", image=image,
                       mounts=["/repo", "/o", "/o"] if image else [], workdir="/o" if image else None)
    script = sc.batch_script(make_job(), plan)
    exec_lines = [line for line in script.splitlines() if line.startswith("exec ")]
    assert len(exec_lines) == 1
    argv = shlex.split(exec_lines[0])[1:]
    assert argv[:2] == ["srun", "--nodes=1"] and "--gres=gpu:2" in argv
    assert argv[argv.index("--") + 1:] == plan.inner_argv
    assert ("--container-image=nvcr.io/v:1" in argv) is expect_pyxis
    assert ("--container-mounts=/repo:/repo,/o:/o" in argv) is expect_pyxis


def test_container_image_is_one_per_job():
    job = make_job(cases=[Case(name="a", servers=[ServerSpec(engine="vllm", model="m", image="x:1")]),
                          Case(name="b", servers=[ServerSpec(engine="vllm", model="m", image="x:1")])])
    assert sc.container_image(job) == "x:1"
    assert sc.container_image(make_job()) is None
    two = make_job(cases=[Case(name="a", servers=[ServerSpec(engine="vllm", model="m", image="x:1"),
                                                  ServerSpec(engine="vllm", model="m", image="y:2")])])
    with pytest.raises(ValueError, match="2 container images"):
        sc.container_image(two)


SCONTROL_JOB = (  # as scontrol prints it, including the space it leaves after Comment
    "JobId=6 JobName=rb-pr12-0123456789ab-j\n"
    "   UserId=root(0) GroupId=root(0) MCS_label=N/A\n"
    "   JobState=CANCELLED Reason=None Dependency=(null)\n"
    "   Requeue=0 Restarts=0 BatchFlag=1 Reboot=0 ExitCode=0:15\n"
    "   NodeList=vm\n"
    "   Comment=recipe-bot octo/bench; cancelled: /cancel on PR #12 \n"
    "   TresPerNode=gres:gpu:1\n"
)


def test_scontrol_values_with_spaces_and_colons_are_read_whole():
    fields = sc.parse_scontrol(SCONTROL_JOB)
    assert fields["JobState"] == "CANCELLED"
    assert fields["ExitCode"] == "0:15"
    assert fields["NodeList"] == "vm"
    assert fields["Comment"] == "recipe-bot octo/bench; cancelled: /cancel on PR #12"
    assert fields["TresPerNode"] == "gres:gpu:1"


COMMON = dict(exit_code="0:0", slurm_reason=None, time_limit="00:01:00", node="vm", node_reason=None,
              cancel_reason=None, pending_deadline=None)


@pytest.mark.parametrize(("state", "changes", "status", "fragment"), [
    ("CANCELLED", {"ran": False, "cancel_reason": "/cancel on PR #12"}, "cancelled",
     "while pending: /cancel"),
    ("CANCELLED", {"ran": True}, "cancelled", "while running: scancel"),
    ("TIMEOUT", {"ran": True}, "failed", "time limit (00:01:00)"),
    ("NODE_FAIL", {"ran": True, "node_reason": "maintenance"}, "failed",
     "vm failed or was set down (maintenance)"),
    ("CANCELLED", {"ran": False, "pending_deadline": msg(
        "Slurm job still pending (%(why)s) after %(seconds)s s, past its deadline: cancelled", why="Resources",
        seconds="2")}, "failed", "still pending"),
    ("FAILED", {"ran": True, "exit_code": "3:0", "slurm_reason": "NonZeroExitCode"}, "failed",
     "exit code 3:0"),
    ("COMPLETED", {"ran": True}, "failed", "wrote no result.json"),
    ("OUT_OF_MEMORY", {"ran": True}, "failed", "ran out of memory"),
], ids=["cancelled-pending", "cancelled-running", "time-limit", "node-down", "pending-deadline",
        "nonzero-exit", "completed-without-result", "oom"])
def test_a_job_that_left_no_result_gets_a_failed_or_cancelled_verdict_with_the_reason(
        state, changes, status, fragment):
    verdict = sc.verdict(state, **{**COMMON, **changes})
    assert verdict.status == status
    assert fragment in str(verdict.reason)
    assert verdict.reason.render("zh") != str(verdict.reason)  # a catalogue message, Chinese in the Chinese half


@pytest.mark.parametrize(("state", "terminal"), [
    ("PENDING", False), ("RUNNING", False), ("COMPLETING", False), ("CONFIGURING", False),
    ("COMPLETED", True), ("CANCELLED", True), ("TIMEOUT", True), ("NODE_FAIL", True), ("", False),
], ids=lambda v: str(v))
def test_only_final_states_end_the_wait(state, terminal):
    assert sc.is_terminal(state) is terminal


def test_cluster_config_has_fake_gpus_and_fast_kills():
    node = slurm_cluster.NodeShape(host="box", cpus=2, real_memory_mib=1000)
    conf = slurm_cluster.render_slurm_conf(node)
    assert "NodeName=box NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000 Gres=gpu:2 State=UNKNOWN" in conf
    for line in ("KillWait=5", "GresTypes=gpu", "JobCompType=jobcomp/filetxt", "ReturnToService=1",
                 "SlurmdParameters=config_overrides", "SchedulerParameters=batch_sched_delay=0",
                 "SlurmctldHost=box(127.0.0.1)"):
        assert line in conf.splitlines()
    assert slurm_cluster.render_gres_conf().splitlines() == [
        "AutoDetect=off", "Name=gpu File=/dev/null", "Name=gpu File=/dev/zero"]


@pytest.mark.parametrize("keep", ["abc", "not-a-sha", "0123456789abcdef0123456789abcdef012345678"],
                         ids=["too-short", "not-hex", "41-digits"])
def test_cancel_refuses_a_keep_sha_that_is_not_a_commit_sha(keep):
    from click.testing import CliRunner

    from bot.runner.slurm.backend import slurm_cancel_cmd
    from bot.runner.slurm.query import cancel_pr_jobs

    with pytest.raises(ValueError, match="not a commit SHA"):
        cancel_pr_jobs(12, keep)
    outcome = CliRunner().invoke(slurm_cancel_cmd, ["--pr", "12", "--keep-sha", keep])
    assert outcome.exit_code == 2 and "--keep-sha" in outcome.output


def test_a_host_without_slurm_fails_the_job_with_the_reason_and_writes_its_result(tmp_path, monkeypatch):
    from bot.core.results import JobResult
    from bot.runner.slurm.backend import run_job_slurm

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no sbatch, squeue, scontrol, scancel
    job = make_job()
    job_file = tmp_path / "job.json"
    job_file.write_text(job.model_dump_json())
    result = run_job_slurm(job, job_file, tmp_path / "out")
    assert result.status == "failed"
    assert str(result.reason).startswith("cannot submit to Slurm: no Slurm client on this host")
    assert [case.status for case in result.cases] == ["skipped"]
    assert JobResult.model_validate_json((tmp_path / "out" / "result.json").read_text()) == result


def test_the_inner_runs_grace_ends_before_slurms_killwait_and_comes_from_the_setting_passed():
    from bot.runner.slurm.backend import GRACE_ENV, _submit_env

    assert _submit_env(10.0, 30.0)[GRACE_ENV] == "6"  # 60 % of KillWait, so the inner run tears down in order
    assert _submit_env(100.0, 2.0)[GRACE_ENV] == "2"  # the setting's own grace where it is shorter
    assert GRACE_ENV not in _submit_env(None, 2.0)


# -- a multi-node row's launcher jobs (bot/runner/slurm/multinode.py): which pending reasons mean "nodes unusable"
@pytest.mark.parametrize("reason,expected", [
    ("ReqNodeNotAvail,_UnavailableNodes:rbn2", (True, "rbn2")),
    ("ReqNodeNotAvail, UnavailableNodes:gpu-[3-4]", (True, "gpu-[3-4]")),
    ("ReqNodeNotAvail,_May_be_reserved_for_other_job", (True, None)),
    ("Nodes_required_for_job_are_DOWN,_DRAINED_or_reserved_for_jobs_in_higher_priority_partitions", (True, None)),
    ("Resources", (False, None)),  # negative: busy nodes are worth waiting for
    ("Priority", (False, None)),  # negative
    ("None", (False, None)),  # negative: a running job
], ids=["named", "named-range", "unnamed", "exclusive-job", "resources", "priority", "running"])
def test_a_pending_reason_says_whether_the_job_waits_for_unusable_nodes(reason, expected):
    from bot.runner.slurm.multinode import waiting_for_nodes

    assert waiting_for_nodes(reason) == expected


@pytest.mark.parametrize("sinfo,expected", [
    ("rbn1|idle\nrbn2|down", ["rbn2"]),
    ("a|drained\nb|draining\nc|mixed", ["a", "b"]),
    ("a|idle*\nb|allocated", ["a"]),  # `*`: not responding
    ("a|down*\na|down*", ["a"]),  # one node in two partitions
    ("a|idle\nb|allocated\nc|mixed\nd|completing", []),  # negative: every node usable
    ("", []),  # negative: sinfo said nothing
], ids=["down", "drain", "not-responding", "twice", "all-usable", "empty"])
def test_unusable_nodes_are_the_down_drained_and_silent_ones(sinfo, expected):
    from bot.runner.slurm.multinode import unusable_nodes

    assert unusable_nodes(sinfo) == expected
