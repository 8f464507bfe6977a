"""perf-changelog.yaml as InferenceX reads it: only appended entries run, a deleted line is an error."""
from __future__ import annotations

import difflib
from collections import defaultdict
from dataclasses import dataclass, field

from bot.core.messages import Message, msg
from bot.inferencex.append_only import (
    SCENARIO_TYPES, AppendOnlyError, append_only_delta, check_scope, recipe_fingerprint_once,
)
from bot.inferencex.contract import matrix_row
from bot.inferencex.generate import ConfigKeyError, expand_config_keys, generate_keyed, trim_conc_keyed
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


_SEQ_NAMES = {(1024, 1024): "1k1k", (8192, 1024): "8k1k"}


def _seq(row: dict) -> str:
    isl, osl = row.get("isl"), row.get("osl")
    return _SEQ_NAMES.get((isl, osl)) or f"{isl}_{osl}"


def appended_text(base: bytes | None, head: bytes | None, path: str) -> tuple[str, list[int]]:
    """The lines added between two versions, as git's diff adds them, with their head line numbers.

    InferenceX's `process_changelog.py` reads the `+` lines of `git diff base head`, wherever they are
    inserted, and refuses any deleted line that is not blank, in its own words. An insertion has
    more than one alignment (an entry added between two others shares its `- config-keys:` line
    with its neighbour): each added block is slid to where it starts an entry, as git's heuristic
    places it, so that the added lines parse as the entries the author wrote.
    """

    old = (base or b"").decode("utf-8", "replace").splitlines()
    new = (head or b"").decode("utf-8", "replace").splitlines()
    if head is not None and head and not head.endswith(b"\n"):
        raise RecipeError.single(path, len(new), None, msg("must end with a newline"))
    added: list[str] = []
    lines: list[int] = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag in ("delete", "replace"):
            for index in range(a0, a1):
                if old[index].strip():
                    raise RecipeError.single(path, index + 1, None, deletion_message(path, old[index]))
        if tag in ("insert", "replace"):
            if tag == "insert":
                b0, b1 = slide_block(new, b0, b1)
            for index in range(b0, b1):
                text = new[index]
                if any(ch in text for ch in "\r\t\0"):
                    raise RecipeError.single(path, index + 1, None,
                                             msg("tab, carriage return or NUL is not allowed"))
                added.append(text)
                lines.append(index + 1)
    return "\n".join(added), lines


def deletion_message(path: str, line: str) -> Message:
    """InferenceX's own wording for a changed or deleted changelog line (its rule: the log only grows)."""
    return msg("Deletions are not allowed in %(name)s. Only additions to the changelog are permitted. "
               "Found deleted line: %(line)s", name=path.rsplit("/", 1)[-1], line=line)


def _starts_entry(line: str) -> bool:
    return line.startswith("-") and (len(line) == 1 or line[1] in " \t")


def slide_block(new: list[str], b0: int, b1: int) -> tuple[int, int]:
    """Where an inserted block [b0, b1) of `new` goes among its equivalent positions.

    A block may move one line up while the line above it equals its last line, or down while its
    first line equals the line below it; every such position gives the same file. The chosen one
    starts at an entry (`- ` at column 0) and ends before the next one, or else is the first that
    starts at an entry; otherwise the block stays where it was found.
    """
    first, last = b0, b0
    while first > 0 and new[first - 1] == new[first - 1 + (b1 - b0)]:
        first -= 1
    last = b0
    while last + (b1 - b0) < len(new) and new[last] == new[last + (b1 - b0)]:
        last += 1
    size = b1 - b0
    starts = [s for s in range(first, last + 1) if _starts_entry(new[s])]
    if not starts:
        return b0, b1
    whole = [s for s in starts if s + size >= len(new) or _starts_entry(new[s + size]) or not new[s + size].strip()]
    chosen = (whole or starts)
    # git shifts a block as far down as it may before its heuristic picks a boundary: the last one
    pick = max(chosen) if whole else min(chosen)
    return pick, pick + size


