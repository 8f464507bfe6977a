"""The merge gate's check exists on every head SHA; plan failures and unknown recipes are answered; acks."""
import json
import pathlib

import pytest

from bot.report import gate
from tests import synthetic
from github_sandbox.harness import make_seed
from handle_helpers import BOT, CONFIG, PULLS, ROOT, Harness, bilingual
from ix_repo_helpers import tool_files

RUNNERS = "runners:\n  cpu:\n    gpus: 0\n    description: a test host\n"


def recipe(concurrency: str = "[1, 4]", name: str = "tiny-cpu") -> str:
    return f"""name: {name}
kind: sweep
runner: cpu
engine:
  name: vllm
  version: "0.32.0"
model:
  path: /models/tiny
  served_name: tiny
  precision: bf16
concurrency: {concurrency}
search_space:
  - name: tp1
    tp: 1
workload:
  dataset: random
  isl: 128
  osl: 32
  prompts_per_concurrency: 2
"""


MAIN = {
    "README.md": "# bench\n",
    ".github/recipe-bot.yaml": CONFIG,
    ".github/workflows/gpu.yml": (ROOT / ".github/workflows/gpu.yml").read_text(encoding="utf-8"),
    "recipes/_runners.yaml": RUNNERS,
    "recipes/tiny-cpu.yaml": recipe(),
}
CHECK = "recipe-bot / benchmarks"


@pytest.fixture
def world(sandbox, tmp_path):
    def make(feature: dict) -> Harness:
        seed = make_seed(tmp_path / "sandbox", MAIN, feature,
                         {"pulls": PULLS, "issues": [{"number": 20, "author": "bob", "title": "A bug"}]})
        return Harness(sandbox(seed), tmp_path)
    return make


def checks(h: Harness, sha: str) -> list[dict]:
    return [c for c in h.sb.state()["check_runs"] if c["head_sha"] == sha and c["name"] == CHECK]


def test_a_push_touching_a_recipe_posts_the_check_in_progress_with_what_is_required(world):
    h = world({"recipes/tiny-cpu.yaml": recipe("[1, 4, 8]")})
    h.handle("pull_request", "opened", pull=7, sender="carol")
    [check] = checks(h, h.head(7))
    assert (check["status"], check["conclusion"]) == ("in_progress", None), check["summary"]
    assert "3 required" in check["title"] and "合并门禁" in check["title"]
    assert "`/sweep`" in check["summary"] and "tp1-c8" in check["summary"]
    assert h.bot_comments(7) == []
    # A redelivered event, or the same head seen again, posts nothing new.
    h.handle("pull_request", "opened", pull=7, sender="carol")
    assert len(checks(h, h.head(7))) == 1


def test_a_pr_touching_nothing_gets_success_without_a_command(world):
    h = world({"README.md": "# bench, better\n"})
    h.handle("pull_request", "opened", pull=7, sender="carol")
    [check] = checks(h, h.head(7))
    assert (check["status"], check["conclusion"]) == ("completed", "success")
    assert "no recipe or suite touched" in check["title"] and "未改动任何配方" in check["title"]
    assert "/sweep" not in check["summary"]
    assert h.dispatches() == [] and h.bot_comments(7) == []


def test_a_plan_failure_fails_the_check_and_answers_in_both_languages(world):
    broken = recipe().replace("concurrency: [1, 4]", "concurrency: [1, many]")
    h = world({"recipes/tiny-cpu.yaml": broken})
    h.handle("pull_request", "opened", pull=7, sender="carol")
    [check] = checks(h, h.head(7))
    assert (check["status"], check["conclusion"]) == ("completed", "failure")
    assert "recipes/tiny-cpu.yaml:11" in check["summary"] and "concurrency" in check["summary"]
    [comment] = h.bot_comments(7)
    english, chinese = bilingual(comment["body"])
    assert "recipes/tiny-cpu.yaml:11" in english and "concurrency" in english
    assert "规划失败" in chinese and "recipes/tiny-cpu.yaml:11" in chinese


def test_each_push_gets_its_own_check(world):
    h = world({"recipes/tiny-cpu.yaml": recipe("[1, 4, 8]")})
    h.handle("pull_request", "opened", pull=7, sender="carol")
    old = h.head(7)
    new = h.sb.push("feature", {"README.md": "# more\n"}, author="carol")["after"]
    h.handle("pull_request", "synchronize", pull=7, before=old, after=new, sender="carol")
    assert len(checks(h, old)) == 1 and len(checks(h, new)) == 1


