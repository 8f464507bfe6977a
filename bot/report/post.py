"""Post the report: one sticky PR comment, a check run on the head SHA (the merge gate), the job summary.

The sticky rule: the bot's report comment is the one whose first line is the report marker AND
whose author is the bot's own login (a copy of the marker by anyone else is ignored). The latest
such comment is edited in place while it reports the same head SHA and no new failure showed up;
a new head SHA, or a failure that the previous comment did not list, gets a new comment so that
GitHub notifies the people on the PR.
"""
from __future__ import annotations

import os
import pathlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from bot.core.markers import own_check_runs, written_by
from bot.core import stage_markers

CHECK_NAME = "recipe-bot / benchmarks"  # the merge gate: only `report --gate` posts under it
REPORT_CHECK_NAME = "recipe-bot / report"  # one run's own verdict, when a report is posted without --gate
ACTIONS_BOT = "github-actions[bot]"  # who GITHUB_TOKEN posts as
_INCOMPLETE = {"queued", "in_progress", "waiting", "requested", "pending"}


class CommentLike(Protocol):
    id: int
    user: str
    body: str


class CheckRunLike(Protocol):
    id: int
    name: str
    status: str
    app: str | None


class ReportClient(Protocol):
    """The part of bot.core.github.GitHubClient that the report uses."""

    def list_issue_comments(self, number: int) -> Sequence[CommentLike]: ...

    def create_comment(self, number: int, body: str) -> int | None: ...

    def edit_comment(self, comment_id: int, body: str) -> None: ...

    def list_check_runs(self, ref: str, name: str | None = None) -> Sequence[CheckRunLike]: ...

    def create_check_run(self, *, name: str, head_sha: str, status: str = "completed",
                         conclusion: str | None = None, title: str = "", summary: str = "",
                         text: str | None = None, details_url: str | None = None) -> int | None: ...

    def update_check_run(self, check_run_id: int, *, status: str | None = None,
                         conclusion: str | None = None, title: str = "", summary: str = "",
                         text: str | None = None, details_url: str | None = None) -> None: ...


@dataclass(frozen=True)
class StickyDecision:
    action: Literal["create", "edit"]
    comment_id: int | None
    why: Literal["first report", "same head SHA", "new head SHA", "new failure"]


@dataclass(frozen=True)
class Posted:
    comment: StickyDecision
    comment_id: int | None
    check_run_id: int | None
    check_action: Literal["created", "completed"]


def decide(comments: Sequence[CommentLike], bot_login: str, body: str) -> StickyDecision:
    """Edit the bot's latest report comment, or post a new one (see the module docstring)."""
    current = stage_markers.parse_report_marker(body)
    if current is None:
        raise ValueError("the report body must start with its marker line")
    own = [(c, m) for c in comments
           if written_by(c, bot_login) and (m := stage_markers.parse_report_marker(c.body)) is not None]
    if not own:
        return StickyDecision("create", None, "first report")
    latest, previous = max(own, key=lambda pair: pair[0].id)
    if previous.sha != current.sha:
        return StickyDecision("create", None, "new head SHA")
    if current.failures - previous.failures:
        return StickyDecision("create", None, "new failure")
    return StickyDecision("edit", latest.id, "same head SHA")


def post(client: ReportClient, *, pr: int, sha: str, body: str, bot_login: str,
         conclusion: str | None, title: str, summary: str, details_url: str | None = None,
         check_name: str = CHECK_NAME, status: str = "completed") -> Posted:
    """Write the sticky comment, then complete the check run on `sha` with the verdict."""
    decision = decide(client.list_issue_comments(pr), bot_login, body)
    if decision.action == "edit" and decision.comment_id is not None:
        client.edit_comment(decision.comment_id, body)
        comment_id: int | None = decision.comment_id
    else:
        comment_id = client.create_comment(pr, body)
    # A check run left queued or in progress under this name (say, by the dispatcher) is
    # completed rather than left spinning next to a new one.
    pending = [run for run in own_check_runs(client.list_check_runs(sha, check_name), bot_login)
               if run.name == check_name and run.status in _INCOMPLETE]
    if pending:
        run_id = max(run.id for run in pending)
        client.update_check_run(run_id, status=status, conclusion=conclusion, title=title,
                                summary=summary, details_url=details_url)
        return Posted(decision, comment_id, run_id, "completed")
    # The merge gate leaves the check in progress while required points are still unmeasured.
    run_id = client.create_check_run(name=check_name, head_sha=sha, status=status,
                                     conclusion=conclusion, title=title, summary=summary,
                                     details_url=details_url)
    return Posted(decision, comment_id, run_id, "created")


def append_step_summary(markdown: str, environ: Mapping[str, str] | None = None) -> bool:
    """Append to $GITHUB_STEP_SUMMARY when Actions set it; False when it is not set."""
    env = os.environ if environ is None else environ
    path = env.get("GITHUB_STEP_SUMMARY")
    if not path:
        return False
    with pathlib.Path(path).open("a", encoding="utf-8") as handle:
        handle.write(stage_markers.strip_report_marker(markdown).rstrip("\n") + "\n")
    return True
