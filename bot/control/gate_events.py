"""The control plane's side of the merge gate: a check on every head SHA, `/accept-regression`, merge queues.

Everything here reads the PR's files as data through the API (bot.plan.remote); nothing from the
PR is checked out or run.
"""
from __future__ import annotations

import json
import pathlib
import posixpath
import re
import tempfile
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from bot.control import checkout, reuse
from bot.control.client import ChecksClient
from bot.control.dispatch_once import dispatch_inputs
from bot.core import commands, i18n
from bot.core.cli_guard import HELP_OPTIONS
from bot.core.events import EventError
from bot.core.github import GitHubClient, GitHubError
from bot.core.markers import SHA, foreign_edits, is_full_sha, own_check_runs
from bot.core.stage_markers import Ack, ack_marker, reuse_marker
from bot.core.messages import Message, bilingual, message_from_data, msg, UsageRefusal
from bot.inferencex.changelog import changelog_missing
from bot.plan import remote
from bot.plan.model import PlanError, PlanFilters
from bot.recipes.catalog import is_recipe_path
from bot.recipes.errors import RecipeError, RecipeProblem
from bot.recipes.sources import GitSource
from bot.report import collect, compare, gate, gate_runs
from bot.report.fetch import BASELINE_COMMAND, fetch_baseline
from bot.report.gate_runs import render
from bot.report.post import ACTIONS_BOT, CHECK_NAME

if TYPE_CHECKING:
    from bot.core.config import RepoConfig
    from bot.core.commands import Command
    from bot.core.events import Pull, PullRequestEvent
    from bot.control.handler import Handler
    from bot.control.reply import Reply
    from bot.control.trust import Actor, Approval

POST_ON = frozenset({"opened", "synchronize", "reopened"})


def _verdict(required: dict, **fields: Any) -> gate.GateVerdict:
    missing = tuple((recipe, key) for key, recipe in sorted(required.items()))
    return gate.GateVerdict(fields.get("conclusion", "pending"), len(required), 0, (), missing, (), ())


def _render(verdict: gate.GateVerdict, sha: str, *, bot_login: str, **extra: Any) -> tuple[str, str]:
    _, title, section = render(verdict, sha=sha, bot_login=bot_login, **extra)
    return title, section


def _own_gates(client: ChecksClient, sha: str, bot_login: str) -> list:
    """The gate checks on sha that the bot's own App posted: a check of the same name by another App
    (any workflow's token can post one) neither counts nor is updated; the bot posts its own beside it."""

    return [run for run in own_check_runs(client.list_check_runs(sha, CHECK_NAME), bot_login)
            if run.name == CHECK_NAME]


def _post_check(client: ChecksClient, sha: str, *, bot_login: str, conclusion: str | None, title: str, summary: str,
                details_url: str | None = None) -> None:
    """Update the bot's latest gate check on sha, or create it; conclusion None leaves it in progress."""

    status = "completed" if conclusion else "in_progress"
    existing = _own_gates(client, sha, bot_login)
    fields = dict(status=status, conclusion=conclusion, title=title[:1000], summary=summary[:60000],
                  details_url=details_url)
    if existing:
        client.update_check_run(max(run.id for run in existing), **fields)
    else:
        client.create_check_run(name=CHECK_NAME, head_sha=sha, **fields)


def required_filters(config: RepoConfig) -> tuple[list[str], list[PlanFilters]]:
    lines = list(config.gate.required)
    return lines, [PlanFilters(**commands.parse_single(line).plan_filters()) for line in lines]


def on_pull_request(h: Handler, event: PullRequestEvent) -> None:
    """opened / synchronize / reopened: the gate check on the new head, once per head SHA.

    A GitHub failure here is reported (exit 1) but does not stop the rest of the event's handling
    (cancelling superseded runs, label runs)."""

    try:
        _on_pull_request(h, event)
    except GitHubError as exc:
        h.log(f"the gate check on {event.pull.head_sha} could not be posted: {exc}")
        h.outcome.fail(f"merge gate: {exc}")


