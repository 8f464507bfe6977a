"""perf-changelog.yaml: the entries a change appends (where, which configs), and the rows InferenceX's own tools give."""
from __future__ import annotations

import difflib
import fnmatch
from dataclasses import dataclass, field

import yaml

from bot.core.messages import Message, msg
from bot.core.validation import Invalid
from bot.inferencex.own_tools import TIMEOUT_S, ToolInputs, run_processor
from bot.inferencex.repo import InferenceXRepo
from bot.inferencex.schema import ChangelogEntry
from bot.recipes.errors import RecipeError, RecipeProblem
from bot.recipes.loader import validate
from bot.recipes.yamlsrc import load_yaml

class ConfigKeyError(Invalid):
    """A changelog config key or wildcard that matches nothing (named with its line before any tool runs)."""

    def __init__(self, key: str, available: list[str]) -> None:
        self.key = key
        self.available = sorted(available)
        if any(ch in key for ch in "*?"):
            super().__init__(msg("pattern %(key)s matches no config key", key=repr(key)))
        else:
            super().__init__(msg("config key %(key)s matches no config key", key=repr(key)))


def expand_config_keys(patterns: list[str], available: list[str]) -> list[str]:
    """Which configs an entry names (`*` and `?` wildcards must match one at least): the plan's touched
    configs and their reasons, and a key that matches nothing refused at its line. The rows are the tool's."""
    seen: dict[str, None] = {}
    for pattern in patterns:
        if "*" in pattern or "?" in pattern:
            matches = fnmatch.filter(available, pattern)
            if not matches:
                raise ConfigKeyError(pattern, available)
            seen.update(dict.fromkeys(matches))
        elif pattern in available:
            seen.setdefault(pattern, None)
        else:
            raise ConfigKeyError(pattern, available)
    return list(seen)


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


def _flags(all_evals: bool, evals_only: bool, trim: bool) -> list[str]:
    return [*(["--all-evals"] if all_evals else []), *(["--evals-only"] if evals_only else []),
            *(["--trim-conc"] if trim else [])]


def changelog_rows(inputs: ToolInputs, entries: list[AppendedEntry], *, all_evals: bool = False,
                   evals_only: bool = False, trim: bool = False, timeout_s: float = TIMEOUT_S) -> ChangelogRows:
    """The rows InferenceX's own `process_changelog.py` (the base's) gives for the head's changelog.

    `all_evals`, `evals_only`, `trim` are its `--all-evals`, `--evals-only`, `--trim-conc` (the PR labels
    all-evals, evals-only, sweep-enabled); what an entry's fields mean (all-evals, append-only, scenario
    types) and what it refuses is the tool's, in its words."""
    keys = list(dict.fromkeys(k for e in entries for k in e.keys))
    rows = run_processor(inputs, keys, _flags(all_evals, evals_only, trim), timeout_s=timeout_s)
    return ChangelogRows(entries=entries, throughput=rows.throughput, evals=rows.evals)


def default_rows(inputs: ToolInputs, keys: list[str], *, all_evals: bool = False, evals_only: bool = False,
                 trim: bool = False, timeout_s: float = TIMEOUT_S) -> ChangelogRows:
    """Keys planned without a changelog entry: what the tool gives when one plain entry names them."""
    if not keys:
        return ChangelogRows()
    entry = {"config-keys": list(keys), "description": ["planned by recipe-bot without a changelog entry"],
             "pr-link": ""}
    text = yaml.safe_dump([entry], sort_keys=False).encode()
    rows = run_processor(inputs, list(keys), _flags(all_evals, evals_only, trim), changelog=text,
                         timeout_s=timeout_s)
    return ChangelogRows(throughput=rows.throughput, evals=rows.evals)


def changelog_missing(repo, changed: set[str]) -> Message | None:
    """InferenceX's own review rule, in its words: a PR that edits a master config must add a
    perf-changelog.yaml entry, since only appended entries run. None when the rule holds."""
    masters = sorted(set(repo.config_file.values()) & changed)
    if not masters or repo.changelog_path in changed:
        return None
    return msg("Master config files were modified but `%(changelog)s` was not updated (%(masters)s): "
               "add a `%(changelog)s` entry documenting the change; only appended entries run",
               changelog=repo.changelog_path, masters=", ".join(masters))
