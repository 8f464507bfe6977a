"""Who the bot acts as: installation tokens from the App's id and private key, or one plain token (sandbox)."""
from __future__ import annotations

import dataclasses
import datetime as dt
import threading
from typing import Any

from github import Auth, GithubIntegration
from pydantic import SecretStr

from bot.core.github import GitHubClient, GitHubError
from bot.core.github_cache import CommitReads, EditHistories
from bot.core.github_retry import RetryPolicy
from bot.core.messages import msg

REFRESH_BEFORE = dt.timedelta(minutes=5)  # installation tokens live an hour; renew before they lapse


class TokenSource:
    """A plain token for every repository: the sandbox names the acting user by its token."""

    def __init__(self, token: str):
        self._token = token

    def token(self, installation_id: int | None) -> str:
        return self._token


class AppTokenSource:
    """Installation tokens from the App's JWT (PyGithub's AppAuth), cached per installation until near expiry."""

    def __init__(self, app_id: str | int, private_key: str, base_url: str):
        self._integration = GithubIntegration(auth=Auth.AppAuth(app_id, private_key), base_url=base_url)
        self._lock = threading.Lock()
        self._cache: dict[int, tuple[str, dt.datetime]] = {}

    def token(self, installation_id: int | None) -> str:
        if installation_id is None:
            raise GitHubError(msg("the delivery names no installation, so no installation token can be made"))
        now = dt.datetime.now(dt.timezone.utc)
        with self._lock:
            cached = self._cache.get(installation_id)
            if cached and cached[1] - REFRESH_BEFORE > now:
                return cached[0]
            access = self._integration.get_access_token(installation_id)
            expires = access.expires_at or now + dt.timedelta(hours=1)
            if expires.tzinfo is None:
                expires = expires.replace(tzinfo=dt.timezone.utc)
            self._cache[installation_id] = (access.token, expires)
            return access.token


class ClientFactory:
    """One GitHubClient per delivery, for the delivery's repository and installation; every client shares
    the process's reads at full commit SHAs and the edit histories of comment versions
    (bot/core/github_cache.py), and nothing else."""

    def __init__(self, source: TokenSource | AppTokenSource, base_url: str, policy: RetryPolicy | None = None,
                 commit_reads: CommitReads | None = None):
        self.source, self.base_url, self.policy = source, base_url, policy
        self.commit_reads = commit_reads if commit_reads is not None else CommitReads()
        self.edit_histories = EditHistories()

    def __call__(self, payload: Any) -> GitHubClient:
        repository = payload["repository"]["full_name"]
        installation = (payload.get("installation") or {}).get("id")
        return GitHubClient(base_url=self.base_url, token=self.source.token(installation), repository=repository,
                            policy=self.policy, commit_reads=self.commit_reads, edit_histories=self.edit_histories)


@dataclasses.dataclass(frozen=True)
class Credentials:
    """What a process needs to act as the bot: a plain token, or the App's id and private key; picklable, so
    the worker process builds its own token source and clients from it."""

    base_url: str
    token: SecretStr | None = None
    app_id: str | None = None
    private_key: SecretStr | None = None
    policy: RetryPolicy | None = None

    def source(self) -> TokenSource | AppTokenSource:
        if self.token is not None:
            return TokenSource(self.token.get_secret_value())
        assert self.app_id is not None and self.private_key is not None, "Credentials need a token or an App"
        return AppTokenSource(self.app_id, self.private_key.get_secret_value(), self.base_url)

    def client_factory(self) -> ClientFactory:
        return ClientFactory(self.source(), self.base_url, self.policy)
