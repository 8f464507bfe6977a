"""The afd-shaped fixture (recipes in `recipe/`) through the control plane: the configured recipe folder is
the one the comment checks and the touch detection read, `/reuse` ends on a harness or plugin change, and a
manual suite stays out of the required gate."""
import pytest

from afd_fixture import fixture_files, git, make_repo
from bot.plan import plan_change
from bot.sandbox.harness import make_seed
from handle_helpers import CONFIG, PULLS, Harness, bilingual

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
    assert "recipe recipe/fixture-manual.yaml was removed; nothing to run for it" in plan.notes
