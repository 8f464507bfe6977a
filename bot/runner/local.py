"""Run a job on this host: its cases one after another, each releasing everything it started."""
from __future__ import annotations

import datetime as dt
import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from bot import engines
from bot.core.jobs import Case, Job, LoadPoint
from bot.core.provenance import dataset_of
from bot.core.messages import Message, msg
from bot.core.results import CaseResult, JobResult, PointResult, Provenance, joined, reason_of
from bot.core.settings import Settings, load_settings
from bot.engines import Installed
from bot.runner import kernel_log, procs
from bot.runner.accuracy import run_gsm8k
from bot.runner.budget import Budget, JobInterrupted
from bot.runner.command_case import command_env, run_command_case, run_setup
from bot.runner.engines import HOST, Launch, build_launch
from bot.runner.environment import EnvironmentProblem, check_opt_in, check_required
from bot.runner.hardware import case_gpus, describe_host, gpu_memory_used_mib
from bot.runner.inprocess import InProcessClient, launch_session
from bot.runner.load import Client, Target, choose_client, reset_prefix_cache, run_point, safe_name
from bot.runner.preflight import check_idle
from bot.runner.progress import Progress
from bot.runner.power import PowerSampler, with_power
from bot.runner.proof import prove_teardown
from bot.runner.provenance import checkout_head, provenance_of, sha_mismatch
from bot.runner.search_run import case_points, fixed_points, own_points, search_trace
from bot.runner.server import InferenceServer, ServerError, terminate_servers
from bot.runner.software import software_versions

GRACE_ENV = "RECIPE_BOT_SHUTDOWN_GRACE_S"


def shutdown_grace_s(settings: Settings) -> float:
    """SIGTERM grace before SIGKILL. vLLM needs about 2 s here and on an H200; 30 s is generous."""
    return max(0.5, settings.SHUTDOWN_GRACE_S)


@dataclass
class RunContext:
    job: Job
    out_dir: Path
    repo: Path
    progress: Progress
    budget: Budget
    engines: dict[str, Installed]  # every engine, with where this host has its program
    grace_s: float
    # the RECIPE_BOT_* settings, read once where the run starts (GSM8K folder, idle-GPU bound)
    settings: Settings = field(default_factory=Settings.model_construct)


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def _gpus_for(case: Case, job: Job) -> int:
    devices = {d for spec in case.servers for d in (spec.devices or [])}
    return len(devices) or job.gpus


def _assign_ports(case: Case) -> list[int]:
    fixed = {spec.port for spec in case.servers if spec.port is not None}
    ports, taken = [], set(fixed)
    for spec in case.servers:
        port = spec.port if spec.port is not None else procs.pick_free_port(avoid=taken)
        taken.add(port)
        ports.append(port)
    for port in ports:
        if not procs.port_is_free(port):
            holders = ", ".join(f"pid {p.pid} ({p.cmdline[:60]})" for p in procs.port_holders(port))
            raise EnvironmentProblem(
                msg("port %(port)s is already in use before the case started (held by %(holders)s)", port=port,
                    holders=holders) if holders
                else msg("port %(port)s is already in use before the case started", port=port))
    return ports


def _launches(case: Case, ctx: RunContext, run_tag: str) -> list[Launch]:
    check_required(case.required_env, os.environ)
    ports = _assign_ports(case)
    return [build_launch(spec, case, port=port, repo=ctx.repo, runner_env=os.environ,
                         run_tag=run_tag, installed=ctx.engines)
            for spec, port in zip(case.servers, ports)]


def _not_run(case: Case, done: list[PointResult], why: Message | str) -> list[PointResult]:
    """Each planned point with no result yet, recorded as not run. A search chooses its own points as it
    goes, so once it has measured any, only the fixed points interleaved with it were planned."""
    planned = fixed_points(case) if case.search is not None and done else case.points
    recorded = {p.point_id for p in done}
    return [PointResult(point_id=p.point_id, concurrency=p.concurrency, isl=p.isl, osl=p.osl,
                        status="skipped", reason=msg("not run: %(why)s", why=why))
            for p in planned if p.point_id not in recorded]


