"""The estimate before a GPU run, the budget and `/approve-budget`, against the sandbox GitHub (#23 items 1-2)."""
from __future__ import annotations

import pathlib

import pytest

from bot.core import i18n, stage_markers
from bot.control import budget
from github_sandbox.harness import SandboxProcess, make_seed
from handle_helpers import BOT, ROOT, Harness, bilingual
from golden_helpers import assert_golden

GOLDEN = pathlib.Path(__file__).parent / "golden" / "control"
RUNNERS = "runners:\n  h8:\n    gpus: 8\n    gpu: H200\n    description: eight GPUs of one host\nshared_by_all: []\n"
RECIPE = """name: big
kind: sweep
description: Eight GPUs, packed into one server launch.
runner: h8
concurrency: {conc}
search_space:
  - name: tp8
    tp: 8
workload:
  dataset: random
  isl: 1024
  osl: 128
  prompts_per_concurrency: 4
engine:
  name: vllm
  version: "0.26.0"
model:
  path: /models/big
  served_name: big
  precision: bf16
estimate:
  startup_s: 600
  point_s: 300
"""
# The PR widens the sweep from 2 to 4 concurrencies: 8 GPUs × (600 s + 4 × 300 s) = 4 GPU-hours.
FULL_HOURS, LOWEST_HOURS = "4.00", "2.00"  # `--scope lowest`: 8 × (600 + 300) s


def _config(budget_yaml: str = "") -> str:
    return f"bot_login: {BOT}\ncooldown_seconds: 0\n{budget_yaml}"


def _start(tmp_path: pathlib.Path, config: str):
    files_main = {".github/recipe-bot.yaml": config, "recipes/_runners.yaml": RUNNERS,
                  ".github/workflows/gpu.yml": (ROOT / ".github/workflows/gpu.yml").read_text(encoding="utf-8"),
                  "recipes/big.yaml": RECIPE.format(conc="[1, 4]")}
    pulls = [{"number": 7, "head": "feature", "base": "main", "author": "carol", "title": "Wider sweep"}]
    seed = make_seed(tmp_path / "sandbox", files_main, {"recipes/big.yaml": RECIPE.format(conc="[1, 4, 16, 64]")},
                     {"pulls": pulls})
    sb = SandboxProcess(seed)
    sb.__enter__()
    h = Harness(sb, tmp_path)
    # As recipe-bot.yml runs it: the default branch checked out, each handler its own Actions run.
    h.env.update(RECIPE_BOT_CHECKOUT=str(sb.checkout(tmp_path / "checkout")), GITHUB_RUN_ID="4242",
                 GITHUB_RUN_ATTEMPT="1")
    return sb, h


@pytest.fixture
def open_harness(tmp_path):
    opened = []

    def make(config: str) -> Harness:
        sb, h = _start(tmp_path, config)
        opened.append(sb)
        return h

    yield make
    for sb in opened:
        sb.__exit__(None, None, None)


def _handle(h: Harness, user: str, body: str):
    h.env["GITHUB_RUN_ID"] = str(int(h.env["GITHUB_RUN_ID"]) + 1)
    return h.on_comment(7, user, body)


def test_a_label_trigger_is_acknowledged_with_its_estimate_before_the_run(open_harness):
    h = open_harness(_config())
    h.label(7, "carol", "sweep-enabled")  # /sweep --scope lowest
    h.handle("pull_request", "labeled", pull=7, label="sweep-enabled", sender="carol")
    [run] = h.dispatches()
    [reply] = h.bot_comments(7)
    english, chinese = bilingual(reply["body"])
    assert "**Estimate** for `/sweep --scope lowest`" in english and f"about **{LOWEST_HOURS} GPU-hours**" in english
    assert "1 job(s), 1 point(s), 1 server launch(es)" in english and "This is an estimate" in english
    assert "**估算**" in chinese and f"约 **{LOWEST_HOURS} GPU 小时**" in chinese
    assert english.index("Estimate") < english.index("Started")  # the estimate first
    assert stage_markers.read_estimate_markers(reply["body"]) == [("label-sweep-enabled", run["inputs"]["sha"], 2.0)]


