"""Recipes to jobs: expand the search space, pack points that can share a server launch, attach gates."""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field

from bot import engines
from bot.core.messages import Message, msg
from bot.core.jobs import AccuracySpec, Case, CommandSpec, Job, SearchSpec, ServerSpec
from bot.engines import Parallelism
from bot.plan.ids import check_globs, job_id, slurm_spec
from bot.plan.limits import chunk_sizes, limit_for
from bot.plan.model import PlanFilters
from bot.recipes.catalog import CatalogEntry
from bot.recipes.schema import Accuracy, Arm, E2ESuite, RunnerSpec, SweepRecipe

# The note of a recipe none of whose points --conc names (bot/plan/render.py tells the plan's reader so).
NO_POINT_MATCHES = "%(recipe)s: no point matches --conc %(conc)s (its concurrencies: %(offered)s)"

__all__ = ["Expanded", "check_globs", "expand", "job_id", "slurm_spec"]  # ids live in bot.plan.ids


def parallel_args(engine: str, arm: Arm) -> list[str]:
    """The engine flags for an arm's parallelism (the rest of its flags are written in the recipe)."""
    return engines.get(engine).parallel_args(
        Parallelism(tp=arm.tp, pp=arm.pp, dp=arm.dp, ep=arm.ep, dp_attn=arm.dp_attn))


def accuracy_spec(gate: Accuracy) -> AccuracySpec:
    return AccuracySpec(
        task=gate.task, num_samples=gate.num_samples, num_shots=gate.num_shots, threshold=gate.threshold,
        metric=gate.metric, max_tokens=gate.max_tokens, data_path=gate.data_path,
    )


@dataclass
class Expanded:
    """The jobs of one recipe, and what its points would cost packed and unpacked."""

    jobs: list[Job] = field(default_factory=list)
    points: int = 0
    packed_launches: int = 0
    unpacked_launches: int = 0
    notes: list[Message] = field(default_factory=list)


def _arm_concurrencies(recipe: SweepRecipe, arm: Arm, filters: PlanFilters) -> list[int]:
    # A search-only arm narrowed by --scope lowest or --conc is one plain point at the range's low end.
    values = recipe.arm_concurrency(arm) or ([arm.search.range[0]] if arm.search else [])
    if filters.conc:
        values = [c for c in values if c in filters.conc]
    if filters.scope == "lowest" and values:
        values = values[:1]
    return values


