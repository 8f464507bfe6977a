"""`/approve-planner <sha> --max-gpu-hours N`: only the code owners of every InferenceX planner file a head
changes (by the default branch's CODEOWNERS; a file without an owner: an admin or maintainer) let that
head's own planner plan; the approval is the bot's own ledger entry for exactly that head, with its cap, and
the runs started at that head carry it to the GPU workflow (bot/control/planner_approval.py)."""
from __future__ import annotations

import dataclasses

import pytest

from bot.core import markers
from bot.core.commands import parse_comment
from bot.core.github_records import Comment
from github_sandbox.harness import make_seed
from handle_helpers import BOT, CONFIG, PULLS, ROOT, Harness, bilingual
from ix_repo_helpers import tool_files

SHA, OLD = "a" * 40, "b" * 40
IX_FIXTURE = ROOT / "tests/fixtures/ix-repo"
VLLM = "tinyq-bf16-cpu-vllm"
PROCESSOR = "utils/process_changelog.py"
GENERATOR = "utils/matrix_logic/generate_sweep_configs.py"
CODEOWNERS = f"* @acme/core\n{PROCESSOR} @dave\n{GENERATOR} @erin\n"


# ---- the command line ------------------------------------------------------------------------------

GRAMMAR = {
    "a full sha and a cap": (f"/approve-planner {SHA} --max-gpu-hours 200", None),
    # negatives
    "no cap": (f"/approve-planner {SHA}", "the following arguments are required: --max-gpu-hours"),
    "a negative cap": (f"/approve-planner {SHA} --max-gpu-hours -5", "is not a number of GPU-hours"),
    "a cap that is not a number": (f"/approve-planner {SHA} --max-gpu-hours lots", "is not a number of GPU-hours"),
    "no sha": ("/approve-planner --max-gpu-hours 5", "the following arguments are required: sha"),
}


@pytest.mark.parametrize("case", list(GRAMMAR))
def test_approve_planner_needs_a_sha_and_a_positive_cap(case):
    text, problem = GRAMMAR[case]
    parsed = parse_comment(text)
    if problem is None:
        [command] = parsed.commands
        assert command.max_gpu_hours == 200.0 and command.normalized() == text
        return
    [error] = parsed.errors
    assert problem in str(error.message) and not parsed.commands


# ---- the ledger: the bot's own marker, for one head ------------------------------------------------

def _comment(body: str, user: str = BOT, **changes) -> Comment:
    return dataclasses.replace(Comment(id=1, user=user, body=body, created_at=None), **changes)


MARKER = markers.planner_marker(SHA, "dave", 200.0, [PROCESSOR])
LEDGER = {
    "the bot's marker for the head": (MARKER, BOT, {}, 200.0),
    # negatives
    "an approval for an older sha": (markers.planner_marker(OLD, "dave", 200.0, [PROCESSOR]), BOT, {}, None),
    "a marker someone else typed": (MARKER, "carol", {}, None),
    "the bot's comment edited by someone": (MARKER, BOT, {"edited": True, "editors": ("carol",)}, None),
    "a marker with a sha prefix": (markers.planner_marker(SHA[:12], "dave", 200.0, [PROCESSOR]), BOT, {}, None),
    "a marker without a positive cap": (MARKER.replace("max_gpu_hours=200", "max_gpu_hours=inf"), BOT, {}, None),
}


@pytest.mark.parametrize("case", list(LEDGER))
def test_a_planner_approval_counts_only_as_the_bots_own_marker_for_the_head(case):
    body, user, changes, hours = LEDGER[case]
    ledger = markers.read_ledger([_comment(body + "\nApproved.\n", user, **changes)], BOT)
    approval = markers.approved_planner(ledger.planner_approvals, SHA)
    assert (approval.max_gpu_hours if approval else None) == hours


# ---- through `recipe-bot handle` on the sandbox ----------------------------------------------------