def appended_entries(repo: InferenceXRepo, base: bytes | None, head: bytes | None) -> list[AppendedEntry]:
    path = repo.changelog_path
    text, lines = appended_text(base, head, path)
    if not text.strip():
        return []
    duplicates: list = []
    located = load_yaml(text, path, duplicates)
    repo.note_duplicates(path, [(k, lines[n - 1] if n <= len(lines) else n, lines[f - 1] if f <= len(lines) else f)
                                for k, n, f in duplicates])
    if located.data is None:
        return []

    def locate(loc: tuple) -> tuple[str, int | None]:
        line = located.line_of(loc)
        return path, lines[line - 1] if line and line <= len(lines) else None

    if not isinstance(located.data, list):
        raise RecipeError.single(path, lines[0] if lines else None, None, msg("appended lines must be list entries"))
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
                file, line, f"config-keys[{position}]", exc.message, tuple(_preview(exc.available))
            )]) from None
        out.append(AppendedEntry(entry, locate((index,))[1] or 0, keys))
    return out


def _preview(names: list[str], limit: int = 12) -> list[Message | str]:
    return [*names] if len(names) <= limit else [*names[:limit], msg("... %(more)s more", more=len(names) - limit)]


def _entry_error(repo: InferenceXRepo, appended: AppendedEntry, message: Message) -> RecipeError:
    return RecipeError.single(repo.changelog_path, appended.line or None, "append-only", message)


def _scenario_groups(keys: list[str], wanted: tuple[str, ...], seen: dict[str, set[str]]) -> dict[tuple, list[str]]:
    """Configs grouped by the scenarios not yet generated for them (so overlapping entries add nothing twice)."""
    groups: dict[tuple, list[str]] = defaultdict(list)
    for key in keys:
        unseen = tuple(s for s in SCENARIO_TYPES if s in wanted and s not in seen[key])
        if unseen:
            seen[key].update(unseen)
            groups[unseen].append(key)
    return groups


def _check_append_only(repo: InferenceXRepo, entries: list[AppendedEntry], base_repo: InferenceXRepo | None,
                       all_evals: bool, evals_only: bool) -> None:
    flagged = [e for e in entries if e.entry.append_only]
    if not flagged:
        return
    first = flagged[0]
    if len(flagged) != len(entries):
        raise _entry_error(repo, first, msg("append-only entries cannot share a sweep with regular changelog entries"))
    if all_evals or evals_only:
        raise _entry_error(repo, first, msg("append-only sweeps cannot use all-evals or evals-only modifiers"))
    if base_repo is None:
        raise _entry_error(repo, first, msg("append-only needs the base revision's configs, which could not be read"))
    selected: dict[str, set[str]] = defaultdict(set)
    for appended in entries:
        for key in appended.keys:
            selected[key].update(appended.entry.scenario_type or SCENARIO_TYPES)
    base_keys = {*base_repo.configs, *base_repo.invalid}
    missing = sorted(k for k in selected if k not in base_keys)
    if missing:
        raise _entry_error(repo, first, msg("append-only requires every selected config to exist in the base "
                                            "revision; missing: %(missing)s", missing=str(missing)))
    base_master = {k: base_repo.raw(k) for k in base_keys}
    head_master = {k: repo.raw(k) for k in {*repo.configs, *repo.invalid}}
    try:
        check_scope(base_master, head_master, selected)
    except AppendOnlyError as exc:
        raise _entry_error(repo, first, exc.message) from None