def test_an_unknown_recipe_is_refused_at_comment_time_with_a_failed_check(world):
    h = world({"recipes/tiny-cpu.yaml": recipe("[1, 4, 8]")})
    h.on_comment(7, "alice", "/sweep please run it")
    assert h.dispatches() == []
    english, chinese = bilingual(h.bot_comments(7)[-1]["body"])
    assert "`please`" in english and "`tiny-cpu`" in english and "not run" in english
    assert "未执行" in chinese and "`please`" in chinese
    [check] = checks(h, h.head(7))
    assert check["conclusion"] == "failure" and "please" in check["summary"]


def test_a_known_recipe_glob_still_dispatches(world):
    h = world({"recipes/tiny-cpu.yaml": recipe("[1, 4, 8]")})
    h.on_comment(7, "alice", "/sweep tiny-*")
    [run] = h.dispatches()
    assert run["inputs"]["command"] == "/sweep tiny-*"


# -- /accept-regression -------------------------------------------------------------------------------

def _artifacts(plan_jobs, results, required) -> list[dict]:
    dump = lambda jobs: json.dumps({"jobs": [job.model_dump(mode="json") for job in jobs]})  # noqa: E731
    return [{"name": "plan", "files": {"plan.json": dump(plan_jobs), "required/required-1.json": dump(required)}}] + [
        {"name": f"result-{r.job_id}", "files": {f"{r.job_id}/result.json": r.model_dump_json()}} for r in results]


def regressed_run(h) -> str:
    """A baseline on main and a PR run on the head measuring 20 % less throughput (per-request data, so
    that the noise-aware comparison can claim it); returns the head SHA."""
    head, main = h.head(7), h.sb.state()["repository"]["default_branch_sha"]
    job = synthetic.sweep_plan("tiny-cpu", concurrencies=(1, 4), sha=head)
    base = synthetic.run_sweep(job.model_copy(update={"sha": main}), sha=main, per_request=True)
    h.sb.add_run("gpu.yml", event="push", branch="main", head_sha=main, conclusion="success",
                 artifacts=_artifacts([job], [base], []))
    slower = synthetic.run_sweep(job, scale=0.8, per_request=True)
    h.sb.add_run("gpu.yml", inputs={"pr": "7", "sha": head, "command": "/sweep", "requester": "carol",
                                    "comment_id": "1"}, conclusion="failure",
                 artifacts=_artifacts([job], [slower], [job]))
    return head


def test_accept_regression_passes_the_gate_for_this_commit_and_a_push_clears_it(world):
    h = world({"recipes/tiny-cpu.yaml": recipe("[1, 4, 8]")})
    head = regressed_run(h)

    h.on_comment(7, "carol", "/accept-regression tiny-cpu bigger batches")  # write is not enough
    english, _ = bilingual(h.bot_comments(7)[-1]["body"])
    assert "maintain" in english and checks(h, head) == []

    # Accepting another recipe's regressions leaves this one failing.
    h.on_comment(7, "alice", "/accept-regression other-recipe not this one")
    [check] = checks(h, head)
    assert check["conclusion"] == "failure" and "tp1-c4" in check["summary"]

    h.on_comment(7, "alice", "/accept-regression tiny-cpu bigger batches trade TTFT for throughput")
    reply = h.bot_comments(7)[-1]["body"]
    english, chinese = bilingual(reply)
    assert "accepted the performance regressions of `tiny-cpu`" in english and "success" in english
    assert "已接受" in chinese
    [check] = checks(h, head)
    assert (check["status"], check["conclusion"]) == ("completed", "success")
    assert "@alice" in check["summary"] and "bigger batches trade TTFT for throughput" in check["summary"]

    new = h.sb.push("feature", {"README.md": "# more\n"}, author="carol")["after"]
    h.handle("pull_request", "synchronize", pull=7, before=head, after=new, sender="carol")
    [fresh] = checks(h, new)
    assert fresh["conclusion"] is None and "accepted" not in fresh["summary"]
    from bot.report import gate
    assert gate.read_acks([type("C", (), c)() for c in h.bot_comments(7)], BOT, new) == []


# -- merge queues ----------------------------------------------------------------------------------

