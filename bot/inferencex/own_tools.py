"""InferenceX's own sweep tools, run as they are: the trusted base's utils/ on the head's configs and changelog.

recipe-bot does not restate InferenceX's generator. For an InferenceX repository the rows of a plan are
what `utils/process_changelog.py` prints, taken from the revision the plan is made against (the base of a
pull request, never its head: the control plane never runs PR code), applied to the head's data
(`configs/` and `perf-changelog.yaml`). It runs here:

- in a temporary git repository of two commits, the base's data then the head's, each with the base's
  tool files (so `git diff BASE HEAD -- perf-changelog.yaml` and append-only's base generation read what
  they read in InferenceX's workflow);
- as a subprocess of this Python (`-s`; `python3` on its PATH runs the same), which has what the
  tools import (PyYAML and pydantic, recipe-bot's own dependencies: PYTHONPATH names the folders this
  process imports them from, and nothing else of its path), in its own process group, with an
  environment of a PATH, a HOME in the sandbox and a locale: no GITHUB_TOKEN, no RECIPE_BOT_* secret,
  nothing it needs from the network; stopped after `timeout_s`, its output capped;
- its output read as untrusted data: a JSON object of InferenceX's buckets, each row a mapping whose
  fields recipe-bot reads have their types, and whose runner is the runner of the config it came from.

Which config key a row comes from is asked of InferenceX's generator as well (`tool_driver.py` runs its
`test-config` once per key); anything that fails is one RecipeError naming the tool and what failed.
"""
from __future__ import annotations

import ast
import importlib.util
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from bot.core.messages import Message, msg
from bot.inferencex.repo import InferenceXRepo
from bot.recipes.errors import RecipeError
from bot.recipes.sources import Source

PROCESSOR = "utils/process_changelog.py"
GENERATOR = "utils/matrix_logic/generate_sweep_configs.py"
TOOL_DIRS = ("utils", "utils/matrix_logic")  # the processor, its constants and the generator, as InferenceX lays them out
TIMEOUT_S = 120.0
MAX_OUTPUT_BYTES = 64 * 1024 * 1024  # a file the tool writes past this is cut off (RLIMIT_FSIZE)
MAX_ROWS = 20_000
THROUGHPUT = ("single_node", "multi_node")
EVALS = ("evals", "agentic_evals", "multinode_evals", "multinode_agentic_evals")
_DRIVER = Path(__file__).with_name("tool_driver.py")
# fields a row's identity is read from when its full server configuration names no config (not its runner,
# which is then checked against the config's)
_IDENTITY = ("image", "model", "model-prefix", "precision", "framework")
_POINT_ONLY = frozenset({"conc", "exp-name", "run-eval", "eval-only", "eval-conc", "eval-all-concs",
                         "recipe-fingerprint"})
_WORKER_DEFAULTS = {"pp": 1, "dcp-size": 1, "pcp-size": 1, "additional-settings": []}


@dataclass(frozen=True)
class ToolInputs:
    """What one run reads: the trusted revision's tools, the head's data and the base's data."""

    tools: Source  # the base (or, without a base, the revision planned): utils/
    head: Source
    base: Source | None  # the data the head's changelog is compared with; None: an empty changelog
    repo: InferenceXRepo  # the head's configs as recipe-bot parsed them (which runner each config names)


@dataclass(frozen=True)
class ToolRows:
    throughput: list[tuple[str, dict]]
    evals: list[tuple[str, dict]]


def tool_error(tool: str, rev: str, why: Message) -> RecipeError:
    return RecipeError.single(tool, None, None, msg(
        "InferenceX's own %(tool)s (from %(rev)s, the revision the plan is made against) failed: %(why)s",
        tool=tool, rev=rev, why=why))


def _shown(text: str, limit: int = 300) -> str:
    """The last lines of what the tool printed, as plain text that cannot mention or format anything."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and "errors.pydantic.dev" not in ln]
    tail = " ".join(lines[-2:])
    clean = "".join(ch if ch.isprintable() else " " for ch in tail).replace("`", "'").replace("@", "@\u200b")
    return clean[-limit:] if clean else "-"


def tool_paths(source: Source) -> list[str]:
    """The `.py` files directly in InferenceX's tool folders at `source` (what the sandbox is given)."""
    return [p for d in TOOL_DIRS for p in source.list(d) if p.endswith(".py") and p.rsplit("/", 1)[0] == d]


