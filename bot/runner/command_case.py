"""A case that runs the repository's own E2E command (pytest node ids) to completion, in recipe-bot's lifecycle."""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

from rich.markup import escape

from bot.core.jobs import Case, CommandSpec
from bot.core.messages import Message, msg
from bot.core.results import CaseResult, HarnessRun, NodeOutcome, joined, reason_of
from bot.runner import procs
from bot.runner.budget import JobInterrupted
from bot.runner.environment import EnvironmentProblem, check_opt_in, check_required
from bot.runner.hardware import case_gpus, gpu_memory_used_mib
from bot.runner.junit import read_report, verdict
from bot.runner.proof import prove_teardown
from bot.runner.server import OWN_GROUP, InferenceServer, terminate_servers

POLL_S = 0.2
KEPT_FILES = 500  # the harness's own files listed in the result; the rest stay on disk only
SETUP_TIMEOUT_S = 3600.0


def _python(argv: list[str]) -> list[str]:
    """`python` in a recipe is the job's environment's Python, the one running recipe-bot."""
    return [sys.executable, *argv[1:]] if argv and argv[0] in ("python", "python3") else list(argv)


def command_env(spec: CommandSpec, case: Case, repo: Path, base: Mapping[str, str], run_tag: str) -> dict[str, str]:
    """The harness's environment: the runner's, the recipe's, the checkout first on PYTHONPATH, the
    run tag (teardown finds what escaped its group by it), minus the case's unset_env."""
    env = {k: v for k, v in base.items() if k not in case.unset_env}
    env.update(spec.env)
    if spec.pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(repo), env.get("PYTHONPATH", "")) if p)
    env[procs.RUN_TAG_VAR] = run_tag
    env.setdefault("PYTHONUNBUFFERED", "1")
    env["NO_PROXY"] = "127.0.0.1,localhost"
    return env


def command_argv(spec: CommandSpec, case_dir: Path) -> tuple[list[str], Path | None]:
    """argv as run, and the JUnit report it writes (pytest: --junitxml, --basetemp inside the result)."""
    argv = _python(spec.argv)
    if not spec.pytest:
        return [*argv, *spec.nodes], None
    junit = case_dir / "junit.xml"
    return [*argv, f"--junitxml={junit}", f"--basetemp={case_dir / 'harness-tmp'}", "-p", "no:cacheprovider",
            *spec.nodes], junit


def run_setup(steps: list[list[str]], repo: Path, env: Mapping[str, str], out_dir: Path,
              limit_s: float = SETUP_TIMEOUT_S) -> tuple[list[dict], Message | None]:
    """The suite's setup steps in order (install the checkout, the harness's extras); the first that
    fails stops the rest. Returns each step's record and the failure, if any."""
    records: list[dict] = []
    for index, step in enumerate(steps):
        log = out_dir / f"setup-{index + 1}.log"
        argv = _python(step)
        started = time.monotonic()
        with log.open("wb") as handle:
            try:  # within the job's time limit: an install that hangs does not hold the GPUs for hours
                code = subprocess.run(argv, cwd=repo, env=dict(env), stdin=subprocess.DEVNULL, stdout=handle,
                                      stderr=subprocess.STDOUT, timeout=max(1.0, min(limit_s, SETUP_TIMEOUT_S)),
                                      check=False, **OWN_GROUP).returncode
            except (OSError, subprocess.TimeoutExpired) as exc:
                code, handle_error = None, str(exc)
            else:
                handle_error = None
        records.append({"argv": step, "exit_code": code, "seconds": round(time.monotonic() - started, 3),
                        "log": log.name})
        if code != 0:
            if code is not None:
                return records, msg("setup step %(step)s (%(argv)s) exited with code %(code)s", step=index + 1,
                                    argv=" ".join(step), code=code)
            return records, msg("setup step %(step)s (%(argv)s) could not run: %(why)s", step=index + 1,
                                argv=" ".join(step), why=handle_error)
    return records, None


def _keep(spec: CommandSpec, cwd: Path, case_dir: Path, out_dir: Path) -> list[str]:
    """The harness's own result files: everything under its pytest basetemp, and `keep` globs copied."""
    kept: list[str] = []
    for pattern in spec.keep:
        for found in sorted(glob.glob(str(cwd / pattern), recursive=True)):
            source = Path(found)
            if source.is_file():
                target = case_dir / "kept" / source.relative_to(cwd)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
    for root in (case_dir / "harness-tmp", case_dir / "kept"):
        if root.is_dir():
            kept += sorted(str(p.relative_to(out_dir)) for p in root.rglob("*") if p.is_file())
    return kept[:KEPT_FILES]


