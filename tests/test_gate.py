"""The merge gate: one verdict per head SHA over every run on it; no later run can flip a failure."""
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.core import stage_markers
from bot.report import gate
from tests import synthetic
from bot.report.cli import report_cmd
from github_sandbox.harness import SAMPLE_FEATURE_FILES, SAMPLE_MAIN_FILES

ROOT = Path(__file__).resolve().parents[1]
HEAD = "a" * 40
OTHER = "b" * 40
FP = "fp-tiny"
REQUIRED = {(FP, "tp1-c1"): "tiny", (FP, "tp1-c64"): "tiny"}


def o(point: str, status: str, run: int, sha: str = HEAD, recipe: str = "tiny") -> gate.Outcome:
    return gate.Outcome((FP, point), recipe, status, run, sha)


CASES = {
    # name: (outcomes, acks, conclusion, failing points)
    "failing full sweep then passing narrow sweep stays failure": (
        [o("tp1-c1", "passed", 1), o("tp1-c64", "failed", 1), o("tp1-c1", "passed", 2)], [], "failure",
        ["tp1-c64"]),
    "a rerun that measures the failed point again replaces it": (
        [o("tp1-c1", "passed", 1), o("tp1-c64", "failed", 1), o("tp1-c64", "passed", 2)], [], "success", []),
    "a pass measured on another SHA never replaces a failure": (
        [o("tp1-c1", "passed", 1), o("tp1-c64", "failed", 1), o("tp1-c64", "passed", 2, sha=OTHER)], [],
        "failure", ["tp1-c64"]),
    "a failure outside the required set still fails": (
        [o("tp1-c1", "passed", 1), o("tp1-c64", "passed", 1), o("tp2-c8", "failed", 2)], [], "failure",
        ["tp2-c8"]),
    "required points nobody measured keep the gate pending": (
        [o("tp1-c1", "passed", 1)], [], "pending", []),
    "an accepted regression passes with the acknowledgement": (
        [o("tp1-c1", "passed", 1), o("tp1-c64", "regressed", 1)], [stage_markers.Ack(HEAD, "tiny", "alice", "known")],
        "success", []),
    "an acknowledgement for an earlier commit does not count": (
        [o("tp1-c1", "passed", 1), o("tp1-c64", "regressed", 1)], [stage_markers.Ack(OTHER, "tiny", "alice", "known")],
        "failure", ["tp1-c64"]),
    "an acknowledgement never covers a failed point": (
        [o("tp1-c1", "passed", 1), o("tp1-c64", "failed", 1)], [stage_markers.Ack(HEAD, "tiny", "alice", "known")],
        "failure", ["tp1-c64"]),
}


@pytest.mark.parametrize("name", CASES)
def test_gate_merges_every_run_on_the_head(name):
    outcomes, acks, conclusion, failing = CASES[name]
    verdict = gate.decide(outcomes, REQUIRED, HEAD, acks)
    assert verdict.conclusion == conclusion
    assert [f.key[1] for f in verdict.failing] == failing


def test_nothing_required_and_nothing_run_is_success():
    verdict = gate.decide([], {}, HEAD)
    assert (verdict.conclusion, verdict.reason) == ("success", "nothing-required")


def test_acks_count_only_in_the_bot_s_own_comments():
    marker = stage_markers.ack_marker(stage_markers.Ack(HEAD, "tiny", "alice", "known slowdown, see #12"))
    comments = [type("C", (), {"user": "mallory", "body": marker.replace("alice", "mallory")})(),
                type("C", (), {"user": "recipe-bot[bot]", "body": marker + "\n\ntext"})()]
    acks = gate.read_acks(comments, "recipe-bot[bot]", HEAD)
    assert acks == [stage_markers.Ack(HEAD, "tiny", "alice", "known slowdown, see #12")]
    assert gate.read_acks(comments, "recipe-bot[bot]", OTHER) == []


# -- the report step, against the sandbox ------------------------------------------------------

def _artifacts(plan_jobs, results) -> list[dict]:
    plan = {"jobs": [job.model_dump(mode="json") for job in plan_jobs]}
    return [{"name": "plan", "files": {"plan.json": json.dumps(plan)}}] + [
        {"name": f"result-{r.job_id}", "files": {f"{r.job_id}/result.json": r.model_dump_json()}}
        for r in results]


@pytest.fixture
def pr_world(sandbox):
    gpu = (ROOT / ".github" / "workflows" / "gpu.yml").read_text(encoding="utf-8")
    sb = sandbox(files_main={**SAMPLE_MAIN_FILES, ".github/workflows/gpu.yml": gpu},
                 files_feature=SAMPLE_FEATURE_FILES)
    return sb, sb.state()["pulls"][0]["head_sha"]


def _report(sb, tmp_path, head, plan, results, required, run_id, name):
    folder = tmp_path / name
    synthetic.write_results(folder / "results", results)
    synthetic.write_plan(folder / "plan.json", plan)
    synthetic.write_plan(folder / "required.json", required)
    env = {**sb.env(), "GITHUB_RUN_ID": str(run_id)}
    result = CliRunner().invoke(report_cmd, [
        "--results", str(folder / "results"), "--jobs", str(folder / "plan.json"), "--sha", head,
        "--pr", "7", "--gate", "--required", str(folder / "required.json"), "--post",
        "--bot-login", sb.state()["bot"], "--out", str(folder / "out")], env=env)
    assert result.exit_code == 0, result.output
    checks = [c for c in sb.state()["check_runs"] if c["head_sha"] == head]
    return checks, json.loads((folder / "out" / "summary.json").read_text(encoding="utf-8"))


