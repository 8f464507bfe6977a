"""The afd-shaped fixture (recipes in `recipe/`) through the control plane: the configured recipe folder is
the one the comment checks and the touch detection read, `/reuse` ends on a harness or plugin change, and a
manual suite stays out of the required gate."""
import pytest

from afd_fixture import fixture_files, git, make_repo
from bot.plan import plan_change
from github_sandbox.harness import make_seed
from handle_helpers import BOT, CONFIG, PULLS, Harness, bilingual

CHECK = "recipe-bot / benchmarks"


def main_files() -> dict[str, str]:
    from handle_helpers import ROOT

    files = {k: v for k, v in fixture_files().items() if not k.startswith(".github/")}
    files[".github/recipe-bot.yaml"] = CONFIG + "recipes_dir: recipe\n"
    files[".github/workflows/gpu.yml"] = (ROOT / ".github/workflows/gpu.yml").read_text(encoding="utf-8")
    return files


@pytest.fixture
def world(sandbox, tmp_path):
    def make(feature: dict, main: dict | None = None) -> Harness:
        seed = make_seed(tmp_path / "sandbox", {**main_files(), **(main or {})}, feature,
                         {"pulls": PULLS, "issues": [{"number": 20, "author": "bob", "title": "A bug"}]})
        return Harness(sandbox(seed), tmp_path)
    return make


def checks(h: Harness, sha: str) -> list[dict]:
    return [c for c in h.sb.state()["check_runs"] if c["head_sha"] == sha and c["name"] == CHECK]


def test_a_sweep_name_is_checked_against_the_configured_recipe_folder(world):
    # A stray file in `recipes/` is no recipe where the config names `recipe/`: naming it is refused.
    h = world({"README.md": "# docs\n"}, {"recipes/fixture-stale.yaml": "name: fixture-stale\n"})
    h.on_comment(7, "alice", "/sweep fixture-stale")
    assert h.dispatches() == []
    english, chinese = bilingual(h.bot_comments(7)[-1]["body"])
    assert "`fixture-stale`" in english and "`fixture-e2e`" in english and "未执行" in chinese
    h.on_comment(7, "alice", "/sweep fixture-e2e")
    [run] = h.dispatches()
    assert run["inputs"]["command"] == "/sweep fixture-e2e"


def test_a_removed_recipe_in_the_configured_folder_is_noted(tmp_path):
    repo = make_repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    (repo / "recipe/fixture-manual.yaml").unlink()
    git(repo, "commit", "-qam", "remove the manual suite")
    plan = plan_change(repo, base, git(repo, "rev-parse", "HEAD"))
    assert "recipe recipe/fixture-manual.yaml was removed; nothing to run for it" in map(str, plan.notes)


# -- /reuse ends on a change to what ran ---------------------------------------------------------------------

HARNESS = "tests/e2e/runner.py"
PLUGIN = "fixture_plugin/__init__.py"


def passing_e2e_run(h: Harness, sha: str) -> int:
    """A passing `/e2e` run of the bot that measured sha, and the merge gate its report posted there."""
    run = h.sb.add_run("gpu.yml", inputs={"pr": "7", "sha": sha, "command": "/e2e", "requester": "carol",
                                          "comment_id": "1"}, conclusion="success")
    h.sb.request("POST", "/repos/acme/bench/check-runs", {
        "name": CHECK, "head_sha": sha, "status": "completed", "conclusion": "success",
        "output": {"title": "gate", "summary": "gate"}}, user=BOT)
    return run["id"]


def push(h: Harness, files: dict) -> str:
    old = h.head(7)
    new = h.sb.push("feature", files, author="carol")["after"]
    h.handle("pull_request", "synchronize", pull=7, before=old, after=new, sender="carol")
    return new


def changed(path: str, note: str) -> dict[str, str]:
    return {path: fixture_files()[path] + f"\n# {note}\n"}


def fingerprint(tmp_path, *changes: dict[str, str]) -> str:
    """fixture-e2e's fingerprint over the fixture with these changes, as the reply abbreviates it."""
    from bot.inferencex.catalog import load_catalog

    repo = tmp_path / f"fingerprint-{len(list(tmp_path.glob('fingerprint-*')))}"
    for name, text in {k: v for c in (main_files(), *changes) for k, v in c.items()}.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text, encoding="utf-8")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "state")
    return load_catalog(repo, "HEAD").entries["fixture-e2e"].fingerprint[:16]


@pytest.mark.parametrize("path", [HARNESS, PLUGIN], ids=["harness", "plugin"])
def test_reuse_of_a_passing_suite_run_is_refused_after_a_push_changing_the_harness_or_plugin(world, tmp_path,
                                                                                             path):
    first = changed(HARNESS, "the PR's change to the harness")
    h = world(first)
    measured_sha = h.head(7)
    run_id = passing_e2e_run(h, measured_sha)
    second = changed(path, "changed after the run") if path != HARNESS else \
        changed(HARNESS, "the PR's change to the harness, changed again")
    head = push(h, second)
    h.on_comment(7, "alice", f"/reuse {run_id}")
    english, chinese = bilingual(h.bot_comments(7)[-1]["body"])
    assert "was not applied" in english and measured_sha in english
    row = f"| `fixture-e2e` | `{fingerprint(tmp_path, first, second)}` | `{fingerprint(tmp_path, first)}` |"
    assert row in english and row in chinese  # the changed fingerprint, at the head and at the measured commit
    assert "未生效" in chinese and "配方指纹不同" in chinese
    [check] = checks(h, head)
    assert check["status"] == "in_progress" and "reused run" not in check["title"]


def test_reuse_of_a_passing_suite_run_is_kept_after_a_push_changing_an_unrelated_file(world):
    h = world(changed(HARNESS, "the PR's change to the harness"))
    measured_sha = h.head(7)
    run_id = passing_e2e_run(h, measured_sha)
    head = push(h, {"README.md": "# only the docs changed\n"})
    h.on_comment(7, "alice", f"/reuse {run_id}")
    english, _ = bilingual(h.bot_comments(7)[-1]["body"])
    assert f"reuses run [{run_id}]" in english and "`fixture-e2e`" in english
    [check] = checks(h, head)
    assert (check["status"], check["conclusion"]) == ("completed", "success")