class _SweepBuilder:
    def __init__(self, entry: CatalogEntry, runner: RunnerSpec | None, filters: PlanFilters) -> None:
        self.entry = entry
        self.recipe: SweepRecipe = entry.recipe  # type: ignore[assignment]
        self.runner = runner
        self.filters = filters
        est = self.recipe.estimate
        self.point_s = (self.recipe.workload.duration_s or est.point_s) * self.recipe.workload.repeats

    # Plain dicts, validated once per job by Job.model_validate: pydantic-core builds the nested
    # models far faster than one constructor call per point (bench/bench_planner.py).
    def server(self, arm: Arm, conc: int | None, drop_env: list[str] = ()) -> dict:
        recipe, launch = self.recipe, self.recipe.launch
        args = [*parallel_args(recipe.engine.name, arm), *launch.args, *arm.args]
        if launch.depends_on_concurrency and conc is not None:
            args = [a.replace("{concurrency}", str(conc)) for a in args]
        env = {k: v for k, v in {**launch.env, **arm.env}.items() if k not in drop_env}
        return {
            "engine": recipe.engine.name, "model": recipe.model.path, "served_model_name": recipe.model.served_name,
            "args": args, "env": env, "launch_script": launch.script, "devices": launch.devices,
            "startup_timeout_s": launch.startup_timeout_s, "image": recipe.engine.image,
        }

    def point(self, arm: Arm, conc: int) -> dict:
        w = self.recipe.workload
        return {
            "point_id": f"{arm.label}-c{conc}", "concurrency": conc, "dataset": w.dataset, "isl": w.isl,
            "osl": w.osl, "trace": w.trace, "num_prompts": w.prompts(conc), "num_warmups": w.warmups(conc),
            "random_range_ratio": w.random_range_ratio, "extra_args": w.client_args, "repeats": w.repeats,
            **({"client": w.client} if w.client else {}),
        }

    def job(self, ident: str, arm: Arm, points: list[dict], accuracy: AccuracySpec | None,
            server: dict, case_name: str) -> Job:
        recipe = self.recipe
        gpus = 0 if self.runner is not None and self.runner.gpus == 0 else arm.gpus  # a CPU runner
        case = {
            "name": case_name, "servers": [server], "points": points, "accuracy": accuracy,
            "required_env": recipe.required_env, "unset_env": recipe.unset_env,
        }
        seconds = recipe.estimate.startup_s + self.point_s * len(points)
        seconds += recipe.estimate.accuracy_s if accuracy else 0.0
        limit_s, source = limit_for(self.runner.slurm.time_limit if self.runner and self.runner.slurm else None)
        return Job.model_validate({
            "job_id": ident, "kind": "sweep", "recipe": recipe.name, "recipe_fingerprint": self.entry.fingerprint,
            "runner_label": recipe.runner, "gpus": gpus, "cases": [case],
            "estimated_gpu_hours": round(gpus * seconds / 3600.0, 4),
            "timeout_s": min(recipe.timeout_s or max(1800.0, 2.0 * seconds), limit_s),
            "estimate_s": seconds, "limit_s": limit_s, "limit_source": source,
            "fail_fast": self.filters.fail_fast or recipe.fail_fast, "slurm": slurm_spec(self.runner, gpus),
        })

    def search_job(self, out: Expanded, arm: Arm, gate: AccuracySpec | None) -> None:
        """One launch whose runner chooses the points (bot/runner/search.py); the case carries the
        spec and one template point at the lowest concurrency, with the workload's per-point rules."""
        recipe, search, w = self.recipe, arm.search, self.recipe.workload
        lo = search.range[0]
        spec = SearchSpec(range=search.range, target=search.target, budget=search.budget,
                          tolerance=search.tolerance, bound=search.bound.model_dump() if search.bound else None,
                          prompts_per_concurrency=w.prompts_per_concurrency, min_prompts=w.min_prompts,
                          warmups_per_concurrency=w.warmups_per_concurrency)
        template = {**self.point(arm, lo), "point_id": f"{arm.label}-search"}
        job = self.job(job_id(recipe.name, arm.label, "search"), arm, [template], gate,
                       self.server(arm, None), f"{arm.label}-search")
        # The estimate counts the whole budget, not the one template point.
        extra = self.point_s * (search.budget - 1)
        seconds = (job.estimate_s or 0.0) + extra
        job.cases[0].search = spec
        job.estimate_s = seconds
        job.estimated_gpu_hours = round(job.gpus * seconds / 3600.0, 4)
        if recipe.timeout_s is None:
            job.timeout_s = min(max(1800.0, 2.0 * seconds), job.limit_s or float("inf"))
        out.jobs.append(job)
        out.points += search.budget
        out.packed_launches += 1
        out.unpacked_launches += search.budget
        out.notes.append(msg("%(recipe)s %(arm)s: search for the %(target)s in concurrency %(lo)s..%(hi)s, at most "
                             "%(budget)s points on one launch", recipe=recipe.name, arm=arm.label,
                             target=search.target, lo=search.range[0], hi=search.range[1], budget=search.budget))

    def packed_jobs(self, out: Expanded, arm: Arm, concs: list[int], gate: AccuracySpec | None) -> None:
        """One launch for the arm's points, or as many as it takes for each to fit its time limit."""
        recipe = self.recipe
        limit_s, source = limit_for(self.runner.slurm.time_limit if self.runner and self.runner.slurm else None)
        tail = recipe.estimate.accuracy_s if gate else 0.0
        sizes = chunk_sizes(len(concs), recipe.estimate.startup_s, self.point_s, limit_s, tail)
        if len(sizes) > 1:
            out.packed_launches += len(sizes) - 1
            out.notes.append(msg(
                "%(recipe)s %(arm)s: %(points)s packed points need %(seconds)s s, over the %(limit)s s limit "
                "(%(source)s): split into %(launches)s launches of %(sizes)s points", recipe=recipe.name,
                arm=arm.label, points=len(concs),
                seconds=f"{recipe.estimate.startup_s + self.point_s * len(concs) + tail:.0f}",
                limit=f"{limit_s:.0f}", source=source, launches=len(sizes), sizes=", ".join(map(str, sizes))))
        start = 0
        for index, size in enumerate(sizes):
            part = concs[start:start + size]
            start += size
            last = index == len(sizes) - 1
            suffix = [f"part{index + 1}of{len(sizes)}"] if len(sizes) > 1 else []
            name = arm.label + (f"-part{index + 1}" if len(sizes) > 1 else "")
            out.jobs.append(self.job(job_id(recipe.name, arm.label, *suffix), arm,
                                     [self.point(arm, c) for c in part], gate if last else None,
                                     self.server(arm, None), name))

    def build(self) -> Expanded:
        recipe, filters = self.recipe, self.filters
        out = Expanded()
        arms = [(arm, _arm_concurrencies(recipe, arm, filters)) for arm in recipe.search_space]
        # An arm searches when it has nothing else to run, or when `/sweep --search` asks.
        narrowed = filters.scope == "lowest" or bool(filters.conc)
        searching = {arm.label for arm, concs in arms if arm.search is not None and (
            filters.search or (not recipe.arm_concurrency(arm) and not narrowed))}
        arms = [(arm, [arm.search.range[1]] if arm.label in searching else concs) for arm, concs in arms]
        arms = [(arm, concs) for arm, concs in arms if concs]
        if not arms:
            offered = sorted({c for arm in recipe.search_space for c in recipe.arm_concurrency(arm)})
            out.notes.append(msg("%(recipe)s: no point matches --conc %(conc)s (its concurrencies: %(offered)s)",
                                 recipe=recipe.name, conc=",".join(map(str, filters.conc)),
                                 offered=", ".join(map(str, offered))))
            return out
        gate = recipe.accuracy if filters.accuracy else None
        gated: set[str] = set()
        if gate is not None:
            if gate.at == "highest" and not filters.all_evals:
                gated = {max(arms, key=lambda item: item[1][-1])[0].label}
            else:
                gated = {arm.label for arm, _ in arms}
        packed = filters.pack and not recipe.launch.depends_on_concurrency
        for arm, concs in arms:
            with_gate = arm.label in gated
            spec = accuracy_spec(gate) if with_gate else None
            same_launch_gate = spec if with_gate and not gate.separate_launch else None
            if arm.label in searching and not filters.evals_only:
                self.search_job(out, arm, same_launch_gate)
            elif not filters.evals_only:
                out.points += len(concs)
                out.packed_launches += 1 if not recipe.launch.depends_on_concurrency else len(concs)
                out.unpacked_launches += len(concs)
                if packed:
                    self.packed_jobs(out, arm, concs, same_launch_gate)
                else:
                    for conc in concs:
                        gate_here = same_launch_gate if conc == concs[-1] else None
                        out.jobs.append(self.job(
                            job_id(recipe.name, arm.label, f"c{conc}"), arm, [self.point(arm, conc)], gate_here,
                            self.server(arm, conc), f"{arm.label}-c{conc}",
                        ))
            needs_own_launch = with_gate and (gate.separate_launch or filters.evals_only)
            if needs_own_launch:
                drop = gate.drop_env if gate.separate_launch else []
                out.jobs.append(self.job(job_id(recipe.name, arm.label, "gsm8k"), arm, [], spec,
                                         self.server(arm, concs[-1], drop), f"{arm.label}-gsm8k"))
                out.packed_launches += 1
                out.unpacked_launches += 1
        return out