def changelog_rows(
    repo: InferenceXRepo,
    entries: list[AppendedEntry],
    base_repo: InferenceXRepo | None = None,
    *,
    all_evals: bool = False,
    evals_only: bool = False,
    trim: bool = False,
) -> ChangelogRows:
    """The rows InferenceX's `process_changelog.py` gives for these appended entries, field for field.

    `all_evals`, `evals_only`, `trim` are its `--all-evals`, `--evals-only`, `--trim-conc` (the PR labels
    all-evals, evals-only, sweep-enabled). An entry with `all-evals: true` runs only its evals (at every
    eligible concurrency); throughput rows get `recipe-fingerprint`; append-only entries run only the
    points they add and are refused as InferenceX refuses them.
    """
    _check_append_only(repo, entries, base_repo, all_evals, evals_only)
    result = ChangelogRows(entries=entries)
    bench_seen: dict[str, set[str]] = defaultdict(set)
    eval_seen: dict[str, set[str]] = defaultdict(set)
    # all-evals entries first, so their broader eval matrix wins for a config named twice
    for appended in sorted(entries, key=lambda e: not e.entry.all_evals):
        entry = appended.entry
        wanted = tuple(entry.scenario_type or SCENARIO_TYPES)
        if not (evals_only or entry.evals_only or entry.all_evals):
            for scenarios, keys in _scenario_groups(appended.keys, wanted, bench_seen).items():
                only = None if scenarios == SCENARIO_TYPES else list(scenarios)
                pairs = generate_keyed(repo.configs, repo.runners, keys, "no-evals", scenario_types=only)
                if entry.append_only:
                    base_pairs = generate_keyed(base_repo.configs, base_repo.runners, keys, "no-evals",
                                                scenario_types=only)
                    try:
                        pairs = append_only_delta(base_pairs, pairs)
                    except AppendOnlyError as exc:
                        raise _entry_error(repo, appended, exc.message) from None
                result.throughput.extend(pairs)
        if entry.append_only:
            continue
        for scenarios, keys in _scenario_groups(appended.keys, wanted, eval_seen).items():
            pairs = generate_keyed(repo.configs, repo.runners, keys, "evals-only",
                                   all_evals=all_evals or entry.all_evals, scenario_types=list(scenarios))
            if entry.eval_min_prefill_ep is not None:
                pairs = [(k, r) for k, r in pairs if not isinstance(r.get("prefill"), dict)
                         or _ep_at_least(r["prefill"], entry.eval_min_prefill_ep)]
            result.evals.extend(pairs)
    if trim:
        result.throughput = trim_conc_keyed(result.throughput)
    fingerprints: dict[tuple, str] = {}
    for _, row in result.throughput:
        row["recipe-fingerprint"] = recipe_fingerprint_once(row, fingerprints)
    result.throughput = [(k, matrix_row(r)) for k, r in result.throughput]
    result.evals = [(k, matrix_row(r)) for k, r in result.evals]
    return result


def _ep_at_least(prefill: dict, minimum: int) -> bool:
    try:
        return int(prefill.get("ep", 1)) >= minimum
    except (TypeError, ValueError):
        return False


def default_rows(repo: InferenceXRepo, keys: list[str], *, all_evals: bool = False, evals_only: bool = False,
                 trim: bool = False) -> ChangelogRows:
    """Keys planned without a changelog entry: as if one plain entry named them."""
    if not keys:
        return ChangelogRows()
    entry = ChangelogEntry.model_validate({"config-keys": keys, "description": ["planned without an entry"],
                                           "pr-link": ""})
    rows = changelog_rows(repo, [AppendedEntry(entry, 0, keys)], all_evals=all_evals, evals_only=evals_only,
                          trim=trim)
    rows.entries = []
    return rows


def changelog_missing(repo, changed: set[str]) -> Message | None:
    """InferenceX's own review rule, in its words: a PR that edits a master config must add a
    perf-changelog.yaml entry, since only appended entries run. None when the rule holds."""
    masters = sorted(set(repo.config_file.values()) & changed)
    if not masters or repo.changelog_path in changed:
        return None
    return msg("Master config files were modified but `%(changelog)s` was not updated (%(masters)s): "
               "add a `%(changelog)s` entry documenting the change; only appended entries run",
               changelog=repo.changelog_path, masters=", ".join(masters))
