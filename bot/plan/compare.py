"""A suite's `compare:` as one job: both arms on the same host, the same load points and repeats."""
from __future__ import annotations

from bot.core.jobs import Case, Job
from bot.core.messages import msg
from bot.plan.expand import Expanded, server_specs
from bot.plan.ids import job_id, slurm_spec
from bot.plan.model import PlanFilters
from bot.recipes.catalog import CatalogEntry
from bot.recipes.schema import E2ESuite, RunnerSpec


def expand_compare(entry: CatalogEntry, runner: RunnerSpec | None, filters: PlanFilters) -> Expanded:
    """One job holding both arms, each a server launch running every point `repeats` times; GPU-hours
    count every GPU each arm holds for as long as it runs, the job's GPUs are all the host GPUs it uses."""
    suite: E2ESuite = entry.recipe  # type: ignore[assignment]
    spec = suite.compare
    assert spec is not None
    concs = [c for c in spec.concurrency if not filters.conc or c in filters.conc] or spec.concurrency[:1]
    cpu_runner = runner is not None and runner.gpus == 0
    cases, gpu_hours, seconds, devices = [], 0.0, 0.0, set()
    for arm in spec.arms:
        points = [{"point_id": f"{arm.name}-c{c}", "concurrency": c, "isl": spec.isl, "osl": spec.osl,
                   "num_prompts": spec.num_prompts, "num_warmups": spec.num_warmups, "repeats": spec.repeats}
                  for c in concs]
        cases.append(Case.model_validate({
            "name": arm.name, "servers": [s.model_dump() for s in server_specs(suite, arm)], "points": points,
            "required_env": list(dict.fromkeys([*suite.required_env, *arm.required_env])),
            "unset_env": list(dict.fromkeys([*suite.unset_env, *arm.unset_env])), "devices_env": suite.devices_env}))
        arm_s = suite.estimate.startup_s + suite.estimate.point_s * spec.repeats * len(concs)
        seconds += arm_s
        held = {d for s in arm.servers for d in (s.devices or [])}
        devices |= held
        gpu_hours += (0 if cpu_runner else len(held)) * arm_s / 3600.0
    gpus = 0 if cpu_runner else len(devices)
    job = Job(job_id=job_id(suite.name, "compare"), kind="e2e", recipe=suite.name,
              recipe_fingerprint=entry.fingerprint, runner_label=suite.runner, gpus=gpus, cases=cases,
              estimated_gpu_hours=round(gpu_hours, 4), timeout_s=suite.timeout_s or max(1800.0, 2.0 * seconds),
              estimate_s=seconds, fail_fast=False, slurm=slurm_spec(runner, gpus),
              compare_arms=[arm.name for arm in spec.arms], manual=suite.manual)
    notes = [msg("%(suite)s: compare %(first)s against %(second)s on one host, concurrency %(concs)s, %(repeats)s "
                 "repeat(s) each", suite=suite.name, first=spec.arms[0].name, second=spec.arms[1].name,
                 concs=", ".join(map(str, concs)), repeats=spec.repeats)]
    return Expanded(jobs=[job], points=len(concs) * 2, packed_launches=2, unpacked_launches=2, notes=notes)