def _start_servers(case: Case, launches: list[Launch], servers: list[InferenceServer],
                   case_dir: Path, ctx: RunContext,
                   started: Callable[[], None] = lambda: None) -> float | None:
    """Start every server (appended to `servers` at once, so teardown finds it whatever happens),
    then wait for the ones that answer HTTP. Returns seconds from launch to the last one ready."""
    names = [launch.name for launch in launches]
    for index, launch in enumerate(launches):
        # Two servers may share a name (the default "server"): their logs must not.
        label = launch.name if names.count(launch.name) == 1 else f"{launch.name}{index}"
        server = InferenceServer(name=label, argv=launch.argv, env=launch.env,
                                 port=launch.port, host=HOST, cwd=launch.cwd,
                                 log_path=case_dir / f"server-{safe_name(label)}.log",
                                 grace_s=ctx.grace_s, ready_paths=launch.ready_paths)
        servers.append(server)
        try:
            server.start()
        except OSError as exc:
            raise ServerError(msg("server %(server)s could not start: %(error)s", server=repr(launch.name),
                                  error=str(exc))) from exc
        ctx.progress.say(f"  started {launch.engine} server [bold]{escape(label)}[/bold] "
                         f"(pid {server.pgid}, port {launch.port})")
    started()  # e.g. the benchmark client starts importing while the servers load
    startup_s = None
    ready_paths = dict.fromkeys(path for launch in launches for path in launch.ready_paths)
    with ctx.progress.waiting(f"waiting for {' and '.join(ready_paths)}"):
        for spec, server in zip(case.servers, servers):
            if not spec.ready_check:  # e.g. an AFD FFN role: ready when its peer is
                continue
            timeout = min(spec.startup_timeout_s, ctx.budget.remaining())
            ready_s = server.wait_ready(
                timeout, others=[s for s in servers if s is not server],
                tick=lambda: ctx.budget.tick(msg("waiting for the server to become ready")))
            startup_s = max(startup_s or 0.0, ready_s)
    if startup_s is not None:
        ctx.progress.say(f"  ready after {startup_s:.1f} s")
    return startup_s


