"""InferenceX's own tools run as they are: the base's utils/ on the head's data, sandboxed, their output untrusted."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from bot.inferencex.changelog import appended_entries, changelog_rows
from bot.inferencex.own_tools import PROCESSOR, ToolInputs
from bot.inferencex.repo import load_inferencex
from bot.plan import PlanFilters, plan_change
from bot.recipes.errors import RecipeError
from bot.recipes.sources import GitSource
from ix_repo_helpers import append_entry, commit, make_repo

VLLM = "tinyq-bf16-cpu-vllm"
ROW = ('{"image": "example/tinyq-engine:1.0", "model": "example/tinyq", "model-prefix": "tinyq", "precision": "bf16", '
       '"framework": "vllm", "runner": RUNNER, "isl": 1024, "osl": 1024, "tp": 1, "conc": 1, "exp-name": "tinyq_1k1k"}')


def processor(body: str) -> str:
    return f"import json, os, sys, time\n{body}\n"


# (name, the base's utils/process_changelog.py, words the one error must have)
BROKEN = [
    ("missing-at-the-base", None, "it is missing at that revision"),
    ("exits-non-zero", processor("print('ValueError: no such thing', file=sys.stderr)\nsys.exit(3)"),
     "it exited with status 3: ValueError: no such thing"),
    ("malformed-json", processor("print('{\"single_node\": [')"), "output that is not its matrix: not JSON"),
    ("not-an-object", processor("print('[1, 2]')"), "not a JSON object"),
    ("row-without-its-fields", processor("print(json.dumps({'single_node': {'1k1k': [{'conc': 1}]}}))"),
     "a row whose image is not text"),
    ("runner-label-not-allowed", processor(
        "print(json.dumps({'single_node': {'1k1k': [json.loads('''" + ROW.replace("RUNNER", '"gpu-of-my-own"')
        + "''')]}}))"), "names runner 'gpu-of-my-own', not its config's 'cpu'"),
]


def with_processor(repo: Path, text: str | None) -> str:
    path = repo / PROCESSOR
    if text is None:
        path.unlink()
    else:
        path.write_text(text)
    return commit(repo)


@pytest.mark.parametrize("text, words", [c[1:] for c in BROKEN], ids=[c[0] for c in BROKEN])
def test_a_base_tool_that_fails_is_one_error_naming_the_tool_and_what_failed(tmp_path, text, words):
    repo, _ = make_repo(tmp_path)
    base = with_processor(repo, text)
    with pytest.raises(RecipeError) as caught:
        plan_change(repo, base, append_entry(repo, [VLLM]), PlanFilters(canary=False))
    (problem,) = caught.value.problems
    assert problem.file == PROCESSOR and "InferenceX's own utils/process_changelog.py" in str(problem)
    assert words in str(problem), str(problem)


def test_a_tool_that_hangs_is_stopped_at_its_limit(tmp_path):
    repo, _ = make_repo(tmp_path)
    base = with_processor(repo, processor("import subprocess\nsubprocess.Popen(['sleep', '300'])\ntime.sleep(300)"))
    head = append_entry(repo, [VLLM])
    source = GitSource(repo, head)
    ix = load_inferencex(source)
    entries = appended_entries(ix, GitSource(repo, base).read(ix.changelog_path), source.read(ix.changelog_path))
    inputs = ToolInputs(tools=GitSource(repo, base), head=source, base=GitSource(repo, base), repo=ix)
    with pytest.raises(RecipeError) as caught:
        changelog_rows(inputs, entries, timeout_s=1)
    assert "it ran past its 1 s limit and was stopped" in str(caught.value)


def test_the_tool_sees_no_token_and_no_recipe_bot_setting(tmp_path, monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_secret")
    monkeypatch.setenv("RECIPE_BOT_WEBHOOK_SECRET", "hush")
    repo, _ = make_repo(tmp_path)
    base = with_processor(repo, processor("print(' '.join(sorted(os.environ)), file=sys.stderr)\nsys.exit(1)"))
    with pytest.raises(RecipeError) as caught:
        plan_change(repo, base, append_entry(repo, [VLLM]), PlanFilters(canary=False))
    seen = str(caught.value)
    assert "PATH" in seen and "HOME" in seen
    assert "GITHUB_TOKEN" not in seen and "RECIPE_BOT" not in seen and "ghs_secret" not in seen


def test_the_heads_own_tools_are_never_run(tmp_path):
    repo, base = make_repo(tmp_path)
    (repo / PROCESSOR).write_text(processor("open('/tmp/recipe-bot-ran-pr-code', 'w').write('x')\nsys.exit(9)"))
    plan = plan_change(repo, base, append_entry(repo, [VLLM]), PlanFilters(canary=False))
    assert plan.inferencex.rows and not Path("/tmp/recipe-bot-ran-pr-code").exists()


def test_the_tools_output_is_kept_as_printed_and_each_row_names_its_config(tmp_path):
    repo, base = make_repo(tmp_path)
    plan = plan_change(repo, base, append_entry(repo, [VLLM, "tinyq-bf16-cpu-sglang"]), PlanFilters(canary=False))
    frameworks = {r["framework"] for rows in plan.inferencex.rows.values() for r in rows}
    assert frameworks == {"vllm", "sglang"}
    by_recipe = {r.recipe: r.runner_label for r in plan.recipes}
    assert set(by_recipe) == {VLLM, "tinyq-bf16-cpu-sglang"}


def test_the_tools_import_path_names_only_where_their_imports_come_from(tmp_path):
    # Not this process's whole path (it may hold the pull request's checkout), and without -E, so that a
    # runner whose packages come through PYTHONPATH (the workflow rehearsal) still gives the tools PyYAML.
    from bot.inferencex import own_tools

    env = own_tools._environment(tmp_path)
    folders = env["PYTHONPATH"].split(os.pathsep)
    assert folders and all(any((Path(f) / name).exists() or (Path(f) / f"{name}.py").exists()
                               for name in own_tools.TOOL_IMPORTS) for f in folders)
    assert str(Path.cwd()) not in folders and str(Path(own_tools.__file__).parents[2]) not in folders
    assert " -E " not in (tmp_path / "bin" / "python3").read_text()
