"""The recipe catalog of one repository revision: every recipe validated, with its files and fingerprint."""
from __future__ import annotations

import fnmatch
import functools
import hashlib
import posixpath
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from bot.core.messages import msg
from bot.recipes.errors import RecipeError, RecipeProblem, dotted
from bot.recipes.loader import Resolved, YamlCache, resolve, validate
from bot.recipes.schema import E2ESuite, KINDS, RunnerTable, SweepRecipe
from bot.recipes.sources import Source, open_source

if TYPE_CHECKING:
    from bot.recipes.schema import Recipe

# The schema (pydantic models) is imported by the functions that read a native recipe or
# recipes/_runners.yaml: an InferenceX-only repository loads without it.

RECIPES_DIR = "recipes"
RUNNERS_FILE = "recipes/_runners.yaml"
CONFIG_FILE = ".github/recipe-bot.yaml"  # its `recipes_dir` names the folder (afd-plugin: recipe)
# Fields that do not change what a run measures; they stay out of the fingerprint.
NOT_FINGERPRINTED = {"description", "estimate", "timeout_s", "fail_fast", "files"}


@dataclass
class CatalogEntry:
    recipe: Recipe
    path: str
    files: tuple[str, ...]  # the recipe's YAML and every include it reads
    named_files: tuple[str, ...]  # launch scripts, data files and `files:` globs it names
    fingerprint: str

    @property
    def name(self) -> str:
        return self.recipe.name


@dataclass
class Catalog:
    source: Source
    entries: dict[str, CatalogEntry] = field(default_factory=dict)
    runners: RunnerTable | None = None
    runners_raw: dict = field(default_factory=dict)
    # The repository's InferenceX configs (a bot.inferencex.repo.InferenceXRepo), when it is an InferenceX
    # checkout: set by bot.inferencex.catalog.load_catalog, which sits above the recipes and reads both.
    inferencex: Any = None

    def names(self) -> list[str]:
        return sorted(self.entries)


def is_recipe_path(path: str, recipes_dir: str = RECIPES_DIR) -> bool:
    """Top-level `recipes/*.yaml`; names starting with `_` are bases and tables, not recipes."""
    directory, name = posixpath.split(path)
    return directory == recipes_dir and name.endswith((".yaml", ".yml")) and not name.startswith("_")


def recipes_dir_of(source: Source) -> str:
    """The recipe folder the repository's config names (`recipes_dir:`), else `recipes`."""

    data = source.read(CONFIG_FILE)
    return _recipes_dir_in(data) if data else RECIPES_DIR


@functools.lru_cache(maxsize=32)
def _recipes_dir_in(data: bytes | str) -> str:
    """recipes_dir of one config text, parsed once per process (a long-running serve reads it per delivery)."""
    try:
        config = yaml.safe_load(data)
    except yaml.YAMLError:
        return RECIPES_DIR  # the config's own loader reports it
    value = config.get("recipes_dir") if isinstance(config, dict) else None
    return value.strip("/") if isinstance(value, str) and value.strip("/") else RECIPES_DIR


def recipe_paths(source: Source, recipes_dir: str = RECIPES_DIR) -> list[str]:
    return [p for p in source.list(recipes_dir) if is_recipe_path(p, recipes_dir)]


def glob_paths(source: Source, patterns: list[str] | tuple[str, ...]) -> list[str]:
    """Every file of the source a glob matches (fnmatch: `*` crosses `/`), listed under its literal prefix."""
    found: set[str] = set()
    for pattern in patterns:
        if not any(ch in pattern for ch in "*?["):
            continue
        literal = []
        for part in pattern.split("/"):
            if any(ch in part for ch in "*?["):
                break
            literal.append(part)
        found.update(p for p in source.list("/".join(literal)) if fnmatch.fnmatchcase(p, pattern))
    return sorted(found)


def named_files(recipe: Recipe) -> tuple[str, ...]:
    names: list[str] = list(recipe.files)
    if isinstance(recipe, SweepRecipe):
        names += [recipe.launch.script] if recipe.launch.script else []
        names += [recipe.accuracy.data_path] if recipe.accuracy and recipe.accuracy.data_path else []
    else:
        names += [recipe.launch.script] if recipe.launch.script else []
        names += [s.launch_script for c in recipe.cases for s in c.servers if s.launch_script]
        if recipe.harness is not None:  # the harness's files and each node's test module
            names += recipe.harness.files
            names += [c.node.split("::", 1)[0] for c in recipe.cases if c.node]
        gates = [recipe.accuracy, *(c.accuracy for c in recipe.cases)]
        names += [g.data_path for g in gates if g is not None and g.data_path]
    return tuple(dict.fromkeys(n for n in names if not n.startswith(("/", "$"))))


def fingerprint(recipe: Recipe, source: Source, files: tuple[str, ...], shared: tuple[str, ...] = ()) -> str:
    """A stable hash of what determines results: engine, image, model, args, env, workload, and the
    contents of every file the recipe depends on (scripts, its `files:` globs, its harness files, its
    runner's shared paths), so a change to what would run ends a `/reuse` of an earlier run.

    Field order is the schema's and env keys are sorted at validation, so the JSON is canonical.
    """
    digest = hashlib.sha256(recipe.model_dump_json(exclude=NOT_FINGERPRINTED).encode())
    patterns = (*files, *shared)
    literal = [p for p in patterns if not any(ch in p for ch in "*?[")]
    matched = glob_paths(source, patterns)
    for path in literal:
        data = source.read(path)
        digest.update(f"\0{path}\0".encode())
        digest.update(hashlib.sha256(data).digest() if data is not None else b"missing")
    contents = source.read_many(matched) if matched else {}
    for path in matched:
        data = contents.get(path)
        digest.update(f"\0{path}\0".encode())
        digest.update(hashlib.sha256(data).digest() if data is not None else b"missing")
    return digest.hexdigest()[:16]


