"""Issue #17's attacks on the control plane, each replayed against the sandbox: every one is refused."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from bot.core.messages import from_data

from handle_helpers import bilingual

ROOT = Path(__file__).resolve().parents[1]

# #8 is bob's (read) same-repo PR and #9 mallory's fork: both need an approval of the exact head.


@pytest.mark.parametrize("length", [7, 12, 39], ids=["7-hex", "12-hex", "39-hex"])
def test_an_ok_to_test_prefix_approves_nothing_and_shows_the_full_sha(h, length):
    head = h.head(9)
    h.on_comment(9, "alice", f"/ok-to-test {head[:length]}")
    [reply] = h.bot_comments(9)
    assert "recipe-bot:ok-to-test" not in reply["body"]
    english, chinese = bilingual(reply["body"])
    assert "full 40-character SHA" in english and "40 位" in chinese
    assert f"`/ok-to-test {head}`" in english and f"`/ok-to-test {head}`" in chinese
    h.on_comment(9, "mallory", "/sweep")
    assert h.dispatches() == []


def test_an_approval_followed_by_a_force_push_is_stale(h):
    approved = h.head(8)
    h.on_comment(8, "alice", f"/ok-to-test {approved}")
    forced = h.sb.push("feature", {"recipes/tiny.yaml": "name: tiny\nevil: true\n"}, author="bob",
                       start_from="main")["after"]  # history rewritten: the approved commit is gone
    h.on_comment(8, "bob", "/sweep")
    assert h.dispatches() == []
    english, _ = bilingual(h.bot_comments(8)[-1]["body"])
    assert "the head is now" in english and f"`/ok-to-test {forced}`" in english


def test_a_maintainers_review_approve_on_the_head_commit_counts_as_approval(h):
    h.sb.add_review(8, "alice", "APPROVED")
    h.on_comment(8, "bob", "/sweep")
    [run] = h.dispatches()
    assert run["inputs"]["sha"] == h.head(8) and run["inputs"]["requester"] == "bob"


@pytest.mark.parametrize("who, state, push_after", [
    ("bob", "APPROVED", False),      # the author's own review: read permission approves nothing
    ("alice", "COMMENTED", False),   # a comment review is not an approval
    ("alice", "APPROVED", True),     # bound to the commit it was given on; a push leaves it behind
], ids=["review-without-write", "comment-review", "review-of-an-older-commit"])
def test_reviews_that_do_not_approve_the_head(h, who, state, push_after):
    h.sb.add_review(8, who, state)
    if push_after:
        h.push()
    h.on_comment(8, "bob", "/sweep")
    assert h.dispatches() == []


def test_a_maintainers_edit_does_not_run_a_command_its_author_may_not_run(h):
    comment_id = h.comment(7, "bob", "/sweep --scope full")  # bob has read permission
    h.handle("issue_comment", "created", comment_id=comment_id)
    assert h.dispatches() == []
    h.edit(comment_id, "alice", "/sweep --scope full ")  # a moderation edit by a maintainer
    h.handle("issue_comment", "edited", comment_id=comment_id, sender="alice", changes_from="/sweep --scope full")
    assert h.dispatches() == []
    english, chinese = bilingual(h.bot_comments(7)[-1]["body"])
    assert "@alice edited this comment" in english and "@bob" in english
    assert "@alice 编辑" in chinese


def test_an_edit_by_the_author_with_rights_still_runs(h):
    comment_id = h.comment(7, "alice", "/sweep --conc x")
    h.handle("issue_comment", "created", comment_id=comment_id)
    h.edit(comment_id, "alice", "/sweep --conc 4")
    h.handle("issue_comment", "edited", comment_id=comment_id, sender="alice", changes_from="/sweep --conc x")
    assert len(h.dispatches()) == 1


# -- commands only from text a reader sees ------------------------------------------------------

HIDDEN = [
    ("link-definition-title", 'See [the docs][d].\n\n[d]: https://example.com (\n/sweep --scope full\n)\n'),
    ("markdown-comment-idiom", '[//]: # (\n/sweep --scope full\n)\nnice work\n'),
    ("html-block-attribute", '<div title="\n/sweep --scope full\n">thanks</div>\n'),
    ("inline-html-attribute", 'looks good <img alt="x\n/sweep --scope full\n" src="a.png"> to me\n'),
    ("script-block", '<script>\n/sweep --scope full\n</script>\n'),
    ("style-block", '<style>\n/sweep --scope full\n</style>\n'),
    ("html-comment", '<!--\n/sweep --scope full\n-->\n'),
]


@pytest.mark.parametrize("body", [body for _, body in HIDDEN], ids=[name for name, _ in HIDDEN])
def test_a_command_hidden_from_the_rendered_page_is_not_read(body):
    from bot.core.commands import parse_comment

    parsed = parse_comment(body)
    assert parsed.commands == () and parsed.errors == ()


VISIBLE = [
    ("alone", "/sweep --scope full\n", 1),
    ("after-prose-in-one-paragraph", "Thanks!\n/sweep --scope full\n", 2),
    ("after-an-html-block", "<details><summary>x</summary>\n\nhi\n</details>\n\n/sweep --scope full\n", 6),
    ("after-a-hidden-definition", "[//]: # (note)\n/sweep --scope full\n", 2),
]


@pytest.mark.parametrize("body, line", [case[1:] for case in VISIBLE], ids=[case[0] for case in VISIBLE])
def test_a_command_a_reader_sees_is_read_with_its_line(body, line):
    from bot.core.commands import parse_comment

    [command] = parse_comment(body).commands
    assert command.normalized() == "/sweep --scope full" and command.line == line


def test_a_hidden_command_in_a_real_comment_starts_nothing(h):
    h.on_comment(7, "alice", HIDDEN[3][1])
    assert h.dispatches() == [] and h.bot_comments(7) == []


# -- text from a result file is inert in the report ---------------------------------------------

MENTION = re.compile(r"(?<![\w`])@[A-Za-z0-9][A-Za-z0-9-]*(?:/[A-Za-z0-9_.-]+)?")
REFERENCE = re.compile(r"(?<![\w&])#\d+(?!\w)")


def _rendered(tmp_path, **results):
    from bot.report import build, collect, compare, render
    from tests import synthetic
    from bot.report.model import Meta

    job = synthetic.sweep_plan("tiny-cpu", concurrencies=(1, 2))
    scenario = synthetic.Scenario("hostile", [job], [synthetic.run_sweep(job, **results)])
    paths = synthetic.materialize(scenario, tmp_path)
    collection = collect.collect(paths["results"], collect.load_plan(paths["plan"]), synthetic.HEAD_SHA)
    meta = Meta(sha=synthetic.HEAD_SHA, pr=7, command="/sweep", run_url=synthetic.RUN_URL)
    report = build.build_report(collection, compare.load_baseline(paths["baseline"]),
                                compare.thresholds_from(None), meta)
    return render.render_comment(report).text


@pytest.mark.parametrize("reason", [
    "OOM; cc @org/team and @octocat, see #123",
    "`@org/team` closes #9",
], ids=["mention-and-reference", "pre-quoted"])
def test_a_result_reason_cannot_mention_a_team_or_link_an_issue(tmp_path, reason):
    text = _rendered(tmp_path, failed_points={"tp1-c1": reason})
    assert "org/team" in text  # still shown, in both languages
    assert MENTION.findall(text) == []
    assert REFERENCE.findall(text.replace("PR #7", "")) == []


# -- runner labels and images only from the default branch ----------------------------------------

@pytest.fixture
def planned_repo(tmp_path):
    """The shipped recipes and config on `main`, and a PR branch that tests change."""
    from git_helpers import git

    root = tmp_path / "repo"
    shutil.copytree(ROOT / "recipes", root / "recipes")
    (root / ".github").mkdir()
    shutil.copy(ROOT / ".github" / "recipe-bot.yaml", root / ".github" / "recipe-bot.yaml")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    git(root, "checkout", "-q", "-b", "pr")
    return root


def _pr_commit(root, files):
    from git_helpers import git

    for path, text in files.items():
        (root / path).write_text(text)
    git(root, "commit", "-q", "-am", "pr")
    return git(root, "rev-parse", "HEAD")


def _plan(root, head, *extra):
    from click.testing import CliRunner

    from bot.cli import main

    return CliRunner().invoke(main, ["plan", "--repo", str(root), "--base", "main", "--head", head,
                                     "--recipe", "tiny-cpu", "--format", "json", *extra])


def test_a_pr_that_adds_its_own_runner_label_gets_a_failed_plan_naming_it(planned_repo):
    runners = (planned_repo / "recipes/_runners.yaml").read_text()
    head = _pr_commit(planned_repo, {
        "recipes/_runners.yaml": runners.replace("runners:\n", "runners:\n  release-signer:\n    gpus: 0\n", 1),
        "recipes/_base/tiny-cpu.yaml": (planned_repo / "recipes/_base/tiny-cpu.yaml").read_text()
        .replace("runner: cpu", "runner: release-signer"),
    })
    assert _plan(planned_repo, head).exit_code == 0  # the PR's own table alone would let it through
    result = _plan(planned_repo, head, "--allowed-from", "main")
    assert result.exit_code != 0
    [error] = json.loads(result.stdout.split("\nError")[0])["errors"]
    message = from_data(error["message"])  # kept as its catalogue id and parameters, read back by `ci plan-failed`
    assert "'release-signer'" in str(message) and "default branch" not in error["accepted"]
    assert "runner 标签" in message.render("zh") and "cpu" in error["accepted"]


@pytest.mark.parametrize("image, allowed", [
    ("evil/miner:latest", False),
    ("vllm/vllm-openai:v0.26.0", True),  # listed in pr_jobs.images on main
], ids=["unlisted-image", "listed-image"])
def test_a_container_image_must_be_listed_on_the_default_branch(planned_repo, image, allowed):
    base = (planned_repo / "recipes/_base/tiny-cpu.yaml").read_text()
    head = _pr_commit(planned_repo, {"recipes/_base/tiny-cpu.yaml": base.replace(
        'version: "0.32.0"', f'version: "0.32.0"\n  image: {image}', 1)})
    result = _plan(planned_repo, head, "--allowed-from", "main")
    assert (result.exit_code == 0) is allowed, result.output
    if not allowed:
        assert image in result.output and "pr_jobs.images" in result.output


def test_the_gpu_workflow_plans_with_the_default_branch_allowlist():
    workflow = (ROOT / ".github/workflows/gpu.yml").read_text()
    assert '--allowed-from "origin/$DEFAULT_BRANCH"' in workflow


# -- what one approval allows (pr_jobs in the default branch's config) ----------------------------

LIMITED = "bot_login: recipe-bot[bot]\ncooldown_seconds: 0\npr_jobs:\n  scopes: [lowest]\n  runs_per_approval: 1\n"


def test_one_approval_allows_the_configured_scope_and_number_of_runs(sandbox, tmp_path):
    from handle_helpers import Harness, seed

    h = Harness(sandbox(seed(tmp_path, config=LIMITED)), tmp_path)
    h.on_comment(8, "alice", f"/ok-to-test {h.head(8)}")
    h.on_comment(8, "bob", "/sweep --scope full")
    assert h.dispatches() == []
    english, chinese = bilingual(h.bot_comments(8)[-1]["body"])
    assert "`--scope lowest`, not `--scope full`" in english and "pr_jobs" in chinese
    h.on_comment(8, "bob", "/sweep --scope lowest")
    assert len(h.dispatches()) == 1
    h.on_comment(8, "bob", "/sweep --scope lowest")
    assert len(h.dispatches()) == 1
    english, _ = bilingual(h.bot_comments(8)[-1]["body"])
    assert "already been used for 1 run" in english
    h.on_comment(8, "alice", "/sweep --scope full")  # a maintainer is not bound by the author's limits
    assert len(h.dispatches()) == 2


# -- the runner and what the workflows install ----------------------------------------------------

SELF_HOSTED = {"GITHUB_ACTIONS": "true", "RUNNER_ENVIRONMENT": "self-hosted", "RUNNER_NAME": "gpu-07"}


@pytest.mark.parametrize("env, allow, refused", [
    (SELF_HOSTED, False, True),                                          # a persistent GPU box
    ({**SELF_HOSTED, "RECIPE_BOT_RUNNER_EPHEMERAL": "1"}, False, False),  # marked ephemeral
    ({**SELF_HOSTED, "RECIPE_BOT_RUNNER_EPHEMERAL": "yes"}, False, True),  # only "1" marks it
    (SELF_HOSTED, True, False),                                          # the config allows it
    ({**SELF_HOSTED, "RUNNER_ENVIRONMENT": "github-hosted"}, False, False),
    ({}, False, False),                                                  # not in Actions: by hand
], ids=["persistent", "ephemeral", "ephemeral-misspelt", "allowed-by-config", "github-hosted", "outside-actions"])
def test_pr_code_runs_only_on_an_ephemeral_self_hosted_runner(env, allow, refused):
    from bot.core.settings import load_settings
    from bot.runner.hygiene import runner_refusal

    reason = runner_refusal(env, load_settings(env), allow_persistent=allow)
    assert (reason is not None) is refused
    if refused:
        assert "gpu-07" in str(reason) and "ephemeral" in str(reason) and "一次性" in reason.render("zh")


def test_recipe_bot_run_refuses_a_persistent_runner_before_it_starts_anything(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from tests import synthetic
    from bot.runner.cli import run_cmd

    job = synthetic.sweep_plan("tiny-cpu", concurrencies=(1,))
    job_file = tmp_path / "job.json"
    job_file.write_text(job.model_dump_json())
    for key, value in SELF_HOSTED.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("RECIPE_BOT_RUNNER_EPHEMERAL", raising=False)
    result = CliRunner().invoke(run_cmd, ["--job", str(job_file), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "must be ephemeral" in result.output
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("text, allowed", [
    ("pr_jobs:\n  allow_persistent_runners: true\n", True),
    ("pr_jobs:\n  allow_persistent_runners: false\n", False),
    ("cooldown_seconds: 0\n", False),
    (None, False),  # no config file on the default branch
], ids=["allowed", "refused", "not-set", "no-file"])
def test_only_the_default_branch_config_allows_persistent_runners(tmp_path, text, allowed):
    from bot.runner.hygiene import allows_persistent

    path = tmp_path / "recipe-bot.yaml"
    if text is not None:
        path.write_text(text)
    assert allows_persistent(path) is allowed


LOCK = ROOT / "requirements" / "workflows.txt"


def _pins() -> dict[str, list[tuple[str, str]]]:
    """name → [(version, marker)] of the lock file; every requirement must carry its hashes."""
    pins: dict[str, list[tuple[str, str]]] = {}
    text = LOCK.read_text(encoding="utf-8").replace("\\\n", " ")
    for line in text.splitlines():
        if not line or line.startswith(("#", " ")):
            continue
        requirement, _, marker = line.partition(";")
        name, _, version = requirement.strip().partition("==")
        assert version and "--hash=sha256:" in line, f"{LOCK.name}: {name} is not pinned with hashes"
        pins.setdefault(name.lower().replace("_", "-"), []).append((version.split()[0], marker.split("--")[0].strip()))
    return pins


def test_the_lock_file_pins_every_dependency_within_pyproject_ranges():
    import tomllib

    from packaging.requirements import Requirement

    pins = _pins()
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    build = [line for line in (ROOT / "requirements" / "build.in").read_text().splitlines()
             if line and not line.startswith("#")]
    for spec in [*project["dependencies"], *build]:
        requirement = Requirement(spec)
        name = requirement.name.lower().replace("_", "-")
        assert name in pins, f"{name} is missing from {LOCK.name}: regenerate it (command in its header)"
        for version, _ in pins[name]:
            assert requirement.specifier.contains(version), f"{name}=={version} is outside {spec}"


def test_every_workflow_install_is_hash_checked():
    import re as _re

    for workflow in sorted((ROOT / ".github" / "workflows").glob("*.yml")):
        installs = _re.findall(r"pip\" install [^\n]*", workflow.read_text(encoding="utf-8"))
        assert installs, workflow.name
        for line in installs:
            assert ("--require-hashes" in line and "requirements/workflows.txt" in line) or "--no-deps" in line, \
                f"{workflow.name}: {line}"


def test_zizmor_as_an_auditor_finds_nothing_unjustified():
    """Each remaining finding is ignored in place, on its line, with the reason in the comment above."""
    import subprocess
    import sys

    zizmor = Path(sys.executable).with_name("zizmor")
    assert zizmor.exists(), "zizmor is missing: pip install -e '.[test]' installs it"
    result = subprocess.run([str(zizmor), "--persona", "auditor", "--offline", "--no-progress", "--format", "json",
                             str(ROOT / ".github" / "workflows")], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout) == []


@pytest.mark.parametrize("app, bot_login, own", [
    ("recipe-bot", "recipe-bot[bot]", True),
    ("github-actions", "recipe-bot[bot]", False),   # any workflow's GITHUB_TOKEN, same check name
    ("other-ci", "github-actions[bot]", False),
    (None, "recipe-bot[bot]", True),                # an API that does not say: kept, as before
], ids=["own-app", "github-actions-impostor", "other-app", "app-unknown"])
def test_only_the_bots_own_app_check_run_is_completed(app, bot_login, own):
    from bot.core.github import CheckRun
    from bot.core.markers import own_check_runs

    run = CheckRun(1, "recipe-bot / benchmarks", "a" * 40, "in_progress", None, "", app=app)
    assert (own_check_runs([run], bot_login) == [run]) is own
