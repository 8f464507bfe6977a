"""Reuse pinned to what it measured: `/reuse <run-id>` and the merge queue reuse an earlier verdict by one rule.

The rule (`differences`) is the only one: an earlier commit's verdict counts for another commit only when
every recipe that matters has the same recipe fingerprint at both. For `/reuse` the recipes that matter
are the ones the PR touches; for a merge-group commit, which may carry other PRs' changes, every recipe.
A maintainer's reuse is recorded by a marker in the bot's own reply, pinned to the full head SHA; after a
push it is carried to the new head only while the rule still holds (a push that changes only other files
keeps it), and once a push breaks it, it stays ended.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from bot.control.client import ChecksClient, CommentsClient, RepositoryClient, RunsClient
from bot.core import i18n
from bot.core.github import GitHubError
from bot.core.markers import header_markers, own_check_runs, parse_run_title, started_by_bot
from bot.core.stage_markers import Reuse, parse_reuse_marker, reuse_marker
from bot.plan import remote
from bot.plan.model import PlanError
from bot.plan.touched import touched_native
from bot.recipes.errors import RecipeError
from bot.report import gate
from bot.report.gate_runs import render


class ReuseClient(RepositoryClient, RunsClient, ChecksClient, CommentsClient, Protocol):
    """What judging a reuse reads: the run, its gate check, both commits' recipes, the PR's comments."""

MAX_LISTED = 30  # recipes named in a reply or check; the rest are counted


@dataclasses.dataclass(frozen=True)
class Difference:
    """A recipe whose fingerprint is not the same at both commits (None: it has none there)."""

    recipe: str
    here: str | None
    there: str | None


@dataclasses.dataclass(frozen=True)
class Judgement:
    """What `/reuse` decided: accepted with its record, or refused with the reason (`reason`) and details."""

    record: Reuse | None
    reason: str  # "accepted" or the refusal: not-found, not-bot, other-pr, active, failed, gate-not-passed,
    #              unplannable, fingerprint
    context: dict[str, Any]
    run_url: str = ""

    @property
    def accepted(self) -> bool:
        return self.record is not None


# -- the rule ---------------------------------------------------------------------------------------------

def differences(names: Iterable[str] | None, here: Mapping[str, str] | None,
                there: Mapping[str, str] | None) -> list[Difference]:
    """The recipes among `names` (None: every recipe of either commit) whose fingerprints differ.

    A commit whose recipes do not load (None) has no fingerprint to compare: that is one difference, `*`."""
    if here is None or there is None:
        return [Difference("*", None, None)]
    wanted = sorted(set(here) | set(there)) if names is None else sorted(set(names))
    return [Difference(name, here.get(name), there.get(name)) for name in wanted
            if here.get(name) is None or here.get(name) != there.get(name)]


def recipe_fingerprints(client: ReuseClient, sha: str) -> dict[str, str] | None:
    """Every recipe's fingerprint at sha, read as data through the API; None when the recipes do not load."""

    try:
        return {name: entry.fingerprint for name, entry in remote.head_catalog(client, sha).entries.items()}
    except (RecipeError, PlanError):
        return None


def touched_names(client: ReuseClient, pull: Any) -> list[str] | None:
    """The recipes and InferenceX configs the PR touches at its head; None when the head does not plan."""

    try:
        catalog = remote.head_catalog(client, pull.head_sha)
        changed = set(client.list_pull_paths(pull.number))
        touched = touched_native(catalog, remote.ApiSource(client, pull.base_sha), changed)
        keys = remote.touched_inferencex_keys(client, catalog=catalog, base_sha=pull.base_sha, changed=changed)
    except (RecipeError, PlanError):
        return None
    return sorted(set(touched.reasons) | set(keys))


def _rows(diffs: list[Difference]) -> list[dict[str, Any]]:
    return [dataclasses.asdict(d) for d in diffs[:MAX_LISTED]]


# -- records in the bot's own comments -------------------------------------------------------------------

def latest(comments: Iterable[Any], bot_login: str) -> Reuse | None:
    """The newest reuse record the bot wrote on this PR; a marker typed by anyone else counts for nothing."""
    found = None
    for line in header_markers(comments, bot_login):
        if (record := parse_reuse_marker(line)) is not None:
            found = record
    return found


# -- /reuse <run-id> ---------------------------------------------------------------------------------------

