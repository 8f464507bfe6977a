"""Where a job's figures come from: the checkout's own SHA checked against the job's, and the
model and data sources a reader needs to judge them (real or dummy weights, real or synthetic)."""
from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path

from bot import engines
from bot.core.jobs import Job
from bot.core.messages import Message, msg
from bot.core.provenance import dataset_of, weights_of
from bot.core.results import Provenance

def checkout_head(repo: Path) -> str | None:
    """HEAD of the repository rooted exactly at `repo`; None when `repo` is not one.

    `git rev-parse HEAD` alone walks up from its directory: a job directory inside another
    repository's work tree would report that repository's commit. GIT_CEILING_DIRECTORIES stops
    the walk at `repo`'s parent, and --show-toplevel must be `repo` itself."""
    repo = repo.resolve()
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(repo.parent)}
    env.pop("GIT_DIR", None)
    env.pop("GIT_WORK_TREE", None)
    try:
        out = subprocess.run(["git", "-C", str(repo), "rev-parse", "--show-toplevel", "HEAD"],
                             capture_output=True, text=True, timeout=10, check=False, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = out.stdout.split()
    if out.returncode != 0 or len(lines) != 2:
        return None
    toplevel, head = lines
    if Path(toplevel).resolve() != repo:
        return None
    return head


def sha_mismatch(authorized: str | None, checkout: str | None) -> Message | None:
    """The reason a job must not run, when its checkout is not the commit it was authorized for."""
    if not authorized or not checkout or authorized == checkout:
        return None
    return msg("the checkout is at %(checkout)s, but the job was authorized for %(authorized)s: refusing to measure "
               "a commit nobody approved (check out the job's SHA)", checkout=checkout, authorized=authorized)


RANDOM_WEIGHTS_MARKER = "RECIPE_BOT_RANDOM_WEIGHTS"  # written beside random weights by make_tiny_model.py


def random_weights_on_disk(job: Job, environ: dict[str, str] | None = None) -> bool:
    """A server's model is a local directory that says its weights are random (the tiny CPU model):
    real safetensors files, so `--load-format` alone cannot tell."""
    env = os.environ if environ is None else environ
    for case in job.cases:
        for server in case.servers:
            path = Path(_expand(server.model, env))
            if path.is_dir() and (path / RANDOM_WEIGHTS_MARKER).is_file():
                return True
    return False


def _expand(value: str, env) -> str:
    for name, val in env.items():
        value = value.replace("${" + name + "}", val)
    return value


def _model_as_run(model: str | None, env: Mapping[str, str]) -> tuple[str | None, dict[str, str]]:
    """The model path with its ${VAR}s expanded from the runner's environment (left as written where
    one is unset: the case then fails naming it), and those variables' values, to reproduce it."""
    if model is None:
        return None, {}
    names = re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", model)
    if not names or any(name not in env for name in names):
        return model, {}
    used = {name: env[name] for name in names}
    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: used[m.group(1)], model), used


def provenance_of(job: Job, checkout: str | None, job_file: str | None = None,
                  env: Mapping[str, str] | None = None) -> Provenance:
    named = job.cases[0].servers[0].model if job.cases and job.cases[0].servers else None
    env = os.environ if env is None else env
    model, run_env = _model_as_run(named, env)
    for name in dict.fromkeys(s.engine for c in job.cases for s in c.servers):
        variable = engines.get(name).provenance_env  # the program the figures came from, where set
        if variable and env.get(variable):
            run_env[variable] = env[variable]
    weights = "dummy" if random_weights_on_disk(job) else weights_of(job)
    return Provenance(authorized_sha=job.sha, checkout_sha=checkout,
                      sha_checked=bool(job.sha and checkout and job.sha == checkout),
                      model=model, run_env=run_env, weights=weights,  # type: ignore[arg-type]
                      dataset=dataset_of(job), job_file=job_file)  # type: ignore[arg-type]
