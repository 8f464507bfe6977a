"""An InferenceX change to shared files when its changelog declares what runs: a note naming what it affects."""
from __future__ import annotations

from collections import defaultdict

from bot.core.config import CONFIG_PATH, ConfigError, load_config
from bot.core.messages import Message, msg
from bot.inferencex.changelog import default_rows
from bot.inferencex.launches import STARTUP_S, names_file, point_seconds, points_run, row_gpus, shared_reason
from bot.inferencex.own_tools import ToolInputs
from bot.inferencex.repo import InferenceXRepo
from bot.recipes.sources import Source

_SHOWN = 8  # config keys named in a note before "... N more"


def infra_rule(base: Source) -> str:
    """`plan.infra` of the repository's config on the base revision (a PR cannot change its base);
    "note" for an InferenceX repository when unset or unreadable."""

    raw = base.read(CONFIG_PATH)
    if raw is None:
        return "note"
    try:
        return load_config(raw.decode("utf-8"), CONFIG_PATH).plan.infra_rule(inferencex=True)
    except (ConfigError, UnicodeDecodeError):
        return "note"


def affected_by_files(repo: InferenceXRepo, changed: set[str]) -> dict[str, list[str]]:
    """Changed path → the configs that use it (their own script or recipe, their launcher, the shared library)."""
    out: dict[str, list[str]] = defaultdict(list)
    for path in sorted(changed):
        for key in sorted(repo.configs):
            if names_file(repo, key, path) or shared_reason(repo, key, path):
                out[path].append(key)
    return dict(out)


def rows_gpu_hours(inputs: ToolInputs, keys: list[str]) -> tuple[int, float]:
    """The rows a `/sweep` of these configs plans (one plain changelog entry each) and their GPU-hours."""
    rows = default_rows(inputs, keys)
    pairs = [*rows.throughput, *rows.evals]
    hours = sum(row_gpus(r) * (STARTUP_S + point_seconds(r) * points_run(r)) for _, r in pairs) / 3600
    return len(pairs), hours


def infra_notes(inputs: ToolInputs, changed: set[str], logged: set[str]) -> list[Message]:
    """One note per changed shared file: the configs it affects that no changelog entry runs, the
    command that would run them and its GPU-hours (InferenceX runs only what its changelog names)."""
    notes = []
    repo = inputs.repo
    for path, keys in affected_by_files(repo, changed).items():
        unrun = [k for k in keys if k not in logged]
        if not unrun:
            continue
        count, hours = rows_gpu_hours(inputs, unrun)
        shown: Message | str = ", ".join(unrun[:_SHOWN])
        if len(unrun) > _SHOWN:
            shown = msg("%(shown)s, ... %(more)s more", shown=shown, more=len(unrun) - _SHOWN)
        notes.append(msg(
            "InferenceX infra: %(file)s changed; it affects %(configs)s config(s) no %(changelog)s entry runs "
            "(%(shown)s); not planned, as InferenceX's changelog declares what runs. To run them: `/sweep "
            "%(keys)s` (%(rows)s rows, about %(hours)s GPU-hours)", file=path, configs=len(unrun),
            changelog=repo.changelog_path, shown=shown, keys=" ".join(unrun), rows=count, hours=f"{hours:.0f}"))
    return notes