def _on_pull_request(h: Handler, event: PullRequestEvent) -> None:
    pull = event.pull
    if event.action not in POST_ON or pull.closed:
        return
    error = h.load_config()  # first: the config names the bot's login, whose checks are its own
    if _own_gates(h.client, pull.head_sha, h.bot_login()):
        h.log(f"the gate check on {pull.head_sha} exists already")
        return
    if error:  # nothing can be planned under a broken config: the gate says why
        title, section = _render(_verdict({}), pull.head_sha, bot_login=h.bot_login(), reason="plan-failed", problems=[str(error)])
        _post_check(h.client, pull.head_sha, bot_login=h.bot_login(),
                    conclusion="failure", title=title, summary=section)
        return
    lines, filters = required_filters(h.config)
    try:
        catalog = remote.head_catalog(h.client, pull.head_sha)
        changed = set(h.client.list_pull_paths(pull.number))
        jobs = remote.required_jobs(h.client, catalog=catalog, base_sha=pull.base_sha, changed=changed,
                                    filters=filters)
        configs = remote.touched_inferencex_keys(h.client, catalog=catalog, base_sha=pull.base_sha,
                                                 changed=changed)
        # An edited master config with no changelog entry runs nothing in InferenceX: never "nothing touched".
        missing = changelog_missing(catalog.inferencex, changed) if catalog.inferencex and not configs else None
        if missing:
            raise PlanError(missing)
    except (RecipeError, PlanError) as exc:
        problems = [p.as_message() for p in exc.problems] if isinstance(exc, RecipeError) else [exc.message]
        title, section = _render(_verdict({}), pull.head_sha, bot_login=h.bot_login(), reason="plan-failed", problems=problems)
        _post_check(h.client, pull.head_sha, bot_login=h.bot_login(),
                    conclusion="failure", title=title, summary=section)
        h.client.create_comment(pull.number, i18n.render_bilingual(
            "control/gate-plan-failed", sha=pull.head_sha, problems=problems) + "\n")
        h.log(f"the plan of {pull.head_sha} failed: {problems[0]}")
        return
    # InferenceX configs the PR touches are required too: never "nothing touched" for them.
    required = {**gate.required_keys(jobs), **{("inferencex", key): key for key in configs}}
    if not required:
        title, section = _render(_verdict({}), pull.head_sha, bot_login=h.bot_login())
        _post_check(h.client, pull.head_sha, bot_login=h.bot_login(),
                    conclusion="success", title=title, summary=section)
        h.log(f"gate on {pull.head_sha}: no recipe or suite touched")
        return
    if event.action == "synchronize" and _carry_reuse(h, pull):
        return
    kinds = {job.kind for job in jobs} | ({"sweep"} if configs else set())
    needed = [line for line, one in zip(lines, filters) if one.kind in kinds or one.kind == "all"]
    title, section = _render(_verdict(required), pull.head_sha, bot_login=h.bot_login(), reason="planned", commands=needed)
    _post_check(h.client, pull.head_sha, bot_login=h.bot_login(), conclusion=None, title=title, summary=section)
    h.log(f"gate on {pull.head_sha}: {len(required)} required point(s)/case(s)")


def refuse_unknown_recipes(h: Handler, reply: Reply, command: Command, pull: Pull) -> bool:
    """`/sweep name` where no recipe of the head commit is called name: refused before any run starts."""
    if command.name != "sweep" or not command.recipes:
        return False

    # Cheap first: a glob that matches a recipe file's name needs no more reads (one listing; none with a
    # checkout of the default branch, which holds the head commit's objects as data: bot/control/checkout.py).
    head = checkout.sources(h, pull)[0] if h.checkout is not None else None
    head = head if isinstance(head, GitSource) else None
    # The default branch's config names the folder; a PR that moves it falls through to the full load below.
    folder = h.config.recipes_dir
    listed = [(p, "file") for p in head.list(folder) if posixpath.dirname(p) == folder] if head is not None \
        else h.client.list_dir(folder, pull.head_sha)
    stems = [posixpath.splitext(posixpath.basename(path))[0] for path, kind in listed
             if kind == "file" and is_recipe_path(path, folder)]
    if all(remote.matches_any(glob, stems) for glob in command.recipes):
        return False
    try:
        catalog = remote.load_catalog(head or remote.ApiSource(h.client, pull.head_sha))
    except (RecipeError, PlanError):
        return False  # the control plane cannot tell; the plan job will say
    names = catalog.names() + (sorted(catalog.inferencex.configs) if catalog.inferencex else [])
    unknown = [g for g in command.recipes if not remote.matches_any(g, names)]
    if not unknown:
        return False
    reply.mark_refused()
    reply.add("gate-unknown-recipe", command=command.normalized(), unknown=unknown, names=names[:30],
              more=max(0, len(names) - 30), sha=pull.head_sha)
    problems = [msg("/sweep: no recipe matches %(glob)s at %(sha)s", glob=repr(glob), sha=pull.head_sha[:12])
                for glob in unknown]
    title, section = _render(_verdict({}), pull.head_sha, bot_login=h.bot_login(), reason="plan-failed", problems=problems)
    _post_check(h.client, pull.head_sha, bot_login=h.bot_login(), conclusion="failure", title=title, summary=section)
    h.log(f"refused {command.normalized()}: unknown recipe(s) {', '.join(unknown)}")
    return True