def _measure(point: LoadPoint, case: Case, ctx: RunContext, client: Client, target: Target,
             servers: list[InferenceServer], case_dir: Path, env: dict[str, str],
             session: InProcessClient | None = None) -> PointResult:
    """The point's runs (`repeats`, each with its own seed, the prefix cache reset between them
    like between points); with several, the run with the median throughput per GPU speaks for
    the point and every run's metrics go with it, for the report's run-to-run interval."""
    runs: list[PointResult] = []
    for repeat in range(point.repeats):
        if repeat and case.reset_prefix_cache_between_points:
            ctx.progress.say(f"  prefix cache: {reset_prefix_cache(target)}")
        if repeat:
            ctx.budget.tick(msg("starting repeat %(repeat)s of point %(point)s", repeat=repeat + 1,
                                           point=repr(point.point_id)))
        result = run_point(point, client=client, target=target, servers=servers,
                           out_dir=ctx.out_dir, case_dir=case_dir, gpus=_gpus_for(case, ctx.job),
                           env=env, tick=ctx.budget.tick, repeat=repeat,
                           session=session)
        if result.status != "passed" or result.metrics is None:
            if point.repeats > 1:
                result = result.model_copy(update={
                    "reason": msg("repeat %(repeat)s of %(repeats)s: %(reason)s", repeat=repeat + 1,
                                  repeats=point.repeats, reason=result.reason)})
            return result
        runs.append(result)
    if len(runs) == 1:
        return runs[0]
    middle = sorted(runs, key=lambda r: r.metrics.tput_per_gpu)[(len(runs) - 1) // 2]
    processes = {r.client_process for r in runs}
    return middle.model_copy(update={
        "client_process": processes.pop() if len(processes) == 1 else "mixed",
        "metrics": middle.metrics.model_copy(update={"requests": None}),  # kept in repeats
        "repeats": [r.metrics for r in runs],
        "raw_result_files": [r.raw_result_file for r in runs if r.raw_result_file]})


def _run_points(case: Case, ctx: RunContext, client: Client | None, target: Target,
                servers: list[InferenceServer], case_dir: Path, run_tag: str,
                points: list[PointResult], failures: list[Message | str],
                session: InProcessClient | None = None) -> None:
    """The case's points in order on the running servers; results go to `points` as they come,
    failed points' reasons to `failures`. A dead server or an interruption raises after recording
    the point it hit and the points it leaves unrun.
    """
    client_env = _client_env(run_tag)
    if session is not None and not _client_ready(session, servers, ctx):
        session = None
    _points_in_order(case, ctx, client, target, servers, case_dir, client_env, session,
                     points, failures)


def _client_env(run_tag: str) -> dict[str, str]:
    return {**os.environ, procs.RUN_TAG_VAR: run_tag, "NO_PROXY": "127.0.0.1,localhost"}


def _launch_client(case: Case, ctx: RunContext, launches: list[Launch], case_dir: Path,
                   run_tag: str) -> InProcessClient | None:
    """One benchmark-client process for all of the case's points (bot/runner/inprocess.py), an
    adaptive search's included (it picks each point from the last one's result, then hands it to
    the same process), started beside the servers so that its imports overlap their start-up;
    None: one process a point, as when the case's client has no library to call in process."""
    primary = next((launch for spec, launch in zip(case.servers, launches) if spec.ready_check),
                   launches[0])
    try:
        client = choose_client(ctx.engines, primary.engine,
                               case.points[0].client) if case.points else None
    except FileNotFoundError:
        return None  # said after start-up, where the case fails on it
    if client is None or not client.engine.in_process_client:
        return None
    session, why_not = launch_session(client.engine, client.program, _client_env(run_tag),
                                      case_dir / "client.log", ctx.settings)
    if session is None:
        ctx.progress.say(f"  benchmark client: one process a point ({escape(why_not or '')})")
    return session


def _client_ready(session: InProcessClient, servers: list[InferenceServer],
                  ctx: RunContext) -> bool:
    def watch() -> None:
        for server in servers:
            server.check_alive(msg("while the benchmark client started"))
        ctx.budget.tick(msg("starting the benchmark client"))

    with ctx.progress.waiting("starting the benchmark client"):
        ready = session.wait_ready(watch)
    if not ready:
        ctx.progress.say(f"  benchmark client: one process a point ({escape(session.problem or '')})")
    return ready


def _points_in_order(case: Case, ctx: RunContext, client: Client | None, target: Target,
                     servers: list[InferenceServer], case_dir: Path, client_env: dict[str, str],
                     session: InProcessClient | None, points: list[PointResult],
                     failures: list[Message | str]) -> None:
    for index, point in enumerate(case_points(case, points)):
        if index > 0 and case.reset_prefix_cache_between_points:
            ctx.progress.say(f"  prefix cache: {reset_prefix_cache(target)}")
        ctx.budget.tick(msg("starting point %(point)s", point=repr(point.point_id)))
        try:
            result = _measure(point, case, ctx, client, target, servers, case_dir, client_env,
                              session)
        except (ServerError, JobInterrupted) as exc:
            points.append(PointResult(point_id=point.point_id, concurrency=point.concurrency,
                                      isl=point.isl, osl=point.osl, status="failed",
                                      reason=reason_of(exc), client=client.name if client else None))
            points += _not_run(case, points, reason_of(exc))
            raise
        points.append(result)
        ctx.progress.point(result)
        if result.status != "passed":
            failures.append(msg("point %(point)s: %(reason)s", point=point.point_id, reason=result.reason))


def run_case(case: Case, ctx: RunContext) -> CaseResult:
    """One server launch: start, wait ready, points in order, GSM8K, then teardown and its proof."""
    case_dir = ctx.out_dir / safe_name(case.name)
    case_dir.mkdir(parents=True, exist_ok=True)
    run_tag = f"{safe_name(ctx.job.job_id)}-{uuid.uuid4().hex[:12]}"
    if case.command is not None:  # the repository's own harness: run to completion, then the proof
        return run_command_case(case, ctx, run_tag, case_dir)
    progress, budget = ctx.progress, ctx.budget
    failures: list[Message | str] = []
    points: list[PointResult] = []
    accuracy = None
    startup_s = None
    log_tail = None
    servers: list[InferenceServer] = []
    sessions: list[InProcessClient | None] = []
    launches: list[Launch] = []
    devices = sorted({d for spec in case.servers for d in (spec.devices or [])}) or None
    used_gpus = case_gpus(devices, _gpus_for(case, ctx.job), os.environ)  # host GPUs, not logical
    gpu_before = gpu_memory_used_mib(used_gpus) if used_gpus else None
    case_started_boot_s = kernel_log.boot_seconds()
    progress.say(f"case [bold]{escape(case.name)}[/bold]: {len(case.servers)} server(s), "
                 f"{len(case.points)} point(s)" + (", GSM8K" if case.accuracy else ""))
    try:
        budget.tick(msg("starting the case"))
        busy = check_idle(used_gpus, ctx.settings.IDLE_GPU_MIB)
        if busy is not None:
            raise EnvironmentProblem(busy)
        launches = _launches(case, ctx, run_tag)

        def client_alongside() -> None:
            sessions.append(_launch_client(case, ctx, launches, case_dir, run_tag))

        startup_s = _start_servers(case, launches, servers, case_dir, ctx, client_alongside)
        # The clients talk to the first server that answers HTTP (afd-plugin: the Attention role).
        primary = next((launch for spec, launch in zip(case.servers, launches)
                        if spec.ready_check), launches[0])
        target = Target(host=HOST, port=primary.port, served_model_name=primary.served_model_name,
                        tokenizer=primary.model, engine=primary.engine)
        client = choose_client(ctx.engines, primary.engine,
                               case.points[0].client) if case.points else None
        sampler = PowerSampler(used_gpus, case_dir / "gpu_metrics.csv")
        try:
            with sampler:  # the case's GPUs while its points run (bot/runner/power.py)
                _run_points(case, ctx, client, target, servers, case_dir, run_tag, points, failures,
                            next((x for x in sessions if x is not None), None))
        finally:
            points[:] = with_power(points, sampler, ctx.out_dir)
        if case.accuracy is not None:
            with progress.waiting(f"GSM8K: {case.accuracy.num_samples} samples"):
                outcome = run_gsm8k(case.accuracy, base_url=f"http://{HOST}:{primary.port}",
                                    model=primary.served_model_name, case_dir=case_dir,
                                    out_dir=ctx.out_dir, repo=ctx.repo, servers=servers, gsm8k_dir=ctx.settings.GSM8K_DIR,
                                    tick=budget.tick, remaining_s=budget.remaining)
            accuracy = outcome.result
            progress.say(f"  GSM8K {accuracy.num_shots}-shot, {accuracy.num_samples} samples: "
                         f"strict-match {accuracy.strict_match:.3f}, flexible-extract "
                         f"{accuracy.flexible_extract:.3f}, threshold {accuracy.threshold:g} "
                         f"({accuracy.metric}) -> {'passed' if accuracy.passed else 'failed'}")
            if outcome.reason:
                failures.append(outcome.reason)
        for server in servers:  # afd-plugin E2E-INV-005: still alive after the work
            server.check_alive(msg("before teardown"))
    except ServerError as exc:
        failures.append(reason_of(exc))
        log_tail = exc.log_tail or None
    except (EnvironmentProblem, FileNotFoundError, ValueError) as exc:
        failures.append(reason_of(exc))
    except JobInterrupted as exc:
        failures.append(reason_of(exc))
    except Exception as exc:  # noqa: BLE001 - a runner bug still tears down and reports
        failures.append(msg("runner error: %(error)s", error=f"{type(exc).__name__}: {exc}"))
    finally:
        for session in sessions:  # before the servers: the proof must find nothing of the run
            if session is not None:
                session.close()
        teardown_started = time.monotonic()
        proof = None
        if servers:
            with progress.waiting("stopping servers"):
                reports = terminate_servers(servers, ctx.grace_s)
                proof, teardown_failures = prove_teardown(
                    reports, ports=[launch.port for launch in launches[:len(servers)]],
                    run_tag=run_tag, gpu_before=gpu_before, started=teardown_started)
            failures += teardown_failures
    points += _not_run(case, points, failures[0] if failures else msg("case stopped"))
    if failures and log_tail is None and servers:
        log_tail = servers[0].log_tail()
    if failures and used_gpus:  # an Xid in the kernel log explains a crash the server log cannot
        xid = kernel_log.read_gpu_errors(case_started_boot_s)
        if xid:
            log_tail = "\n".join([*(log_tail or "").splitlines(), *xid])
    result = CaseResult(
        name=case.name, status="failed" if failures else "passed",
        reason=joined(failures), startup_s=round(startup_s, 3) if startup_s else None,
        points=points, accuracy=accuracy, cleanup=proof,
        server_logs=[str(s.log_path.relative_to(ctx.out_dir)) for s in servers],
        log_tail=log_tail if failures else None,
        search=search_trace(case.search, own_points(case, points)) if case.search else None)
    progress.case(result)
    return result


def _prepare_harness(job: Job, ctx: RunContext, stop_why: Message | str | None) -> tuple[list[dict], dict]:
    """A harness suite's setup steps, once before its first case, and the software it then runs with."""
    command = next((c.command for c in job.cases if c.command is not None), None)
    if command is None or stop_why is not None:
        return [], {}
    env = command_env(command, job.cases[0], ctx.repo, os.environ, "setup")
    setup: list[dict] = []
    try:  # no install for a suite whose opt-in is not met: each case fails on it by itself
        check_required(job.cases[0].required_env, os.environ)
        check_opt_in(command.opt_in, os.environ)
    except EnvironmentProblem:
        return [], software_versions(command.plugin, env)
    if command.setup:
        ctx.progress.say(f"setup: {len(command.setup)} step(s)")
        setup, failed = run_setup(command.setup, ctx.repo, env, ctx.out_dir, ctx.budget.remaining())
        if failed:
            setup[-1]["failed"] = msg("not run: %(why)s", why=failed)
    return setup, software_versions(command.plugin, env)


def _gates_scored(provenance: Provenance, job: Job, cases: list[CaseResult]) -> Provenance:
    """The provenance with what scored the gates: recipe-bot's sample problems are not real data."""
    if any(c.accuracy is not None and c.accuracy.gsm8k is False for c in cases):
        return provenance.model_copy(update={"dataset": dataset_of(job, sample_gates=True)})
    return provenance


def run_job_local(job: Job, out_dir: Path, console: Console | None = None, *,
                  repo: Path | None = None, job_file: str | None = None,
                  settings: Settings | None = None) -> JobResult:
    """Run every case of the job in order on this host and return the typed result.

    A checkout at another commit than the job's authorized SHA runs nothing and fails the job.
    settings: the RECIPE_BOT_* settings the command read (default: this process's environment's)."""
    settings = settings or load_settings()
    out_dir.mkdir(parents=True, exist_ok=True)
    repo = (repo or Path.cwd()).resolve()
    checkout = checkout_head(repo)
    provenance = provenance_of(job, checkout, job_file)
    console = console or Console(stderr=True)
    progress = Progress(console, out_dir / "runner.log", cpu=job.gpus == 0)
    budget = Budget(job.timeout_s)
    procs.become_subreaper()  # orphans of our servers come back to us and get reaped
    started_at, t0 = _now(), time.monotonic()
    ctx = RunContext(job=job, out_dir=out_dir, repo=repo, progress=progress, budget=budget,
                     engines=engines.installed(repo, os.environ, settings),
                     grace_s=shutdown_grace_s(settings), settings=settings)
    engine = next((c.servers[0].engine for c in job.cases if c.servers), engines.DEFAULT)
    progress.say(f"job [bold]{escape(job.job_id)}[/bold] ({job.kind}, recipe "
                 f"{escape(job.recipe)}): {len(job.cases)} case(s), timeout {job.timeout_s:g} s")
    cases: list[CaseResult] = []
    stop_why = sha_mismatch(job.sha, checkout)
    if stop_why is not None:
        progress.say(f"[red]{escape(str(stop_why))}[/red]")
    setup, software = _prepare_harness(job, ctx, stop_why)
    if setup and setup[-1].get("failed"):
        stop_why = setup[-1].pop("failed")
    with budget.signals_handled():
        for case in job.cases:
            if stop_why is not None:
                cases.append(CaseResult(name=case.name, status="skipped", reason=stop_why,
                                        points=_not_run(case, [], stop_why)))
                continue
            case_t0 = time.monotonic()
            result = run_case(case, ctx)
            result.gpus = (len(case.command.devices) if case.command else _gpus_for(case, job)) if job.gpus else 0
            result.duration_s = round(time.monotonic() - case_t0, 3)
            cases.append(result)
            if budget.cancel_signal is not None:
                stop_why = msg("not run: the job was cancelled")
            elif budget.remaining() <= 0:
                stop_why = msg("not run: job timeout of %(timeout)s s reached", timeout=f"{job.timeout_s:g}")
            elif result.status == "failed" and job.fail_fast:
                stop_why = msg("not run: fail_fast after case %(case)s failed", case=repr(case.name))
    engine_version = ctx.engines[engine].version()
    failed = [c for c in cases if c.status != "passed"]
    mismatch = sha_mismatch(job.sha, checkout)
    if budget.cancel_signal is not None:
        status = "cancelled"
    else:
        status = "failed" if failed or mismatch else "passed"
    reason = mismatch
    if failed and mismatch is None:
        first = next((c for c in failed if c.status == "failed"), failed[0])
        reason = msg("case %(case)s: %(reason)s", case=first.name, reason=first.reason)
    result = JobResult(
        job_id=job.job_id, kind=job.kind, recipe=job.recipe,
        recipe_fingerprint=job.recipe_fingerprint, runner_label=job.runner_label, status=status,
        reason=reason, gpus=job.gpus, repository=job.repository, pr=job.pr,
        sha=job.sha or checkout, command=job.command, engine=engine,
        engine_version=engine_version, hardware=describe_host(),
        started_at=started_at, finished_at=_now(), duration_s=round(time.monotonic() - t0, 3),
        server_launches=sum(1 for c in cases if c.cleanup is not None), cases=cases,
        provenance=_gates_scored(provenance, job, cases), setup=setup, software=software,
        compare_arms=job.compare_arms, manual=job.manual)
    progress.summary(result)
    return result
