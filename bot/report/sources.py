"""What the report says next to the figures: where they come from, and how to reproduce each.

Per recipe: the runner hosts, engine versions, recipe fingerprint, model and its source (real
or dummy weights; real or synthetic prompts), read from result.json's provenance, else from the
planned job, else "unknown". Per job: the one `recipe-bot run` command that reproduces every
point it measured, from the job file in the run's `plan` artifact, at the authorized SHA.
"""
from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass

from bot.core.markers import is_full_sha
from bot.core.provenance import dataset_of, weights_of
from bot.report.collect import CollectedJob

_SAFE_PATH = re.compile(r"[A-Za-z0-9._/-]+")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
UNKNOWN_SHA = "<head SHA>"


@dataclass(frozen=True)
class Source:
    hosts: tuple[str, ...]
    model: str | None
    weights: str  # real, dummy, mixed, unknown
    dataset: str  # real, synthetic, mixed, none, unknown
    sha_checked: bool  # every job's checkout matched its authorized SHA

    @property
    def disclosure(self) -> str | None:
        """Which caveat the figures need: dummy+synthetic, dummy, synthetic or None."""
        dummy = self.weights in ("dummy", "mixed")
        synthetic = self.dataset in ("synthetic", "mixed")
        if dummy and synthetic:
            return "dummy-synthetic"
        if dummy:
            return "dummy"
        if synthetic:
            return "synthetic"
        return None


def _merge(values: Iterable[str]) -> str:
    kinds = set(values)
    if not kinds:
        return "unknown"
    if len(kinds) == 1:
        return kinds.pop()
    return "mixed" if kinds - {"unknown", "none"} else sorted(kinds)[0]


def _weights(job: CollectedJob) -> str:
    provenance = job.result.provenance
    if provenance is not None and provenance.weights != "unknown":
        return provenance.weights
    return weights_of(job.plan) if job.plan is not None else "unknown"


def _dataset(job: CollectedJob) -> str:
    provenance = job.result.provenance
    if provenance is not None and provenance.dataset != "none":
        return provenance.dataset
    return dataset_of(job.plan) if job.plan is not None else "unknown"


def _model(job: CollectedJob) -> str | None:
    provenance = job.result.provenance
    if provenance is not None and provenance.model:
        return provenance.model
    plan = job.plan
    if plan is not None and plan.cases and plan.cases[0].servers:
        return plan.cases[0].servers[0].model
    return None


def source_of(jobs: Iterable[CollectedJob]) -> Source:
    jobs = list(jobs)
    hosts = sorted({j.result.hardware.host for j in jobs if j.result.hardware})
    models = sorted({m for m in (_model(j) for j in jobs) if m})
    return Source(tuple(hosts), ", ".join(models) or None,
                  _merge(_weights(j) for j in jobs), _merge(_dataset(j) for j in jobs),
                  bool(jobs) and all(j.result.provenance is not None
                                     and j.result.provenance.sha_checked for j in jobs))


def job_file(job: CollectedJob) -> str:
    """The job file's path inside the run's artifacts: what the runner was given, when it is a
    plain relative path, else where the GPU workflow puts it (plan/jobs/<job id>.json)."""
    provenance = job.result.provenance
    given = provenance.job_file if provenance is not None else None
    if given and _SAFE_PATH.fullmatch(given) and not given.startswith("/") and ".." not in given:
        return given
    return f"plan/jobs/{_safe(job.result.job_id)}.json"


def reproduce(job: CollectedJob, head_sha: str | None) -> str:
    """One shell line: check out the authorized SHA, then run the same job file on it."""
    result = job.result
    sha = next((s for s in (result.sha, head_sha) if is_full_sha(s)), UNKNOWN_SHA)
    # The variables the model path named, as they were set: without them the same job cannot start.
    named = result.provenance.run_env if result.provenance is not None else {}
    env = "".join(f"{name}={shlex.quote(value)} " for name, value in sorted(named.items())
                  if _ENV_NAME.fullmatch(name))
    return (f"git -C pr checkout --detach {sha} && {env}recipe-bot run --job {job_file(job)} "
            f"--out results/{_safe(result.job_id)} --repo pr")


def _safe(job_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", job_id) or "job"