def _imported(raw: bytes, here: str, files: set[str]) -> set[str]:
    """The tool files one file imports by name (read with `ast`, never run); a file that does not parse
    imports nothing it can be credited with, and is itself in the planner when imported."""
    try:
        tree = ast.parse(raw)
    except (SyntaxError, ValueError):
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    # the importing script's own folder is first on its sys.path; utils/ is where the processor runs from
    candidates = {f"{folder}/{name.replace('.', '/')}.py" for name in names for folder in (here, TOOL_DIRS[0])}
    return candidates & files


def planner_files(source: Source) -> set[str]:
    """InferenceX's planner at `source`: the processor, the generator and the tool files they import,
    directly or through one another (the tests, plots and power tools beside them are not in it)."""
    files = set(tool_paths(source))
    texts = source.read_many(sorted(files))
    seen: set[str] = set()
    todo = [p for p in (PROCESSOR, GENERATOR) if p in files]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        todo.extend(_imported(texts.get(path) or b"", path.rsplit("/", 1)[0], files) - seen)
    return seen


def changed_tool_files(base: Source, head: Source) -> list[str]:
    """The planner files a change adds, removes or edits (sorted): where a plan made with the base's tools
    would not plan what the head's own tools plan."""
    paths = sorted(planner_files(base) | planner_files(head))
    before, after = base.read_many(paths), head.read_many(paths)
    return [p for p in paths if before.get(p) != after.get(p)]


def _tool_files(inputs: ToolInputs) -> dict[str, bytes]:
    wanted = tool_paths(inputs.tools)
    files = {p: raw for p, raw in inputs.tools.read_many(wanted).items() if raw is not None}
    for tool in (PROCESSOR, GENERATOR):
        if tool not in files:
            raise tool_error(tool, inputs.tools.label, msg("it is missing at that revision; recipe-bot plans an "
                                                           "InferenceX repository with the repository's own tools"))
    return files


def _data_files(source: Source | None, repo: InferenceXRepo) -> dict[str, bytes]:
    if source is None:
        return {}
    paths = [p for p in source.list(repo.config_dir) if p.rsplit("/", 1)[0] == repo.config_dir]
    paths.append(repo.changelog_path)
    return {p: raw for p, raw in source.read_many(paths).items() if raw is not None}


def _write(root: Path, files: dict[str, bytes]) -> None:
    for path, raw in files.items():
        target = root / path
        if ".." in Path(path).parts or target.is_symlink():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(raw)


# What InferenceX's utils/ import. The tool's PYTHONPATH names only the folders these come from in this
# process (a venv's site-packages, or the folder a PYTHONPATH of the runner names, as in the workflow
# rehearsal), never the rest of this process's path, which may hold a checkout of the pull request.
TOOL_IMPORTS = ("yaml", "pydantic", "pydantic_core", "typing_extensions", "annotated_types", "typing_inspection")


def _import_path() -> str:
    folders: list[str] = []
    for name in TOOL_IMPORTS:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.origin or not spec.has_location:
            continue
        origin = Path(spec.origin)
        folder = str(origin.parent.parent if spec.submodule_search_locations is not None else origin.parent)
        if folder not in folders:
            folders.append(folder)
    return os.pathsep.join(folders)


def _environment(sandbox: Path) -> dict[str, str]:
    """Only what the tools need: PATH (`python3` is this Python, `git` the system's), the folders of
    what they import, HOME, a locale."""
    bin_dir = sandbox / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "python3"
    wrapper.write_text(f"#!/bin/sh\nexec '{sys.executable}' -s \"$@\"\n")
    wrapper.chmod(0o755)
    git = shutil.which("git") or "/usr/bin/git"
    path = os.pathsep.join(dict.fromkeys([str(bin_dir), str(Path(git).parent), "/usr/bin", "/bin"]))
    return {"PATH": path, "PYTHONPATH": _import_path(), "HOME": str(sandbox), "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TZ": "UTC",
            "PYTHONDONTWRITEBYTECODE": "1", "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_TERMINAL_PROMPT": "0"}


def _limit_files() -> None:  # runs in the child before exec
    resource.setrlimit(resource.RLIMIT_FSIZE, (MAX_OUTPUT_BYTES, MAX_OUTPUT_BYTES))


