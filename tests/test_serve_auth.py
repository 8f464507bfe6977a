"""App auth: installation tokens minted with the App's JWT (PyGithub's AppAuth), cached until near expiry.

The sandbox names users by token and has no App, so the token endpoint is a local stand-in here that
checks the JWT against the App's public key, the way GitHub does.
"""
from __future__ import annotations

import datetime as dt
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
from github import GithubException
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from bot.core.github import GitHubError
from bot.serve.auth import AppTokenSource, ClientFactory, TokenSource

APP_ID = 4242


@pytest.fixture(scope="module")
def key_pair():
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    return pem, key.public_key()


@pytest.fixture
def token_endpoint(key_pair):
    """POST /app/installations/{id}/access_tokens, answering only a JWT signed by the App's key."""
    _, public = key_pair
    minted: list[int] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 (http.server's name)
            bearer = self.headers.get("Authorization", "").removeprefix("Bearer ")
            try:
                claims = jwt.decode(bearer, public, algorithms=["RS256"])
                ok = str(claims["iss"]) == str(APP_ID)
            except jwt.PyJWTError:
                ok = False
            parts = self.path.strip("/").split("/")
            if not ok or parts[:2] != ["app", "installations"] or parts[3:] != ["access_tokens"]:
                self.send_response(401)
                self.end_headers()
                return
            minted.append(int(parts[2]))
            expires = dt.datetime.now(dt.timezone.utc) + dt.timedelta(hours=1)
            body = json.dumps({"token": f"ghs_installation_{parts[2]}_{len(minted)}",
                               "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%SZ"),
                               "permissions": {"issues": "write"}, "repository_selection": "all"}).encode()
            self.send_response(201)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}", minted
    server.shutdown()
    server.server_close()


def test_installation_tokens_are_minted_with_the_app_key_and_cached_per_installation(key_pair, token_endpoint):
    url, minted = token_endpoint
    source = AppTokenSource(APP_ID, key_pair[0], url)
    first = source.token(11)
    assert first == "ghs_installation_11_1"
    assert source.token(11) == first  # cached: an hour-long token is not minted per delivery
    assert source.token(12) == "ghs_installation_12_2"
    assert minted == [11, 12]


def test_a_token_from_another_apps_key_is_refused(token_endpoint):
    url, minted = token_endpoint
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
    with pytest.raises(GithubException) as refused:
        AppTokenSource(APP_ID, other, url).token(11)
    assert refused.value.status == 401 and minted == []


def test_a_delivery_without_an_installation_gets_no_app_token(key_pair):
    with pytest.raises(GitHubError, match="names no installation"):
        AppTokenSource(APP_ID, key_pair[0], "http://127.0.0.1:9").token(None)


def test_the_client_acts_on_the_deliverys_repository_with_the_plain_token():
    client = ClientFactory(TokenSource("recipe-bot[bot]"), "http://127.0.0.1:9")(
        {"repository": {"full_name": "acme/bench"}, "installation": {"id": 3}})
    assert client.repository == "acme/bench" and client.base_url == "http://127.0.0.1:9"


def test_each_deliverys_client_keeps_the_retry_policy_serve_read_at_its_start():
    from bot.core.github_retry import RetryPolicy

    policy = RetryPolicy.from_env({"RECIPE_BOT_GITHUB_ATTEMPTS": "2", "RECIPE_BOT_GITHUB_TIMEOUT_S": "7"})
    client = ClientFactory(TokenSource("recipe-bot[bot]"), "http://127.0.0.1:9", policy)(
        {"repository": {"full_name": "acme/bench"}})
    assert (client.policy.attempts, client.policy.timeout_s) == (2, 7)
