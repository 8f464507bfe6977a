"""Where the control plane calls the sign-off: a comment or review, a push, the end of a GPU run."""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Protocol, TypeVar

from bot.checklist import verify
from bot.core import markers
from bot.core.config import ConfigError, RepoConfig, read_repo_config
from bot.core.events import CommentEvent, EventError, PullRequestEvent
from bot.core.github import GitHubClient, GitHubError
from bot.core.messages import msg


# Cheap pre-filter before any API call: every template has a Signed: line and names CODEOWNERs.
_MAYBE = re.compile(r"codeowner|signed\s*[:：]|签名\s*[:：]|代码所有者", re.I)
PUSH_ACTIONS = frozenset({"opened", "synchronize", "reopened", "ready_for_review"})


class SignoffContext(Protocol):
    """What the sign-off asks of one event's handler (bot.control.handler.Handler is one): its config, the
    bot's login, the client, and the log."""

    config: RepoConfig
    default_branch: str

    @property
    def client(self) -> verify.SignoffClient: ...

    def load_config(self) -> ConfigError | None: ...

    def bot_login(self) -> str: ...

    def log(self, message: str) -> None: ...


Context = TypeVar("Context", bound=SignoffContext)


def maybe_signoff(body: str) -> bool:
    return bool(_MAYBE.search(body or ""))


def on_comment(h: SignoffContext, event: CommentEvent) -> None:
    """issue_comment / pull_request_review, created or edited: verify the PR's head again."""
    if event.on_pull and maybe_signoff(event.body):
        key = f"comment-{event.comment_id}" if event.comment_id is not None else event.key  # review-<id>
        _run(h, event.number, trigger=key, author=event.author)


def on_pull_request(h: SignoffContext, event: PullRequestEvent) -> None:
    """A new head SHA gets its `recipe-bot / sign-off` check at once (waiting, or the stale note)."""
    if event.action in PUSH_ACTIONS:  # the payload's updated_at is the push: older sign-offs are stale
        _run(h, event.pull.number, pushed_at=event.pull.updated_at or None)


def _run(h: SignoffContext, pr: int, *, trigger: str | None = None, sha: str | None = None, author: str = "",
         pushed_at: str | None = None) -> None:
    if h.load_config() or h.config.checklist is None:
        return  # a broken config is answered by the command path; no `checklist:` section: sign-off off

    try:
        bot = h.bot_login()
        if author.lower() == bot.lower():
            return  # the bot's own verdict comment
        result = verify.verify(h.client, pr=pr, config=h.config, default_branch=h.default_branch,
                               bot_login=bot, sha=sha, trigger=trigger, pushed_at=pushed_at)
    except GitHubError as exc:  # the commands in the same event still get their answer
        h.log(f"sign-off not verified: {exc}")
        return
    for line in result.log:
        h.log(line)


def on_workflow_run(for_branch: Callable[[str], Context], repository_name: str, payload: object) -> Context:
    """workflow_run completed for a recipe-bot GPU run: its title names the PR and the SHA it measured.
    `for_branch(default branch)`: the event's handler, made once the payload names the default branch."""
    if not isinstance(payload, dict) or not isinstance(payload.get("workflow_run"), dict) \
            or not isinstance(payload.get("repository"), dict):
        raise EventError(msg("the event payload has no field workflow_run or repository"))
    repository = payload["repository"]
    if str(repository.get("full_name", "")).lower() != repository_name.lower():
        raise EventError(msg("the event is for %(event_repo)s, but GITHUB_REPOSITORY is %(repo)s",
                             event_repo=repository.get("full_name"), repo=repository_name))
    h = for_branch(str(repository.get("default_branch") or "main"))
    title = markers.parse_run_title(str(payload["workflow_run"].get("display_title") or ""))
    if payload.get("action") != "completed" or title is None:
        h.log("workflow_run: not a completed recipe-bot GPU run")
        return h
    _run(h, title.pr, sha=title.sha)
    return h


def verify_cli(client: GitHubClient, pr: int, sha: str | None) -> verify.Result:
    """The command line's path: the same verification, config read from the default branch."""

    branch = client.default_branch()
    config = read_repo_config(client, branch)  # raises ConfigError, reported by the caller
    if config.checklist is None:
        skipped = msg("sign-off: .github/recipe-bot.yaml@%(branch)s has no `checklist:` section, so the sign-off is "
                      "not used here", branch=branch)
        return verify.Result("skipped", log=[f"{skipped.render('en')} / {skipped.render('zh')}"])
    login = config.bot_login
    if not login:
        try:
            login = client.authenticated_login()
        except GitHubError:
            login = "github-actions[bot]"
    return verify.verify(client, pr=pr, config=config, default_branch=branch, bot_login=login, sha=sha)


__all__ = ["maybe_signoff", "on_comment", "on_pull_request", "on_workflow_run", "verify_cli"]
