"""PyGithub, imported without loading what only GitHub App auth uses (PyJWT, cryptography) until it is used.

`import github` loads github.Auth, which imports PyJWT for the App's JSON web tokens, and PyJWT
imports cryptography: about a sixth of `recipe-bot handle`'s start-up, for a client that
authenticates with a plain token. So `jwt` is first a stand-in module: the first use of one of
its attributes (AppAuth signing a token, in `recipe-bot serve`) imports the real PyJWT and
answers from it, and from then on `import jwt` gives the real module.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
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


def _defer(name: str) -> None:
    if name in sys.modules or importlib.util.find_spec(name) is None:
        return  # loaded already, or not installed: `import github` behaves as it always did
    sys.modules[name] = _OnFirstUse(name)


_defer("jwt")

import github  # noqa: E402  (after the deferral above, which is the point of this module)
from github import Auth, GithubException  # noqa: E402

__all__ = ["Auth", "GithubException", "github"]
