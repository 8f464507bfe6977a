#!/usr/bin/env bash
# Third-party data recipe-bot reads at run time, from the packages its maintainers publish:
# GitHub's REST description (@octokit/openapi) and GraphQL schema (@octokit/graphql-schema, for the
# sandbox's POST /graphql), octokit's webhook examples and schemas, and mermaid
# (inlined into the demo's preview.html so that it renders the chart offline, as GitHub does), pinned by
# exact version and integrity in npm/package-lock.json. `npm ci` installs exactly those into the
# ignored cache .upstream/ (or $RECIPE_BOT_UPSTREAM_DIR); it runs again only when the lock changes.
# Installs Debian's npm first when it is missing and we may (root, apt).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${RECIPE_BOT_UPSTREAM_DIR:-$root/.upstream}"
lock="$root/npm/package-lock.json"

if [ -f "$dest/.installed" ] && cmp -s "$lock" "$dest/.installed"; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "[dev] installing Debian's npm for the pinned upstream data packages"
    "$root/scripts/apt-get-waiting" update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive "$root/scripts/apt-get-waiting" install -y -qq npm >/dev/null
  else
    echo "[dev] npm is missing: install Node.js's npm, then run scripts/dev setup again" >&2
    echo "[dev] 缺少 npm：请先安装 Node.js 的 npm，再运行 scripts/dev setup" >&2
    exit 1
  fi
fi
echo "[dev] installing the pinned upstream data packages (npm ci) into $dest"
mkdir -p "$dest"
cp "$root/npm/package.json" "$lock" "$dest/"
# --ignore-scripts: data packages only, nothing of theirs runs here.
(cd "$dest" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
rm -rf "$dest/trimmed"  # derived from the old packages
cp "$lock" "$dest/.installed"
