"""Job ids, glob checks and a runner's Slurm allocation: what native and InferenceX planning share."""
from __future__ import annotations

import fnmatch
import functools
import re
from typing import TYPE_CHECKING

from bot.core.messages import msg
from bot.plan.model import PlanError

if TYPE_CHECKING:
    from bot.core.jobs import SlurmSpec
    from bot.recipes.schema import RunnerSpec

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@functools.lru_cache(maxsize=100_000)  # an InferenceX plan names each config key and shape many times
def _safe(part: str) -> str:
    return _UNSAFE.sub("-", part).strip("-")


def job_id(*parts: str) -> str:
    """Ids name files (<id>.json) and Actions jobs: letters, digits, '.', '_' and '-' only."""
    return "--".join([_safe(p) for p in parts if p])


def slurm_spec(runner: RunnerSpec | None, gpus: int) -> SlurmSpec | None:
    if runner is None or runner.slurm is None:
        return None
    if runner.slurm.gres is None and gpus > 0:
        return runner.slurm.model_copy(update={"gres": f"gpu:{gpus}"})
    return runner.slurm


def check_globs(globs: tuple[str, ...], names: list[str], what: str) -> None:
    for glob in globs:
        if not any(fnmatch.fnmatchcase(name, glob) for name in names):
            text = (msg("no recipe matches %(glob)s", glob=repr(glob)) if what == "recipe"
                    else msg("no case matches %(glob)s", glob=repr(glob)))
            raise PlanError(text, sorted(names))
