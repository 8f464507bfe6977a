"""Deterministic plans and results for tests, golden files and benchmarks of the report (no engine)."""
from __future__ import annotations

import hashlib
import json
import pathlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from bot.core.jobs import AccuracySpec, Case, Job, LoadPoint, ServerSpec
from bot.core.messages import Message, msg
from bot.core.results import (
    AccuracyResult,
    CaseResult,
    CleanupProof,
    GpuMemory,
    Hardware,
    FailureClass,
    JobResult,
    PointMetrics,
    PointResult,
    RequestSamples,
    SlurmInfo,
)

HEAD_SHA = "3f1c9e0b7a2d4c6e8f0a1b2c3d4e5f6a7b8c9d0e"
BASE_SHA = "9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b"
REPOSITORY = "acme/bench"
PR = 7


def fingerprint(recipe: str) -> str:
    return hashlib.sha256(recipe.encode()).hexdigest()[:16]


def _wobble(*parts: object) -> float:
    """A fixed pseudo-random factor in [-1, 1] derived from the inputs (no RNG state)."""
    digest = hashlib.sha256("/".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:4], "big") / 0xFFFFFFFF * 2 - 1


def requests_for(count: int, *, ttft_ms: float, tpot_ms: float, osl: int = 1024,
                 isl: int = 1024, salt: str = "", spread: float = 0.05) -> RequestSamples:
    """Per-request figures around the given medians, as `--save-detailed` would keep them:
    lognormal with a relative spread of `spread`, drawn from a seed derived from `salt`."""
    import numpy as np  # only the synthetic per-request data needs it here

    seed = int.from_bytes(hashlib.sha256(f"requests/{salt}".encode()).digest()[:8], "big")
    rng = np.random.default_rng(seed)
    ttft = ttft_ms * rng.lognormal(0.0, spread * 3, count)
    tpot = tpot_ms * rng.lognormal(0.0, spread, count)
    e2el = ttft + (osl - 1) * tpot
    return RequestSamples(ttft_ms=[round(v, 3) for v in ttft], tpot_ms=[round(v, 4) for v in tpot],
                          e2el_ms=[round(v, 3) for v in e2el], input_tokens=[isl] * count,
                          output_tokens=[osl] * count)


def metrics_for(concurrency: int, *, gpus: int = 1, scale: float = 1.0, salt: str = "",
                jitter: float = 0.005, per_request: bool = False) -> PointMetrics:
    """A plausible serving curve: throughput saturates with concurrency while TPOT grows.

    `per_request`: also keep per-request samples (what the report's bootstrap reads)."""
    wobble = 1 + jitter * _wobble(salt, concurrency)
    total = scale * wobble * 420.0 * concurrency / (1 + concurrency / 48)
    output = total * 0.5
    tpot_p50 = (9.0 + 0.85 * concurrency) / (scale * wobble)
    ttft_p50 = (35.0 + 2.5 * concurrency) / (scale * wobble)
    per_gpu = max(gpus, 1)
    duration = 60.0
    return PointMetrics(
        completed=concurrency * 10,
        failed=0,
        duration_s=duration,
        request_throughput=round(concurrency * 10 / duration, 4),
        output_throughput=round(output, 4),
        total_token_throughput=round(total, 4),
        tput_per_gpu=round(total / per_gpu, 4),
        output_tput_per_gpu=round(output / per_gpu, 4),
        input_tput_per_gpu=round((total - output) / per_gpu, 4),
        interactivity=round(1000.0 / tpot_p50, 4),
        ttft_ms={"mean": round(ttft_p50 * 1.1, 3), "median": round(ttft_p50, 3),
                 "p90": round(ttft_p50 * 1.6, 3), "p99": round(ttft_p50 * 2.0, 3)},
        tpot_ms={"mean": round(tpot_p50 * 1.02, 3), "median": round(tpot_p50, 3),
                 "p90": round(tpot_p50 * 1.2, 3), "p99": round(tpot_p50 * 1.4, 3)},
        itl_ms={"mean": round(tpot_p50, 3), "median": round(tpot_p50 * 0.98, 3),
                "p90": round(tpot_p50 * 1.3, 3), "p99": round(tpot_p50 * 1.8, 3)},
        e2el_ms={"mean": round(ttft_p50 + 1024 * tpot_p50, 3),
                 "median": round(ttft_p50 + 1000 * tpot_p50, 3),
                 "p90": round((ttft_p50 + 1024 * tpot_p50) * 1.2, 3),
                 "p99": round((ttft_p50 + 1024 * tpot_p50) * 1.4, 3)},
        requests=requests_for(concurrency * 10, ttft_ms=ttft_p50, tpot_ms=tpot_p50,
                              salt=f"{salt}/{concurrency}") if per_request else None,
    )


