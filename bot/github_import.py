"""PyGithub, imported without what the REST client does not use (its object classes, PyJWT, cryptography, nacl).

The client (bot/github.py) needs PyGithub's Requester (auth header, base URL, pagination, errors) and
its exception types, nothing else. But `import github` runs the package's __init__, which imports
every object class (Repository, Organization, PullRequest, ... and nacl for secrets) and github.Auth,
which imports PyJWT and, through it, cryptography: about a fifth of `recipe-bot handle`'s start-up.

So `github` first stands in as a package whose submodules import from their files as usual
(github.Requester, github.GithubException, github.Consts, github.GithubObject), and whose other
attributes (github.Github, github.Auth, GithubIntegration in `recipe-bot serve`, a test's `from github
import Github`) run the real __init__ on first use and answer from it. `jwt` likewise stands in until
one of its attributes is read (AppAuth signing a token).
"""
from __future__ import annotations

import importlib
import importlib.util
import logging
import sys
import threading
import types


class _OnFirstUse(types.ModuleType):
    """Stands in for a module until one of its attributes is read; then imports it and answers."""

    def __getattr__(self, attribute: str):
        # Called only for attributes the stand-in lacks. Import's own probes (__spec__ and the
        # like) are answered as for any module; __path__ (a submodule import) loads it too.
        if attribute.startswith("__") and attribute not in ("__path__", "__all__"):
            raise AttributeError(attribute)
        if sys.modules.get(self.__name__) is self:
            sys.modules.pop(self.__name__, None)
        return getattr(importlib.import_module(self.__name__), attribute)


class _Package(types.ModuleType):
    """A package whose submodules load without its __init__; reading any other attribute runs the
    __init__ in this same module object (so every reference to it sees the real package) and answers."""

    def __getattr__(self, attribute: str):
        if attribute.startswith("__") and attribute != "__all__":
            raise AttributeError(attribute)
        with _INIT_LOCK:  # another thread's first read waits for the __init__, as an import would
            if self.__name__ not in _INIT_RUN:
                _INIT_RUN.add(self.__name__)
                logging.getLogger(self.__name__).removeHandler(_LOG_HANDLER)  # the real __init__ adds its own
                self.__spec__.loader.exec_module(self)
                self.__class__ = types.ModuleType  # a plain module from here on: this hook is done
        try:  # during the __init__ itself: what a partly initialized module has
            return self.__dict__[attribute]
        except KeyError:
            raise AttributeError(f"module {self.__name__!r} has no attribute {attribute!r}") from None


_INIT_LOCK = threading.RLock()
_INIT_RUN: set[str] = set()


def _defer(name: str) -> None:
    if name in sys.modules or importlib.util.find_spec(name) is None:
        return  # loaded already, or not installed: `import <name>` behaves as it always did
    sys.modules[name] = _OnFirstUse(name)


# What github/__init__.py sets up and Requester relies on: its logger at INFO, printed to stderr
# (a followed redirect is logged there).
_LOG_HANDLER = logging.StreamHandler()


def _package_without_init(name: str) -> None:
    if name in sys.modules:
        return  # the real package is loaded already
    spec = importlib.util.find_spec(name)
    if spec is None or spec.submodule_search_locations is None:
        return
    package = _Package(name)
    package.__spec__, package.__path__, package.__file__ = spec, list(spec.submodule_search_locations), spec.origin
    package.__package__ = name
    sys.modules[name] = package
    logger = logging.getLogger(name)
    logger.setLevel(logging.INFO)
    logger.addHandler(_LOG_HANDLER)


_defer("jwt")
_package_without_init("github")

# Submodules only (`from github import X` would read the package's attribute, loading the real one).
from github.Consts import DEFAULT_USER_AGENT  # noqa: E402  (after the stand-ins above, which are the point)
from github.GithubException import GithubException  # noqa: E402
from github.Requester import Requester  # noqa: E402

# As github/__init__ binds it: the package's `GithubException` is the class, not its module (Requester
# raises github.GithubException(...), and `from github import GithubException` expects the class).
sys.modules["github"].GithubException = GithubException


class TokenAuth:
    """A plain token in the Authorization header, as the Requester asks its auth object for it
    (the interface of github.Auth.Auth, without importing github.Auth)."""

    token_type = "token"

    def __init__(self, token: str):
        if not isinstance(token, str) or not token:
            raise ValueError("the token must be a non-empty string")
        self.token = token

    def authentication(self, headers: dict) -> None:
        headers["Authorization"] = f"{self.token_type} {self.token}"

    def mask_authentication(self, headers: dict) -> None:  # what the Requester logs in debug mode
        headers["Authorization"] = "token (oauth token removed)"


def requester(*, base_url: str, token: str, per_page: int, timeout: int) -> Requester:
    """PyGithub's Requester, set up as github.Github(auth=Auth.Token(token), ...) sets it up, with no
    pause between requests or writes and no retry of its own (bot/github_retry.py owns retries)."""
    return Requester(auth=TokenAuth(token), base_url=base_url, timeout=timeout, user_agent=DEFAULT_USER_AGENT,
                     per_page=per_page, verify=True, retry=None, pool_size=None, seconds_between_requests=None,
                     seconds_between_writes=None, lazy=True, api_version=None)


__all__ = ["GithubException", "Requester", "TokenAuth", "requester"]