def test_under_the_budget_a_sweep_runs_as_before_in_at_most_seven_requests(open_harness):
    h = open_harness(_config("budget:\n  gpu_hours_per_command: 10\n"))
    before = h.seq()
    result = _handle(h, "carol", "/sweep")
    assert len(h.dispatches()) == 1 and "waits" not in result.stderr
    operations = [f"{r['method']} {r['operation']}" for r in h.requests(before)]
    # issue #22 item 2: the estimate included (the recipes come from the checkout's git objects); one listing
    # of the GPU runs asks GitHub whether the request already has one (a deleted reply proves nothing)
    assert len(operations) <= 7 and operations.count("GET actions/list-workflow-runs") == 1, operations
    assert operations.count("POST issues/create-comment") == 1 and "GET repos/get-content" not in operations
    english, _ = bilingual(h.bot_comments(7)[0]["body"])
    assert f"about **{FULL_HOURS} GPU-hours**" in english and "packed: 1 launches instead of 4 unpacked" in english


def test_a_sweep_over_the_budget_waits_and_starts_once_after_a_pinned_approval(open_harness):
    h = open_harness(_config("budget:\n  gpu_hours_per_command: 3\n"))
    head = h.head(7)
    _handle(h, "carol", "/sweep")
    assert h.dispatches() == []
    [waiting] = h.bot_comments(7)
    english, chinese = bilingual(waiting["body"])
    assert "waiting for a budget approval" in english and f"`/approve-budget {head}`" in english
    assert "budget of 3.00 GPU-hours per command" in english and "`maintain` permission" in english
    assert "正在等待预算批准" in chinese and f"`/approve-budget {head}`" in chinese
    [pending] = budget.waiting([_comment(waiting)], BOT, head)
    assert (pending.command, pending.requester, pending.gpu_hours) == ("/sweep", "carol", 4.0)

    _handle(h, "carol", f"/approve-budget {head}")  # write permission is not enough
    _handle(h, "alice", f"/approve-budget {head[:12]}")  # a prefix approves nothing
    assert h.dispatches() == []

    _handle(h, "alice", f"/approve-budget {head}")
    [run] = h.dispatches()
    assert run["inputs"]["sha"] == head and run["inputs"]["requester"] == "carol"
    assert run["inputs"]["comment_id"] == waiting["body"].split("comment=")[1].split()[0]

    again = _handle(h, "alice", f"/approve-budget {head}")
    assert len(h.dispatches()) == 1 and "nothing waits" in again.stderr
    english, _ = bilingual(h.bot_comments(7)[-1]["body"])
    assert "started nothing" in english


def test_an_approval_of_an_older_commit_starts_nothing(open_harness):
    h = open_harness(_config("budget:\n  gpu_hours_per_command: 3\n"))
    stale = h.head(7)
    _handle(h, "carol", "/sweep")
    h.sb.push("feature", {"README.md": "a later push\n"}, author="carol")
    _handle(h, "alice", f"/approve-budget {stale}")
    assert h.dispatches() == []
    english, chinese = bilingual(h.bot_comments(7)[-1]["body"])
    assert f"`{h.head(7)}`" in english and "another commit" in english and "另一个提交" in chinese


def test_the_per_pr_day_budget_counts_the_runs_already_started(open_harness):
    h = open_harness(_config("budget:\n  gpu_hours_per_pr_per_day: 6\n"))
    _handle(h, "carol", "/sweep")
    assert len(h.dispatches()) == 1
    _handle(h, "carol", "/sweep --fail-fast")
    assert len(h.dispatches()) == 1
    english, _ = bilingual(h.bot_comments(7)[-1]["body"])
    assert "this PR's budget of 6.00 GPU-hours a day (4.00 GPU-hours already started" in english


def _comment(raw: dict):
    from bot.core.github import Comment

    return Comment(id=raw["id"], user=raw["user"], body=raw["body"], created_at=None)