def shared_paths(recipe: Recipe, runners: RunnerTable | None) -> tuple[str, ...]:
    if runners is None:
        return ()
    spec = runners.runners.get(recipe.runner)
    return tuple(dict.fromkeys([*(spec.shared if spec else []), *runners.shared_by_all]))


def load_runners(source: Source, cache: YamlCache, path: str | None = None) -> tuple[RunnerTable | None, dict]:
    path = path or f"{recipes_dir_of(source)}/_runners.yaml"
    located = cache.parse(path)
    if located is None:
        return None, {}

    def locate(loc: tuple) -> tuple[str, int | None]:
        return path, located.line_of(loc)

    table = validate(RunnerTable, located.data, locate)
    return table, located.data.get("runners", {}) if isinstance(located.data, dict) else {}


def _check_runner(recipe: Recipe, resolved: Resolved, runners: RunnerTable | None) -> None:
    if runners is None:
        return
    spec = runners.runners.get(recipe.runner)
    if spec is None:
        file, line = resolved.locate(("runner",))
        raise RecipeError.single(
            file, line, "runner", msg("unknown runner label %(label)s", label=repr(recipe.runner)), sorted(runners.runners)
        )
    if spec.gpus == 0:
        return
    if isinstance(recipe, SweepRecipe):
        for index, arm in enumerate(recipe.search_space):
            if arm.gpus > spec.gpus:
                file, line = resolved.locate(("search_space", index))
                raise RecipeError.single(
                    file, line, f"search_space[{index}]",
                    msg("needs %(needed)s GPUs but runner %(runner)s has %(gpus)s per host", needed=arm.gpus,
                        runner=repr(recipe.runner), gpus=spec.gpus),
                )
    else:
        for ci, case in enumerate(recipe.cases):
            for si, server in enumerate(case.servers):
                for device in server.devices or []:
                    if device >= spec.gpus:
                        file, line = resolved.locate(("cases", ci, "servers", si, "devices"))
                        raise RecipeError.single(
                            file, line, f"cases[{ci}].servers[{si}].devices",
                            msg("device %(device)s does not exist on runner %(runner)s (%(gpus)s GPUs per host)",
                                device=device, runner=repr(recipe.runner), gpus=spec.gpus),
                            [str(d) for d in range(spec.gpus)],
                        )


def load_entry(path: str, cache: YamlCache, source: Source, runners: RunnerTable | None) -> CatalogEntry:
    """Resolve, validate and fingerprint one recipe file; raises RecipeError with one problem."""

    resolved = resolve(path, cache)
    data = resolved.data
    kind = data.get("kind")
    if kind not in KINDS:
        file, line = resolved.locate(("kind",))
        message = msg("required, but not given") if kind is None else msg("%(value)s is not accepted", value=repr(kind))
        raise RecipeError.single(file, line, "kind", message, sorted(KINDS))
    model = KINDS[kind]
    recipe = validate(model, data, resolved.locate)
    stem = posixpath.splitext(posixpath.basename(path))[0]
    if recipe.name != stem:
        file, line = resolved.locate(("name",))
        raise RecipeError.single(file, line, "name", msg("%(name)s must match the file name", name=repr(recipe.name)), [stem])
    if isinstance(recipe, SweepRecipe):
        for loc, message in recipe.rule_violations()[:1]:
            file, line = resolved.locate(loc)
            raise RecipeError.single(file, line, dotted(loc), message)
    _check_runner(recipe, resolved, runners)
    named = named_files(recipe)
    return CatalogEntry(recipe, path, resolved.files, named,
                        fingerprint(recipe, source, named, shared_paths(recipe, runners)))


def load_recipes(repo: Path | str | Source, rev: str | None = None) -> Catalog:
    """Every recipe of a repository (a directory, or `rev` of a git repository), validated.

    Raises RecipeError listing one problem per broken file; nothing is half-loaded.
    """
    catalog, problems = read_catalog(repo, rev)
    raise_problems(problems)
    return catalog


def read_catalog(repo: Path | str | Source, rev: str | None = None) -> tuple[Catalog, list[RecipeProblem]]:
    """The recipes of a repository that load, and one problem per file that does not."""
    source = repo if not isinstance(repo, (str, Path)) else open_source(Path(repo), rev)
    folder = recipes_dir_of(source)
    paths = recipe_paths(source, folder)
    source.read_many([p for p in source.list(folder) if p.endswith((".yaml", ".yml"))])
    cache = YamlCache(source.read)
    problems: list[RecipeProblem] = []
    runners = None
    runners_raw: dict = {}
    try:
        runners, runners_raw = load_runners(source, cache, f"{folder}/_runners.yaml")
    except RecipeError as exc:
        problems.extend(exc.problems)
    catalog = Catalog(source, runners=runners, runners_raw=runners_raw)
    for path in paths:
        try:
            entry = load_entry(path, cache, source, runners)
        except RecipeError as exc:
            problems.extend(exc.problems[:1])
            continue
        catalog.entries[entry.name] = entry
    return catalog, problems


def raise_problems(problems: list[RecipeProblem]) -> None:
    """Raise RecipeError with every problem found, if any."""
    if problems:
        # A broken shared base file breaks every recipe that includes it: list it once.
        raise RecipeError(list(dict.fromkeys(problems)))


def recipe_kind(recipe: Recipe) -> str:
    return "e2e" if isinstance(recipe, E2ESuite) else "sweep"