def sweep_plan(recipe: str, *, arms: Iterable[str] = ("tp1",),
               concurrencies: Iterable[int] = (1, 2, 4, 8), gpus: int = 1,
               runner_label: str = "h200", job_id: str | None = None, sha: str = HEAD_SHA,
               command: str = "/sweep") -> Job:
    """One packed sweep job: one case (server launch) per arm, one point per concurrency."""
    cases = [
        Case(
            name=arm,
            servers=[ServerSpec(engine="vllm", model="${RECIPE_BOT_TINY_MODEL}",
                                args=["--tensor-parallel-size", _tp(arm)])],
            points=[LoadPoint(point_id=f"{arm}-c{conc}", concurrency=conc, isl=1024, osl=1024,
                              num_prompts=conc * 10) for conc in concurrencies],
        )
        for arm in arms
    ]
    return Job(job_id=job_id or f"sweep-{recipe}", kind="sweep", recipe=recipe,
               recipe_fingerprint=fingerprint(recipe), runner_label=runner_label, gpus=gpus,
               cases=cases, repository=REPOSITORY, pr=PR, sha=sha, command=command)


def _tp(arm: str) -> str:
    match = re.match(r"tp(\d+)", arm)
    return match.group(1) if match else "1"


def e2e_plan(suite: str, cases: Iterable[str], *, gpus: int = 4, threshold: float = 0.7,
             num_samples: int = 200, runner_label: str = "h200x4", sha: str = HEAD_SHA,
             command: str = "/e2e") -> Job:
    return Job(
        job_id=f"e2e-{suite}", kind="e2e", recipe=suite, recipe_fingerprint=fingerprint(suite),
        runner_label=runner_label, gpus=gpus, repository=REPOSITORY, pr=PR, sha=sha,
        command=command,
        cases=[Case(name=name,
                    servers=[ServerSpec(engine="vllm", model="${AFD_GPU_E2E_MODEL}")],
                    accuracy=AccuracySpec(num_samples=num_samples, num_shots=5,
                                          threshold=threshold))
               for name in cases],
    )


def hardware(gpus: int) -> Hardware:
    return Hardware(host="gpu-node-01", cpu="Intel Xeon Platinum 8480+", cpu_count=224,
                    gpu_count=gpus, gpus=["NVIDIA H200"] * gpus)


def clean_proof(gpus: int = 1, *, sigkill: bool = False, leftover: Iterable[int] = (),
                busy_ports: Iterable[int] = ()) -> CleanupProof:
    leftover, busy_ports = list(leftover), list(busy_ports)
    return CleanupProof(
        process_groups=[41000], leftover_pids=leftover, groups_gone=not leftover,
        ports=[8000], busy_ports=busy_ports, ports_free=not busy_ports, gpu="checked",
        gpu_memory=[GpuMemory(index=i, before_mib=512.0, after_mib=512.0, back_to_baseline=True)
                    for i in range(gpus)],
        gpu_memory_back=True, sigkill_escalated=sigkill, teardown_s=31.0 if sigkill else 2.5)


