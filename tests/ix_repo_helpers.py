"""The ix-repo fixture (our own InferenceX-shaped repository) as a git repository in a temporary folder."""
from __future__ import annotations

import shutil
from pathlib import Path

from bot.inferencex.changelog import default_rows
from bot.inferencex.own_tools import ToolInputs
from bot.inferencex.repo import load_inferencex
from bot.recipes.sources import DirSource
from git_helpers import git

FIXTURE = Path(__file__).parent / "fixtures" / "ix-repo"
FAKE_VLLM = Path(__file__).parent / "fake_servers" / "fake_vllm.py"
AGENTIC = "tinyq-fp4-cpu-sglang-agentic-mtp"


def commit(repo: Path) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", "change")
    return git(repo, "rev-parse", "HEAD")


def make_repo(tmp_path: Path) -> tuple[Path, str]:
    """A copy of the fixture committed once; returns the folder and the base commit."""
    repo = tmp_path / "ix-repo"
    shutil.copytree(FIXTURE, repo)
    git(repo, "init", "-q", "-b", "main")
    return repo, commit(repo)


def edit(repo: Path, path: str, old: str, new: str) -> None:
    """Replace the first `old` in a file of the repository; a test whose text is not there fails here."""
    target = repo / path
    text = target.read_text()
    assert old in text, f"{old!r} is not in {path}"
    target.write_text(text.replace(old, new, 1))


def append_entry(repo: Path, keys: list[str], extra: str = "") -> str:
    entry = "\n- config-keys:\n" + "".join(f"    - {k}\n" for k in keys)
    entry += '  description:\n    - "test"\n  pr-link: https://github.com/example/ix-repo/pull/2420\n' + extra
    with open(repo / "perf-changelog.yaml", "a") as handle:
        handle.write(entry)
    return commit(repo)


TWO_NODE_FIXTURE = Path(__file__).parent / "fixtures" / "ix-repo-2n"
TWO_NODE_KEY = "tinyq-bf16-cpu2n-dynamo-vllm"
TWO_NODE_LABEL = "cluster:cpu2n"


def add_two_node_fleet(repo: Path, partition: str) -> str:
    """The fixture's two-node Slurm fleet (tests/fixtures/ix-repo-2n: its multi-node launcher, job script and
    config) added to a copy made by make_repo, with its runner label; returns the new commit."""
    import yaml

    shutil.copytree(TWO_NODE_FIXTURE, repo, dirs_exist_ok=True)
    runners = repo / "configs" / "runners.yaml"
    table = yaml.safe_load(runners.read_text())
    table["labels"][TWO_NODE_LABEL] = ["cpu2n-slurm_0"]
    runners.write_text(yaml.safe_dump(table, sort_keys=False))
    ours = repo / "recipes" / "_runners.yaml"
    table = yaml.safe_load(ours.read_text())
    table["runners"][TWO_NODE_LABEL] = {"gpus": 0, "description": "two Slurm nodes; the launcher allocates both",
                                        "slurm": {"partition": partition, "time_limit": "00:30:00"}}
    ours.write_text(yaml.safe_dump(table, sort_keys=False))
    return commit(repo)


def tool_inputs(root: Path) -> ToolInputs:
    """A folder planned on its own (no base): its tools (utils/, the fixture's own scripts) on its data."""
    source = DirSource(root)
    return ToolInputs(tools=source, head=source, base=None, repo=load_inferencex(source))


def tool_rows(root: Path, keys: list[str], mode: str = "no-evals", **flags) -> list[dict]:
    """The rows the folder's own tools give for these configs as one plain entry: its throughput rows
    (`no-evals`) or its eval rows (`evals-only`)."""
    rows = default_rows(tool_inputs(root), keys, **flags)
    return [row for _, row in (rows.evals if mode == "evals-only" else rows.throughput)]


def tool_files() -> dict[str, str]:
    """The fixture tools as repository files (path → text), for a repository written file by file."""
    root = FIXTURE.parent / "ix-tools"
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*.py"))}
