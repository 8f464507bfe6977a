"""The merge gate at report time: this run's results merged with every earlier run on the same head SHA.

The earlier runs' `plan` and `result-*` artifacts are fetched through the API (as the baseline is),
each run is judged against the same baseline and thresholds, and bot.report.gate merges them.
"""
from __future__ import annotations

import dataclasses
import os
import pathlib
from collections.abc import Mapping, Sequence

import click

from bot.core import i18n
from bot.core.cli_guard import HELP_OPTIONS
from bot.core.config import ConfigError, load_config
from bot.core.github import GitHubClient, GitHubError
from bot.core.markers import parse_run_title, started_by_bot
from bot.core.messages import Refusal, bilingual, msg
from bot.core.stage_markers import Ack
from bot.report import build, collect, gate
from bot.report.compare import Baseline
from bot.report.fetch import ArtifactRejected, BaselineFetchError, RESULT_ARTIFACT_PREFIX, extract_safely
from bot.report.model import Meta
from bot.report.post import ACTIONS_BOT

PLAN_ARTIFACT = "plan"
LATEST = 1 << 62  # a run without GITHUB_RUN_ID (a local report) counts as the newest
# Written into a fetched run's folder while that run is still going: its jobs not yet reported are not lost.
IN_PROGRESS = "in-progress"


@dataclasses.dataclass(frozen=True)
class GateResult:
    verdict: gate.GateVerdict
    context: dict
    title: str
    section: str  # bilingual Markdown

    @property
    def check_status(self) -> str:
        return "in_progress" if self.verdict.conclusion == "pending" else "completed"

    @property
    def check_conclusion(self) -> str | None:
        return None if self.verdict.conclusion == "pending" else self.verdict.conclusion


def current_run_id(environ: Mapping[str, str] | None = None) -> int:
    value = (os.environ if environ is None else environ).get("GITHUB_RUN_ID", "")
    return int(value) if value.isdigit() else LATEST


def fetch_prior_runs(client, *, workflow: str, sha: str, dest: pathlib.Path, bot_login: str,
                     default_branch: str, exclude_run_id: int | None = None,
                     skipped: list[dict] | None = None) -> list[tuple[int, pathlib.Path]]:
    """Download plan and results of every run of `workflow` that the bot started for `sha`.

    A run a writer dispatched by hand never counts (markers.started_by_bot). A run still going counts
    with what it has uploaded so far (folder marked IN_PROGRESS): a narrow run reporting while a failing
    run finishes must not drop that run's failures from the verdict. An artifact that cannot be used
    (not a zip, a member outside its folder, past the size limits) is left out and described in
    `skipped`; the rest of that run still counts (a job whose result was in it is then lost or not
    measured, never passed)."""
    fetched = []
    for run in client.list_workflow_runs(workflow, pages=3):
        title = parse_run_title(run.display_title)
        if title is None or title.sha != sha or run.id == exclude_run_id:
            continue
        if not started_by_bot(run, bot_login=bot_login, default_branch=default_branch, workflow=workflow):
            continue
        folder = dest / f"run-{run.id}"
        if run.active:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / IN_PROGRESS).write_text(run.status + "\n", encoding="utf-8")
        for artifact in client.list_run_artifacts(run.id):
            if artifact.expired:
                continue
            if artifact.name == PLAN_ARTIFACT:
                target = folder / "plan"
            elif artifact.name.startswith(RESULT_ARTIFACT_PREFIX):
                target = folder / "results" / artifact.name
            else:
                continue
            try:
                extract_safely(client.download_artifact(artifact.id), target)
            except ArtifactRejected as exc:
                if skipped is not None:
                    skipped.append({"run": run.id, "artifact": artifact.name, "problem": exc.message})
        fetched.append((run.id, folder))
    return fetched


def outcomes_of_folder(folder: pathlib.Path, run_id: int, sha: str, baseline: Baseline,
                       thresholds: Mapping[str, float]) -> list[gate.Outcome]:
    """One earlier run, judged as its own report would judge it (unreadable parts are failures)."""
    plan_file = folder / "plan" / "plan.json"
    results = folder / "results"
    results.mkdir(parents=True, exist_ok=True)
    try:
        plan = collect.load_plan(plan_file) if plan_file.is_file() else []
    except collect.InputError:
        plan = []
    collection = collect.collect(results, plan, sha)
    if (folder / IN_PROGRESS).is_file():  # a job of a run still going that has not reported is not lost yet
        collection = dataclasses.replace(collection, jobs=tuple(j for j in collection.jobs if j.source is not None))
    report = build.build_report(collection, baseline, thresholds, Meta(sha=sha))
    return gate.outcomes_of(collection, report, run_id, sha)


def load_required(path: pathlib.Path | None) -> list:
    """The required plans: one file, or every JSON file of a folder, each loaded on its own (two
    required commands may plan the same job id differently, say /sweep and /sweep --scope lowest)."""
    if path is None or not path.exists():
        return []
    files = sorted(path.rglob("*.json")) if path.is_dir() else [path]
    return [job for file in files for job in collect.load_plan(file)]