def expand_sweep(entry: CatalogEntry, runner: RunnerSpec | None, filters: PlanFilters) -> Expanded:
    return _SweepBuilder(entry, runner, filters).build()


def expand_e2e(entry: CatalogEntry, runner: RunnerSpec | None, filters: PlanFilters) -> Expanded:
    """An E2E suite is one job (its cases in order, they may share devices), and with `/e2e --compare`
    (or the suite's compare.default) one more: both compare: arms on one host (bot/plan/compare.py)."""
    suite: E2ESuite = entry.recipe  # type: ignore[assignment]
    out = Expanded()
    if suite.compare is not None and (filters.compare or suite.compare.default):
        from bot.plan.compare import expand_compare  # here, not at the top: bot/plan/compare.py imports this module

        out = expand_compare(entry, runner, filters)
    if filters.compare:
        if suite.compare is None:
            out.notes.append(msg("%(suite)s: --compare asked, but the suite has no compare: section", suite=suite.name))
        return out
    cases_out = _expand_cases(entry, runner, filters)
    cases_out.jobs += out.jobs
    cases_out.notes += out.notes
    cases_out.points += out.points
    cases_out.packed_launches += out.packed_launches
    cases_out.unpacked_launches += out.unpacked_launches
    return cases_out


def command_spec(suite: E2ESuite, case) -> CommandSpec:
    """A harness suite's case: the repository's command with the case's node id. `launch:` is for the
    servers recipe-bot starts (compare arms); the harness gets only its own env and the case's."""
    harness = suite.harness
    return CommandSpec(
        argv=harness.argv, cwd=harness.cwd, env={**harness.env, **case.env},
        pythonpath=harness.pythonpath, pytest=harness.pytest, nodes=[case.node],
        expect_passed=case.expect_passed or 1, setup=harness.setup, ports=harness.ports, keep=harness.keep,
        plugin=harness.plugin, devices=list(range(harness.devices)),
        opt_in=harness.opt_in.model_dump() if harness.opt_in else None)


