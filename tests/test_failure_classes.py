"""Every rule of bot/core/failure_classes.py recognises a log excerpt of the kind it was written for.

The excerpts are written in the shape vLLM, SGLang, Slurm, NCCL, the NVIDIA driver and the
runner itself print (the kept runs in docs/gpu-runs/ show the real vLLM/SGLang prefixes); one
excerpt per rule, plus named negative cases that must not be read as infrastructure.
"""
from __future__ import annotations

import pytest

from bot.core import failure_classes as fc, stage_markers
from bot.core.results import CaseResult, CleanupProof, FailureClass, JobResult, SlurmInfo

VLLM = "(APIServer pid=881) INFO 11-30 04:46:59 [api_utils.py:345] "
ENGINE = "(EngineCore pid=1010) ERROR 11-30 04:47:37 [core.py:708] "
SGL = "[2026-12-01 02:50:03] "

# (rule id, lines as the case reason and log tail hold them, a server was ready, decisive line)
EXCERPTS = [
    ("runner-lost", ["no result.json came back: the runner was lost, timed out or never started "
                     "the job"], False, "no result.json came back"),
    ("result-unreadable", ["job-a/result.json is not a valid result: cannot be read: 'utf-8' codec can't decode "
                           "byte 0xff in position 0"], False, "is not a valid result"),
    ("cancelled-by-platform", ["Slurm job 3301 state CANCELLED on gpu-node-04",
                               "Slurm job cancelled while running: scancel by an operator or the "
                               "cluster"], True, "scancel by an operator or the cluster"),
    ("slurm-node-failure", ["Slurm job 412 state NODE_FAIL on gpu-node-07",
                            "NodeDown: Not responding",
                            "Slurm node gpu-node-07 failed or was set down (Not responding) while "
                            "running"], False, "failed or was set down"),
    ("slurm-preempted", ["Slurm job 977 state PREEMPTED on gpu-node-02",
                         "slurmstepd: error: *** JOB 977 ON gpu-node-02 CANCELLED AT "
                         "2026-12-01T03:05:11 DUE TO PREEMPTION ***"], True, "DUE TO PREEMPTION"),
    ("timeout-before-start", ["Slurm job 88 state TIMEOUT on gpu-node-03", "TimeLimit",
                              "Slurm job hit its time limit (00:30:00)"], False,
     "hit its time limit"),
    ("port-busy", ["port 8000 is already in use before the case started (held by pid 4242 "
                   "(python3 -m http.server 8000))"], False, "already in use"),
    ("device-busy", [ENGINE + "ValueError: Free memory on device cuda:0 (10.2/139.8 GiB) on "
                     "startup is less than desired GPU memory utilization (0.9, 125.8 GiB). "
                     "Decrease GPU memory utilization or reduce GPU memory used by other "
                     "processes."], False, "Free memory on device"),
    ("out-of-disk", [VLLM + "Downloading shards: 40%", ENGINE + "OSError: [Errno 28] No space left "
                     "on device: '/root/.cache/huggingface/hub/models--Qwen--Qwen3-8B/blobs/"
                     "a1b2.incomplete'"], False, "No space left on device"),
    ("gpu-error", ["[Mon Dec  1 03:02:11 2026] NVRM: Xid (PCI:0000:1b:00): 79, pid=4187, "
                   "name=python3, GPU has fallen off the bus.",
                   ENGINE + "RuntimeError: CUDA error: unspecified launch failure"], True,
     "NVRM: Xid"),
    ("nccl-init-timeout", [ENGINE + "[rank1]:[E1201 03:04:05.123 ProcessGroupNCCL.cpp:616] "
                           "[Rank 1] Watchdog caught collective operation timeout: "
                           "WorkNCCL(SeqNum=1, OpType=ALLREDUCE, Timeout(ms)=600000) ran for "
                           "600012 milliseconds before timing out."], False,
     "Watchdog caught collective operation timeout"),
    ("model-not-found", [VLLM + "huggingface_hub.errors.RepositoryNotFoundError: 404 Client "
                         "Error. Repository Not Found for url: https://huggingface.co/api/models/"
                         "Qwen/Qwen3-8B-typo/revision/main."], False, "RepositoryNotFoundError"),
    ("download-failure", [VLLM + "requests.exceptions.ConnectionError: HTTPSConnectionPool("
                          "host='huggingface.co', port=443): Max retries exceeded with url: "
                          "/api/models/Qwen/Qwen3-8B (Caused by NameResolutionError: "
                          "Temporary failure in name resolution)"], False,
     "Max retries exceeded with url"),
    ("slurm-unavailable", ["cannot submit to Slurm: sinfo: error: Unable to contact slurm "
                           "controller (connect failure)"], False, "cannot submit to Slurm"),
    ("checkout-mismatch", ["the checkout is at 1111111111111111111111111111111111111111, but the "
                           "job was authorized for 2222222222222222222222222222222222222222: "
                           "refusing to measure a commit nobody approved (check out the job's "
                           "SHA)"], False, "but the job was authorized for"),
    ("bad-arguments", ["server 'server' exited with code 2 before it was ready",
                       "usage: vllm serve [model_tag] [options]",
                       "vllm serve: error: unrecognized arguments: --max-modle-len 4096"], False,
     "unrecognized arguments"),
    ("server-exited-at-start", ["server 'server' exited with code 3 before it was ready",
                                SGL + "Traceback (most recent call last):",
                                SGL + "RuntimeError: fake engine failed to allocate its KV cache"],
     False, "exited with code 3 before it was ready"),
    ("not-ready", ["server 'server' was not ready after 600 s (/health and /v1/models on port "
                   "38211)", VLLM + "Waiting for the engine core to be ready"], False,
     "was not ready after 600 s"),
    ("timeout-after-start", ["Slurm job 90 state TIMEOUT on gpu-node-03",
                             "Slurm job hit its time limit (01:00:00)"], True,
     "hit its time limit"),
    ("server-died", ["server 'server' exited with code 7 during point 'c1'"], True,
     "exited with code 7 during"),
    ("accuracy", ["GSM8K strict-match 0.4100 is below the threshold 0.7000"], True,
     "below the threshold"),
    ("client-error", ["point c4: 12 of 12 requests failed"], True, "requests failed"),
    ("teardown", ["forced SIGKILL for server 'server' (process group 5123) after 30 s SIGTERM "
                  "grace"], True, "forced SIGKILL"),
    ("regression", ["point c16 regressed beyond the threshold on tput_per_gpu"], True,
     "regressed beyond"),
]


