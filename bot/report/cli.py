"""`recipe-bot report`: collect results, compare with the base branch, render, write and post."""
from __future__ import annotations

import collections
import dataclasses
import json
import os
import pathlib
import tempfile
from typing import TYPE_CHECKING

import click
import orjson

from bot.core import i18n
from bot.core.cli_guard import HELP_OPTIONS
from bot.core.config import ConfigError, load_config
from bot.core.github import GitHubClient, GitHubError
from bot.core import stage_markers
from bot.core.messages import Message, Refusal, msg, refusal
from bot.report import arms, build, chart, collect, compare, failure_groups, gate_runs, post, render
from bot.report.fetch import BaselineFetchError, fetch_baseline
from bot.report.model import Meta
from bot.report.options import ReportOptions

if TYPE_CHECKING:
    from bot.report.model import Report

DEFAULT_CONFIG = pathlib.Path(".github/recipe-bot.yaml")


def _write(path: pathlib.Path, data: bytes | str) -> None:
    """Write through a temporary file in the same folder, so no half-written file is left."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(raw)
        os.chmod(temporary, 0o644)  # mkstemp makes 0600; these files are for people to read
        os.replace(temporary, path)
    except BaseException:
        pathlib.Path(temporary).unlink(missing_ok=True)
        raise


def _english(value: object) -> str:
    """summary.json gives a catalogue message (a skipped artifact's problem) as its English text, as before."""
    if isinstance(value, Message):
        return str(value)
    raise TypeError(f"cannot serialise {type(value).__name__}")


def _json_default(value: object) -> object:
    """What orjson does not write itself (it writes dataclasses, tuples and enums field by field)."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"cannot serialise {type(value).__name__}")


def _load_thresholds(config_path: pathlib.Path | None) -> tuple[dict[str, float], object | None]:
    path = config_path or (DEFAULT_CONFIG if DEFAULT_CONFIG.is_file() else None)
    if path is None:
        return compare.thresholds_from(None), None

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise Refusal(msg("%(path)s: cannot read the config: %(why)s", path=path, why=exc.strerror)) from None
    try:
        config = load_config(text, str(path))
    except ConfigError as exc:
        raise Refusal(exc.located) from None
    try:
        return compare.thresholds_from(config), config
    except collect.InputError as exc:
        raise Refusal(msg("%(path)s: %(problem)s", path=path, problem=exc.args[0])) from None


def _most_common(values: list[object]) -> object | None:
    present = [v for v in values if v is not None]
    return collections.Counter(present).most_common(1)[0][0] if present else None


def _run_url(explicit: str | None) -> str | None:
    if explicit:
        return explicit
    env = os.environ
    if env.get("GITHUB_RUN_ID") and env.get("GITHUB_REPOSITORY"):
        server = env.get("GITHUB_SERVER_URL") or "https://github.com"
        return f"{server}/{env['GITHUB_REPOSITORY']}/actions/runs/{env['GITHUB_RUN_ID']}"
    return None


def summary_of(report: Report, rendered: render.Rendered) -> dict:
    counts = report.counts
    return {
        "verdict": report.verdict.conclusion,
        "reasons": [dataclasses.asdict(r) for r in report.verdict.reasons],
        "counts": {"jobs": counts.jobs, "points": counts.points,
                   "regressions": counts.regressions, "improvements": counts.improvements,
                   "within_thresholds": counts.within, "no_baseline": counts.no_baseline},
        "sha": report.meta.sha, "pr": report.meta.pr, "repository": report.meta.repository,
        "thresholds": report.meta.thresholds,
        "comment_chars": len(rendered.text), "shortened": rendered.shortened,
        "failure_classes": failure_groups.whom_to_call(report.failure_groups),
        "infra_runners": failure_groups.runner_record(report.failure_groups),
    }


def check_title(report: Report) -> str:
    context = {"verdict": report.verdict.conclusion,
               "reasons": [dataclasses.asdict(r) for r in report.verdict.reasons],
               "calls": failure_groups.whom_to_call(report.failure_groups)}
    return " / ".join(i18n.render("report/check-title", lang, **context)
                      for lang in i18n.LANGUAGES)


def _bot_login(explicit: str | None, config: object | None, client: object) -> str:
    login = explicit or getattr(config, "bot_login", None)
    if login:
        return login
    try:
        return client.authenticated_login()  # type: ignore[attr-defined]
    except GitHubError as exc:
        # GITHUB_TOKEN cannot read GET /user; in Actions it posts as github-actions[bot].
        if os.environ.get("GITHUB_ACTIONS") == "true":
            return post.ACTIONS_BOT
        if exc.status is None:  # no answer at all: which login to use is not the question yet
            raise Refusal(msg("%(failure)s; check GITHUB_API_URL and the network", failure=exc.message)) from None
        raise Refusal(msg("cannot tell which account the bot posts as (%(failure)s); set bot_login in "
                          "%(config)s or pass --bot-login", failure=exc.message, config=DEFAULT_CONFIG)) from None


@click.command(name="report", context_settings=HELP_OPTIONS)
@click.option("--results", "results_dir", required=True,
              type=click.Path(path_type=pathlib.Path, file_okay=False),
              help="Folder holding every job's result.json (any depth).")
@click.option("--jobs", "jobs_path", type=click.Path(path_type=pathlib.Path),
              help="The plan: a folder of job JSON files or one plan JSON; missing jobs become lost.")
@click.option("--baseline", "baseline_dir", type=click.Path(path_type=pathlib.Path),
              help="Folder with the base branch's latest successful result.json files.")
@click.option("--baseline-from-github", "base_branch", metavar="BRANCH",
              help="Download the baseline first: the result-* artifacts of the newest successful GPU "
                   "workflow runs that measured a commit of BRANCH (into OUT/baseline).")
@click.option("--workflow", default="gpu.yml", show_default=True,
              help="With --baseline-from-github: the GPU workflow file.")
@click.option("--config", "config_path", type=click.Path(path_type=pathlib.Path),
              help=f"Repository config with report.thresholds (default: {DEFAULT_CONFIG} if present).")
@click.option("--out", "out_dir", type=click.Path(path_type=pathlib.Path, file_okay=False),
              default=pathlib.Path("report-out"), show_default=True,
              help="Where comment.md, summary.json, chart.png and full-results.json go.")
@click.option("--post", "do_post", is_flag=True,
              help="Post the sticky comment and the check run (GITHUB_API_URL, GITHUB_TOKEN).")
@click.option("--dry-run", is_flag=True, help="With --post: print each write as JSON instead.")
@click.option("--repo", help="owner/name (default: GITHUB_REPOSITORY, else from the results).")
@click.option("--pr", type=click.IntRange(1, 2**31 - 1), help="Pull request number (default: from the results).")
@click.option("--sha", help="Head SHA the report is for (default: from the results).")
@click.option("--run-url", help="The GPU workflow run (default: from GITHUB_* variables).")
@click.option("--command", "command_text", help="The PR command that started the run.")
@click.option("--bot-login", help="The login the bot posts as (default: config bot_login, GET /user).")
@click.option("--check-name", help=f"The check run's name (default: {post.CHECK_NAME!r} with --gate, "
                                   f"else {post.REPORT_CHECK_NAME!r}; only --gate may post the gate's name).")
@click.option("--fail-on-failure", is_flag=True, help="Exit 1 when the verdict is failure.")
@click.option("--gate", "gate_on", is_flag=True,
              help="Post the merge gate of the head SHA: this run merged with every earlier run on it.")
@click.option("--required", "required_dir", type=click.Path(path_type=pathlib.Path),
              help="With --gate: plan JSON file(s) of what the PR requires (a file or a folder).")
def report_cmd(**values: object) -> None:
    """Collect results, compare with the base branch, render English then 简体中文, and post."""
    run_report(ReportOptions.from_cli(**values))


def run_report(options: ReportOptions) -> None:
    """`recipe-bot report` with its options grouped: the whole report, from results to the posted check."""
    src, who, posting = options.sources, options.identity, options.posting
    out_dir, sha, baseline_dir = options.out_dir, who.sha, src.baseline_dir
    check_name = _check_name(posting.check_name, options.gate_on)

    thresholds, config = _load_thresholds(src.config_path)
    try:
        plan = collect.load_plan(src.jobs_path) if src.jobs_path else []
        collection = collect.collect(src.results_dir, plan, sha)
        sha = collection.head_sha
    except collect.InputError as exc:
        raise refusal(exc.args[0]) from None  # a catalogue message
    base_runs: list = []
    skipped: list[Message] = []
    if src.base_branch is not None:
        baseline_dir, base_runs = _fetch_baseline(src.base_branch, src.workflow, baseline_dir or out_dir / "baseline",
                                                  skipped)
    if baseline_dir is not None and not baseline_dir.is_dir():
        raise Refusal(msg("%(path)s: the baseline directory does not exist", path=baseline_dir))
    results = [job.result for job in collection.jobs]
    meta = Meta(
        sha=sha, repository=who.repo or os.environ.get("GITHUB_REPOSITORY")
        or _most_common([r.repository for r in results]),
        pr=who.pr or _most_common([r.pr for r in results]),
        command=who.command_text or _most_common([r.command for r in results]),
        run_url=_run_url(who.run_url))
    baseline = compare.load_baseline(baseline_dir)
    if skipped:  # artifacts refused at download count as skipped base files, each with its reason
        baseline = dataclasses.replace(baseline, unreadable=tuple(map(str, skipped)) + baseline.unreadable)
    report = build.build_report(collection, baseline, thresholds, meta)
    out_dir.mkdir(parents=True, exist_ok=True)
    cpu_only = bool(report.recipes) and all(section.gpus == 0 for section in report.recipes)
    chart.write_png(chart.plotted(report), out_dir / "chart.png",
                    f"{'Throughput (CPU)' if cpu_only else 'Throughput per GPU'} vs interactivity · "
                    f"{(sha or 'unknown')[:12]}")
    # Compact on purpose: with thousands of points an indented file is several times larger.
    _write(out_dir / "full-results.json", orjson.dumps(
        {"conclusion": report.verdict.conclusion, "failure_keys": report.failure_keys, "report": report},
        default=_json_default, option=orjson.OPT_NON_STR_KEYS))
    gated = None
    if options.gate_on:
        gated = gate_runs.cli_hook(collection, report, meta, required_dir=options.required_dir, baseline=baseline,
                                   thresholds=thresholds, workflow=src.workflow, out_dir=out_dir,
                                   bot_login=posting.bot_login, config=config,
                                   use_github=posting.do_post and not posting.dry_run)
    # Sections after the report: where each baseline came from, and the commit's merge gate. The
    # report is rendered into what is left of the comment budget, so the whole stays postable.
    extra = ""
    if base_runs:
        extra += "\n\n" + i18n.render_bilingual(
            "report/baseline-runs", runs=[dataclasses.asdict(r) for r in base_runs], branch=src.base_branch)
    if gated is not None:
        extra += "\n\n" + gated.section

    compared = arms.section(results)
    if compared:
        extra = "\n\n" + compared + extra
    rendered = render.render_comment(report, limit=render.COMMENT_BUDGET - len(extra))
    if extra:
        rendered = dataclasses.replace(rendered, text=rendered.text.rstrip("\n") + extra + "\n")

    _write(out_dir / "comment.md", rendered.text)
    summary = summary_of(report, rendered)
    post.append_step_summary(rendered.text)

    if posting.do_post:
        summary["posted"] = _post(report, rendered, meta, check_name, posting.bot_login, config,
                                  posting.dry_run, gated)
    _write(out_dir / "summary.json", json.dumps(summary, ensure_ascii=False, indent=2, default=_english) + "\n")
    counts = report.counts
    click.echo(f"verdict: {report.verdict.conclusion} · jobs {counts.jobs_total} · "
               f"points {counts.points_total} · regressions {counts.regressions} · "
               f"comment {len(rendered.text):,} chars{' (shortened)' if rendered.shortened else ''}"
               f" · {out_dir}")
    if gated is not None:
        summary["gate"] = gated.context
        click.echo(f"merge gate: {gated.verdict.conclusion} ({gated.verdict.reason})")
        _write(out_dir / "summary.json", json.dumps(summary, ensure_ascii=False, indent=2, default=_english) + "\n")
    if options.fail_on_failure and report.verdict.conclusion == "failure":
        raise SystemExit(1)


def _check_name(given: str | None, gate_on: bool) -> str:
    """The check the report posts under: the merge gate's name belongs to `--gate` alone, so that one
    run's own verdict (a hand-run or custom report) can never stand in for the commit's gate."""
    if gate_on:
        return given or post.CHECK_NAME
    if given is not None and given.strip().lower() == post.CHECK_NAME.lower():
        raise Refusal(msg("--check-name %(given)s is the merge gate's check; only `report --gate` posts it "
                          "(without --gate the report posts %(report_check)s)", given=repr(given),
                          report_check=repr(post.REPORT_CHECK_NAME)))
    return given or post.REPORT_CHECK_NAME


def _fetch_baseline(base_branch: str, workflow: str, dest: pathlib.Path,
                    skipped: list[Message]) -> tuple[pathlib.Path, list]:

    dest.mkdir(parents=True, exist_ok=True)
    try:
        runs = fetch_baseline(GitHubClient.from_env(), workflow=workflow, base_branch=base_branch, dest=dest,
                              problems=skipped)
    except (GitHubError, BaselineFetchError) as exc:
        raise Refusal(msg("cannot fetch the baseline of %(branch)s: %(failure)s", branch=base_branch,
                          failure=getattr(exc, "message", str(exc)))) from None
    found = ", ".join(f"run {r.run_id} ({r.sha[:12]})" for r in runs) or "none"
    click.echo(f"baseline from {workflow} on {base_branch}: {found}", err=True)
    for problem in skipped:
        click.echo(f"baseline artifact skipped: {problem}", err=True)
    return dest, runs


def _post(report: Report, rendered: render.Rendered, meta: Meta, check_name: str,
          bot_login: str | None, config: object | None, dry_run: bool, gated=None) -> dict:

    if meta.pr is None or not meta.sha:
        raise Refusal(msg("--post needs the PR number and the head SHA (--pr/--sha, or results that "
                                       "carry them)"))
    environ = dict(os.environ)
    if meta.repository:
        environ["GITHUB_REPOSITORY"] = meta.repository
    try:
        client = GitHubClient.from_env(dry_run=dry_run, environ=environ)
        login = _bot_login(bot_login, config, client)
        check = {"conclusion": report.verdict.conclusion, "title": check_title(report),
                 "summary": render.check_summary(rendered.text)}
        if gated is not None:  # the check is the commit's merge gate, not this run's verdict
            check = {"conclusion": gated.check_conclusion, "title": gated.title, "status": gated.check_status,
                     "summary": render.check_summary(gated.section + "\n\n" + stage_markers.strip_report_marker(rendered.text))}
        posted = post.post(client, pr=meta.pr, sha=meta.sha, body=rendered.text,
                           bot_login=login, **check,
                           details_url=meta.run_url, check_name=check_name)
    except GitHubError as exc:
        raise Refusal(msg("posting the report failed: %(failure)s", failure=exc.message)) from None
    return {"comment": posted.comment.action, "why": posted.comment.why,
            "comment_id": posted.comment_id, "check_run_id": posted.check_run_id,
            "check": posted.check_action, "check_name": check_name, "bot_login": login}
