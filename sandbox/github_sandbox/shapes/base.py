"""Shared pieces of GitHub JSON: stable ids, node ids, URLs, users, repositories and the bot's app."""
from __future__ import annotations

import base64
import zlib
from typing import Any
from urllib.parse import quote

from ..state import SandboxState

APP_ID = 100001
APP_PERMISSIONS = {"actions": "write", "checks": "write", "contents": "read", "issues": "write",
                   "metadata": "read", "pull_requests": "write", "statuses": "write"}
APP_EVENTS = ["issue_comment", "pull_request", "pull_request_review", "workflow_run"]
EPOCH = "2024-01-01T00:00:00Z"


def stable_id(kind: str, key: str) -> int:
    """A positive id that is the same on every run for the same thing."""
    return 10_000_000 + zlib.crc32(f"{kind}:{key}".encode()) % 90_000_000


def node_id(kind: str, ident: int | str) -> str:
    text = f"{kind}{ident}"
    return base64.b64encode(f"0{len(kind)}:{text}".encode()).decode()


class ShapesBase:
    def __init__(self, state: SandboxState, api: str, web: str):
        self.state = state
        self.api = api.rstrip("/")
        self.web = web.rstrip("/")
        self.repo_api = f"{self.api}/repos/{state.full_name}"
        self.repo_web = f"{self.web}/{state.full_name}"

    # --- users ------------------------------------------------------------------------------
    def user_id(self, login: str) -> int:
        return stable_id("user", login)

    def simple_user(self, login: str) -> dict[str, Any]:
        q = quote(login)
        u = f"{self.api}/users/{q}"
        kind = self.state.user_type(login)
        return {
            "login": login, "id": self.user_id(login), "node_id": node_id(kind, self.user_id(login)),
            "avatar_url": f"{self.web}/avatars/{q}", "gravatar_id": "", "url": u, "html_url": f"{self.web}/{q}",
            "followers_url": f"{u}/followers", "following_url": f"{u}/following{{/other_user}}",
            "gists_url": f"{u}/gists{{/gist_id}}", "starred_url": f"{u}/starred{{/owner}}{{/repo}}",
            "subscriptions_url": f"{u}/subscriptions", "organizations_url": f"{u}/orgs", "repos_url": f"{u}/repos",
            "events_url": f"{u}/events{{/privacy}}", "received_events_url": f"{u}/received_events",
            "type": kind, "user_view_type": "public", "site_admin": False,
        }

    def public_user(self, login: str) -> dict[str, Any]:
        return {**self.simple_user(login), "name": login, "company": None, "blog": "", "location": None,
                "email": None, "hireable": None, "bio": None, "twitter_username": None, "public_repos": 0,
                "public_gists": 0, "followers": 0, "following": 0, "created_at": EPOCH, "updated_at": EPOCH}

    def collaborator(self, login: str) -> dict[str, Any]:
        role = self.state.permission(login)
        levels = ("read", "triage", "write", "maintain", "admin")
        names = ("pull", "triage", "push", "maintain", "admin")
        rank = levels.index(role) if role in levels else -1
        perms = {name: rank >= i for i, name in enumerate(names)}
        return {**self.simple_user(login), "permissions": perms, "role_name": role}

    def user_for_email(self, email: str) -> dict[str, Any] | None:
        """GitHub links a commit to the account whose email it carries; sandbox commits use <login>@users.noreply.github.com."""
        login = email.split("@", 1)[0] if email.endswith("@users.noreply.github.com") else None
        if login and self.state.is_known(login):
            return self.simple_user(login)
        return None

    # --- repositories -----------------------------------------------------------------------
    def repository(self, full_name: str | None = None, *, fork: bool = False,
                   viewer: str | None = None) -> dict[str, Any]:
        """A full-repository object (a superset of repository and minimal-repository)."""
        st = self.state
        full_name = full_name or st.full_name
        owner, name = full_name.split("/", 1)
        r = f"{self.api}/repos/{full_name}"
        html = f"{self.web}/{full_name}"
        repo_id = stable_id("repo", full_name)
        data: dict[str, Any] = {
            "id": repo_id, "node_id": node_id("Repository", repo_id), "name": name, "full_name": full_name,
            "owner": self.simple_user(owner), "private": False, "html_url": html, "description": None,
            "fork": fork, "url": r, "archive_url": f"{r}/{{archive_format}}{{/ref}}",
            "assignees_url": f"{r}/assignees{{/user}}", "blobs_url": f"{r}/git/blobs{{/sha}}",
            "branches_url": f"{r}/branches{{/branch}}", "collaborators_url": f"{r}/collaborators{{/collaborator}}",
            "comments_url": f"{r}/comments{{/number}}", "commits_url": f"{r}/commits{{/sha}}",
            "compare_url": f"{r}/compare/{{base}}...{{head}}", "contents_url": f"{r}/contents/{{+path}}",
            "contributors_url": f"{r}/contributors", "deployments_url": f"{r}/deployments",
            "downloads_url": f"{r}/downloads", "events_url": f"{r}/events", "forks_url": f"{r}/forks",
            "git_commits_url": f"{r}/git/commits{{/sha}}", "git_refs_url": f"{r}/git/refs{{/sha}}",
            "git_tags_url": f"{r}/git/tags{{/sha}}", "git_url": f"git://sandbox/{full_name}.git",
            "issue_comment_url": f"{r}/issues/comments{{/number}}", "issue_events_url": f"{r}/issues/events{{/number}}",
            "issues_url": f"{r}/issues{{/number}}", "keys_url": f"{r}/keys{{/key_id}}",
            "labels_url": f"{r}/labels{{/name}}", "languages_url": f"{r}/languages", "merges_url": f"{r}/merges",
            "milestones_url": f"{r}/milestones{{/number}}",
            "notifications_url": f"{r}/notifications{{?since,all,participating}}",
            "pulls_url": f"{r}/pulls{{/number}}", "releases_url": f"{r}/releases{{/id}}",
            "ssh_url": f"git@sandbox:{full_name}.git", "stargazers_url": f"{r}/stargazers",
            "statuses_url": f"{r}/statuses/{{sha}}", "subscribers_url": f"{r}/subscribers",
            "subscription_url": f"{r}/subscription", "tags_url": f"{r}/tags", "teams_url": f"{r}/teams",
            "trees_url": f"{r}/git/trees{{/sha}}", "clone_url": f"{html}.git", "mirror_url": None,
            "hooks_url": f"{r}/hooks", "svn_url": html, "homepage": None, "language": "Python",
            "forks_count": 0, "stargazers_count": 0, "watchers_count": 0, "size": 0,
            "default_branch": st.default_branch, "open_issues_count": 0, "is_template": False, "topics": [],
            "has_issues": True, "has_projects": False, "has_wiki": False, "has_pages": False,
            "has_downloads": True, "has_discussions": False, "archived": False, "disabled": False,
            "visibility": "public", "pushed_at": st.started, "created_at": EPOCH, "updated_at": st.started,
            "allow_forking": True, "web_commit_signoff_required": False, "forks": 0, "open_issues": 0,
            "watchers": 0, "license": None, "network_count": 0, "subscribers_count": 0,
        }
        if viewer is not None and full_name == st.full_name:
            c = self.collaborator(viewer)["permissions"]
            data["permissions"] = c
        return data

    def org(self, login: str) -> dict[str, Any]:
        return self.simple_user(login)

    # --- the bot's GitHub App ---------------------------------------------------------------
    def app(self, login: str | None = None) -> dict[str, Any]:
        """The bot's GitHub App, or the App that acts as `login` (`<slug>[bot]`, e.g. github-actions[bot])."""
        login = login or self.state.bot
        slug = login.removesuffix("[bot]")
        app_id = APP_ID if login == self.state.bot else stable_id("app", slug)
        return {
            "id": app_id, "slug": slug, "node_id": node_id("App", app_id), "client_id": f"Iv1.{app_id}",
            "owner": self.simple_user(self.state.owner), "name": slug, "description": "recipe-bot (sandbox)",
            "external_url": self.web, "html_url": f"{self.web}/apps/{slug}", "created_at": EPOCH,
            "updated_at": EPOCH, "permissions": dict(APP_PERMISSIONS), "events": list(APP_EVENTS),
        }