def _run(argv: list[str], cwd: Path, env: dict[str, str], timeout_s: float, tool: str, rev: str) -> str:
    """The tool's stdout; its failure, a hang past `timeout_s` or too much output is a RecipeError."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                   start_new_session=True, preexec_fn=_limit_files)
        try:
            code = process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise tool_error(tool, rev, msg("it ran past its %(seconds)s s limit and was stopped",
                                            seconds=f"{timeout_s:g}")) from None
        finally:
            try:
                os.killpg(process.pid, signal.SIGKILL)  # whatever it left behind in its group
            except ProcessLookupError:
                pass
        err.seek(0)
        stderr = err.read(MAX_OUTPUT_BYTES).decode("utf-8", "replace")
        if code != 0:
            raise tool_error(tool, rev, msg("it exited with status %(code)s: %(output)s", code=code,
                                            output=_shown(stderr)))
        out.seek(0)
        raw = out.read(MAX_OUTPUT_BYTES + 1)
    if len(raw) > MAX_OUTPUT_BYTES:
        raise tool_error(tool, rev, msg("it printed more than %(mib)s MiB", mib=MAX_OUTPUT_BYTES // 2**20))
    return raw.decode("utf-8", "replace")


def _git(root: Path, env: dict[str, str], *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=recipe-bot", "-c", "user.email=recipe-bot@localhost",
                           "-c", "commit.gpgsign=false", *args], cwd=root, env=env, capture_output=True,
                          text=True, check=True).stdout.strip()


def _commit(root: Path, env: dict[str, str], files: dict[str, bytes], message: str) -> str:
    for child in root.iterdir():
        if child.name != ".git":
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    _write(root, files)
    _git(root, env, "add", "-A")
    _git(root, env, "commit", "-q", "--allow-empty", "--no-verify", "-m", message)
    return _git(root, env, "rev-parse", "HEAD")


def _bad(tool: str, rev: str, detail: Message) -> RecipeError:
    return tool_error(tool, rev, msg("it printed output that is not its matrix: %(detail)s", detail=detail))


def parse_matrix(text: str, tool: str, rev: str) -> tuple[list[dict], list[dict]]:
    """The processor's JSON as (throughput rows, eval rows), checked as the untrusted data it is."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _bad(tool, rev, msg("not JSON (%(reason)s at line %(line)s)", reason=exc.msg, line=exc.lineno)) from None
    if not isinstance(doc, dict):
        raise _bad(tool, rev, msg("not a JSON object"))
    throughput: list[dict] = []
    evals: list[dict] = []
    for node in THROUGHPUT:
        buckets = doc.get(node, {})
        if not isinstance(buckets, dict) or not all(isinstance(b, list) for b in buckets.values()):
            raise _bad(tool, rev, msg("%(bucket)s is not a mapping of lists", bucket=node))
        throughput += [row for bucket in buckets.values() for row in bucket]
    for name in EVALS:
        bucket = doc.get(name, [])
        if not isinstance(bucket, list):
            raise _bad(tool, rev, msg("%(bucket)s is not a list", bucket=name))
        evals += bucket
    if len(throughput) + len(evals) > MAX_ROWS:
        raise _bad(tool, rev, msg("more than %(rows)s rows", rows=MAX_ROWS))
    for row in [*throughput, *evals]:
        problem = row_problem(row)
        if problem is not None:
            raise _bad(tool, rev, problem)
    return throughput, evals


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def row_problem(row: object) -> Message | None:
    """Why a row cannot be planned (the fields recipe-bot reads, with their types), or None."""
    if not isinstance(row, dict) or not all(isinstance(k, str) for k in row):
        return msg("a row that is not a mapping of names")
    for name in ("image", "model", "model-prefix", "precision", "framework", "runner", "exp-name"):
        if not isinstance(row.get(name), str) or not row[name]:
            return msg("a row whose %(field)s is not text", field=name)
    conc = row.get("conc")
    if not (_is_int(conc) and conc > 0) and not (
            isinstance(conc, list) and conc and all(_is_int(c) and c > 0 for c in conc)):
        return msg("row %(row)s: conc is not a positive whole number or a list of them", row=row["exp-name"])
    workers = [row.get("prefill"), row.get("decode")] if "prefill" in row else [row]
    for worker in workers:
        if not isinstance(worker, dict) or not (_is_int(worker.get("tp")) and worker["tp"] > 0):
            return msg("row %(row)s: tp is not a positive whole number", row=row["exp-name"])
    return None


def _normalised(row: dict) -> tuple:
    """A row's server configuration in the form both the generator and the processor's contract give it."""
    def clean(value: object) -> object:
        if isinstance(value, dict):
            return tuple(sorted((k, clean(v)) for k, v in value.items()
                                if v is not None and _WORKER_DEFAULTS.get(k, object()) != v))
        if isinstance(value, list):
            return tuple(clean(v) for v in value)
        return value
    return tuple(sorted((k, clean(v)) for k, v in row.items() if k not in _POINT_ONLY and v is not None))