def render(verdict: gate.GateVerdict, *, sha: str, commands: Sequence[str] = (), bot_login: str | None = None,
           **extra: object) -> tuple[dict, str, str]:
    """The gate's title and bilingual section. `bot_login`: who posts it; with the workflows' GITHUB_TOKEN
    (github-actions[bot]) the section says plainly that any write collaborator's workflow can forge it."""
    ctx = {**gate.context(verdict, sha=sha, commands=commands), **extra,
           "forgeable_identity": bot_login == ACTIONS_BOT}
    title = " / ".join(i18n.render("gate/title", lang, **ctx) for lang in i18n.LANGUAGES)
    return ctx, title, i18n.render_bilingual("gate/section", **ctx)


def evaluate(*, current: list[gate.Outcome], required_plan: list, sha: str,
             prior: list[gate.Outcome] = (), acks: list[Ack] = (),
             commands: Sequence[str] = (), skipped: Sequence[dict] = (), bot_login: str | None = None) -> GateResult:
    verdict = gate.decide([*prior, *current], gate.required_keys(required_plan), sha, acks)
    ctx, title, section = render(verdict, sha=sha, commands=commands, skipped_artifacts=list(skipped),
                                 bot_login=bot_login)
    return GateResult(verdict, ctx, title, section)


def for_report(collection, report, *, sha: str, pr: int | None, required_dir: pathlib.Path | None,
               baseline: Baseline, thresholds: Mapping[str, float], workflow: str,
               out_dir: pathlib.Path, bot_login: str | None, commands: Sequence[str],
               client=None) -> GateResult:
    """What `recipe-bot report --gate` posts: this run plus every earlier run on `sha`."""
    run_id = current_run_id()
    current = gate.outcomes_of(collection, report, run_id, sha)
    required = load_required(required_dir)
    prior: list[gate.Outcome] = []
    acks: list[Ack] = []
    skipped: list[dict] = []  # artifacts of earlier runs that could not be used: named on the check
    if client is not None:
        default_branch = client.default_branch()
        for prior_id, folder in fetch_prior_runs(client, workflow=workflow, sha=sha, dest=out_dir / "gate-runs",
                                                 bot_login=bot_login or "", default_branch=default_branch,
                                                 exclude_run_id=run_id, skipped=skipped):
            prior += outcomes_of_folder(folder, prior_id, sha, baseline, thresholds)
        if pr is not None and bot_login:
            acks = gate.read_acks(client.list_issue_comments(pr), bot_login, sha)
    return evaluate(current=current, required_plan=required, sha=sha, prior=prior, acks=acks,
                    commands=commands, skipped=skipped, bot_login=bot_login)


def required_commands(config: object | None) -> list[str]:
    gate_config = getattr(config, "gate", None)
    return list(gate_config.required) if gate_config is not None else ["/sweep", "/e2e"]


def cli_hook(collection, report, meta: Meta, *, required_dir: pathlib.Path | None, baseline: Baseline,
             thresholds: Mapping[str, float], workflow: str, out_dir: pathlib.Path,
             bot_login: str | None, config: object | None, use_github: bool) -> GateResult:
    """`recipe-bot report --gate`: reads GitHub only when it will post (GITHUB_* as in Actions)."""

    if not meta.sha:
        raise Refusal(msg("--gate needs the head SHA (--sha, or results that carry it)"))
    client = None
    if use_github:
        environ = dict(os.environ)
        if meta.repository:
            environ["GITHUB_REPOSITORY"] = meta.repository
        client = GitHubClient.from_env(environ=environ)
        # Whose runs and checks count: the configured login, else who this token acts as (GITHUB_TOKEN,
        # which may not read GET /user, acts as github-actions[bot]).
        bot_login = bot_login or getattr(config, "bot_login", None)
        if not bot_login:
            try:
                bot_login = client.authenticated_login()
            except GitHubError:
                bot_login = ACTIONS_BOT
    try:
        result = for_report(collection, report, sha=meta.sha, pr=meta.pr, required_dir=required_dir,
                            baseline=baseline, thresholds=thresholds, workflow=workflow, out_dir=out_dir,
                            bot_login=bot_login, commands=required_commands(config), client=client)
        for one in result.context.get("skipped_artifacts", []):
            click.echo(f"earlier run {one['run']}: artifact {one['artifact']!r} skipped: {one['problem']}", err=True)
        return result
    except (GitHubError, BaselineFetchError) as exc:
        raise Refusal(msg("cannot read the earlier runs of %(sha)s: %(failure)s", sha=meta.sha[:12],
                          failure=getattr(exc, "message", str(exc)))) from None
    except collect.InputError as exc:
        raise Refusal(msg("--required: %(problem)s", problem=exc.args[0])) from None


@click.command("required-commands", context_settings=HELP_OPTIONS)
@click.argument("config_yaml", type=click.Path(dir_okay=False, path_type=pathlib.Path))
def required_commands_cmd(config_yaml: pathlib.Path) -> None:
    """Print the commands the merge gate requires (gate.required of CONFIG_YAML), one a line; no file: the defaults."""

    try:
        config = load_config(config_yaml.read_text(encoding="utf-8"), str(config_yaml)) if config_yaml.is_file() else None
    except ConfigError as exc:
        click.echo(bilingual(exc.located), err=True)
        raise SystemExit(1) from None
    for line in required_commands(config):
        click.echo(line)