# -- /accept-regression ------------------------------------------------------------------------------

def accept_regression(h: Handler, reply: Reply, command: Command, actor: Actor, pull: Pull, approvals: list[Approval], key: str) -> None:
    """Pin a maintainer's acknowledgement to the head SHA, then judge the gate again with it."""

    ack = Ack(pull.head_sha, command.recipes[0], actor.login, command.reason or "")
    reply.markers.append(ack_marker(ack))
    comments = h.client.list_issue_comments(pull.number)
    for line in foreign_edits(comments, h.bot_login()):
        h.log(line)
    acks = gate.read_acks(comments, h.bot_login(), pull.head_sha)
    verdict = regate(h, pull, [*acks, ack])
    reply.add("accepted-regression", recipe=ack.recipe, reason=ack.reason, by=ack.by, sha=ack.sha,
              conclusion=verdict.conclusion if verdict else None)
    h.log(f"{actor.login} accepted regressions of {ack.recipe} on {pull.head_sha}")


def regate(h: Handler, pull: Pull, acks: list[Ack]) -> gate.GateVerdict | None:
    """The gate of pull's head from every finished run's artifacts, with the baseline the report uses."""

    with tempfile.TemporaryDirectory(prefix="recipe-bot-gate-") as tmp:
        root = pathlib.Path(tmp)
        runs = gate_runs.fetch_prior_runs(h.client, workflow=h.config.gpu_workflow, sha=pull.head_sha,
                                          dest=root / "runs", bot_login=h.bot_login(),
                                          default_branch=h.default_branch)
        if not runs:
            return None
        (root / "baseline").mkdir()
        fetch_baseline(h.client, workflow=h.config.gpu_workflow, base_branch=h.default_branch,
                       dest=root / "baseline")
        baseline = compare.load_baseline(root / "baseline")
        thresholds = compare.thresholds_from(h.config)
        outcomes = [o for run_id, folder in runs
                    for o in gate_runs.outcomes_of_folder(folder, run_id, pull.head_sha, baseline, thresholds)]
        try:
            required = gate_runs.load_required(max(runs)[1] / "plan" / "required")
        except collect.InputError:
            required = []
        result = gate_runs.evaluate(current=outcomes, required_plan=required, sha=pull.head_sha, acks=acks,
                                   bot_login=h.bot_login())
    _post_check(h.client, pull.head_sha, bot_login=h.bot_login(),
                conclusion=result.check_conclusion, title=result.title,
                summary=result.section)
    return result.verdict


# -- /reuse <run-id> (bot/control/reuse.py decides; the gate's check is posted here) ----------------------

def reuse_run(h: Handler, reply: Reply, command: Command, actor: Actor, pull: Pull, approvals: list[Approval], key: str) -> None:
    """Accept an earlier run for the head when every touched recipe's fingerprint matches, or say why not."""

    judged = reuse.judge(h.client, run_id=command.run_id, pull=pull, by=actor.login, bot_login=h.bot_login(),
                         workflow=h.config.gpu_workflow, check_name=CHECK_NAME, default_branch=h.default_branch)
    if not judged.accepted:
        reply.mark_refused()
        reply.add("reuse-refused", command=command.normalized(), reason=judged.reason, **judged.context)
        h.log(f"refused {command.normalized()}: {judged.reason}")
        return
    record = judged.record
    reply.markers.append(reuse_marker(record))
    title, section = reuse.check_text(record, judged.run_url, judged.context["recipes"])
    _post_check(h.client, pull.head_sha, bot_login=h.bot_login(), conclusion="success", title=title, summary=section,
                details_url=judged.run_url or None)
    reply.add("reuse-accepted", **judged.context)
    h.log(f"{actor.login} reused run {record.run_id} ({record.run_sha}) for {pull.head_sha}")