def _identity(row: dict) -> tuple:
    return (*(row.get(f) for f in _IDENTITY), "prefill" in row, row.get("scenario-type"))


@dataclass
class _Sandbox:
    root: Path
    env: dict[str, str]
    base_sha: str
    head_sha: str


def _attribute(sandbox: _Sandbox, inputs: ToolInputs, keys: list[str], rows: list[dict], timeout_s: float
               ) -> list[str]:
    """Each row's config key: the key whose generator output has the row's server configuration."""
    rev = inputs.tools.label
    repo = inputs.repo
    jobs = {}
    split = sandbox.root.parent / "per-key"
    split.mkdir()
    for index, key in enumerate(keys):
        path = split / f"{index}.yaml"
        path.write_text(yaml.safe_dump({key: repo.raw(key)}, sort_keys=False))
        jobs[key] = ["test-config", "--config-keys", key, "--config-files", str(path),
                     "--runner-config", repo.runners_path, "--no-evals"]
    jobs_path = sandbox.root.parent / "jobs.json"
    jobs_path.write_text(json.dumps(jobs))
    text = _run([sys.executable, "-s", str(_DRIVER), GENERATOR, str(jobs_path)], sandbox.root,
                sandbox.env, timeout_s, GENERATOR, rev)
    try:
        printed = json.loads(text)
        made = {key: json.loads(printed[key]) for key in keys}
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise _bad(GENERATOR, rev, msg("not JSON (%(reason)s)", reason=type(exc).__name__)) from None
    by_server: dict[tuple, str] = {}
    by_identity: dict[tuple, str] = {}
    for key in keys:
        if not isinstance(made[key], list):
            raise _bad(GENERATOR, rev, msg("not a JSON list"))
        for row in made[key]:
            if row_problem(row) is None:
                by_server.setdefault(_normalised(row), key)
                by_identity.setdefault(_identity(row), key)
    owners = []
    for row in rows:
        key = by_server.get(_normalised(row)) or by_identity.get(_identity(row))
        if key is None:
            raise _bad(PROCESSOR, rev, msg("row %(row)s matches no config the changelog names", row=row["exp-name"]))
        expected = repo.raw(key).get("runner") if isinstance(repo.raw(key), dict) else None
        if row["runner"] != expected:
            raise _bad(PROCESSOR, rev, msg("row %(row)s names runner %(runner)s, not its config's %(expected)s",
                                           row=row["exp-name"], runner=repr(row["runner"]), expected=repr(expected)))
        owners.append(key)
    return owners


def run_processor(inputs: ToolInputs, keys: list[str], flags: list[str], *, changelog: bytes | None = None,
                  timeout_s: float = TIMEOUT_S) -> ToolRows:
    """`process_changelog.py --base-ref BASE --head-ref HEAD --changelog-file ... FLAGS` on the head's data.

    `changelog`: instead of the head's changelog against the base's, this text against an empty one (the
    rows of configs planned without an entry, as if one plain entry named them). `keys`: the configs the
    rows may come from (those the changelog names)."""
    rev = inputs.tools.label
    tools = _tool_files(inputs)
    with tempfile.TemporaryDirectory(prefix="recipe-bot-ix-") as temp:
        root = Path(temp) / "repo"
        root.mkdir()
        env = _environment(Path(temp))
        head_data = _data_files(inputs.head, inputs.repo)
        base_data = _data_files(inputs.base, inputs.repo)
        if changelog is not None:
            base_data = {**head_data}
            base_data.pop(inputs.repo.changelog_path, None)
            head_data = {**head_data, inputs.repo.changelog_path: changelog}
        _git(root, env, "init", "-q")
        base_sha = _commit(root, env, {**base_data, **tools}, "base")
        head_sha = _commit(root, env, {**head_data, **tools}, "head")
        argv = [sys.executable, "-s", PROCESSOR, "--base-ref", base_sha, "--head-ref", head_sha,
                "--changelog-file", inputs.repo.changelog_path, *flags]
        throughput, evals = parse_matrix(_run(argv, root, env, timeout_s, PROCESSOR, rev), PROCESSOR, rev)
        sandbox = _Sandbox(root, env, base_sha, head_sha)
        owners = _attribute(sandbox, inputs, keys, [*throughput, *evals], timeout_s) if throughput or evals else []
    return ToolRows(list(zip(owners, throughput)), list(zip(owners[len(throughput):], evals)))