def server_specs(suite: E2ESuite, case) -> list[ServerSpec]:
    return [
        ServerSpec(
            name=s.name, engine=suite.engine.name, model=suite.model.path,
            served_model_name=suite.model.served_name, args=[*suite.launch.args, *s.args],
            env={**suite.launch.env, **case.env, **s.env}, launch_script=s.launch_script or suite.launch.script,
            devices=list(s.devices) if s.devices is not None else None, port=s.port,
            startup_timeout_s=s.startup_timeout_s or suite.launch.startup_timeout_s,
            image=suite.engine.image, ready_check=s.ready_check,
        )
        for s in case.servers
    ]


def _expand_cases(entry: CatalogEntry, runner: RunnerSpec | None, filters: PlanFilters) -> Expanded:
    suite: E2ESuite = entry.recipe  # type: ignore[assignment]
    cases = suite.cases
    suite_named = any(fnmatch.fnmatchcase(suite.name, g) for g in filters.cases)
    if filters.cases and not suite_named:
        cases = [c for c in cases if any(fnmatch.fnmatchcase(c.name, g) for g in filters.cases)]
        if not cases:
            return Expanded(notes=[msg("%(suite)s: no case matches %(globs)s", suite=suite.name,
                                       globs=" ".join(filters.cases))])
    out_cases = []
    seconds = 0.0
    for case in cases:
        if suite.harness is not None:  # the harness runs its own GSM8K check
            out_cases.append(Case(
                name=case.name, command=command_spec(suite, case), devices_env=suite.devices_env,
                required_env=list(dict.fromkeys([*suite.required_env, *case.required_env])),
                unset_env=list(dict.fromkeys([*suite.unset_env, *case.unset_env]))))
            seconds += suite.estimate.startup_s + suite.estimate.accuracy_s
            continue
        gate = (case.accuracy or suite.accuracy) if filters.accuracy else None
        servers = server_specs(suite, case)
        out_cases.append(Case(
            name=case.name, servers=servers, points=[], accuracy=accuracy_spec(gate) if gate else None,
            required_env=list(dict.fromkeys([*suite.required_env, *case.required_env])),
            unset_env=list(dict.fromkeys([*suite.unset_env, *case.unset_env])), devices_env=suite.devices_env,
        ))
        seconds += suite.estimate.startup_s + (suite.estimate.accuracy_s if gate else 0.0)
    gpus = suite.harness.devices if suite.harness is not None else max(case.gpus for case in cases)
    job = Job(
        job_id=job_id(suite.name), kind="e2e", recipe=suite.name, recipe_fingerprint=entry.fingerprint,
        runner_label=suite.runner, gpus=gpus, cases=out_cases,
        estimated_gpu_hours=round(gpus * seconds / 3600.0, 4),
        timeout_s=suite.timeout_s or max(1800.0, 2.0 * seconds),
        fail_fast=filters.fail_fast or suite.fail_fast, slurm=slurm_spec(runner, gpus), manual=suite.manual,
    )
    return Expanded(jobs=[job], packed_launches=len(cases), unpacked_launches=len(cases))


def expand(entry: CatalogEntry, runner: RunnerSpec | None, filters: PlanFilters) -> Expanded:
    if isinstance(entry.recipe, SweepRecipe):
        return expand_sweep(entry, runner, filters)
    return expand_e2e(entry, runner, filters)
