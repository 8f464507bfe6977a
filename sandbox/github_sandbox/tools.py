"""`github-sandbox seed` (a seed repository from a spec file) and `github-sandbox deliver` (an event from a running sandbox)."""
from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import click
import yaml

from .harness import make_seed

HELP_OPTIONS = {"help_option_names": ["-h", "--help"]}
SPEC_KEYS = ("main", "feature", "seed", "feature_branch")


def _spec_error(path: Path, field: str, problem: str, problem_zh: str) -> click.ClickException:
    return click.ClickException(f"{path}: {field}: {problem}\n{path}：{field}：{problem_zh}")


def _files(path: Path, spec: dict[str, Any], key: str, *, deletions: bool) -> dict[str, Any]:
    """spec[key] as {relative path: text} (a null text deletes the file on the feature branch)."""
    files = spec.get(key) or {}
    accepted = "text or null" if deletions else "text"
    accepted_zh = "文本或 null" if deletions else "文本"
    if not isinstance(files, dict):
        raise _spec_error(path, key, f"expected a mapping of file path to {accepted}, got {type(files).__name__}",
                          f"应为「文件路径 → {accepted_zh}」的映射，实际为 {type(files).__name__}")
    for name, text in files.items():
        if not isinstance(name, str) or not (isinstance(text, str) or (deletions and text is None)):
            raise _spec_error(path, f"{key}.{name}", f"expected {accepted}, got {type(text).__name__}",
                              f"应为{accepted_zh}，实际为 {type(text).__name__}")
    return files


def read_spec(path: Path) -> dict[str, Any]:
    """The seed spec (YAML or JSON): {main: {path: text}, feature: {path: text|null}, seed: {...}, feature_branch?}."""
    try:
        spec = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise click.ClickException(f"{path}: cannot read it: {exc.strerror}\n{path}：无法读取：{exc.strerror}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        raise click.ClickException(f"{where}: not valid YAML or JSON\n{where}：不是有效的 YAML 或 JSON") from None
    if not isinstance(spec, dict):
        raise _spec_error(path, "(top level)", f"expected a mapping with keys {', '.join(SPEC_KEYS)}",
                          f"应为包含 {', '.join(SPEC_KEYS)} 键的映射")
    unknown = sorted(set(spec) - set(SPEC_KEYS))
    if unknown:
        raise _spec_error(path, unknown[0], f"unknown key; accepted: {', '.join(SPEC_KEYS)}",
                          f"未知的键；可用：{', '.join(SPEC_KEYS)}")
    if not isinstance(spec.get("seed") or {}, dict):
        raise _spec_error(path, "seed", "expected a mapping of seed keys (docs/sandbox.md)",
                          "应为种子文件键的映射（见 docs/sandbox.md）")
    if not isinstance(spec.get("feature_branch", "feature"), str):
        raise _spec_error(path, "feature_branch", "expected a branch name", "应为分支名")
    return spec


@click.command(name="seed", context_settings=HELP_OPTIONS)
@click.argument("out_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option("--spec", "spec_path", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="YAML or JSON: main (path: text), feature (path: text, null deletes), seed (keys that "
                   "replace the default seed's), feature_branch (default feature).")
def seed_cmd(out_dir: Path, spec_path: Path) -> None:
    """Build OUT_DIR/repo (branch main, and a feature branch on top of it) and OUT_DIR/seed.yaml; print the seed's path.

    Commits have fixed authors and dates, so the same spec gives the same SHAs. The default seed is
    acme/bench with users alice (admin), carol (write), bob (read), mallory (none) and pull #7 from the
    feature branch by bob; `seed:` replaces its top-level keys.
    """
    spec = read_spec(spec_path)
    main_files = _files(spec_path, spec, "main", deletions=False)
    feature_files = _files(spec_path, spec, "feature", deletions=True)
    if (out_dir / "repo").exists():
        raise click.ClickException(f"{out_dir / 'repo'} exists already: pick an empty folder\n"
                                   f"{out_dir / 'repo'} 已存在：请换一个空目录")
    seed = make_seed(out_dir, main_files, feature_files, spec.get("seed") or None,
                     feature_branch=spec.get("feature_branch", "feature"))
    click.echo(str(seed))


def _selector(text: str) -> tuple[str, Any]:
    """KEY=VALUE, the value read as JSON where it is JSON (comment_id=5 is the number 5), else as text."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise click.BadParameter(f"{text!r}: expected KEY=VALUE, e.g. comment_id=5\n"
                                 f"{text!r}：应为 KEY=VALUE，例如 comment_id=5")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value


@click.command(name="deliver", context_settings=HELP_OPTIONS)
@click.argument("event")
@click.argument("action")
@click.option("--sandbox", "sandbox_url", required=True, metavar="URL", help="The running sandbox, e.g. http://127.0.0.1:8000.")
@click.option("-s", "--select", "selections", multiple=True, metavar="KEY=VALUE",
              help="What the event is about: comment_id, pull, label, review_id, run_id, sender, before, after "
                   "(docs/sandbox.md). Repeatable.")
@click.option("--out", "out_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Write the payload here (what GitHub Actions hands a job as GITHUB_EVENT_PATH); default: stdout.")
@click.option("--send", is_flag=True, help="Also send it, signed, to the sandbox's webhook receiver (serve --deliver).")
def deliver_cmd(event: str, action: str, sandbox_url: str, selections: tuple[str, ...], out_path: Path | None,
                send: bool) -> None:
    """Deliver the webhook event EVENT ACTION (e.g. issue_comment created), built from the sandbox's state."""
    body = {"event": event, "action": action, **dict(_selector(s) for s in selections), "deliver": send}
    request = urllib.request.Request(sandbox_url.rstrip("/") + "/_sandbox/webhook", data=json.dumps(body).encode(),
                                     method="POST", headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            payload = json.loads(response.read())
    except urllib.error.HTTPError as exc:
        reason = exc.read().decode(errors="replace")
        raise click.ClickException(f"the sandbox refused {event} {action}: {exc.code} {reason}\n"
                                   f"sandbox 拒绝了 {event} {action}：{exc.code} {reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        why = getattr(exc, "reason", exc)
        raise click.ClickException(f"no sandbox at {sandbox_url}: {why}\n{sandbox_url} 上没有 sandbox：{why}") from None
    text = json.dumps(payload, indent=2)
    if out_path is None:
        click.echo(text)
    else:
        out_path.write_text(text, encoding="utf-8")
