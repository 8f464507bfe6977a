"""perf-changelog.yaml read as git's diff adds it: entries inserted anywhere, edits refused in InferenceX's words.

Every changelog here is our own text; the expected added lines are those `git diff` prints with `+`
for the same two versions (what InferenceX's process_changelog.py reads).
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from bot.inferencex.changelog import appended_entries, appended_text
from bot.inferencex.repo import load_inferencex
from bot.recipes.errors import RecipeError
from bot.recipes.sources import DirSource
from git_helpers import GIT_ENV

FIXTURE = Path(__file__).parent / "fixtures" / "inferencex"
PATH = "perf-changelog.yaml"


def entry(key: str, words: str = "Bump the image", pr: int = 300) -> str:
    return (f"- config-keys:\n    - {key}\n  description:\n    - \"{words}\"\n"
            f"  pr-link: https://github.com/example-org/inferencex-fixture/pull/{pr}\n")


OLD = entry("llama5-fp8-h100-sglang", pr=1) + "\n" + entry("llama5-fp8-h100-trt", pr=2) + "\n" + \
    entry("llama5-fp8-h100-sglang-mtp", pr=3)


def git_added(tmp_path: Path, old: str, new: str) -> list[str]:
    """The `+` lines of `git diff` between two versions of the file (git's own alignment)."""
    (tmp_path / "a").write_text(old)
    (tmp_path / "b").write_text(new)
    done = subprocess.run(["git", "diff", "--no-index", "a", "b"], cwd=tmp_path, env=GIT_ENV,
                          capture_output=True, text=True)
    return [ln[1:] for ln in done.stdout.splitlines() if ln.startswith("+") and not ln.startswith("+++")]


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    root = tmp_path_factory.mktemp("ix")
    shutil.copytree(FIXTURE, root, dirs_exist_ok=True)
    return load_inferencex(DirSource(root))


@pytest.mark.parametrize("position", ["top", "between-entries", "before-last"])
def test_an_entry_inserted_mid_file_is_read_as_git_adds_it(tmp_path, repo, position):
    blocks = OLD.split("\n\n")
    added = entry("llama5-fp8-h100-sglang-agentic-mtp", "Add the agentic arm", pr=400)
    at = {"top": 0, "between-entries": 1, "before-last": 2}[position]
    new = "\n\n".join([*blocks[:at], added.rstrip("\n"), *blocks[at:]])
    _, lines = appended_text(OLD.encode(), new.encode(), PATH)
    assert [new.splitlines()[n - 1] for n in lines] == git_added(tmp_path, OLD, new)
    entries = appended_entries(repo, OLD.encode(), new.encode())
    assert [e.keys for e in entries] == [["llama5-fp8-h100-sglang-agentic-mtp"]]
    assert new.splitlines()[entries[0].line - 1] == "- config-keys:"  # the entry's own first line


def test_two_entries_inserted_in_two_places_both_run(repo):
    blocks = OLD.split("\n\n")
    new = "\n\n".join([blocks[0], entry("llama5-fp8-h100-dynamo-trt", pr=5).rstrip("\n"), blocks[1],
                       entry("llama5-fp8-h100-sglang-agentic-mtp", pr=6).rstrip("\n"), blocks[2]])
    entries = appended_entries(repo, OLD.encode(), new.encode())
    assert [e.keys for e in entries] == [["llama5-fp8-h100-dynamo-trt"], ["llama5-fp8-h100-sglang-agentic-mtp"]]


def test_a_reordered_changelog_is_refused_in_inferencex_words():
    blocks = OLD.split("\n\n")
    new = "\n\n".join([blocks[1].rstrip("\n"), blocks[0].rstrip("\n"), blocks[2]])
    with pytest.raises(RecipeError) as caught:
        appended_text(OLD.encode(), new.encode(), PATH)
    (problem,) = caught.value.problems
    assert str(problem.message).startswith("Deletions are not allowed in perf-changelog.yaml. Only additions to the "
                                      "changelog are permitted. Found deleted line: ")
    assert problem.line is not None and problem.file == PATH


def test_an_edited_entry_names_the_line_it_changed():
    new = OLD.replace("pull/2\n", "pull/22\n")
    with pytest.raises(RecipeError) as caught:
        appended_text(OLD.encode(), new.encode(), PATH)
    (problem,) = caught.value.problems
    assert str(problem.message).endswith("Found deleted line:   pr-link: https://github.com/example-org/"
                                    "inferencex-fixture/pull/2")
    assert problem.line == OLD.splitlines().index("  pr-link: https://github.com/example-org/"
                                                  "inferencex-fixture/pull/2") + 1


def test_comments_and_anchors_inside_the_added_lines_are_yaml(tmp_path, repo):
    old = "# perf changelog: append only\n" + OLD
    added = ("# a comment above the entry\n- config-keys: &keys\n    - llama5-fp8-h100-trt  # trailing comment\n"
             "  description:\n    - \"Re-run with the same keys\"\n"
             "  pr-link: https://github.com/example-org/inferencex-fixture/pull/7\n"
             "- config-keys: *keys\n  description:\n    - \"again\"\n"
             "  pr-link: https://github.com/example-org/inferencex-fixture/pull/8\n")
    new = old.replace("# perf changelog: append only\n", "# perf changelog: append only\n" + added)
    _, lines = appended_text(old.encode(), new.encode(), PATH)
    assert [new.splitlines()[n - 1] for n in lines] == git_added(tmp_path, old, new)
    entries = appended_entries(repo, old.encode(), new.encode())
    assert [e.keys for e in entries] == [["llama5-fp8-h100-trt"], ["llama5-fp8-h100-trt"]]


def test_an_alias_to_an_anchor_outside_the_added_lines_is_refused_as_yaml(repo):
    old = OLD.replace("- config-keys:\n    - llama5-fp8-h100-trt", "- config-keys: &trt\n    - llama5-fp8-h100-trt")
    new = old + "\n- config-keys: *trt\n  description:\n    - \"x\"\n  pr-link: https://github.com/e/i/pull/9\n"
    with pytest.raises(RecipeError) as caught:  # InferenceX parses only the added lines: the alias is unknown
        appended_entries(repo, old.encode(), new.encode())
    assert "YAML" in str(caught.value.problems[0]) and caught.value.problems[0].file == PATH


def test_a_duplicate_key_in_an_added_entry_is_read_as_inferencex_reads_it_with_a_warning(tmp_path):
    root = tmp_path / "ix"
    shutil.copytree(FIXTURE, root)
    repo = load_inferencex(DirSource(root))
    added = entry("llama5-fp8-h100-trt", pr=10).replace("  pr-link:", "  description:\n    - \"again\"\n  pr-link:")
    entries = appended_entries(repo, OLD.encode(), (OLD + "\n" + added).encode())
    assert [e.keys for e in entries] == [["llama5-fp8-h100-trt"]]
    assert entries[0].entry.description == ["again"]  # the last one wins, as PyYAML's safe_load
    (warning,) = repo.warnings
    assert (warning.file, warning.field) == (PATH, "description") and "first defined on line" in str(warning.message)


def test_a_duplicate_label_in_runners_yaml_is_a_warning_not_a_refusal(tmp_path):
    root = tmp_path / "ix"
    shutil.copytree(FIXTURE, root)
    runners = root / "configs" / "runners.yaml"
    runners.write_text(runners.read_text().replace("labels:\n", "labels:\n  h100:\n    - h100-lab_09\n", 1))
    repo = load_inferencex(DirSource(root))  # PyYAML keeps the last h100, as InferenceX's generator reads it
    (warning,) = [w for w in repo.warnings if w.file == "configs/runners.yaml"]
    assert warning.field == "h100" and warning.line == 6 and "first defined on line 4" in str(warning.message)
    assert "h100-lab_09" not in repo.labels["h100"]