def judge(client: ReuseClient, *, run_id: int, pull: Any, by: str, bot_login: str, workflow: str,
          check_name: str, default_branch: str) -> Judgement:
    """Accept run_id for pull's head, or say why not (reads the run, the gate at its commit, both fingerprints)."""

    base = {"run_id": run_id, "head_sha": pull.head_sha}
    try:
        run = client.get_run(run_id)
    except GitHubError as exc:
        if exc.status == 404:
            return Judgement(None, "not-found", base)
        raise
    title = parse_run_title(run.display_title)
    context = {**base, "run_url": run.html_url, "run_sha": title.sha if title else run.head_sha,
               "workflow": workflow}
    if title is None or not started_by_bot(run, bot_login=bot_login, default_branch=default_branch,
                                           workflow=workflow):
        return Judgement(None, "not-bot", {**context, "actor": run.actor, "bot": bot_login}, run.html_url)
    if title.pr != pull.number:
        return Judgement(None, "other-pr", {**context, "pr": title.pr}, run.html_url)
    if run.active or run.conclusion != "success":
        return Judgement(None, "active" if run.active else "failed",
                         {**context, "status": run.status, "conclusion": run.conclusion}, run.html_url)
    # Only the bot's own gate check says the run passed: another App may post a check of the same name.
    gates = [c for c in own_check_runs(client.list_check_runs(title.sha, check_name), bot_login)
             if c.name == check_name]
    gate_check = max(gates, key=lambda c: c.id) if gates else None
    if gate_check is None or gate_check.status != "completed" or gate_check.conclusion != "success":
        state = None if gate_check is None else gate_check.conclusion or gate_check.status
        return Judgement(None, "gate-not-passed", {**context, "gate": state}, run.html_url)
    names = touched_names(client, pull)
    here = recipe_fingerprints(client, pull.head_sha) if names is not None else None
    there = recipe_fingerprints(client, title.sha) if here is not None else None
    if names is None or here is None or there is None:
        return Judgement(None, "unplannable", {**context, "where": title.sha if here else pull.head_sha},
                         run.html_url)
    diffs = differences(names, here, there)
    if diffs:
        return Judgement(None, "fingerprint", {**context, "differences": _rows(diffs),
                                               "more": max(0, len(diffs) - MAX_LISTED)}, run.html_url)
    record = Reuse(pull.head_sha, run_id, title.sha, by)
    return Judgement(record, "accepted", {**context, "by": by, "recipes": names[:MAX_LISTED],
                                          "more": max(0, len(names) - MAX_LISTED)}, run.html_url)


# -- after a push ------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Carried:
    """The reuse at a new head: still applying (post its check) or ended now; `comment` says so on the PR."""

    record: Reuse
    comment: str | None
    run_url: str


def carry(client: ReuseClient, *, pull: Any, bot_login: str, comments: Iterable[Any] | None = None) -> Carried | None:
    """After a push: the PR's live reuse moved to the new head while the rule holds, else ended (once)."""
    live = latest(client.list_issue_comments(pull.number) if comments is None else comments, bot_login)
    if live is None or live.state != "applies":
        return None
    url = _run_url(client, live.run_id)
    if live.sha == pull.head_sha:  # recorded for this head already (a redelivered event): post, say nothing
        return Carried(live, None, url)
    names = touched_names(client, pull)
    here = recipe_fingerprints(client, pull.head_sha) if names is not None else None
    there = recipe_fingerprints(client, live.run_sha) if here is not None else None
    diffs = differences(names, here, there) if names is not None else [Difference("*", None, None)]
    record = dataclasses.replace(live, sha=pull.head_sha, state="ended" if diffs else "applies")
    body = reuse_marker(record) + "\n" + i18n.render_bilingual(
        "control/reuse-carried", record=dataclasses.asdict(record), previous_sha=live.sha,
        differences=_rows(diffs), more=max(0, len(diffs) - MAX_LISTED), run_url=url) + "\n"
    return Carried(record, body, url)


def _run_url(client: ReuseClient, run_id: int) -> str:
    try:
        return client.get_run(run_id).html_url
    except GitHubError:  # gone since: the reply still names the run by its id
        return ""


def check_text(record: Reuse, run_url: str, recipes: list[str] | None = None) -> tuple[str, str]:
    """The gate check's title and summary for a head that reuses a run."""

    _, title, section = render(_nothing(), sha=record.sha, reason="reused-run", reused_run=record.run_id,
                               reused_sha=record.run_sha, reused_by=record.by, reused_url=run_url,
                               reused_recipes=list(recipes or []))
    return title, section


def _nothing() -> Any:
    return gate.GateVerdict("success", 0, 0, (), (), (), ())
