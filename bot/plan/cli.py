"""`recipe-bot plan`: which recipes a change touches and the GPU jobs it needs, as a table or JSON."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.console import Console

from bot.core.cli_guard import HELP_OPTIONS
from bot.core.markers import is_full_sha
from bot.core.messages import refusal
from bot.core.commands import UsageError, parse_single
from bot.core.messages import bilingual, msg, plural, to_data, UsageRefusal
from bot.plan.allowed import allowed_at
from bot.plan.held import hold_for_approval
from bot.plan.ix_templates import apply_templates, templates_at
from bot.plan.labels import check_labels, filters_for_labels
from bot.plan.model import PlanError, PlanFilters
from bot.plan.own_planner import PlannerGrant
from bot.plan.outputs import actions_outputs, output_lines, row_files, write_row_files
from bot.plan.planner import plan_change
from bot.plan.render import dump_json, errors_markdown, plan_document, plan_markdown, print_table, write_jobs
from bot.recipes.errors import RecipeError
from bot.recipes.sources import open_source


def _concurrencies(values: tuple[str, ...]) -> tuple[int, ...]:
    out: list[int] = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if not part:
                continue
            if not part.isdigit() or int(part) < 1:
                raise UsageRefusal(msg("Invalid value for %(param)s: %(problem)s", param="--conc",
                                       problem=msg("%(value)s is not a positive integer", value=repr(part))))
            out.append(int(part))
    return tuple(dict.fromkeys(out))


def _labels(values: tuple[str, ...]) -> list[str]:
    return [part.strip() for value in values for part in value.split(",") if part.strip()]


def _planner_grant(sha: str, hours: str) -> PlannerGrant | None:
    """--approved-planner and its cap (both empty: no approval, as the workflow passes an unset input)."""
    if not sha and not hours:
        return None
    sha = sha.lower()
    if not is_full_sha(sha):
        raise UsageRefusal(msg("Invalid value for %(param)s: %(problem)s", param="--approved-planner",
                               problem=msg("%(value)s is not a full commit SHA (40 hex characters)", value=repr(sha))))
    try:
        cap = float(hours)
    except ValueError:
        cap = 0.0
    if not (0 < cap < float("inf")):
        raise UsageRefusal(msg("Invalid value for %(param)s: %(problem)s", param="--planner-max-gpu-hours",
                               problem=msg("%(value)s is not a positive number of GPU-hours", value=repr(hours))))
    return PlannerGrant(sha, cap)


def _command_filters(text: str) -> dict:
    """The filters a /sweep or /e2e command line asks for (parsed by the control plane's grammar)."""

    try:
        command = parse_single(text)
        return command.plan_filters()
    except (UsageError, ValueError) as exc:
        raise UsageRefusal(msg("Invalid value for %(param)s: %(problem)s", param="--command",
                               problem=getattr(exc, "message", str(exc)))) from None


@click.command(name="plan", context_settings=HELP_OPTIONS)
@click.option("--base", "base", metavar="REV", help="Compare with this revision; without it, plan every recipe.")
@click.option("--head", "head", metavar="REV", help="Plan this revision (default: the working tree).")
@click.option("--repo", "repo", type=click.Path(file_okay=False, path_type=Path), default=Path("."),
              show_default=True, help="The repository to plan.")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "markdown"]), default="table",
              show_default=True)
@click.option("--conc", "conc", multiple=True, metavar="N[,N...]", help="Only these concurrencies.")
@click.option("--scope", type=click.Choice(["lowest", "full"]), default="full", show_default=True,
              help="lowest: the lowest concurrency of each arm only.")
@click.option("--recipe", "recipes", multiple=True, metavar="GLOB",
              help="Plan these recipes (globs), touched or not.")
@click.option("--case", "cases", multiple=True, metavar="GLOB", help="Only these E2E cases.")
@click.option("--kind", type=click.Choice(["all", "sweep", "e2e"]), default="all", show_default=True)
@click.option("--command", "command", metavar="TEXT",
              help="A PR command whose arguments narrow the plan, e.g. '/sweep tiny-* --scope lowest'.")
@click.option("--label", "labels", multiple=True, metavar="LABEL",
              help="InferenceX sweep labels (sweep-enabled, full-sweep-fail-fast, evals-only, ...).")
@click.option("--canary/--no-canary", default=None, help="Run the lowest-concurrency point first (default: auto).")
@click.option("--fail-fast", is_flag=True, help="Stop a matrix at its first failure.")
@click.option("--evals-only", is_flag=True, help="Only the accuracy gates.")
@click.option("--no-accuracy", is_flag=True, help="No accuracy gates.")
@click.option("--compare", is_flag=True, help="E2E suites' compare: arms side by side in one job (only those).")
@click.option("--no-pack", is_flag=True, help="One server launch per point, even where packing is allowed.")
@click.option("--allowed-from", "allowed_from", metavar="REV",
              help="Fail unless every runner label and image is allowed by this revision (the default branch).")
