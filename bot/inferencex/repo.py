"""Read an InferenceX-style repository's configs as they are: master configs, runners.yaml, changelog."""
from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

from bot.core.messages import msg
from bot.inferencex.schema import MultiNodeEntry, RunnersFile, SingleNodeEntry
from bot.recipes.errors import RecipeError, RecipeProblem
from bot.recipes.loader import validate
from bot.recipes.sources import Source
from bot.recipes.yamlsrc import Located, load_yaml

CONFIG_DIRS = ("configs", ".github/configs")
CHANGELOG = "perf-changelog.yaml"


@dataclass
class InferenceXRepo:
    config_dir: str
    configs: dict[str, dict] = field(default_factory=dict, repr=False)  # config key → master entry, unchanged
    config_file: dict[str, str] = field(default_factory=dict)  # config key → the file defining it
    runners: dict = field(default_factory=dict, repr=False)  # configs/runners.yaml, unchanged
    runners_path: str = ""
    changelog_path: str = CHANGELOG
    located: dict[str, Located] = field(default_factory=dict, repr=False)
    # Problems per config key (the config may still be usable, as with an unlisted runner label, which
    # InferenceX's generator never checks) and per file (a file that is not a mapping of keys).
    problems: dict[str, list[RecipeProblem]] = field(default_factory=dict)
    file_problems: dict[str, list[RecipeProblem]] = field(default_factory=dict)
    invalid: dict[str, object] = field(default_factory=dict, repr=False)  # key → raw entry that failed its schema
    scripts: dict[str, str] = field(default_factory=dict, repr=False)  # single-node benchmark scripts → text
    launchers: dict[str, str] = field(default_factory=dict, repr=False)  # runners/launch_<fleet>.sh → text
    # problems InferenceX reads past (a duplicate key: the last one wins), listed as warnings
    warnings: list[RecipeProblem] = field(default_factory=list)

    def note_duplicates(self, path: str, duplicates: list) -> None:
        for key, line, first in duplicates:
            self.warnings.append(RecipeProblem(path, line, str(key), msg(
                "duplicate key (first defined on line %(line)s); the last one is used, as InferenceX's YAML reader does",
                line=first)))

    def problems_for(self, keys: list[str] | set[str]) -> list[RecipeProblem]:
        return [p for k in sorted(keys) for p in self.problems.get(k, [])]

    def all_problems(self) -> list[RecipeProblem]:
        keyed = [p for k in sorted(self.problems) for p in self.problems[k]]
        return [*(p for f in sorted(self.file_problems) for p in self.file_problems[f]), *keyed, *self.warnings]

    def raw(self, key: str) -> object:
        """The entry as written, valid or not (what a change is compared on)."""
        return self.configs[key] if key in self.configs else self.invalid.get(key)

    def line_of(self, key: str, loc: tuple = ()) -> int | None:
        return self.located[self.config_file[key]].line_of((key, *loc))

    @property
    def labels(self) -> dict[str, list[str]]:
        return self.runners.get("labels", {})


def master_paths(source: Source) -> tuple[str, list[str]]:
    for directory in CONFIG_DIRS:
        found = [
            p for p in source.list(directory)
            if posixpath.dirname(p) == directory and posixpath.basename(p).endswith("-master.yaml")
        ]
        if found:
            return directory, sorted(found)
    return "", []


def load_inferencex(source: Source) -> InferenceXRepo | None:
    """None when the repository has no `configs/*-master.yaml`.

    A broken runners.yaml is a RecipeError (nothing can be planned without it). A broken config is
    recorded in `problems` (keyed by config key) and left out of `configs`; a config whose runner label
    runners.yaml does not list stays in `configs` (InferenceX generates its rows) with a problem
    recorded. The planner decides which problems stop a plan: those of what a change touches.
    """
    directory, paths = master_paths(source)
    if not paths:
        return None
    repo = InferenceXRepo(directory, runners_path=f"{directory}/runners.yaml")
    raw_runners = source.read(repo.runners_path)
    if raw_runners is None:
        raise RecipeError.single(repo.runners_path, None, None, msg("missing: the master configs need it"))
    duplicates: list = []
    runners_doc = load_yaml(raw_runners, repo.runners_path, duplicates)
    repo.note_duplicates(repo.runners_path, duplicates)
    validate(RunnersFile, runners_doc.data, lambda loc: (repo.runners_path, runners_doc.line_of(loc)))
    repo.runners = runners_doc.data
    _read_scripts(repo, source)
    for path in paths:
        raw = source.read(path)
        try:
            duplicates = []
            located = load_yaml(raw or b"", path, duplicates)
            repo.note_duplicates(path, duplicates)
        except RecipeError as exc:
            repo.file_problems[path] = list(exc.problems)
            continue
        repo.located[path] = located
        if located.data is None:
            continue
        if not isinstance(located.data, dict):
            repo.file_problems[path] = [RecipeProblem(
                path, 1, None, msg("a master config must map config keys to entries"))]
            continue
        for key, entry in located.data.items():
            if key in repo.configs or key in repo.invalid:
                first = repo.config_file[key]
                repo.problems.setdefault(key, []).append(RecipeProblem(
                    path, located.line_of((key,)), key, msg("config key also defined in %(file)s", file=first)))
                continue
            repo.config_file[key] = path
            try:
                _check_entry(path, located, key, entry)
            except RecipeError as exc:
                repo.problems.setdefault(key, []).extend(exc.problems[:1])
                repo.invalid[key] = entry
                continue
            repo.configs[key] = entry
            if entry["runner"] not in repo.labels:
                repo.problems.setdefault(key, []).append(RecipeProblem(
                    path, located.line_of((key, "runner")), f"{key}.runner",
                    msg("runner %(runner)s is not a label of %(file)s", runner=repr(entry["runner"]), file=repo.runners_path),
                    tuple(sorted(repo.labels)),
                ))
    return repo


def _read_scripts(repo: InferenceXRepo, source: Source) -> None:
    """The shell scripts that start servers: what honest packing reads (never run here)."""
    for directory, into in (("benchmarks/single_node/fixed_seq_len", repo.scripts),
                            ("benchmarks/single_node/agentic", repo.scripts), ("runners", repo.launchers)):
        for path in source.list(directory):
            if path.endswith(".sh") and posixpath.dirname(path) == directory:
                raw = source.read(path)
                if raw is not None:
                    into[path] = raw.decode("utf-8", "replace")


def _check_entry(path: str, located: Located, key: str, entry: object) -> None:
    def locate(loc: tuple) -> tuple[str, int | None]:
        return path, located.line_of((key, *loc))

    if not isinstance(entry, dict):
        raise RecipeError.single(path, located.line_of((key,)), key, msg("must be a mapping"))
    model = MultiNodeEntry if entry.get("multinode") is True else SingleNodeEntry
    try:
        validate(model, entry, locate)
    except RecipeError as exc:
        problem = exc.problems[0]
        field_name = f"{key}.{problem.field}" if problem.field else key
        raise RecipeError([RecipeProblem(
            problem.file, problem.line, field_name, problem.message, problem.accepted)]) from None