def run_sweep(job: Job, *, scale: float | Mapping[str, float] = 1.0,
              failed_points: Mapping[str, str] | None = None, engine_version: str = "0.32.0",
              sha: str | None = None, finished_at: str = "2025-11-30T05:00:00Z",
              jitter: float = 0.005, per_request: bool = False) -> JobResult:
    """What the runner would write for a sweep plan; `scale` may differ per arm (case name)."""
    failed_points = dict(failed_points or {})
    cases = []
    for case in job.cases:
        arm_scale = scale.get(case.name, 1.0) if isinstance(scale, Mapping) else scale
        points = []
        for point in case.points:
            if point.point_id in failed_points:
                points.append(PointResult(point_id=point.point_id, concurrency=point.concurrency,
                                          isl=point.isl, osl=point.osl, status="failed",
                                          reason=failed_points[point.point_id],
                                          client="vllm bench serve"))
                continue
            points.append(PointResult(
                point_id=point.point_id, concurrency=point.concurrency, isl=point.isl,
                osl=point.osl, status="passed", client="vllm bench serve",
                raw_result_file=f"raw/{point.point_id}.json",
                metrics=metrics_for(point.concurrency, gpus=job.gpus, scale=arm_scale,
                                    salt=f"{job.recipe}/{point.point_id}/{sha or job.sha}",
                                    jitter=jitter, per_request=per_request)))
        failed = [p for p in points if p.status == "failed"]
        cases.append(CaseResult(
            name=case.name, status="failed" if failed else "passed",
            reason=failed[0].reason if failed else None, startup_s=42.0, points=points,
            cleanup=clean_proof(job.gpus), server_logs=[f"logs/{case.name}.log"],
            log_tail=("INFO engine ready\nERROR benchmark client exited with status 1"
                      if failed else None)))
    status = "failed" if any(c.status == "failed" for c in cases) else "passed"
    return _result(job, status, cases, engine_version=engine_version, sha=sha,
                   finished_at=finished_at)


def run_e2e(job: Job, *, accuracy: Mapping[str, tuple[float, float]],
            sigkill_cases: Iterable[str] = (), engine_version: str = "0.32.0",
            log_tails: Mapping[str, str] | None = None) -> JobResult:
    """What the runner would write for an E2E suite; accuracy maps case -> (strict, flexible)."""
    sigkill_cases, log_tails = set(sigkill_cases), dict(log_tails or {})
    cases = []
    for case in job.cases:
        spec = case.accuracy
        assert spec is not None, "e2e_plan cases always carry an accuracy gate"
        strict, flexible = accuracy[case.name]
        scored = strict if spec.metric == "strict-match" else flexible
        gate = scored >= spec.threshold
        killed = case.name in sigkill_cases
        reason = None
        if killed:
            reason = "server ignored SIGTERM for 30 s; SIGKILL escalation fails the case"
        elif not gate:
            reason = f"GSM8K {spec.metric} {scored:.3f} < threshold {spec.threshold:.2f}"
        cases.append(CaseResult(
            name=case.name, status="passed" if gate and not killed else "failed", reason=reason,
            startup_s=95.0,
            accuracy=AccuracyResult(task="gsm8k", num_samples=spec.num_samples,
                                    num_shots=spec.num_shots, strict_match=strict,
                                    flexible_extract=flexible, metric=spec.metric,
                                    threshold=spec.threshold, passed=gate,
                                    samples_file=f"gsm8k/{case.name}.jsonl"),
            cleanup=clean_proof(job.gpus, sigkill=killed),
            server_logs=[f"logs/{case.name}.log"],
            log_tail=log_tails.get(case.name) if reason else None))
    status = "failed" if any(c.status == "failed" for c in cases) else "passed"
    return _result(job, status, cases, engine_version=engine_version)


def _result(job: Job, status: str, cases: list[CaseResult], *, engine_version: str,
            sha: str | None = None, finished_at: str = "2025-11-30T05:00:00Z") -> JobResult:
    return JobResult(
        job_id=job.job_id, kind=job.kind, recipe=job.recipe,
        recipe_fingerprint=job.recipe_fingerprint, runner_label=job.runner_label,
        status=status, reason=next((c.reason for c in cases if c.status == "failed"), None),
        gpus=job.gpus, repository=job.repository, pr=job.pr, sha=sha or job.sha,
        command=job.command, engine="vllm", engine_version=engine_version,
        hardware=hardware(job.gpus), started_at="2025-11-30T04:40:00Z", finished_at=finished_at,
        duration_s=1200.0, server_launches=len(cases), cases=cases)


