"""`/approve-runners <sha>`: only the code owner of configs/runners.yaml (by the default branch's CODEOWNERS;
without an entry, an admin or maintainer) lets the rows on the runner labels a head adds run; the approval
is the bot's own ledger entry for exactly that head, and the runs started at that head carry the labels."""
from __future__ import annotations

import dataclasses

import pytest

from bot.control.runner_approval import entitled
from bot.control.trust import Actor, Permission
from bot.core import markers
from bot.core.github_records import Comment
from github_sandbox.harness import make_seed
from handle_helpers import BOT, CONFIG, PULLS, ROOT, Harness, bilingual
from ix_repo_helpers import tool_files

SHA, OLD = "a" * 40, "b" * 40
RUNNERS_MAIN = "labels:\n  cpu:\n    - cpu_0\n"
RUNNERS_PR = RUNNERS_MAIN + "  cluster:new:\n    - new_0\n"
MASTER = "{}\n"  # no config: what matters here is configs/runners.yaml


# ---- who may approve (pure) ------------------------------------------------------------------------

def _actor(login: str, permission: Permission, listed: bool = False) -> Actor:
    return Actor(login, permission, listed)


ENTITLED = {
    # name: (actor, owners of configs/runners.yaml, teams the actor is in, allowed)
    "the code owner with write permission": (_actor("dave", Permission.WRITE), ("@dave",), (), True),
    "a member of the owning team": (_actor("alice", Permission.WRITE), ("@acme/infra",), ("acme/infra",), True),
    "an admin without a CODEOWNERS entry": (_actor("alice", Permission.ADMIN), (), (), True),
    "a maintainer without a CODEOWNERS entry": (_actor("erin", Permission.MAINTAIN), (), (), True),
    # negatives
    "a write collaborator who is not the code owner": (_actor("carol", Permission.WRITE), ("@dave",), (), False),
    "an admin who is not the code owner": (_actor("alice", Permission.ADMIN), ("@dave",), (), False),
    "the code owner without write permission": (_actor("dave", Permission.READ), ("@dave",), (), False),
    "a write collaborator without a CODEOWNERS entry": (_actor("carol", Permission.WRITE), (), (), False),
    "the trusted list without a CODEOWNERS entry": (_actor("carol", Permission.READ, listed=True), (), (), False),
    "an email owner is not a login": (_actor("dave", Permission.WRITE), ("dave@example.com",), (), False),
}


@pytest.mark.parametrize("case", list(ENTITLED))
def test_only_the_code_owner_of_runners_yaml_or_a_maintainer_may_approve(case):
    actor, owners, teams, allowed = ENTITLED[case]
    assert entitled(actor, owners, lambda team: team in teams).allowed is allowed


# ---- the ledger: the bot's own marker, for one head ------------------------------------------------

def _comment(body: str, user: str = BOT, **changes) -> Comment:
    return dataclasses.replace(Comment(id=1, user=user, body=body, created_at=None), **changes)


LEDGER = {
    "the bot's marker for the head": (markers.runners_marker(SHA, "dave", ["cluster:new"]), BOT, {}, ("cluster:new",)),
    # negatives
    "an approval for an older sha": (markers.runners_marker(OLD, "dave", ["cluster:new"]), BOT, {}, ()),
    "a marker someone else typed": (markers.runners_marker(SHA, "dave", ["cluster:new"]), "carol", {}, ()),
    "the bot's comment edited by someone": (markers.runners_marker(SHA, "dave", ["cluster:new"]), BOT,
                                            {"edited": True, "editors": ("carol",)}, ()),
    "a marker with a sha prefix": (markers.runners_marker(SHA[:12], "dave", ["cluster:new"]), BOT, {}, ()),
}


@pytest.mark.parametrize("case", list(LEDGER))
def test_a_runner_label_approval_counts_only_as_the_bots_own_marker_for_the_head(case):
    body, user, changes, labels = LEDGER[case]
    ledger = markers.read_ledger([_comment(body + "\nApproved.\n", user, **changes)], BOT)
    assert markers.approved_runner_labels(ledger.runner_approvals, SHA) == labels


# ---- through `recipe-bot handle` on the sandbox ----------------------------------------------------

@pytest.fixture
def ix(sandbox, tmp_path):
    files_main = {
        "README.md": "# bench\n",
        ".github/recipe-bot.yaml": CONFIG,
        ".github/workflows/gpu.yml": (ROOT / ".github/workflows/gpu.yml").read_text(encoding="utf-8"),
        ".github/CODEOWNERS": "* @acme/core\nconfigs/runners.yaml @dave\n",
        "configs/runners.yaml": RUNNERS_MAIN,
        "configs/x-master.yaml": MASTER,
    }
    users = {"alice": "admin", "carol": "write", "bob": "read", "mallory": "none", "dave": "write"}
    seed = make_seed(tmp_path / "sandbox", files_main, {"configs/runners.yaml": RUNNERS_PR},
                     {"pulls": PULLS, "users": users})
    return Harness(sandbox(seed), tmp_path)


def _reply(h: Harness) -> str:
    return bilingual(h.bot_comments(7)[-1]["body"])[0]