def _merge_group(h: Harness, files: dict) -> tuple[str, "pathlib.Path"]:
    main = h.sb.state()["repository"]["default_branch_sha"]
    branch = f"gh-readonly-queue/main/pr-7-{main}"
    sha = h.sb.push(branch, files, author="alice", start_from="feature")["after"]
    payload = {"action": "checks_requested", "repository": {"full_name": "acme/bench", "default_branch": "main"},
               "sender": {"login": "alice"},
               "merge_group": {"head_sha": sha, "head_ref": f"refs/heads/{branch}", "base_sha": main,
                               "base_ref": "refs/heads/main"}}
    path = h.tmp / f"merge-group-{sha[:8]}.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    return sha, path


def _finished_gate(h: Harness, conclusion: str) -> None:
    h.sb.request("POST", "/repos/acme/bench/check-runs", {
        "name": CHECK, "head_sha": h.head(7), "status": "completed", "conclusion": conclusion,
        "output": {"title": "gate", "summary": "gate"}}, user=BOT)


@pytest.mark.parametrize("conclusion", ["success", "failure"])
def test_a_merge_group_with_the_same_recipes_reuses_the_pr_head_verdict(world, conclusion):
    h = world({"recipes/tiny-cpu.yaml": recipe("[1, 4, 8]")})
    _finished_gate(h, conclusion)
    sha, path = _merge_group(h, {"README.md": "# queued with another PR\n"})
    h.handle("merge_group", "checks_requested", path=path)
    [check] = checks(h, sha)
    assert (check["status"], check["conclusion"]) == ("completed", conclusion)
    assert h.head(7)[:12] in check["summary"] and "reused" in check["summary"]
    assert h.dispatches() == []


def test_a_merge_group_with_other_recipes_runs_what_is_required(world):
    h = world({"recipes/tiny-cpu.yaml": recipe("[1, 4, 8]")})
    _finished_gate(h, "success")
    sha, path = _merge_group(h, {"recipes/tiny-cpu.yaml": recipe("[1, 4, 8, 16]")})
    h.handle("merge_group", "checks_requested", path=path)
    [check] = checks(h, sha)
    assert check["status"] == "in_progress" and "run them with `/sweep` and `/e2e`" in check["summary"]
    assert [(r["inputs"]["sha"], r["inputs"]["command"]) for r in h.dispatches()] == [(sha, "/sweep"), (sha, "/e2e")]


def test_baseline_from_a_maintainer_runs_the_default_branch_on_its_own_tip(world):
    h = world({"README.md": "# x\n"})
    h.on_comment(7, "carol", "/baseline")  # write is not enough
    assert h.dispatches() == []
    h.on_comment(7, "alice", "/baseline")
    main = h.sb.state()["repository"]["default_branch_sha"]
    [run] = h.dispatches()
    assert run["inputs"]["pr"] == "0" and run["inputs"]["sha"] == main and run["inputs"]["command"] == "/baseline"
    from bot.core.github import Run
    from bot.report.fetch import baseline_sha
    seen = Run(run["id"], run["display_title"], "completed", "success", None, "", run["head_sha"],
               event=run["event"], head_branch=run["head_branch"])
    assert baseline_sha(seen, "main") == main
    english, chinese = bilingual(h.bot_comments(7)[-1]["body"])
    assert "baseline mode" in english and "基线模式" in chinese


def test_a_broken_config_fails_the_gate_with_the_file_and_field(world):
    h = world({"recipes/tiny-cpu.yaml": recipe("[1, 4, 8]")})
    h.sb.push("main", {".github/recipe-bot.yaml": CONFIG + "gate:\n  required: [/status]\n"}, author="alice")
    h.handle("pull_request", "opened", pull=7, sender="carol", expect=1)
    [check] = checks(h, h.head(7))
    assert check["conclusion"] == "failure"
    assert ".github/recipe-bot.yaml@main:4" in check["summary"] and "gate.required" in check["summary"]