def large_sweep(n_points: int, *, recipes: int | None = None, arms_per_recipe: int = 5,
                sha: str = HEAD_SHA, scale: float = 1.0) -> list[tuple[Job, JobResult]]:
    """About n_points points spread over recipes of `arms_per_recipe` arms x 10 concurrencies."""
    per_recipe = arms_per_recipe * 10
    recipes = recipes or max(1, n_points // per_recipe)
    concurrencies = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
    pairs = []
    made = 0
    for index in range(recipes):
        remaining = n_points - made
        if remaining <= 0:
            break
        arms = [f"tp{2 ** (a % 4)}-ep{a // 4 + 1}" for a in range(arms_per_recipe)]
        want = min(per_recipe, remaining) if index < recipes - 1 else remaining
        n_conc = max(1, -(-want // len(arms)))
        concs = (concurrencies * (n_conc // len(concurrencies) + 1))[:n_conc]
        concs = [c * (1 + i // len(concurrencies)) for i, c in enumerate(concs)]
        job = sweep_plan(f"model-{index:03d}-fp8", arms=arms, concurrencies=concs, gpus=8,
                         sha=sha)
        arm_scale = {arm: scale * (1 + 0.12 * a) for a, arm in enumerate(arms)}
        pairs.append((job, run_sweep(job, scale=arm_scale, sha=sha)))
        made += len(arms) * len(concs)
    return pairs


RUN_URL = "https://github.com/acme/bench/actions/runs/4242"


@dataclass(frozen=True)
class Scenario:
    """A whole report's inputs: the plan, what came back, the base branch's results."""

    name: str
    plan: list[Job]
    results: list[JobResult]
    baseline: list[JobResult] = field(default_factory=list)
    command: str = "/sweep"


def write_results(directory: pathlib.Path, results: Iterable[JobResult]) -> None:
    """Lay results out like downloaded artifacts: <dir>/<artifact>/result.json."""
    for index, result in enumerate(results):
        folder = directory / f"result-{index:04d}-{result.job_id}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "result.json").write_text(result.model_dump_json(indent=1), encoding="utf-8")


def write_plan(path: pathlib.Path, jobs: Iterable[Job]) -> None:
    path.write_text(json.dumps({"jobs": [job.model_dump(mode="json") for job in jobs]}, indent=1),
                    encoding="utf-8")


def _base_of(job: Job, *, scale: float | Mapping[str, float] = 1.0, salt: str = BASE_SHA,
             jitter: float = 0.005, per_request: bool = False) -> JobResult:
    base_job = job.model_copy(update={"sha": salt})
    return run_sweep(base_job, scale=scale, sha=salt, jitter=jitter, per_request=per_request)


def passing_sweep() -> Scenario:
    tiny = sweep_plan("tiny-cpu", arms=("tp1", "tp2"), concurrencies=(1, 4, 16, 64), gpus=2,
                      command="/sweep tiny-*")
    new = sweep_plan("qwen3-8b-fp8", arms=("tp1",), concurrencies=(8, 32), gpus=1,
                     command="/sweep tiny-*")
    # Per-request data on both sides (what `--save-detailed` keeps): the bootstrap judges tp2's
    # 8 % gain from one base run; tp1 is identical code and stays within the thresholds.
    return Scenario("passing-sweep", [tiny, new],
                    [run_sweep(tiny, scale={"tp2": 1.08}, per_request=True),
                     run_sweep(new, per_request=True)],
                    [_base_of(tiny, per_request=True)], command="/sweep tiny-*")


def regression() -> Scenario:
    job = sweep_plan("llama3-70b-fp8", arms=("tp2", "tp4", "tp8"),
                     concurrencies=(4, 16, 64, 256), gpus=8, command="/sweep llama3-70b-fp8")
    # Three base runs; their spread is the noise. tp8 is 9% slower than base: beyond the 5%
    # threshold and beyond its ~1% noise, a regression. tp4 is 3% slower: within the threshold.
    # tp2's base runs disagree by ~16%, so its 7% drop is within the noise, not a regression.
    base = [_base_of(job, salt=BASE_SHA, jitter=0.004),
            _base_of(job, salt="7" * 40, jitter=0.004, scale={"tp2": 0.92}),
            _base_of(job, salt="8" * 40, jitter=0.004, scale={"tp2": 0.85})]
    head = run_sweep(job, scale={"tp2": 0.855, "tp4": 0.97, "tp8": 0.91})
    return Scenario("regression", [job], [head], base, command="/sweep llama3-70b-fp8")


def e2e_sigkill() -> Scenario:
    job = e2e_plan("afd-plugin", ["attn1-ffn1", "attn2-ffn2", "attn4-ffn4-dbo"], gpus=8)
    tail = "\n".join([
        "INFO 11-30 04:58:01 [api_server.py:1021] Shutting down FastAPI HTTP server.",
        "INFO 11-30 04:58:01 [launcher.py:80] SIGTERM received, draining 4 requests",
        "WARNING 11-30 04:58:16 [ffn_worker.py:211] FFN rank 3 still waiting on NCCL recv",
        "WARNING 11-30 04:58:31 [ffn_worker.py:211] FFN rank 3 still waiting on NCCL recv",
        "ERROR recipe-bot: grace of 30.0 s over; SIGKILL sent to process group 41000",
        "ERROR recipe-bot: a ``` fence or </details> in a log cannot break the report",
    ])
    result = run_e2e(job, accuracy={"attn1-ffn1": (0.742, 0.751), "attn2-ffn2": (0.738, 0.749),
                                    "attn4-ffn4-dbo": (0.731, 0.744)},
                     sigkill_cases=["attn4-ffn4-dbo"], log_tails={"attn4-ffn4-dbo": tail})
    return Scenario("e2e-sigkill", [job], [result], command="/e2e")


def lost_runner() -> Scenario:
    first = sweep_plan("tiny-cpu", arms=("tp1",), concurrencies=(1, 4, 16), job_id="sweep-tiny-a")
    second = sweep_plan("tiny-cpu-long", arms=("tp1",), concurrencies=(64, 128),
                        job_id="sweep-tiny-b", runner_label="h200-spot")
    suite = e2e_plan("afd-plugin", ["attn1-ffn1"], gpus=4, runner_label="h200x4-spot")
    return Scenario("lost-runner", [first, second, suite], [run_sweep(first)],
                    [_base_of(first)], command="/sweep tiny-cpu*")


def _failed_start(job: Job, reason: Message | str, tail: str, *, finished_at: str,
                  slurm: SlurmInfo | None = None, attempt: int = 1,
                  status: str = "failed", job_reason: str | None = None) -> JobResult:
    """A job whose first case failed before its server was ready, the rest not run."""
    first, *rest = job.cases
    cases = [CaseResult(name=first.name, status="failed", reason=reason, log_tail=tail,
                        server_logs=[f"logs/{first.name}.log"])]
    cases += [CaseResult(name=c.name, status="skipped", reason="not run: fail_fast") for c in rest]
    result = _result(job, status, cases, engine_version="0.32.0", finished_at=finished_at)
    case_reason = (msg("case %(case)s: %(reason)s", case=first.name, reason=reason) if isinstance(reason, Message)
                   else f"case {first.name}: {reason}")  # an older runner's English text
    return result.model_copy(update={"reason": job_reason or case_reason,
                                     "slurm": slurm,
                                     "attempt": attempt})


def infra_retried() -> Scenario:
    """A port taken by a leftover process (retried, then passed), a Slurm node set down under a
    job (retried without that node, failed again) and a bad flag (recipe, never retried)."""
    port = sweep_plan("qwen3-8b-fp8", arms=("tp1",), concurrencies=(8, 32), job_id="sweep-qwen")
    node = sweep_plan("llama3-70b-fp8", arms=("tp8",), concurrencies=(16,), gpus=8,
                      job_id="sweep-llama", runner_label="slurm-h200")
    flag = sweep_plan("deepseek-r1-fp8", arms=("tp8",), concurrencies=(4,), gpus=8,
                      job_id="sweep-deepseek")
    port_first = _failed_start(  # as the runner writes it: a catalogue message, rendered per language
        port, msg("port %(port)s is already in use before the case started (held by %(holders)s)", port=8000,
                  holders="pid 4242 (python3 -m vllm.entrypoints.openai.api_server --port 8000)"), "",
        finished_at="2025-11-30T04:41:00Z")
    port_first = port_first.model_copy(update={"hardware": Hardware(
        host="gpu-host-3", cpu="Xeon", cpu_count=64, gpu_count=1, gpus=["NVIDIA H200"])})
    node_tail = "\n".join([
        "(APIServer pid=881) INFO 11-30 04:46:59 [api_server.py:1021] Starting vLLM API server",
        "slurmstepd: error: *** JOB 4117 ON gpu-node-07 CANCELLED AT 2025-11-30T04:52:10 "
        "DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***"])
    node_reason = "Slurm node gpu-node-07 failed or was set down (Not responding) while running"
    node_first = _failed_start(node, f"no result: the job ended before this case reported "
                               f"({node_reason})", node_tail, finished_at="2025-11-30T04:53:00Z",
                               job_reason=node_reason,
                               slurm=SlurmInfo(job_id="4117", node="gpu-node-07",
                                               state="NODE_FAIL", reason="NodeFail: Not responding"))
    node_second = _failed_start(node, f"no result: the job ended before this case reported "
                                f"(Slurm node gpu-node-09 failed or was set down (Kill task "
                                f"failed) while running)", node_tail.replace("07", "09"),
                                job_reason="Slurm node gpu-node-09 failed or was set down (Kill "
                                "task failed) while running",
                                finished_at="2025-11-30T05:10:00Z", attempt=2,
                                slurm=SlurmInfo(job_id="4121", node="gpu-node-09",
                                                state="NODE_FAIL", reason="NodeFail: Kill task failed"))
    node_second = node_second.model_copy(update={"excluded_nodes": ["gpu-node-07"]})
    flag_tail = "\n".join([
        "usage: vllm serve [model_tag] [options]",
        "vllm serve: error: unrecognized arguments: --max-modle-len 8192"])
    flag_first = _failed_start(flag, "server 'server' exited with code 2 before it was ready",
                               flag_tail, finished_at="2025-11-30T04:42:00Z")
    flag_first = flag_first.model_copy(update={"failure": FailureClass(
        kind="recipe", rule="bad-arguments",
        evidence=["vllm serve: error: unrecognized arguments: --max-modle-len 8192"])})
    port_second = run_sweep(port, finished_at="2025-11-30T05:05:00Z").model_copy(
        update={"attempt": 2})
    return Scenario("infra-retried", [port, node, flag],
                    [port_first, port_second, node_first, node_second, flag_first],
                    command="/sweep")


def many_points(n_points: int, name: str | None = None, sha: str = HEAD_SHA) -> Scenario:
    pairs = large_sweep(n_points, sha=sha)
    # Two base runs a shade apart: their spread is the interval that the 15 % drop below exceeds.
    base = [result for _, result in large_sweep(n_points, sha=BASE_SHA, scale=1.02)]
    base += [result for _, result in large_sweep(n_points, sha="6" * 40, scale=1.025)]
    # One arm of the first recipe regresses, so that rows needing attention stay visible.
    plan = [job for job, _ in pairs]
    results = [result for _, result in pairs]
    first = plan[0]
    results[0] = run_sweep(first, sha=sha, scale={first.cases[0].name: 0.85, **{
        c.name: 1 + 0.12 * i for i, c in enumerate(first.cases) if i}})
    return Scenario(name or f"points-{n_points}", plan, results, base, command="/sweep --scope full")


SCENARIOS: dict[str, Callable[[], Scenario]] = {
    "passing-sweep": passing_sweep,
    "regression": regression,
    "e2e-sigkill": e2e_sigkill,
    "lost-runner": lost_runner,
    "infra-retried": infra_retried,
    "points-500": lambda: many_points(500),
}


def materialize(scenario: Scenario, root: pathlib.Path) -> dict[str, pathlib.Path]:
    """Write a scenario as the GPU workflow would lay it out; returns the CLI's paths."""
    paths = {"results": root / "results", "plan": root / "plan.json", "baseline": root / "base"}
    paths["results"].mkdir(parents=True, exist_ok=True)
    paths["baseline"].mkdir(parents=True, exist_ok=True)
    write_results(paths["results"], scenario.results)
    write_results(paths["baseline"], scenario.baseline)
    write_plan(paths["plan"], scenario.plan)
    return paths
