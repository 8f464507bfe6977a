"""The demo's steps: each stage runs through recipe-bot's own command line, as GitHub Actions would run it."""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from bot.core.config import load_config
from bot.core.messages import msg
from bot.demo import sample
from bot.demo.preview import write_preview
from bot.demo.sandbox import Sandbox, SandboxError, build_seed
from bot.demo.serve_mode import ServeError, serving, wait_for_dispatch
from bot.core import stage_markers
from bot.report.gate_runs import required_commands
from bot.runner import retry


class DemoError(RuntimeError):
    """A step failed; the message says which and what to look at."""


@dataclasses.dataclass
class DemoOutcome:
    comment: str
    check: dict[str, Any]
    out_dir: Path
    files: dict[str, Path]
    launches: int
    points: int


@dataclasses.dataclass
class Step:
    console: Console
    total: int
    number: int = 0

    def __call__(self, text: str) -> float:
        self.number += 1
        self.console.print(f"[bold cyan][{self.number}/{self.total}][/] {text}", highlight=False)
        return time.monotonic()

    def done(self, started: float, detail: str = "") -> None:
        extra = f": {detail}" if detail else ""
        self.console.print(f"      [green]done[/] in {time.monotonic() - started:.1f} s{extra}", highlight=False)


def recipe_bot(args: list[str], env: dict[str, str], cwd: Path, log: Path, *, check: bool = True,
               stream: bool = False) -> subprocess.CompletedProcess[str]:
    """One `recipe-bot` stage as a subprocess, its output kept in LOG; a failure names the stage and the log."""
    argv = [sys.executable, "-m", "bot", *args]
    with log.open("a", encoding="utf-8") as handle:
        handle.write(f"$ recipe-bot {' '.join(args)}\n")
        handle.flush()
        proc = subprocess.run(argv, env=env, cwd=cwd, text=True, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=None if stream else subprocess.STDOUT)
        handle.write(proc.stdout or "")
    if check and proc.returncode != 0:
        tail = "\n".join((proc.stdout or "").splitlines()[-15:])
        raise DemoError(msg("`recipe-bot %(command)s` failed with exit code %(code)s; full output in %(log)s\n%(tail)s",
                            command=args[0], code=proc.returncode, log=log, tail=tail))
    return proc


def _required_plans(checkout: Path, base: str, sha: str, default_branch: str, folder: Path,
                    env: dict[str, str], cwd: Path, log: Path) -> Path:
    """As gpu.yml's plan job: each command of gate.required (the default branch's config) planned for the
    head, so the gate requires what the PR requires, not what the command happened to run."""

    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    config = subprocess.run(["git", "-C", str(checkout), "show", f"origin/{default_branch}:.github/recipe-bot.yaml"],
                            text=True, capture_output=True)
    loaded = load_config(config.stdout, ".github/recipe-bot.yaml") if config.returncode == 0 else None
    for i, command in enumerate(required_commands(loaded), start=1):
        plan = recipe_bot(["plan", "--repo", str(checkout), "--base", base, "--head", sha, "--command", command,
                           "--format", "json"], env, cwd, log)
        (folder / f"required-{i}.json").write_text(plan.stdout, encoding="utf-8")
    return folder


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, text=True,
                          capture_output=True).stdout.strip()


def run_demo(out_dir: Path, work_dir: Path, console: Console, *, command: str,
             engine: dict[str, str], serve: bool = False,
             files: tuple[dict[str, str], dict[str, str | None]] | None = None,
             upstream: Path | None = None) -> DemoOutcome:
    """The whole loop on this host; `files` (main, feature) replaces the sample repository (tests);
    upstream: RECIPE_BOT_UPSTREAM_DIR as the command read it (mermaid for the preview)."""
    step = Step(console, total=7)
    out_dir.mkdir(parents=True, exist_ok=True)
    log = out_dir / "demo.log"
    log.write_text("", encoding="utf-8")

    started = step("Building a sample benchmark repository with the tiny-cpu recipe and a PR that tunes it")
    main_files, feature_files = files or (sample.main_files(), sample.feature_files())
    try:
        seed = build_seed(work_dir, main_files, feature_files, sample.seed_overrides())
        step.done(started, f"{seed.parent / 'repo'}")
        return _run_against_sandbox(seed, out_dir, work_dir, console, step, log, command=command, engine=engine,
                                    serve=serve, upstream=upstream)
    except SandboxError as exc:
        raise DemoError(str(exc)) from exc


