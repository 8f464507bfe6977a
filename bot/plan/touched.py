"""Which recipes a change touches: semantic YAML diff of each recipe, the files it names, shared infra."""
from __future__ import annotations

import fnmatch
from collections import defaultdict
from dataclasses import dataclass, field

from bot.core.messages import Message, msg
from bot.core.results import joined
from bot.inferencex.launches import names_file, shared_reason
from bot.inferencex.repo import InferenceXRepo, load_inferencex
from bot.recipes.catalog import (NOT_FINGERPRINTED, RUNNERS_FILE, Catalog, is_recipe_path, load_entry, load_runners,
                                 recipes_dir_of)
from bot.recipes.errors import RecipeError
from bot.recipes.loader import YamlCache
from bot.recipes.sources import Source


# The notes that say a shared file touched recipes (an InferenceX plan names those files its own way).
SHARED_NOTES = frozenset({"shared infra touched, %(recipes)s recipes affected: %(files)s",
                          "shared infra touched, %(recipes)s recipes affected: %(files)s (runner %(runner)s)"})


@dataclass
class Touched:
    reasons: dict[str, list[Message]] = field(default_factory=lambda: defaultdict(list))
    base_fingerprints: dict[str, str] = field(default_factory=dict)
    notes: list[Message] = field(default_factory=list)

    def add(self, name: str, reason: Message) -> None:
        if reason not in self.reasons[name]:
            self.reasons[name].append(reason)


def _matches(path: str, globs: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(path, glob) for glob in globs)


def _shared_infra(catalog: Catalog, changed: set[str], touched: Touched) -> None:
    table = catalog.runners
    if table is None:
        return
    by_runner: dict[str, list[str]] = defaultdict(list)
    for entry in catalog.entries.values():
        by_runner[entry.recipe.runner].append(entry.name)
    hits_all = sorted(p for p in changed if _matches(p, table.shared_by_all))
    if hits_all:
        names = sorted(catalog.entries)
        for name in names:
            touched.add(name, msg("shared infra touched: %(files)s", files=", ".join(hits_all)))
        touched.notes.append(msg("shared infra touched, %(recipes)s recipes affected: %(files)s",
                                 recipes=len(names), files=", ".join(hits_all)))
    for label, spec in sorted(table.runners.items()):
        hits = sorted(p for p in changed if _matches(p, spec.shared))
        if not hits:
            continue
        names = sorted(by_runner.get(label, []))
        for name in names:
            touched.add(name, msg("shared infra of runner %(runner)s touched: %(files)s", runner=label,
                                  files=", ".join(hits)))
        touched.notes.append(msg(
            "shared infra touched, %(recipes)s recipes affected: %(files)s (runner %(runner)s)",
            recipes=len(names), files=", ".join(hits), runner=label))


def _runner_settings(catalog: Catalog, base: Source, changed: set[str], touched: Touched) -> None:
    if RUNNERS_FILE not in changed or catalog.runners is None:
        return
    try:
        _, base_raw = load_runners(base, YamlCache(base.read))
    except RecipeError:
        base_raw = {}
    for label in sorted(catalog.runners_raw):
        if base_raw.get(label) != catalog.runners_raw.get(label):
            names = sorted(e.name for e in catalog.entries.values() if e.recipe.runner == label)
            for name in names:
                touched.add(name, msg("settings of runner %(runner)s changed (%(file)s)", runner=label,
                                      file=RUNNERS_FILE))
            if names:
                touched.notes.append(msg("runner %(runner)s settings changed, %(recipes)s recipes affected",
                                         runner=label, recipes=len(names)))


def _semantic(entry_dump: dict) -> dict:
    return {k: v for k, v in entry_dump.items() if k not in NOT_FINGERPRINTED}


def touched_native(catalog: Catalog, base: Source, changed: set[str]) -> Touched:
    """Native recipes: own entry changed (semantically), a file it names changed, or its runner's infra."""
    touched = Touched()
    _shared_infra(catalog, changed, touched)
    _runner_settings(catalog, base, changed, touched)
    base_cache = YamlCache(base.read)
    try:
        base_runners, _ = load_runners(base, base_cache)
    except RecipeError:
        base_runners = None
    for name, entry in sorted(catalog.entries.items()):
        for glob in entry.named_files:
            hits = sorted(p for p in changed if fnmatch.fnmatchcase(p, glob))
            if hits:
                touched.add(name, msg("uses %(files)s, which changed", files=", ".join(hits)))
        changed_yaml = [f for f in entry.files if f in changed]
        if not changed_yaml:
            continue
        if base.read(entry.path) is None:
            touched.add(name, msg("new recipe (%(file)s)", file=entry.path))
            continue
        try:
            old = load_entry(entry.path, base_cache, base, base_runners)
        except RecipeError:
            touched.add(name, msg("recipe was invalid on the base revision"))
            continue
        touched.base_fingerprints[name] = old.fingerprint
        new_dump = _semantic(entry.recipe.model_dump(mode="json"))
        old_dump = _semantic(old.recipe.model_dump(mode="json"))
        if new_dump != old_dump:
            own = entry.path in changed_yaml
            bases = [f for f in changed_yaml if f != entry.path]
            what = [msg("recipe changed")] if own else []
            what += [msg("include %(file)s changed", file=b) for b in bases]
            touched.add(name, joined(what) if what else msg("recipe changed"))
        elif entry.recipe.model_dump(mode="json") != old.recipe.model_dump(mode="json"):
            touched.notes.append(msg("%(recipe)s: only description/estimate/timeouts changed; nothing to run for it",
                                     recipe=name))
    folder = recipes_dir_of(catalog.source)  # the repository's recipe folder (afd-plugin: recipe)
    removed = sorted(
        p for p in changed if is_recipe_path(p, folder)
        and base.read(p) is not None and not any(e.path == p for e in catalog.entries.values())
    )
    for path in removed:
        touched.notes.append(msg("recipe %(file)s was removed; nothing to run for it", file=path))
    return touched


def touched_inferencex(
    repo: InferenceXRepo, base: Source, changed: set[str]
) -> tuple[Touched, InferenceXRepo | None]:
    """InferenceX configs: entry changed (semantically), its script or srt-slurm recipe, its launcher."""
    touched = Touched()
    try:
        base_repo = load_inferencex(base)
    except RecipeError:
        base_repo = None
    base_keys = {*base_repo.configs, *base_repo.invalid} if base_repo else set()
    config_changed = any(p in changed for p in repo.located) or (base_repo is not None and any(
        p in changed for p in base_repo.located
    ))
    for key in sorted({*repo.configs, *repo.invalid}):
        if config_changed:
            if key not in base_keys:
                touched.add(key, msg("new config key in %(file)s", file=repo.config_file[key]))
            elif base_repo.raw(key) != repo.raw(key):
                touched.add(key, msg("master config entry changed (%(file)s)", file=repo.config_file[key]))
    shared_hits: dict[str, list[str]] = defaultdict(list)
    for path in sorted(changed):
        for key in sorted(repo.configs):
            if names_file(repo, key, path):
                touched.add(key, msg("uses %(files)s, which changed", files=path))
            reason = shared_reason(repo, key, path)
            if reason:
                touched.add(key, msg("shared infra touched: %(files)s", files=reason))
                shared_hits[path].append(key)
    for path, keys in sorted(shared_hits.items()):
        touched.notes.append(msg("shared infra touched, %(recipes)s recipes affected: %(files)s",
                                 recipes=len(keys), files=path))
    return touched, base_repo