@pytest.mark.parametrize("name, template, context", [
    ("estimate", "control/estimate", dict(
        command="/sweep --scope full", sha="3f9c2ab1d0e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8", jobs=3, points=24, launches=3,
        packed=3, unpacked=24, gpu_hours="112.00", bound="288.00", inferencex_rows=0, more=0,
        recipes=[{"name": "llama3-70b", "jobs": 2, "launches": 2, "gpu_hours": "96.00"},
                 {"name": "llama3-8b", "jobs": 1, "launches": 1, "gpu_hours": "16.00"}])),
    ("estimate-unavailable", "control/estimate-unavailable", dict(
        command="/sweep", sha="3f9c2ab1d0e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8",
        reason="recipes/big.yaml:9: workload: give exactly one of num_prompts and prompts_per_concurrency")),
    ("budget-waiting-command", "control/budget-waiting", dict(
        command="/sweep --scope full", sha="3f9c2ab1d0e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8", requester="carol",
        gpu_hours="112.00", reason="command", limit="50.00", spent="0.00", total="0.00", approver="maintain")),
    ("budget-waiting-day", "control/budget-waiting", dict(
        command="/sweep", sha="3f9c2ab1d0e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8", requester="carol",
        gpu_hours="40.00", reason="day", limit="100.00", spent="72.00", total="112.00", approver="maintain")),
    ("budget-approved", "control/budget-approved", dict(
        by="alice", sha="3f9c2ab1d0e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8", commands=["/sweep --scope full"])),
    ("budget-nothing-waiting", "control/budget-nothing-waiting", dict(
        sha="3f9c2ab1d0e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8", started=["/sweep"])),
    ("budget-stale", "control/budget-stale", dict(
        given="0123456789abcdef0123456789abcdef01234567", head_sha="3f9c2ab1d0e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8")),
])
@pytest.mark.parametrize("lang", i18n.LANGUAGES)
def test_estimate_and_budget_messages_match_their_golden_files(name, template, context, lang):
    text = i18n.render(template, lang, **context).strip() + "\n"
    assert_golden(GOLDEN / f"{name}.{lang}.md", text)


@pytest.mark.parametrize("limits, hours, spent, expected", [
    ((None, None), 1000.0, 0.0, None),
    ((50.0, None), 50.0, 0.0, None),  # at the limit is within it
    ((50.0, None), 50.5, 0.0, ("command", 50.0)),
    ((None, 100.0), 40.0, 60.0, None),
    ((None, 100.0), 40.0, 72.0, ("day", 100.0)),
    ((500.0, 100.0), 40.0, 72.0, ("day", 100.0)),
], ids=["no-budget", "at-command-limit", "over-command", "day-exactly-full", "over-day", "day-under-command"])
def test_the_budget_check_names_the_limit_it_is_over(limits, hours, spent, expected):
    from bot.core.config import Budget

    verdict = budget.check(Budget(gpu_hours_per_command=limits[0], gpu_hours_per_pr_per_day=limits[1]), hours, spent)
    assert (verdict.reason, verdict.limit) == expected if expected else verdict is None


def test_a_checkout_that_is_not_the_default_branch_is_never_read(open_harness, tmp_path):
    # The config is the default branch's: a checkout of the PR's branch falls back to the API.
    h = open_harness(_config("budget:\n  gpu_hours_per_command: 3\n"))
    h.env["RECIPE_BOT_CHECKOUT"] = str(h.sb.checkout(tmp_path / "pr-checkout", branch="feature"))
    before = h.seq()
    result = _handle(h, "carol", "/sweep")
    assert "is not a checkout of main" in result.stderr
    assert "GET repos/get-content" in [f"{r['method']} {r['operation']}" for r in h.requests(before)]
    assert h.dispatches() == [] and "waits for /approve-budget" in result.stderr  # main's budget held


def test_a_sweep_naming_recipes_is_checked_against_the_checkout_within_seven_requests(open_harness):
    h = open_harness(_config())
    before = h.seq()
    _handle(h, "carol", "/sweep bi*")
    assert len(h.dispatches()) == 1
    operations = [f"{r['method']} {r['operation']}" for r in h.requests(before)]
    assert len(operations) <= 7 and "GET repos/get-content" not in operations, operations
    _handle(h, "carol", "/sweep nothing-like-it")  # an unknown name is still refused before any run
    assert len(h.dispatches()) == 1
    english, _ = bilingual(h.bot_comments(7)[-1]["body"])
    assert "nothing-like-it" in english
