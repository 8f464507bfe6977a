"""perf-changelog.yaml as InferenceX reads it: only appended entries run, a deleted line is an error."""
from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field

from bot.inferencex.generate import ConfigKeyError, expand_config_keys, generate_keyed
from bot.inferencex.repo import InferenceXRepo
from bot.inferencex.schema import ChangelogEntry
from bot.recipes.errors import RecipeError, RecipeProblem
from bot.recipes.loader import validate
from bot.recipes.yamlsrc import load_yaml

THROUGHPUT_BUCKETS = ("1k1k", "8k1k", "agentic")
EVAL_BUCKETS = ("evals", "agentic_evals", "multinode_evals", "multinode_agentic_evals")


@dataclass
class AppendedEntry:
    entry: ChangelogEntry
    line: int  # line of the entry in the head changelog
    keys: list[str]  # config keys after wildcard expansion


@dataclass
class ChangelogRows:
    """Rows to run, each with the config key it came from: throughput first, then evals."""

    entries: list[AppendedEntry] = field(default_factory=list)
    throughput: list[tuple[str, dict]] = field(default_factory=list)
    evals: list[tuple[str, dict]] = field(default_factory=list)

    @property
    def keys(self) -> list[str]:
        return list(dict.fromkeys(k for e in self.entries for k in e.keys))

    def buckets(self) -> dict[str, list[dict]]:
        """Rows sorted the way InferenceX's workflow fans them out."""
        out: dict[str, list[dict]] = {}
        for _, row in self.throughput:
            node = "multi_node" if "prefill" in row else "single_node"
            scenario = "agentic" if row.get("scenario-type") == "agentic-coding" else _seq(row)
            out.setdefault(f"{node}.{scenario}", []).append(row)
        for _, row in self.evals:
            agentic = row.get("scenario-type") == "agentic-coding"
            name = ("multinode_" if "prefill" in row else "") + ("agentic_evals" if agentic else "evals")
            out.setdefault(name, []).append(row)
        return out


def _seq(row: dict) -> str:
    isl, osl = row.get("isl"), row.get("osl")
    return {(1024, 1024): "1k1k", (8192, 1024): "8k1k"}.get((isl, osl), f"{isl}_{osl}")


def appended_text(base: bytes | None, head: bytes | None, path: str) -> tuple[str, list[int]]:
    """The lines appended between two versions, with their head line numbers; deletions are refused."""
    old = (base or b"").decode("utf-8", "replace").splitlines()
    new = (head or b"").decode("utf-8", "replace").splitlines()
    if head is not None and head and not head.endswith(b"\n"):
        raise RecipeError.single(path, len(new), None, "must end with a newline")
    added: list[str] = []
    lines: list[int] = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag in ("delete", "replace"):
            for index in range(a0, a1):
                if old[index].strip():
                    raise RecipeError.single(
                        path, index + 1, None,
                        f"deletions are not allowed; only appended entries run (deleted line: {old[index]!r})",
                    )
        if tag in ("insert", "replace"):
            for index in range(b0, b1):
                text = new[index]
                if any(ch in text for ch in "\r\t\0"):
                    raise RecipeError.single(path, index + 1, None, "tab, carriage return or NUL is not allowed")
                added.append(text)
                lines.append(index + 1)
    return "\n".join(added), lines


def appended_entries(repo: InferenceXRepo, base: bytes | None, head: bytes | None) -> list[AppendedEntry]:
    path = repo.changelog_path
    text, lines = appended_text(base, head, path)
    if not text.strip():
        return []
    located = load_yaml(text, path)
    if located.data is None:
        return []

    def locate(loc: tuple) -> tuple[str, int | None]:
        line = located.line_of(loc)
        return path, lines[line - 1] if line and line <= len(lines) else None

    if not isinstance(located.data, list):
        raise RecipeError.single(path, lines[0] if lines else None, None, "appended lines must be list entries")
    out = []
    available = [*repo.configs, *repo.invalid]
    for index, raw in enumerate(located.data):
        entry = validate(ChangelogEntry, raw, lambda loc, i=index: locate((i, *loc)))
        try:
            keys = expand_config_keys(entry.config_keys, available)
        except ConfigKeyError as exc:
            position = entry.config_keys.index(exc.key)
            file, line = locate((index, "config-keys", position))
            raise RecipeError([RecipeProblem(
                file, line, f"config-keys[{position}]", str(exc), tuple(_preview(exc.available))
            )]) from None
        out.append(AppendedEntry(entry, locate((index,))[1] or 0, keys))
    return out


def _preview(names: list[str], limit: int = 12) -> list[str]:
    return names if len(names) <= limit else [*names[:limit], f"... {len(names) - limit} more"]


def _canonical(row: dict) -> str:
    return json.dumps(row, sort_keys=True)


def changelog_rows(
    repo: InferenceXRepo,
    entries: list[AppendedEntry],
    base_repo: InferenceXRepo | None = None,
) -> ChangelogRows:
    """The rows the appended entries run: throughput (`--no-evals`) and evals (`--evals-only`), deduplicated."""
    result = ChangelogRows(entries=entries)
    seen: set[str] = set()

    def add(pairs: list[tuple[str, dict]], into: list[tuple[str, dict]]) -> None:
        for key, row in pairs:
            text = _canonical(row)
            if text not in seen:
                seen.add(text)
                into.append((key, row))

    for appended in entries:
        entry, keys = appended.entry, appended.keys
        scenarios = entry.scenario_type
        if not entry.evals_only:
            pairs = generate_keyed(repo.configs, repo.runners, keys, "no-evals", scenario_types=scenarios)
            if entry.append_only and base_repo is not None:
                old_keys = [k for k in keys if k in base_repo.configs]
                before = {_canonical(r) for _, r in generate_keyed(
                    base_repo.configs, base_repo.runners, old_keys, "no-evals", scenario_types=scenarios
                )} if old_keys else set()
                pairs = [(k, r) for k, r in pairs if _canonical(r) not in before]
            add(pairs, result.throughput)
        if entry.append_only:
            continue
        for scenario in scenarios or ["fixed-seq-len", "agentic-coding"]:
            pairs = generate_keyed(repo.configs, repo.runners, keys, "evals-only", all_evals=entry.all_evals,
                                   scenario_types=[scenario])
            if entry.eval_min_prefill_ep is not None:
                pairs = [(k, r) for k, r in pairs
                         if "prefill" not in r or r["prefill"].get("ep", 1) >= entry.eval_min_prefill_ep]
            add(pairs, result.evals)
    return result


def default_rows(repo: InferenceXRepo, keys: list[str]) -> ChangelogRows:
    """What `test-config` gives for keys planned without a changelog entry: throughput, then evals."""
    rows = ChangelogRows()
    if keys:
        rows.throughput = generate_keyed(repo.configs, repo.runners, keys, "no-evals")
        rows.evals = generate_keyed(repo.configs, repo.runners, keys, "evals-only")
    return rows