def _carry_reuse(h: Handler, pull: Pull) -> bool:
    """After a push: a live `/reuse` holds at the new head (its check is posted) or ends, said once."""
    comments = h.client.list_issue_comments(pull.number)
    for line in foreign_edits(comments, h.bot_login()):
        h.log(line)
    carried = reuse.carry(h.client, pull=pull, bot_login=h.bot_login(), comments=comments)
    if carried is None:
        return False
    if carried.comment:
        h.client.create_comment(pull.number, carried.comment)
    if carried.record.state != "applies":
        h.log(f"the reuse of run {carried.record.run_id} ended at {pull.head_sha}: a touched recipe changed")
        return False
    title, section = reuse.check_text(carried.record, carried.run_url)
    _post_check(h.client, pull.head_sha, bot_login=h.bot_login(), conclusion="success", title=title, summary=section,
                details_url=carried.run_url or None)
    h.log(f"the reuse of run {carried.record.run_id} holds at {pull.head_sha}")
    return True


# -- merge queues --------------------------------------------------------------------------------------

_QUEUE_REF = re.compile(rf"/pr-(\d+)-{SHA}$")


def handle_merge_group(h: Handler, payload: dict[str, Any]) -> None:
    """`merge_group checks_requested`: reuse the PR head's verdict when the recipes are identical."""
    group = payload.get("merge_group") or {}
    sha, ref = str(group.get("head_sha") or ""), str(group.get("head_ref") or "")
    match = _QUEUE_REF.search(ref)
    if not is_full_sha(sha) or match is None:
        h.outcome.fail(f"merge_group: head_sha {sha[:60]!r} / head_ref {ref[:200]!r} is not a merge-queue commit")
        return
    if h.load_config():
        return
    pull = h.client.get_pull(int(match.group(1)))
    if _own_gates(h.client, sha, h.bot_login()):
        h.log(f"the gate check on merge group {sha} exists already")
        return
    done = [c for c in _own_gates(h.client, pull.head_sha, h.bot_login())
            if c.status == "completed" and c.conclusion in ("success", "failure")]
    # The merge-group commit may carry other PRs' changes too: every recipe must match (reuse's one rule).
    if done and not reuse.differences(None, reuse.recipe_fingerprints(h.client, sha),
                                      reuse.recipe_fingerprints(h.client, pull.head_sha)):
        check = max(done, key=lambda c: c.id)
        run = next((r for r in h.pr_runs(pull.number) if r.title.sha == pull.head_sha), None)
        url = run.run.html_url if run else check.html_url
        title, section = _render(_verdict({}), sha, bot_login=h.bot_login(), reason="reused", reused_sha=pull.head_sha,
                                 reused_conclusion=check.conclusion, reused_url=url, reused_id=check.id)
        _post_check(h.client, sha, bot_login=h.bot_login(),
                    conclusion=check.conclusion, title=title, summary=section, details_url=url)
        h.log(f"merge group {sha}: reused the {check.conclusion} gate of PR #{pull.number} at {pull.head_sha}")
        return
    lines = list(h.config.gate.required)
    title, section = _render(_verdict({}), sha, bot_login=h.bot_login(), reason="planned", commands=lines)
    _post_check(h.client, sha, bot_login=h.bot_login(), conclusion=None, title=title, summary=section)

    for number, line in enumerate(lines):
        h.client.dispatch_workflow(h.config.gpu_workflow, ref=h.default_branch, inputs=dispatch_inputs(
            pr=pull.number, sha=sha, command=line, requester="merge-queue", key=f"merge-group-{number}"))
    h.log(f"merge group {sha}: recipes differ from PR #{pull.number}'s head; dispatched {', '.join(lines)}")