@click.option("--approved-runner-labels", "approved_labels", multiple=True, metavar="LABEL[,LABEL...]",
              help="With --allowed-from: runner labels this PR adds to configs/runners.yaml that their code owner "
                   "approved for this head (the control plane passes them); rows on other new labels are held.")
@click.option("--approved-planner", "approved_planner", metavar="SHA", default="",
              help="The head commit whose own InferenceX planner a code owner approved (/approve-planner; the "
                   "control plane passes it; empty: none). For exactly that head the head's tools plan the rows.")
@click.option("--planner-max-gpu-hours", "planner_max_gpu_hours", metavar="N", default="",
              help="With --approved-planner: the GPU-hours the approval allows; rows over it stay held.")
@click.option("--jobs-dir", type=click.Path(file_okay=False, path_type=Path),
              help="Write each job as DIR/<job_id>.json; the JSON then names the files.")
@click.option("--actions-outputs", "outputs_file", type=click.Path(dir_okay=False, path_type=Path),
              help="With --jobs-dir: append the GPU workflow's matrix outputs (name=value lines) to this file "
                   "($GITHUB_OUTPUT); a label with more jobs than one matrix holds fails the plan.")
def plan_cmd(base: str | None, head: str | None, repo: Path, fmt: str, conc: tuple[str, ...], scope: str,
             recipes: tuple[str, ...], cases: tuple[str, ...], kind: str, command: str | None,
             labels: tuple[str, ...], canary: bool | None, fail_fast: bool, evals_only: bool, no_accuracy: bool,
             no_pack: bool, jobs_dir: Path | None, allowed_from: str | None = None, compare: bool = False,
             outputs_file: Path | None = None, approved_labels: tuple[str, ...] = (), approved_planner: str = "",
             planner_max_gpu_hours: str = "") -> None:
    """Show which recipes a change touches and the GPU jobs it needs."""
    if outputs_file is not None and jobs_dir is None:
        raise UsageRefusal(msg("--actions-outputs needs --jobs-dir (the matrices name job files)"))
    outputs = None
    grant = _planner_grant(approved_planner.strip(), planner_max_gpu_hours.strip())
    try:
        filters = PlanFilters(
            recipes=recipes, cases=cases, conc=_concurrencies(conc), scope=scope, kind=kind,
            canary=canary, fail_fast=fail_fast, evals_only=evals_only, accuracy=not no_accuracy, pack=not no_pack,
            compare=compare,
        )
        if command:
            filters = filters.model_copy(update=_command_filters(command))
        if labels:
            check_labels(labels)
            filters = filters_for_labels(labels, filters)
        plan = plan_change(repo, base=base, head=head, filters=filters, planner=grant)
        if allowed_from is not None:
            hold_for_approval(plan, repo, base, head, allowed_at(repo, allowed_from), allowed_from,
                              frozenset(_labels(approved_labels)))
        # InferenceX rows run through the benchmark templates of the revision the GPU workflow runs
        templates = templates_at(open_source(repo, allowed_from or head)) if plan.inferencex is not None else None
        apply_templates(plan, templates)
        if outputs_file is not None:
            outputs = actions_outputs(plan, templates)
    except RecipeError as exc:
        if fmt == "json":
            click.echo(json.dumps({"errors": [p.as_dict() for p in exc.problems]}, indent=2))
        click.echo(errors_markdown(exc.problems), err=True)
        sys.exit(1)
    except PlanError as exc:
        if fmt == "json":
            click.echo(json.dumps({"errors": [{"message": to_data(exc.message), "accepted": exc.accepted}]}, indent=2))
        raise refusal(exc.message) from None
    job_files = write_jobs(plan, jobs_dir) if jobs_dir is not None else None
    rows = row_files(plan) if jobs_dir is not None else {}
    if jobs_dir is not None:  # one job file per InferenceX row, runnable as it is by `recipe-bot run --job F`
        write_row_files(rows, jobs_dir)
    if outputs is not None:
        with outputs_file.open("a", encoding="utf-8") as stream:
            stream.write(output_lines(outputs))
    if fmt == "json":
        row_paths = {job_id: str(jobs_dir / f"{job_id}.json") for job_id in rows} if jobs_dir is not None else None
        click.echo(dump_json(plan_document(plan, job_files, row_paths)), nl=False)
    elif fmt == "markdown":
        click.echo(plan_markdown(plan))
    else:
        out = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
        print_table(plan, out)
        if job_files is not None:
            written = len(job_files) + len(rows)
            written_line = plural("%(count)s job file written to %(folder)s",
                                  "%(count)s job files written to %(folder)s", written, folder=str(jobs_dir))
            out.print(bilingual(written_line), markup=False)
