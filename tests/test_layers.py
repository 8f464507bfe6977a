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


@pytest.fixture()
def throwaway_tree(tmp_path: Path) -> Path:
    """The Python files of bot/ and of the sandbox, and the pyproject.toml, copied where a test may break them."""
    def not_python(directory: str, names: list[str]) -> list[str]:
        return [n for n in names if not n.endswith(".py") and not (Path(directory) / n).is_dir()
                or n == "__pycache__"]
    shutil.copytree(ROOT / "bot", tmp_path / "bot", ignore=not_python)
    shutil.copytree(ROOT / "sandbox" / "github_sandbox", tmp_path / "sandbox" / "github_sandbox", ignore=not_python)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


WRONG_ARROWS = [
    # (name, module that gains the import, the import, what the report names)
    ("runner imports the report", "bot/runner/budget.py", "import bot.report.model",
     "bot.runner.budget -> bot.report.model"),
    ("a contract imports the control plane", "bot/core/jobs.py", "import bot.control.handle",
     "bot.core.jobs -> bot.control.handle"),
    ("plan imports dispatch", "bot/plan/touched.py", "import bot.control.dispatch",
     "bot.plan.touched -> bot.control.dispatch"),
    ("the sandbox imports the bot", "sandbox/github_sandbox/seed.py", "import bot.core.config",
     "github_sandbox.seed -> bot.core.config"),
    ("a stage imports the sandbox", "bot/report/chart.py", "import github_sandbox.state",
     "bot.report.chart -> github_sandbox.state"),
    ("the demo imports the sandbox", "bot/demo/loop.py", "from github_sandbox.harness import make_seed",
     "bot.demo.loop -> github_sandbox.harness"),
    ("the bot imports the tests", "bot/core/results.py", "import tests.git_helpers",
     "bot.core.results -> tests"),
]


@pytest.mark.parametrize(("module", "line", "named"), [case[1:] for case in WRONG_ARROWS],
                         ids=[case[0] for case in WRONG_ARROWS])
def test_a_wrong_import_breaks_a_contract_and_is_named(throwaway_tree: Path, module: str, line: str,
                                                       named: str) -> None:
    before = lint_imports(throwaway_tree)
    assert before.returncode == 0, "the untouched copy should pass:\n" + before.stdout
    path = throwaway_tree / module
    path.write_text(path.read_text(encoding="utf-8") + f"\n{line}  # deliberately wrong\n", encoding="utf-8")
    after = lint_imports(throwaway_tree)
    assert after.returncode != 0, after.stdout
    assert "1 broken" in after.stdout
    assert named in after.stdout, after.stdout


def test_no_module_in_bot_or_the_sandbox_is_over_500_lines() -> None:
    modules = [*(ROOT / "bot").rglob("*.py"), *(ROOT / "sandbox" / "github_sandbox").rglob("*.py")]
    long = {str(p.relative_to(ROOT)): n for p in sorted(modules)
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 500}
    assert long == {}, f"split these modules (500 lines at most): {long}"