def test_every_rule_has_an_excerpt() -> None:
    assert {rule.id for rule in fc.RULES} == {rule_id for rule_id, *_ in EXCERPTS}


def test_every_rule_is_told_in_both_languages() -> None:
    for rule in (*fc.RULES, fc.UNCLASSIFIED):
        assert str(rule.sentence) and rule.sentence.render("zh") != str(rule.sentence), rule.id


@pytest.mark.parametrize(("rule_id", "lines", "started", "decisive"), EXCERPTS,
                         ids=[e[0] for e in EXCERPTS])
def test_excerpt_is_classified_by_its_rule_with_the_decisive_line(
        rule_id: str, lines: list[str], started: bool, decisive: str) -> None:
    found = fc.classify_lines(lines, started=started)
    assert found.rule == rule_id
    assert found.kind == fc.rule(rule_id).kind
    assert any(decisive in line for line in found.evidence), found.evidence


NOT_INFRASTRUCTURE = [
    pytest.param([VLLM + "WARNING Found ulimit of 20000 and failed to automatically increase",
                  "(EngineCore pid=1010) INFO parallel_state.py:1615 world_size=1 backend=nccl",
                  "server 'server' exited with code 1 during point 'c1'"],
                 "server-died", id="a-clean-vllm-start-mentioning-nccl-then-a-crash"),
    pytest.param(["vllm bench serve exited with code 1: ConnectionResetError: [Errno 104] "
                  "Connection reset by peer"], "client-error",
                 id="a-reset-connection-to-our-own-server-is-not-a-download"),
    pytest.param(["something nobody has seen before"], "unclassified",
                 id="an-unknown-failure-is-never-retried"),
]


@pytest.mark.parametrize(("lines", "rule_id"), NOT_INFRASTRUCTURE)
def test_recipe_symptoms_without_infrastructure_evidence_stay_recipe(lines: list[str],
                                                                      rule_id: str) -> None:
    found = fc.classify_lines(lines, started=True)
    assert (found.kind, found.rule) == ("recipe", rule_id)


def test_infrastructure_evidence_outranks_the_crash_it_caused() -> None:
    found = fc.classify_lines(["server 'server' exited with code 1 during point 'c8'",
                               ENGINE + "torch.OutOfMemoryError: No space left on device"],
                              started=True)
    assert (found.kind, found.rule) == ("infrastructure", "out-of-disk")


def _job(status: str, *, cases: list[CaseResult] = (), reason: str | None = None,
         slurm: SlurmInfo | None = None, attempt: int = 1) -> JobResult:
    return JobResult(job_id="j", kind="sweep", recipe="r", recipe_fingerprint="fp",
                     runner_label="h200", status=status, reason=reason, cases=list(cases),
                     slurm=slurm, attempt=attempt)


def test_a_node_failure_classifies_the_job_whatever_its_cases_say() -> None:
    case = CaseResult(name="c", status="failed", reason="no result: the job ended before this "
                      "case reported (Slurm node n1 failed or was set down while running)",
                      startup_s=3.0)
    job = fc.annotate(_job("failed", cases=[case], reason="Slurm node n1 failed or was set down",
                           slurm=SlurmInfo(job_id="5", node="n1", state="NODE_FAIL",
                                           reason="NodeFail: recipe-bot node-down test")))
    assert job.failure.rule == "slurm-node-failure" and job.failure.kind == "infrastructure"
    assert fc.should_retry(job)