def on_merge_group(for_branch: Callable[[str], Handler], payload: object, repository_name: str) -> Handler:
    """The entry point bot.control.handle.handle_event calls for `merge_group` events: `for_branch(default
    branch)` makes the event's handler once the payload names the default branch."""

    if not isinstance(payload, dict) or not isinstance(payload.get("repository"), dict):
        raise EventError(msg("the merge_group event has no field %(field)s", field="'repository'"))
    repository = payload["repository"]
    h = for_branch(str(repository.get("default_branch") or "main"))
    if payload.get("action") != "checks_requested":
        h.log(f"merge_group {payload.get('action')}: nothing to do")
        return h
    if str(repository.get("full_name", "")).lower() != repository_name.lower():
        raise EventError(msg("the event is for %(event_repo)s, but GITHUB_REPOSITORY is %(repo)s",
                             event_repo=repository.get("full_name"), repo=repository_name))
    handle_merge_group(h, payload)
    return h


# -- /baseline -------------------------------------------------------------------------------------------

def baseline(h: Handler, reply: Reply, command: Command, actor: Actor, pull: Pull, approvals: list[Approval], key: str) -> None:
    """Dispatch the GPU workflow's baseline mode on the default branch's tip (pr 0: no PR's run)."""

    sha = h.client.branch_sha(h.default_branch)
    run = h.client.dispatch_workflow(h.config.gpu_workflow, ref=h.default_branch, inputs=dispatch_inputs(
        pr=0, sha=sha, command=BASELINE_COMMAND, requester=actor.login, key=key))
    reply.mark_dispatched()
    h.log(f"dispatched baseline mode of {h.config.gpu_workflow} on {h.default_branch} at {sha}")
    reply.add("baseline-started", sha=sha, branch=h.default_branch, requester=actor.login,
              run_url=run.html_url, workflow=h.config.gpu_workflow)


# -- the GPU workflow's side: a plan job that failed --------------------------------------------------

def plan_problems(path: pathlib.Path) -> list[Message | str]:
    """The planner's errors (`recipe-bot plan --format json` prints {"errors": [...]}); never raises."""

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        errors = data.get("errors") if isinstance(data, dict) else None
    except (OSError, UnicodeDecodeError, ValueError):
        errors = None
    if not isinstance(errors, list) or not errors:
        return ["the plan job failed before it could say why; its log in the run has the details"]
    problems = []
    for error in errors[:30]:
        if isinstance(error, dict) and "file" in error:
            problems.append(RecipeProblem.from_dict(error).as_message())
        elif isinstance(error, dict):
            problems.append(message_from_data(error.get("message", error)))
    return problems


def _poster_login(client) -> str:
    """Who this token posts as: GET /user, which GITHUB_TOKEN may not call (it posts as github-actions[bot])."""

    try:
        return client.authenticated_login()
    except GitHubError:
        return ACTIONS_BOT


def _full_sha(ctx: click.Context, param: click.Parameter, value: str) -> str:
    if not is_full_sha(value):
        raise UsageRefusal(msg("%(value)s is not a full commit SHA (40 hex characters)", value=repr(value)), ctx)
    return value


@click.command("plan-failed", context_settings=HELP_OPTIONS)
@click.argument("sha", callback=_full_sha)
@click.argument("plan_json", type=click.Path(dir_okay=False, path_type=pathlib.Path))
@click.argument("run_url", required=False)
def plan_failed_cmd(sha: str, plan_json: pathlib.Path, run_url: str | None) -> None:
    """Fail the merge gate on SHA with the planner's reason (PLAN_JSON: its errors, or missing)."""

    problems = plan_problems(plan_json)
    try:
        client = GitHubClient.from_env()
        poster = _poster_login(client)
        title, section = _render(_verdict({}), sha, bot_login=poster, reason="plan-failed", problems=problems)
        _post_check(client, sha, bot_login=poster, conclusion="failure", title=title,
                    summary=section, details_url=run_url)
    except GitHubError as exc:
        click.echo(bilingual(msg("recipe-bot: cannot fail the merge gate on %(sha)s: %(reason)s",
                                 sha=sha, reason=str(exc))), err=True)
        raise SystemExit(1) from None
    click.echo(f"recipe-bot: merge gate on {sha[:12]} failed: {problems[0]}", err=True)