def _edited(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


@pytest.fixture
def ix_pr(sandbox, tmp_path):
    """InferenceX's shape (our ix-repo fixture and tools) on main; the PR edits the processor and the generator
    and appends a changelog entry."""
    files_main = {str(p.relative_to(IX_FIXTURE)): p.read_text(encoding="utf-8")
                  for p in IX_FIXTURE.rglob("*") if p.is_file()}
    files_main.update(tool_files())
    files_main.update({".github/recipe-bot.yaml": CONFIG, ".github/CODEOWNERS": CODEOWNERS,
                       ".github/workflows/gpu.yml": (ROOT / ".github/workflows/gpu.yml").read_text(encoding="utf-8")})
    changelog = files_main["perf-changelog.yaml"] + (
        "\n- config-keys:\n    - " + VLLM + "\n  description:\n    - \"one row\"\n"
        "  pr-link: https://github.com/acme/bench/pull/7\n")
    feature = {
        PROCESSOR: _edited(files_main[PROCESSOR], "    if args.trim_conc:\n",
                           "    throughput, evals = throughput[:1], []\n    if args.trim_conc:\n"),
        GENERATOR: files_main[GENERATOR] + "\n# a comment: still a change to the planner\n",
        "perf-changelog.yaml": changelog,
    }
    users = {"alice": "admin", "carol": "write", "bob": "read", "dave": "write", "erin": "write"}
    seed = make_seed(tmp_path / "sandbox", files_main, feature,
                     {"pulls": PULLS, "users": users, "teams": {"acme/planners": ["dave", "erin"]}})
    return Harness(sandbox(seed), tmp_path)


def _reply(h: Harness) -> tuple[str, str]:
    return bilingual(h.bot_comments(7)[-1]["body"])


def test_without_an_approval_the_run_holds_every_inferencex_row_and_names_the_command(ix_pr):
    head = ix_pr.head(7)
    assert ix_pr.on_comment(7, "carol", "/sweep").returncode == 0
    english, chinese = _reply(ix_pr)
    assert "held: this pull request changes InferenceX's own planner" in english
    assert f"/approve-planner {head} --max-gpu-hours" in english and PROCESSOR in english and GENERATOR in english
    assert "暂缓：此 PR 改动了 InferenceX 自己的规划器" in chinese
    assert "planner_sha" not in ix_pr.dispatches()[-1]["inputs"]


def test_the_code_owners_of_every_changed_file_approve_and_later_runs_carry_it(ix_pr, sandbox):
    head = ix_pr.head(7)
    owners = f"* @acme/core\n{PROCESSOR} @acme/planners\n{GENERATOR} @acme/planners\n"
    ix_pr.sb.push("main", {".github/CODEOWNERS": owners}, author="alice")
    result = ix_pr.on_comment(7, "dave", f"/approve-planner {head} --max-gpu-hours 50\n/sweep")
    assert result.returncode == 0, result.stderr
    body = ix_pr.bot_comments(7)[-1]["body"]
    files = ",".join(sorted([PROCESSOR, GENERATOR]))
    assert f"<!-- recipe-bot:planner-approved sha={head} by=dave max_gpu_hours=50 files={files} -->" in body
    english, chinese = bilingual(body)
    assert "approved this pull request's own InferenceX planner" in english and "at most 50 GPU-hours" in english
    assert "批准了此 PR 自己的 InferenceX 规划器" in chinese
    run = ix_pr.dispatches()[-1]
    assert run["inputs"]["planner_sha"] == head and run["inputs"]["planner_max_gpu_hours"] == "50"
    assert float(run["inputs"]["gpu_hours"]) >= 50  # the control plane counts what the approval allows
    ix_pr.on_comment(7, "carol", "/sweep --scope lowest")
    assert ix_pr.dispatches()[-1]["inputs"]["planner_sha"] == head  # any later run at this head


REFUSED = {
    "the owner of only one of the two changed files": ("dave", lambda head: head, "is owned by @erin"),
    "a write collaborator who owns neither": ("carol", lambda head: head, "@carol is not one"),
    "an admin who owns neither": ("alice", lambda head: head, "@alice is not one"),
    "an approval for an older sha": ("dave", lambda head: "c" * 40, "is another commit (an older one, or a typo)"),
    "a sha prefix": ("dave", lambda head: head[:12], "by its full 40-character SHA"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_refused_planner_approval_records_nothing_and_says_why(ix_pr, case):
    login, sha, words = REFUSED[case]
    result = ix_pr.on_comment(7, login, f"/approve-planner {sha(ix_pr.head(7))} --max-gpu-hours 50\n/sweep")
    assert result.returncode == 0, result.stderr
    body = ix_pr.bot_comments(7)[-1]["body"]
    english, _ = bilingual(body)
    assert "planner-approved" not in body and words in english
    assert all("planner_sha" not in run["inputs"] for run in ix_pr.dispatches())


def test_without_a_codeowners_entry_a_maintainer_approves_and_a_writer_may_not(ix_pr):
    ix_pr.sb.push("main", {".github/CODEOWNERS": "configs/runners.yaml @dave\n"}, author="alice")
    head = ix_pr.head(7)
    ix_pr.on_comment(7, "carol", f"/approve-planner {head} --max-gpu-hours 50")
    english, _ = _reply(ix_pr)
    assert "names no owner of" in english and "@carol has `write` permission" in english
    ix_pr.on_comment(7, "alice", f"/approve-planner {head} --max-gpu-hours 50")
    assert "planner-approved" in ix_pr.bot_comments(7)[-1]["body"]


def test_a_push_leaves_the_approval_on_the_old_commit(ix_pr):
    ix_pr.sb.push("main", {".github/CODEOWNERS": "configs/runners.yaml @dave\n"}, author="alice")
    ix_pr.on_comment(7, "alice", f"/approve-planner {ix_pr.head(7)} --max-gpu-hours 50")
    new = ix_pr.sb.push("feature", {"README.md": "# pushed\n"}, author="carol")["after"]
    ix_pr.on_comment(7, "carol", "/sweep")
    run = ix_pr.dispatches()[-1]
    assert run["inputs"]["sha"] == new and "planner_sha" not in run["inputs"]


def test_an_unreadable_codeowners_on_the_default_branch_leaves_the_approval_to_a_maintainer(ix_pr):
    ix_pr.sb.push("main", {".github/CODEOWNERS": "!utils/process_changelog.py @dave\n"}, author="alice")
    head = ix_pr.head(7)
    result = ix_pr.on_comment(7, "dave", f"/approve-planner {head} --max-gpu-hours 50")
    assert result.returncode == 0 and "CODEOWNERS on main cannot be read" in result.stderr
    english, _ = _reply(ix_pr)
    assert "names no owner of" in english and "planner-approved" not in ix_pr.bot_comments(7)[-1]["body"]
    ix_pr.on_comment(7, "alice", f"/approve-planner {head} --max-gpu-hours 50")
    assert "planner-approved" in ix_pr.bot_comments(7)[-1]["body"]