def test_a_recipe_case_makes_the_job_recipe_even_beside_an_infrastructure_case() -> None:
    port = CaseResult(name="a", status="failed", reason="port 9 is already in use before the "
                      "case started")
    flag = CaseResult(name="b", status="failed", reason="server 'x' exited with code 2 before "
                      "it was ready", log_tail="error: unrecognized arguments: --bogus")
    job = fc.annotate(_job("failed", cases=[port, flag],
                           reason="case a: port 9 is already in use before the case started"))
    assert [c.failure.rule for c in job.cases] == ["port-busy", "bad-arguments"]
    assert job.failure.kind == "recipe" and not fc.should_retry(job)


RETRY = [
    pytest.param("lost", 1, True, id="a-lost-first-attempt-is-retried"),
    pytest.param("lost", 2, False, id="a-lost-retry-is-not-retried-again"),
    pytest.param("passed", 1, False, id="a-passed-job-is-not-retried"),
    pytest.param("cancelled", 1, False, id="a-job-cancelled-by-a-person-is-not-retried"),
]


@pytest.mark.parametrize(("status", "attempt", "retried"), RETRY)
def test_only_a_first_infrastructure_failure_is_retried(status: str, attempt: int,
                                                        retried: bool) -> None:
    reason = "no result.json came back: the runner was lost" if status == "lost" else None
    assert fc.should_retry(fc.annotate(_job(status, reason=reason, attempt=attempt))) is retried


def test_a_job_the_cluster_cancelled_is_infrastructure_and_retried() -> None:
    job = fc.annotate(_job("cancelled", reason="Slurm job cancelled while running: scancel by an "
                           "operator or the cluster",
                           slurm=SlurmInfo(job_id="8", node="n2", state="CANCELLED")))
    assert job.failure.rule == "cancelled-by-platform" and fc.should_retry(job)
    by_bot = _job("cancelled", reason="Slurm job cancelled while running: /cancel by @carol")
    assert fc.annotate(by_bot).failure is None


def test_a_dirty_teardown_of_a_passed_case_is_a_recipe_failure() -> None:
    proof = CleanupProof(groups_gone=True, ports_free=True, sigkill_escalated=True)
    case = CaseResult(name="c", status="passed", cleanup=proof)
    assert fc.classify_case(case) == FailureClass(kind="recipe", rule="teardown",
                                                  evidence=["cleanup proof failed"])


def test_a_class_already_in_the_result_is_kept() -> None:
    given = FailureClass(kind="infrastructure", rule="gpu-error", evidence=["Xid 79"])
    job = _job("failed", reason="server 'x' exited with code 1 during point 'c1'")
    assert fc.annotate(job.model_copy(update={"failure": given})).failure == given


DMESG = """[ 1200.000000] nvidia-uvm: Loaded the UVM driver, major device number 510.
[ 8071.554201] NVRM: Xid (PCI:0000:18:00): 48, pid=2211, name=python3, Ch 00000010, DBE (double bit error)
[ 9100.104512] NVRM: GPU at PCI:0000:1b:00: GPU-5f2e0c31-9a47-4c0e-8e7b-1d2c3b4a5f60
[ 9100.104530] NVRM: Xid (PCI:0000:1b:00): 79, pid=4187, name=python3, GPU has fallen off the bus.
[ 9100.104611] NVRM: GPU 0000:1b:00.0: GPU has fallen off the bus.
[ 9101.000000] docker0: port 1(veth1) entered blocking state"""


def test_kernel_log_keeps_the_xid_lines_of_the_case_and_the_rule_reads_them():
    from bot.runner.kernel_log import gpu_errors

    lines = gpu_errors(DMESG, since_s=9000.0)
    assert lines == ["kernel: NVRM: Xid (PCI:0000:1b:00): 79, pid=4187, name=python3, GPU has "
                     "fallen off the bus."]
    crash = ["server 'server' exited with code -6 during point 'c64'", *lines]
    assert fc.classify_lines(crash, started=True).rule == "gpu-error"


def test_kernel_log_lines_before_the_case_started_are_not_its_evidence():
    from bot.runner.kernel_log import gpu_errors

    assert gpu_errors(DMESG, since_s=9200.0) == []


def test_merged_record_counts_the_last_report_of_each_head_and_adds_the_heads():
    head = "<!-- recipe-bot:report sha=aaaaaaa failures=- -->\n"
    other = "<!-- recipe-bot:report sha=bbbbbbb failures=- -->\n"
    bodies = [other + stage_markers.infra_record_line({"n1": 1}), head + stage_markers.infra_record_line({"n1": 1}),
              head + stage_markers.infra_record_line({"n1": 2, "n2": 1})]
    assert fc.merged_record(bodies) == {"n1": 3, "n2": 1}
