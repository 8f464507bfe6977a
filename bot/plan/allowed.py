"""What a PR's plan may name: runner labels and container images allowed by the default branch only.

The PR's own `recipes/_runners.yaml` and recipes decide what to run, never where: a label it adds
(say `release-signer`) would send its code to whatever self-hosted runner carries that label. So
the labels come from `recipes/_runners.yaml` on the default branch (plus `pr_jobs.runner_labels` of
its `.github/recipe-bot.yaml`), the images from `pr_jobs.images` of that config. In an InferenceX
repository the default branch's `configs/runners.yaml` and the runner labels its master configs
already use are allowed too: adopting recipe-bot needs no extra file.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from bot.core.config import CONFIG_PATH, ConfigError, load_config
from bot.core.messages import Message, msg
from bot.inferencex.repo import load_inferencex
from bot.plan.model import Plan, PlanError
from bot.recipes.catalog import RUNNERS_FILE, load_runners
from bot.recipes.errors import RecipeError
from bot.recipes.loader import YamlCache
from bot.recipes.sources import GitSource, Source, SourceError


@dataclasses.dataclass(frozen=True)
class Allowed:
    runner_labels: frozenset[str]
    images: frozenset[str]
    where: str  # the revision they were read from, for the error
    files: str = RUNNERS_FILE  # the files that list them, for the error


def _why(exc: Exception) -> object:
    """What a source, config or recipe error says: its message where it carries one, else its text."""
    first = exc.args[0] if exc.args else None
    return first if isinstance(first, Message) else str(exc)


def allowed_at(repo: Path, rev: str) -> Allowed:
    """The runner labels and images the default branch (`rev`) allows; PlanError if unreadable."""
    try:
        source = GitSource(repo, rev)
    except SourceError as exc:
        raise PlanError(msg("cannot read what %(rev)s allows: %(why)s", rev=rev, why=_why(exc))) from None
    return allowed_in(source, rev)


def allowed_in(source: Source, rev: str) -> Allowed:
    """allowed_at() for the default branch's files as a Source (a git revision, or read through the API)."""
    try:
        table, _ = load_runners(source, YamlCache(source.read))
        raw_config = source.read(CONFIG_PATH)
        config = load_config(raw_config.decode("utf-8"), f"{CONFIG_PATH}@{rev}") if raw_config else None
    except (SourceError, ConfigError, RecipeError, UnicodeDecodeError) as exc:
        raise PlanError(msg("cannot read what %(rev)s allows: %(why)s", rev=rev, why=_why(exc))) from None
    labels = set(table.runners) if table is not None else set()
    inferencex = _inferencex_labels(source, rev)
    labels |= inferencex
    images: set[str] = set()
    if config is not None:
        labels |= set(config.pr_jobs.runner_labels)
        images = set(config.pr_jobs.images)
    files = f"{RUNNERS_FILE} or configs/runners.yaml and the master configs" if inferencex else RUNNERS_FILE
    return Allowed(frozenset(labels), frozenset(images), rev, files)


def _inferencex_labels(source: Source, rev: str) -> set[str]:
    """The labels of the default branch's `configs/runners.yaml` and those its master configs use."""

    try:
        repo = load_inferencex(source)
    except RecipeError as exc:
        raise PlanError(msg("cannot read what %(rev)s allows: %(why)s", rev=rev, why=_why(exc))) from None
    if repo is None:
        return set()
    return set(repo.labels) | {entry["runner"] for entry in repo.configs.values() if isinstance(entry.get("runner"), str)}


def check_plan(plan: Plan, allowed: Allowed) -> None:
    """Raises PlanError naming the first job whose runner label or image is not allowed."""
    entries = [(job.job_id, job.runner_label, job) for job in plan.jobs]
    for matrix in [*plan.matrices, *(plan.inferencex.matrices if plan.inferencex else [])]:
        entries += [(entry.job_id, entry.runner_label, entry.job) for entry in matrix.include]
    for canary in (plan.canary, plan.inferencex.canary if plan.inferencex else None):
        if canary is not None:
            entries.append((canary.job_id, canary.runner_label, canary.job))
    for job_id, label, job in entries:
        if label not in allowed.runner_labels:
            raise PlanError(msg("job %(job)s names runner label %(label)s, which %(files)s on %(where)s does not "
                                "list; a pull request cannot choose its own runners", job=job_id, label=repr(label),
                                files=allowed.files, where=allowed.where), sorted(allowed.runner_labels))
        for case in job.cases if job is not None else ():
            for server in case.servers:
                if server.image is not None and server.image not in allowed.images:
                    raise PlanError(msg("job %(job)s names container image %(image)s, which pr_jobs.images of "
                                        "%(config)s on %(where)s does not list", job=job_id, image=repr(server.image),
                                        config=CONFIG_PATH, where=allowed.where), sorted(allowed.images))