def test_failing_full_sweep_then_passing_narrow_sweep_leaves_the_check_failing(pr_world, tmp_path):
    sb, head = pr_world
    full = synthetic.sweep_plan("tiny-cpu", concurrencies=(1, 64), sha=head, command="/sweep")
    failed = synthetic.run_sweep(full, failed_points={"tp1-c64": "server crashed"})
    prior = sb.add_run("gpu.yml", inputs={"pr": "7", "sha": head, "command": "/sweep", "requester": "carol",
                                          "comment_id": "1"}, conclusion="failure",
                       artifacts=_artifacts([full], [failed]))
    narrow = synthetic.sweep_plan("tiny-cpu", concurrencies=(1,), sha=head, command="/sweep --conc 1")
    checks, summary = _report(sb, tmp_path, head, [narrow], [synthetic.run_sweep(narrow)], [full],
                              prior["id"] + 100, "narrow")
    # The narrow run itself passed, but the commit still has a failing point: the gate fails.
    assert summary["verdict"] == "success"
    assert summary["gate"]["conclusion"] == "failure"
    assert [f["item"] for f in summary["gate"]["failing"]] == ["tp1-c64"]
    assert checks[-1]["name"] == "recipe-bot / benchmarks"
    assert (checks[-1]["status"], checks[-1]["conclusion"]) == ("completed", "failure")
    assert "合并门禁" in checks[-1]["title"]
    assert checks[-1]["summary"].startswith("### Merge gate for") and "`tp1-c64`" in checks[-1]["summary"]

    # Measuring the failed point again on the same commit, and passing it, clears it.
    rerun = synthetic.sweep_plan("tiny-cpu", concurrencies=(64,), sha=head, command="/sweep --conc 64")
    checks, summary = _report(sb, tmp_path, head, [rerun], [synthetic.run_sweep(rerun)], [full],
                              prior["id"] + 200, "rerun")
    assert summary["gate"]["conclusion"] == "success"
    assert (checks[-1]["status"], checks[-1]["conclusion"]) == ("completed", "success")


def test_a_partial_run_leaves_the_gate_in_progress_with_what_is_missing(pr_world, tmp_path):
    sb, head = pr_world
    full = synthetic.sweep_plan("tiny-cpu", concurrencies=(1, 64), sha=head, command="/sweep")
    narrow = synthetic.sweep_plan("tiny-cpu", concurrencies=(1,), sha=head, command="/sweep --conc 1")
    checks, summary = _report(sb, tmp_path, head, [narrow], [synthetic.run_sweep(narrow)], [full], 10**6, "p")
    assert summary["gate"]["conclusion"] == "pending"
    assert [m["item"] for m in summary["gate"]["missing"]] == ["tp1-c64"]
    assert (checks[-1]["status"], checks[-1]["conclusion"]) == ("in_progress", None)


def test_e2e_cases_are_keys_and_a_lost_suite_fails_every_planned_case(tmp_path):
    from bot.report import build, collect, compare
    from bot.report.model import Meta

    suite = synthetic.e2e_plan("afd", ["2p2d", "1p1d"], sha=HEAD)
    ran = synthetic.run_e2e(suite, accuracy={"2p2d": (0.8, 0.8), "1p1d": (0.1, 0.1)})
    synthetic.write_results(tmp_path / "ran", [ran])
    (tmp_path / "lost").mkdir()

    def outcomes(folder, run_id):
        collection = collect.collect(tmp_path / folder, [suite], HEAD)
        report = build.build_report(collection, compare.Baseline(), {}, Meta(sha=HEAD))
        return {o.key[1]: o.status for o in gate.outcomes_of(collection, report, run_id, HEAD)}

    assert outcomes("ran", 1) == {"case:2p2d": "passed", "case:1p1d": "failed"}
    assert outcomes("lost", 2) == {"case:2p2d": "failed", "case:1p1d": "failed"}
    required = gate.required_keys([suite])
    assert sorted(k[1] for k in required) == ["case:1p1d", "case:2p2d"]


def test_required_plans_load_one_by_one_so_two_commands_may_plan_one_job_differently(tmp_path):
    from bot.report.gate_runs import load_required

    full = synthetic.sweep_plan("tiny-cpu", concurrencies=(1, 64), sha=HEAD)
    lowest = synthetic.sweep_plan("tiny-cpu", concurrencies=(1,), sha=HEAD)
    (tmp_path / "required").mkdir()
    synthetic.write_plan(tmp_path / "required" / "required-1.json", [full])
    synthetic.write_plan(tmp_path / "required" / "required-2.json", [lowest])
    keys = gate.required_keys(load_required(tmp_path / "required"))
    assert sorted(k[1] for k in keys) == ["tp1-c1", "tp1-c64"]
    assert load_required(tmp_path / "absent") == []


def test_a_large_report_with_the_gate_stays_within_the_comment_limit(tmp_path):
    from bot.report import render

    scenario = synthetic.many_points(3000)
    paths = synthetic.materialize(scenario, tmp_path)
    synthetic.write_plan(tmp_path / "required.json", scenario.plan)
    result = CliRunner().invoke(report_cmd, [
        "--results", str(paths["results"]), "--jobs", str(paths["plan"]), "--sha", synthetic.HEAD_SHA,
        "--gate", "--required", str(tmp_path / "required.json"), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    comment = (tmp_path / "out" / "comment.md").read_text(encoding="utf-8")
    assert "### Merge gate for" in comment and "合并门禁" in comment
    assert len(comment) <= render.COMMENT_BUDGET
