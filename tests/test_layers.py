"""The import layering in pyproject.toml holds for bot/ and the sandbox (sandbox/), and a wrong arrow makes `lint-imports` fail."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` on the tree at ROOT, with that tree's `bot` and `github_sandbox` first on the path and no cache."""
    if not LINT_IMPORTS.exists():
        pytest.fail(f"{LINT_IMPORTS} is missing: pip install -e '.[test]' installs import-linter")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), str(root / "sandbox")])}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", "--config", str(root / "pyproject.toml")],
                          cwd=root, env=env, capture_output=True, text=True, timeout=300)


def test_the_repository_keeps_every_import_contract() -> None:
    done = lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


def _copy_tree(to: Path) -> Path:
    """The Python files of bot/ and of the sandbox, and the pyproject.toml, copied where a test may break them."""
    def not_python(directory: str, names: list[str]) -> list[str]:
        return [n for n in names if not n.endswith(".py") and not (Path(directory) / n).is_dir()
                or n == "__pycache__"]
    shutil.copytree(ROOT / "bot", to / "bot", ignore=not_python)
    shutil.copytree(ROOT / "sandbox" / "github_sandbox", to / "sandbox" / "github_sandbox", ignore=not_python)
    shutil.copy(ROOT / "pyproject.toml", to / "pyproject.toml")
    return to


@pytest.fixture()
def throwaway_tree(tmp_path: Path) -> Path:
    return _copy_tree(tmp_path)


def test_an_untouched_copy_keeps_every_contract(tmp_path: Path) -> None:
    """What the wrong-import cases break is a copy that passes as it is."""
    done = lint_imports(_copy_tree(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr


WRONG_ARROWS = [
    # (name, module that gains the import, the import, what the report names)
    ("core imports the control plane", "bot/core/jobs.py", "import bot.control.handle",
     "bot.core.jobs -> bot.control.handle"),
    ("recipes import inferencex", "bot/recipes/loader.py", "import bot.inferencex.repo",
     "bot.recipes.loader -> bot.inferencex.repo"),
    ("plan imports the runner", "bot/plan/touched.py", "import bot.runner.budget",
     "bot.plan.touched -> bot.runner.budget"),
    ("runner imports the plan", "bot/runner/budget.py", "import bot.plan.touched",
     "bot.runner.budget -> bot.plan.touched"),
    ("report imports the control plane", "bot/report/chart.py", "import bot.control.dispatch",
     "bot.report.chart -> bot.control.dispatch"),
    ("checklist imports the report", "bot/checklist/render.py", "import bot.report.model",
     "bot.checklist.render -> bot.report.model"),
    ("the sandbox imports the bot", "sandbox/github_sandbox/seed.py", "import bot.core.config",
     "github_sandbox.seed -> bot.core.config"),
    ("a stage imports the sandbox", "bot/report/chart.py", "import github_sandbox.state",
     "bot.report.chart -> github_sandbox.state"),
    ("the bot imports the tests", "bot/core/results.py", "import tests.git_helpers",
     "bot.core.results -> tests"),
]


@pytest.mark.parametrize(("module", "line", "named"), [case[1:] for case in WRONG_ARROWS],
                         ids=[case[0] for case in WRONG_ARROWS])
def test_a_wrong_import_breaks_a_contract_and_is_named(throwaway_tree: Path, module: str, line: str,
                                                       named: str) -> None:
    path = throwaway_tree / module
    path.write_text(path.read_text(encoding="utf-8") + f"\n{line}  # deliberately wrong\n", encoding="utf-8")
    after = lint_imports(throwaway_tree)
    assert after.returncode != 0, after.stdout
    assert "1 broken" in after.stdout
    assert named in after.stdout, after.stdout


def _stages() -> list[str]:
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    [stages] = [c for c in contracts["contracts"] if c["id"] == "stages"]
    return stages["layers"]


def test_every_package_of_the_bot_has_a_layer_and_none_is_sliced() -> None:
    """One package per layer: a new package must be placed, and no layer names a module inside one."""
    named = {name.strip().strip("()") for layer in _stages() for name in layer.split("|")}
    assert all(name.count(".") == 1 for name in named), f"sublayers in the `stages` contract: {sorted(named)}"
    code = [p.parent for p in (ROOT / "bot").glob("*/__init__.py")
            if any(m.name != "__init__.py" for m in p.parent.glob("*.py"))]  # bot/data holds data only
    packages = {f"bot.{folder.name}" for folder in code} | {"bot.cli"}
    assert packages - named == set(), "add these to the `stages` layers in pyproject.toml"


def test_the_readme_states_the_layers_of_the_contract_in_their_order() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    sentence = readme[readme.index("Imports run downhill only"):]
    sentence = " ".join(sentence[:sentence.index(" (`engines`")].split())
    said = [layer.strip(" `") for layer in sentence.split("):", 1)[1].split("→")]
    written = [" | ".join(n.strip().strip("()").removeprefix("bot.") for n in layer.split("|")) for layer in _stages()]
    assert said == written


def test_no_module_in_bot_or_the_sandbox_is_over_500_lines() -> None:
    modules = [*(ROOT / "bot").rglob("*.py"), *(ROOT / "sandbox" / "github_sandbox").rglob("*.py")]
    long = {str(p.relative_to(ROOT)): n for p in sorted(modules)
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 500}
    assert long == {}, f"split these modules (500 lines at most): {long}"



def redefined_names(source: str) -> list[tuple[str, int, int]]:
    """Top-level functions and classes a module defines twice: (name, first line, second line).
    The second silently replaces the first (a merge can leave one behind, with the first's methods lost)."""
    import ast

    seen: dict[str, int] = {}
    twice = []
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name in seen:
                twice.append((node.name, seen[node.name], node.lineno))
            seen[node.name] = node.lineno
    return twice


def test_a_name_defined_twice_in_one_module_is_found() -> None:
    assert redefined_names("class A:\n    def f(self): ...\n\n\nclass A:\n    x = 1\n") == [("A", 1, 5)]
    assert redefined_names("def f(): ...\n\n\ndef g(): ...\n") == []


def test_no_module_in_bot_or_the_sandbox_defines_a_top_level_name_twice() -> None:
    modules = [*(ROOT / "bot").rglob("*.py"), *(ROOT / "sandbox" / "github_sandbox").rglob("*.py")]
    twice = {str(p.relative_to(ROOT)): found for p in sorted(modules)
             if (found := redefined_names(p.read_text(encoding="utf-8")))}
    assert twice == {}, f"one definition each: {twice}"
