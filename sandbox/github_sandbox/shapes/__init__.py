"""GitHub-shaped JSON for the sandbox's state: the objects PyGithub and the OpenAPI description expect."""
from __future__ import annotations

from .ci import CiShapes
from .code import CodeShapes
from .issues import IssueShapes


class Shapes(IssueShapes, CodeShapes, CiShapes):
    """All builders, bound to one state and the base URLs of the request being answered."""


__all__ = ["Shapes"]
