"""The control plane's local checkout of the default branch: the config, and PR commits read as git objects.

recipe-bot.yml checks out the default branch (never the PR) and runs `recipe-bot handle --checkout .`
(or RECIPE_BOT_CHECKOUT). Then the config is read from that checkout instead of the contents API, and
the head commit to estimate is fetched into its object store (`git fetch origin <sha>`: objects only;
nothing is checked out, no hook or filter of the PR runs) and read with `git cat-file`, as data. Without
a checkout, or when it cannot be used, everything falls back to the API (more requests, same answers).
"""
from __future__ import annotations

import base64
import os
import pathlib
import subprocess
from typing import TYPE_CHECKING

from bot.control.context import RequestState
from bot.core.config import CONFIG_PATH, RepoConfig, load_config
from bot.core.markers import is_full_sha
from bot.core.messages import Message, msg
from bot.plan.remote import ApiSource
from bot.recipes.sources import GitSource

if TYPE_CHECKING:
    from bot.core.events import Pull
    from bot.control.handler import Handler


class CheckoutError(Exception):
    """The checkout is not the default branch, or git cannot read it; str() is the message's English form."""

    def __init__(self, message: Message) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return str(self.message)


def _git(root: pathlib.Path, *args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=False,
                          env=env, timeout=120)
    if done.returncode != 0:
        raise CheckoutError(msg("git %(command)s: %(said)s", command=args[0], said=done.stderr.strip()[:300])
                            if done.stderr.strip() else msg("git %(command)s: failed", command=args[0]))
    return done.stdout.strip()


def default_branch_commit(root: pathlib.Path, default_branch: str) -> str:
    """HEAD of the checkout, after making sure it is the default branch (never a PR's)."""
    try:  # one git call where the checkout tracks origin's default branch (as actions/checkout leaves it)
        head, tracked, branch = _git(root, "rev-parse", "HEAD^{commit}",
                                     f"refs/remotes/origin/{default_branch}^{{commit}}", "--abbrev-ref", "HEAD").split("\n")
    except (CheckoutError, ValueError):
        head = _git(root, "rev-parse", "--verify", "HEAD^{commit}")
        try:
            tracked = _git(root, "rev-parse", "--verify", f"refs/remotes/origin/{default_branch}^{{commit}}")
        except CheckoutError:
            tracked = None
        branch = _git(root, "rev-parse", "--abbrev-ref", "HEAD")
    if head != tracked and branch != default_branch:
        raise CheckoutError(msg("%(root)s is not a checkout of %(branch)s (HEAD is %(head_branch)s %(head)s)",
                                root=root, branch=default_branch, head_branch=branch, head=head[:12]))
    return head


def verified_commit(checkout: str, default_branch: str, state: RequestState) -> str:
    """default_branch_commit() of the event's checkout, asked of git once per event (the config and the
    estimate both need it; the checkout does not move while one event is handled)."""
    where = (pathlib.Path(checkout).resolve(), default_branch)
    known = state.checkout_commit
    if known is not None and known[0] == where:
        return known[1]
    return state.remember_checkout(where, default_branch_commit(*where))


def read_config(root: pathlib.Path | str, default_branch: str, commit: str | None = None) -> RepoConfig:
    """The config as committed on the default branch's checked-out commit (`commit`: that commit, verified
    already by default_branch_commit); raises ConfigError, CheckoutError."""
    root = pathlib.Path(root).resolve()
    commit = commit or default_branch_commit(root, default_branch)
    done = subprocess.run(["git", "-C", str(root), "show", f"{commit}:{CONFIG_PATH}"], capture_output=True,
                          check=False, timeout=60)
    if done.returncode != 0:
        listed = _git(root, "ls-tree", "--name-only", commit, CONFIG_PATH)
        if not listed:
            return RepoConfig()
        raise CheckoutError(msg("git %(command)s: %(said)s", command=f"show {CONFIG_PATH}",
                                said=done.stderr.decode(errors="replace").strip()[:300]))
    return load_config(done.stdout.decode("utf-8"), f"{CONFIG_PATH}@{default_branch}")


def _fetch_env(root: pathlib.Path) -> dict[str, str]:
    """Authenticate an https fetch with the job's token as actions/checkout does, through the environment
    (never argv); a file or local remote (the sandbox) needs none."""
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    token = os.environ.get("GITHUB_TOKEN", "")
    try:
        url = _git(root, "remote", "get-url", "origin")
    except CheckoutError:
        return env
    if token and url.startswith("https://"):
        basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
        env.update(GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="http.extraheader",
                   GIT_CONFIG_VALUE_0=f"AUTHORIZATION: basic {basic}")
    return env


def fetch(root: pathlib.Path, *shas: str) -> None:
    """Bring commits into the object store (data only: no checkout, so no PR hook, filter or code runs)."""
    missing = [s for s in shas if is_full_sha(s) and subprocess.run(
        ["git", "-C", str(root), "cat-file", "-e", f"{s}^{{commit}}"], capture_output=True, check=False).returncode]
    if missing:
        _git(root, "fetch", "--no-tags", "--quiet", "--no-write-fetch-head",
             "origin", *missing, env=_fetch_env(root))


def default_source(h: Handler) -> GitSource | ApiSource:
    """The default branch's files: the checkout's verified tip when there is one, else through the API."""
    if h.checkout is not None:
        try:
            return GitSource(pathlib.Path(h.checkout).resolve(), verified_commit(h.checkout, h.default_branch, h.state))
        except CheckoutError as exc:
            h.log(f"the checkout cannot serve the default branch ({exc}); reading through the API")
    return ApiSource(h.client, h.default_branch)


def sources(h: Handler, pull: Pull) -> tuple[GitSource | ApiSource, GitSource | ApiSource]:
    """The head commit's files and its base's (the merge-base with the default branch, as gpu.yml plans),
    from the checkout when there is one, else through the API."""

    if h.checkout is not None:
        root = pathlib.Path(h.checkout).resolve()
        try:
            tip = verified_commit(h.checkout, h.default_branch, h.state)
            fetch(root, pull.head_sha)
            try:
                base = _git(root, "merge-base", tip, pull.head_sha)
            except CheckoutError:  # a shallow checkout: the PR's own base commit instead
                fetch(root, pull.base_sha)
                base = pull.base_sha
            return GitSource(root, pull.head_sha), GitSource(root, base)
        except CheckoutError as exc:
            h.log(f"the checkout cannot serve the estimate ({exc}); reading through the API")
    return ApiSource(h.client, pull.head_sha), ApiSource(h.client, pull.base_sha)