def _run_against_sandbox(seed: Path, out_dir: Path, work_dir: Path, console: Console, step: Step, log: Path, *,
                         command: str, engine: dict[str, str], serve: bool,
                         upstream: Path | None) -> DemoOutcome:
    """Steps 2 to 7: the sandbox GitHub as a process, the bot's stages against it."""
    started = step("Starting the sandbox GitHub (a local REST API checked against GitHub's OpenAPI description)")
    with Sandbox(seed) as sandbox:
        step.done(started, sandbox.url)
        env = {**os.environ, **sandbox.env(), **engine}
        repo_name = env["GITHUB_REPOSITORY"]

        started = step(f"{sample.MAINTAINER} comments `{command}` on PR #{sample.PR_NUMBER}; the bot handles the event")
        if serve:  # App mode: the sandbox sends the signed webhook to `recipe-bot serve` (bot/demo/serve_mode.py)

            try:
                with serving(sandbox, env, work_dir, log) as url:
                    console.print(f"      recipe-bot serve at {url} receives the sandbox's signed webhooks",
                                  highlight=False)
                    sandbox.comment(sample.MAINTAINER, repo_name, sample.PR_NUMBER, command)
                    wait_for_dispatch(sandbox, "gpu.yml")
            except ServeError as exc:
                raise DemoError(str(exc)) from exc
        else:
            comment = sandbox.comment(sample.MAINTAINER, repo_name, sample.PR_NUMBER, command)
            event = sandbox.write_event(work_dir / "event.json", "issue_comment", "created", comment_id=comment["id"])
            recipe_bot(["handle", "--event-name", "issue_comment", "--event-path", str(event)], env, work_dir, log)
        state = sandbox.state()
        runs = [run for run in state["workflow_runs"] if run["workflow"] == "gpu.yml"]
        if len(runs) != 1:
            replies = [c["body"] for c in state["comments"] if c["user"] == sample.BOT_LOGIN]
            raise DemoError(msg("the bot dispatched %(runs)s GPU runs instead of 1; its replies: %(replies)s",
                                runs=len(runs), replies=replies))
        run = runs[0]
        inputs = run["inputs"]
        step.done(started, f"dispatched gpu.yml for {inputs['sha'][:12]} ({inputs['command']})")

        started = step("The GPU workflow's plan job: which recipes the PR touches and which jobs they need")
        sandbox.set_run(run["id"], status="in_progress")
        checkout = work_dir / "checkout"
        subprocess.run(["git", "clone", "--quiet", str(seed.parent / "repo"), str(checkout)], check=True)
        _git(checkout, "checkout", "--quiet", inputs["sha"])
        base = _git(checkout, "merge-base", f"origin/{state['repository']['default_branch']}", inputs["sha"])
        jobs_dir = out_dir / "jobs"
        shutil.rmtree(jobs_dir, ignore_errors=True)
        plan = recipe_bot(["plan", "--repo", str(checkout), "--base", base, "--head", inputs["sha"],
                           "--command", inputs["command"], "--format", "json", "--jobs-dir", str(jobs_dir)],
                          env, work_dir, log)
        plan_file = out_dir / "plan.json"
        plan_file.write_text(plan.stdout, encoding="utf-8")
        required_dir = _required_plans(checkout, base, inputs["sha"], state["repository"]["default_branch"],
                                       out_dir / "required", env, work_dir, log)
        job_files = sorted(jobs_dir.glob("*.json"))
        if not job_files:
            raise DemoError(msg("the plan has no jobs; see %(plan)s", plan=plan_file))
        jobs = [json.loads(path.read_text(encoding="utf-8")) for path in job_files]
        launches = sum(len(job["cases"]) for job in jobs)
        points = sum(len(case["points"]) for job in jobs for case in job["cases"])
        step.done(started, f"{len(jobs)} job(s), {points} point(s) in {launches} server launch(es)")

        started = step("The runner: start the CPU engine, drive load with `vllm bench serve`, tear down with proof")
        results_dir = out_dir / "results"
        shutil.rmtree(results_dir, ignore_errors=True)
        for job_file, job in zip(job_files, jobs):
            console.print(f"      job {job['job_id']}: {job['recipe']} on runner label {job['runner_label']}",
                          highlight=False)
            recipe_bot(["run", "--job", str(job_file), "--out", str(results_dir / job["job_id"]),
                        "--repo", str(checkout)], env, work_dir, log, check=False, stream=True)
        # gpu.yml's retry job: infrastructure failures (and lost jobs) run once more, attempt 2.
        for decision in retry.decide(retry.load_plan(jobs_dir), retry.load_results(results_dir)):
            if decision.retry:
                console.print(f"      retry {decision.job_id} ({decision.why})", highlight=False)
                recipe_bot(["run", "--job", str(jobs_dir / f"{decision.job_id}.json"), "--out",
                            str(results_dir / decision.job_id / "attempt-2"), "--repo",
                            str(checkout), "--attempt", "2"], env, work_dir, log, check=False,
                           stream=True)
        step.done(started)

        started = step("The report job: collect, compare, render English + 简体中文, post the comment and check run")
        run_url = f"{sandbox.url}/{repo_name}/actions/runs/{run['id']}"
        report_dir = out_dir / "report"
        # As gpu.yml's report job: the merge gate of the commit (only `--gate` posts under its check name),
        # with the run's own id so that it is not read back as an earlier run of the same commit.
        recipe_bot(["report", "--results", str(results_dir), "--jobs", str(plan_file), "--out", str(report_dir),
                    "--gate", "--required", str(required_dir),
                    "--post", "--pr", str(sample.PR_NUMBER), "--sha", inputs["sha"], "--run-url", run_url,
                    "--command", inputs["command"]], {**env, "GITHUB_RUN_ID": str(run["id"])}, work_dir, log,
                   check=False)
        summary = json.loads((report_dir / "summary.json").read_text(encoding="utf-8"))
        sandbox.set_run(run["id"], conclusion="success" if summary.get("verdict") == "success" else "failure")
        state = sandbox.state()
        (out_dir / "sandbox-log.json").write_text(json.dumps(sandbox.log(), indent=1), encoding="utf-8")
        (out_dir / "sandbox-state.json").write_text(json.dumps(state, indent=1), encoding="utf-8")
        step.done(started, f"verdict {summary.get('verdict')}")

    started = step("Writing the comment as Markdown and an HTML preview with the chart")
    posted = [c for c in state["comments"] if c["user"] == sample.BOT_LOGIN and stage_markers.parse_report_marker(c["body"])]
    checks = [c for c in state["check_runs"] if c["head_sha"] == inputs["sha"]]
    if not posted or not checks:
        raise DemoError(msg("the report posted %(comments)s report comment(s) and %(checks)s check run(s); see %(log)s",
                           comments=len(posted), checks=len(checks), log=log))

    files = write_preview(out_dir, posted[-1]["body"], checks[-1], report_dir / "chart.png", upstream)
    step.done(started)
    return DemoOutcome(comment=posted[-1]["body"], check=checks[-1], out_dir=out_dir, files=files,
                       launches=launches, points=points)