def test_the_code_owner_approves_the_head_and_later_runs_carry_the_label(ix):
    head = ix.head(7)
    result = ix.on_comment(7, "dave", f"/approve-runners {head}\n/sweep")
    assert result.returncode == 0, result.stderr
    body = ix.bot_comments(7)[-1]["body"]
    assert f"<!-- recipe-bot:runners-approved sha={head} by=dave labels=cluster:new -->" in body.splitlines()
    assert "approved the runner label(s) `cluster:new`" in bilingual(body)[0]
    [run] = ix.dispatches()
    assert run["inputs"]["runner_labels"] == "cluster:new"  # the /sweep after it in the same comment
    ix.on_comment(7, "carol", "/sweep --scope lowest")
    assert ix.dispatches()[-1]["inputs"]["runner_labels"] == "cluster:new"  # and any later run at this head


def test_a_push_leaves_the_approval_on_the_old_commit(ix):
    ix.on_comment(7, "dave", f"/approve-runners {ix.head(7)}")
    new = ix.sb.push("feature", {"configs/runners.yaml": RUNNERS_PR + "  cluster:other:\n    - other_0\n"},
                     author="carol")["after"]
    ix.on_comment(7, "carol", "/sweep")
    [run] = ix.dispatches()
    assert run["inputs"]["sha"] == new and "runner_labels" not in run["inputs"]


REFUSED = {
    "a write collaborator who is not the code owner": ("carol", lambda head: head,
                                                       "only a code owner of `configs/runners.yaml` (@dave"),
    "an admin who is not the code owner": ("alice", lambda head: head, "@alice is not one"),
    "an approval for an older sha": ("dave", lambda head: "c" * 40, "is another commit (an older one, or a typo)"),
    "a sha prefix": ("dave", lambda head: head[:12], "by its full 40-character SHA"),
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_a_refused_runner_approval_records_nothing_and_says_why(ix, case):
    login, sha, words = REFUSED[case]
    result = ix.on_comment(7, login, f"/approve-runners {sha(ix.head(7))}\n/sweep")
    assert result.returncode == 0, result.stderr
    body = ix.bot_comments(7)[-1]["body"]
    assert "runners-approved" not in body and words in _reply(ix)
    assert all("runner_labels" not in run["inputs"] for run in ix.dispatches())


# ---- the reply says which rows wait, for whom, and the exact command ----------------------------------

IX_FIXTURE = ROOT / "tests/fixtures/ix-repo"
VLLM = "tinyq-bf16-cpu-vllm"


@pytest.fixture
def ix_pr(sandbox, tmp_path):
    """InferenceX's shape (our ix-repo fixture) on main; the PR adds `cluster:new` and a config on it."""
    files_main = {str(p.relative_to(IX_FIXTURE)): p.read_text(encoding="utf-8")
                  for p in IX_FIXTURE.rglob("*") if p.is_file()}
    files_main.update(tool_files())  # the repository's own utils/ (our fixture tools), which the plan runs
    files_main.update({".github/recipe-bot.yaml": CONFIG, ".github/CODEOWNERS": "configs/runners.yaml @dave\n",
                       ".github/workflows/gpu.yml": (ROOT / ".github/workflows/gpu.yml").read_text(encoding="utf-8")})
    master = files_main["configs/cpu-master.yaml"]
    block = master.split(f"{VLLM}:\n", 1)[1].split("\n\n", 1)[0].replace("  runner: cpu\n", "  runner: cluster:new\n")
    runners = files_main["configs/runners.yaml"].replace("labels:\n", "labels:\n  cluster:new:\n    - new_0\n", 1)
    changelog = files_main["perf-changelog.yaml"] + (
        "\n- config-keys:\n    - tinyq-bf16-new-vllm\n    - " + VLLM + "\n  description:\n    - \"new cluster\"\n"
        "  pr-link: https://github.com/acme/bench/pull/7\n")
    feature = {"configs/runners.yaml": runners, "configs/cpu-master.yaml": master + f"\ntinyq-bf16-new-vllm:\n{block}\n",
               "perf-changelog.yaml": changelog}
    users = {"alice": "admin", "carol": "write", "bob": "read", "mallory": "none", "dave": "write"}
    seed = make_seed(tmp_path / "sandbox", files_main, feature, {"pulls": PULLS, "users": users})
    return Harness(sandbox(seed), tmp_path)


def test_the_started_runs_reply_names_the_held_rows_their_approver_and_the_command(ix_pr):
    head = ix_pr.head(7)
    result = ix_pr.on_comment(7, "carol", "/sweep")
    assert result.returncode == 0, result.stderr
    english, chinese = bilingual(ix_pr.bot_comments(7)[-1]["body"])
    assert "held for a new runner label: this pull request adds cluster:new to configs/runners.yaml" in english
    assert "tinyq-bf16-new-vllm" in english and f"`/approve-runners {head}`" in english
    assert "a code owner of configs/runners.yaml (@dave, .github/CODEOWNERS:1 on the default branch)" in english
    assert "因新的 runner 标签而暂缓" in chinese and f"/approve-runners {head}" in chinese
    assert "runner_labels" not in ix_pr.dispatches()[-1]["inputs"]
    ix_pr.on_comment(7, "dave", f"/approve-runners {head}\n/sweep")
    english, _ = bilingual(ix_pr.bot_comments(7)[-1]["body"])
    assert "held for a new runner label" not in english  # approved: every row runs
    assert ix_pr.dispatches()[-1]["inputs"]["runner_labels"] == "cluster:new"