def test_accept_regression_next_to_a_sweep_keeps_the_dispatch_ack_readable(world):
    from bot.core import markers
    from bot.core.github import Comment

    h = world({"recipes/tiny-cpu.yaml": recipe("[1, 4, 8]")})
    comment_id = h.comment(7, "alice", "/accept-regression tiny-cpu known\n/sweep")
    h.handle("issue_comment", "created", comment_id=comment_id)
    [reply] = h.bot_comments(7)
    ledger = markers.read_ledger([Comment(reply["id"], BOT, reply["body"], None)], BOT)
    assert ledger.acked(str(comment_id), h.head(7))
    assert [a.recipe for a in gate.read_acks([Comment(reply["id"], BOT, reply["body"], None)], BOT, h.head(7))] \
        == ["tiny-cpu"]


def _inferencex_pr(sandbox, tmp_path, with_entry: bool):
    fixture = ROOT / "tests" / "fixtures" / "inferencex"
    main = {**MAIN, "configs/nvidia-master.yaml": (fixture / "configs" / "nvidia-master.yaml").read_text(),
            "configs/amd-master.yaml": (fixture / "configs" / "amd-master.yaml").read_text(),
            "configs/runners.yaml": (fixture / "configs" / "runners.yaml").read_text(),
            "perf-changelog.yaml": (fixture / "perf-changelog.yaml").read_text(),
            "runners/launch_h100.sh": "#!/bin/bash\nexport MODEL=$MODEL_PATH\n", **tool_files()}
    changed = main["configs/nvidia-master.yaml"].replace("sglang:v1.0.0-cu130", "sglang:v1.0.1-cu130")
    assert changed != main["configs/nvidia-master.yaml"]
    head = {"configs/nvidia-master.yaml": changed}
    if with_entry:
        head["perf-changelog.yaml"] = main["perf-changelog.yaml"].rstrip("\n") + (
            "\n- config-keys:\n    - llama5-fp8-h100-sglang\n  description:\n    - \"Bump SGLang to 1.0.1\"\n"
            "  pr-link: https://github.com/example-org/inferencex-fixture/pull/105\n")
    seed = make_seed(tmp_path / "sandbox", main, head, {"pulls": PULLS, "issues": []})
    h = Harness(sandbox(seed), tmp_path)
    h.handle("pull_request", "opened", pull=7, sender="carol")
    [check] = checks(h, h.head(7))
    return check


def test_an_inferencex_change_with_its_changelog_entry_is_required_never_nothing_touched(sandbox, tmp_path):
    check = _inferencex_pr(sandbox, tmp_path, with_entry=True)
    assert check["status"] == "in_progress", check["summary"]
    assert "llama5-fp8-h100-sglang" in check["summary"] and "`/sweep`" in check["summary"]


def test_an_edited_master_config_without_a_changelog_entry_fails_the_gate_in_inferencex_words(sandbox, tmp_path):
    # InferenceX runs only appended changelog entries, and its review rule asks for one with every master
    # config edit: the gate neither passes as "nothing touched" nor waits for a run that nothing plans.
    check = _inferencex_pr(sandbox, tmp_path, with_entry=False)
    assert check["conclusion"] == "failure", check["summary"]
    english, chinese = check["summary"].split("\n\n---\n\n")[:2]
    assert "Master config files were modified but `perf-changelog.yaml` was not updated" in english
    assert "configs/nvidia-master.yaml" in english
    assert "主配置文件已修改，但 `perf-changelog.yaml` 未更新" in chinese


@pytest.mark.parametrize("errors, expected", [
    ({"errors": [{"file": "recipes/tiny-cpu.yaml", "line": 11, "field": "concurrency", "message": "not a list",
                  "accepted": []}]}, "recipes/tiny-cpu.yaml:11: field `concurrency`: not a list"),
    ({"errors": [{"message": "no recipe matches 'nosuch'", "accepted": ["tiny-cpu"]}]}, "no recipe matches"),
    (None, "failed before it could say why"),
], ids=["recipe-error", "plan-error", "nothing-kept"])
def test_a_failed_plan_job_fails_the_gate_with_the_reason(world, tmp_path, errors, expected):
    import subprocess
    import sys

    h = world({"recipes/tiny-cpu.yaml": recipe("[1, 4, 8]")})
    path = tmp_path / "plan.json"
    if errors is not None:
        path.write_text(json.dumps(errors), encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "bot", "ci", "plan-failed", h.head(7), str(path),
                             "https://example.invalid/run/1"], env=h.env, capture_output=True, text=True,
                            timeout=60, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    [check] = checks(h, h.head(7))
    assert check["conclusion"] == "failure" and expected in check["summary"]
    assert "规划失败" in check["summary"]
