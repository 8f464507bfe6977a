"""Plan a pull request from its files read through the API, as data: what the control plane may do.

The control plane never checks out or runs PR code; it reads the head commit's recipe files with
the contents API and plans them exactly as the GPU workflow's plan job would (native recipes).
"""
from __future__ import annotations

import fnmatch

from bot.core.jobs import Job
from bot.plan.inferencex_plan import plan_inferencex
from bot.plan.model import Plan, PlanFilters
from bot.plan.planner import plan_native
from bot.plan.touched import touched_native
from bot.recipes.catalog import Catalog
from bot.inferencex.catalog import load_catalog  # noqa: F401  (gate_events loads through here)


class ApiSource:
    """The files of one commit, read lazily through bot.core.github.GitHubClient (a Source for the loader)."""

    def __init__(self, client, ref: str) -> None:
        self.client, self.ref, self.label = client, ref, ref[:12]
        self._cache: dict[str, bytes | None] = {}
        self._lists: dict[str, list[str]] = {}

    def read(self, path: str) -> bytes | None:
        if path not in self._cache:
            self._cache[path] = self.client.get_bytes(path, ref=self.ref)  # bytes: not UTF-8 is the parser's error
        return self._cache[path]

    def read_many(self, paths: list[str]) -> dict[str, bytes | None]:
        return {path: self.read(path) for path in paths}

    def list(self, prefix: str) -> list[str]:
        prefix = prefix.strip("/")
        if prefix not in self._lists:
            found: list[str] = []
            for path, kind in self.client.list_dir(prefix, self.ref):
                if kind == "dir":
                    found += self.list(path)
                elif kind == "file":
                    found.append(path)
            self._lists[prefix] = sorted(found)
        return self._lists[prefix]

    def all_paths(self) -> set[str]:
        return set(self.list(""))


def head_catalog(client, head_sha: str) -> Catalog:
    """The head commit's recipes and InferenceX configs; raises RecipeError naming file, line and field."""
    return load_catalog(ApiSource(client, head_sha))


def touched_inferencex_keys(client, *, catalog: Catalog, base_sha: str, changed: set[str]) -> list[str]:
    """InferenceX config keys with rows to run for this PR (the plan job plans the same rows)."""
    if catalog.inferencex is None:
        return []

    filters = PlanFilters()
    plan = Plan(base=base_sha[:12], head=catalog.source.label, filters=filters)
    plan_inferencex(plan, catalog.inferencex, catalog.source, ApiSource(client, base_sha), changed, filters)
    if plan.inferencex is None:
        return []
    entries = [entry for matrix in plan.inferencex.matrices for entry in matrix.include]
    entries += [plan.inferencex.canary] if plan.inferencex.canary else []
    return sorted({entry.recipe for entry in entries})


def required_jobs(client, *, catalog: Catalog, base_sha: str, changed: set[str],
                  filters: list[PlanFilters]) -> list[Job]:
    """The jobs the PR requires: each required command's plan of the recipes the PR touches."""
    touched = touched_native(catalog, ApiSource(client, base_sha), changed)
    jobs: dict[str, Job] = {}
    for one in filters:
        for job in plan_native(catalog, one, touched).jobs:
            jobs.setdefault(job.job_id, job)
    return list(jobs.values())


def matches_any(glob: str, names: list[str]) -> bool:
    """Whether a /sweep recipe glob names a recipe (the plan job's own rule, bot.plan.expand.check_globs)."""
    return any(fnmatch.fnmatchcase(name, glob) for name in names)