def _wait(harness: InferenceServer, spec: CommandSpec, tick) -> None:
    deadline = time.monotonic() + spec.timeout_s if spec.timeout_s else None
    while harness.exit_code() is None:
        # The runner is the subreaper: orphans the harness leaves exit into zombies that only we reap
        # (afd-plugin #392 counts unreaped zombies as alive).
        procs.reap_zombie_children(skip={harness.pgid})
        tick(msg("running the repository's own E2E command"))
        if deadline is not None and time.monotonic() >= deadline:
            raise JobInterrupted(msg("the case's time limit of %(limit)s s was reached", limit=f"{spec.timeout_s:g}"))
        time.sleep(POLL_S)


def run_command_case(case: Case, ctx, run_tag: str, case_dir: Path) -> CaseResult:
    """Run the case's command to completion; exit 0 and the JUnit verdict decide, then teardown proof."""
    spec = case.command
    assert spec is not None
    cwd = (ctx.repo / spec.cwd).resolve()
    argv, junit = command_argv(spec, case_dir)
    failures: list[Message | str] = []
    cut_short: Message | str | None = None
    harness: InferenceServer | None = None
    used_gpus = case_gpus(spec.devices, len(spec.devices), os.environ) if spec.devices else []
    gpu_before = gpu_memory_used_mib(used_gpus) if used_gpus else None
    ctx.progress.say(escape(f"case {case.name}: {' '.join(spec.nodes) or ' '.join(spec.argv)}"))
    try:
        ctx.budget.tick(msg("starting the case"))
        check_required(case.required_env, os.environ)
        check_opt_in(spec.opt_in, os.environ)
        busy = [p for p in spec.ports if not procs.port_is_free(p)]
        if busy:
            raise EnvironmentProblem(msg("port %(port)s is already in use before the case started", port=busy[0]))
        harness = InferenceServer(name="harness", argv=argv, port=0, cwd=cwd, grace_s=ctx.grace_s,
                                  env=command_env(spec, case, ctx.repo, os.environ, run_tag),
                                  log_path=case_dir / "harness.log")
        harness.start()
        _wait(harness, spec, ctx.budget.tick)
        left = [p.pid for p in procs.group_members(harness.pgid)]
        if left:
            failures.append(msg("the harness exited and left process(es) %(pids)s running in its process group",
                                pids=str(left)))
    except JobInterrupted as exc:
        cut_short = reason_of(exc)
    except (EnvironmentProblem, OSError) as exc:  # refused before it started: name what would have run
        failures.append(_not_started(spec, reason_of(exc)))
    finally:
        proof = None
        if harness is not None and harness.process is not None:
            started = time.monotonic()
            reports = terminate_servers([harness], ctx.grace_s)
            proof, teardown = prove_teardown(reports, ports=spec.ports, run_tag=run_tag,
                                             gpu_before=gpu_before, started=started)
            failures += teardown
    run = HarnessRun(argv=argv, cwd=str(cwd), expect_passed=spec.expect_passed,
                     log=str((case_dir / "harness.log").relative_to(ctx.out_dir)) if harness else None)
    if harness is None and cut_short:  # stopped before it started: still a failure, by node id
        failures.append(_not_started(spec, cut_short))
    if harness is not None:
        run.exit_code = None if cut_short else harness.exit_code()
        outcomes = _outcomes(spec, junit, run, ctx.out_dir)
        failures[:0] = verdict(run.exit_code, outcomes, spec.expect_passed if spec.pytest else 0, cut_short,
                               spec.nodes)
        run.result_files = _keep(spec, cwd, case_dir, ctx.out_dir)
    result = CaseResult(name=case.name, status="failed" if failures else "passed",
                        reason=joined(failures), cleanup=proof, harness=run,
                        server_logs=[run.log] if run.log else [],
                        log_tail=harness.log_tail() if failures and harness else None)
    ctx.progress.case(result)
    return result


def _not_started(spec: CommandSpec, why: Message | str) -> Message | str:
    """Why the case did not start, naming the node ids that would have run."""
    return msg("node %(nodes)s not started: %(why)s", nodes=", ".join(spec.nodes), why=why) if spec.nodes else why


def _outcomes(spec: CommandSpec, junit: Path | None, run: HarnessRun, out_dir: Path) -> list[NodeOutcome]:
    if junit is None:
        return []
    if not junit.is_file():
        outcomes = [NodeOutcome(node_id=n, outcome="missing", message=msg("no JUnit report was written"))
                    for n in spec.nodes]
    else:
        run.junit = str(junit.relative_to(out_dir))
        try:
            outcomes = read_report(junit, spec.nodes)
        except ValueError as exc:
            outcomes = [NodeOutcome(node_id=n, outcome="missing", message=reason_of(exc)) for n in spec.nodes]
    run.nodes = outcomes
    for name in ("passed", "failed", "skipped"):
        setattr(run, name, sum(1 for n in outcomes if n.outcome == name))
    run.errors = sum(1 for n in outcomes if n.outcome == "error")
    return outcomes
