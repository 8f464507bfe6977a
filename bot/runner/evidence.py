"""The files a result.json names (server logs, GSM8K samples, raw client files), found beside it.

The runner writes every such path relative to the directory that holds result.json (its --out);
a reader resolves them against that directory and nowhere else. A kept run whose files were not
all kept lists the missing ones, with the reason, in NOT-KEPT.txt beside its result.json.
"""
from __future__ import annotations

from pathlib import Path, PurePosixPath

from bot.core.results import JobResult

NOT_KEPT = "NOT-KEPT.txt"


class EvidenceError(ValueError):
    """A path in result.json that cannot name a file beside it; the message names field and value."""


def referenced_files(result: JobResult) -> list[tuple[str, str]]:
    """(field, relative path) for every file the result names, in the result's order."""
    found: list[tuple[str, str]] = []
    for case in result.cases:
        found += [(f"cases[{case.name}].server_logs", log) for log in case.server_logs]
        if case.accuracy is not None and case.accuracy.samples_file:
            found.append((f"cases[{case.name}].accuracy.samples_file", case.accuracy.samples_file))
        found += [(f"cases[{case.name}].points[{p.point_id}].raw_result_file", p.raw_result_file)
                  for p in case.points if p.raw_result_file]
    return found


def resolve(result_json: Path, relative: str, field: str = "path") -> Path:
    """The file `relative` names, under the directory of `result_json`; never outside it."""
    pure = PurePosixPath(relative)
    if pure.is_absolute() or ".." in pure.parts or not relative:
        raise EvidenceError(f"{result_json}: {field} = {relative!r} must be a path relative to the "
                            "directory of result.json, inside it")
    return result_json.parent.joinpath(*pure.parts)


def not_kept(result_json: Path) -> dict[str, str]:
    """NOT-KEPT.txt beside result.json: `relative/path  reason` per line; # starts a comment."""
    listing = result_json.parent / NOT_KEPT
    if not listing.exists():
        return {}
    entries: dict[str, str] = {}
    for line in listing.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            path, _, reason = line.partition(" ")
            entries[path] = reason.strip()
    return entries


def missing_files(result_json: Path, result: JobResult) -> list[str]:
    """One sentence per named file that is neither beside result.json nor listed as not kept."""
    excused = not_kept(result_json)
    problems = []
    for field, relative in referenced_files(result):
        try:
            path = resolve(result_json, relative, field)
        except EvidenceError as exc:
            problems.append(str(exc))
            continue
        if not path.is_file() and relative not in excused:
            problems.append(f"{result_json}: {field} = {relative!r}: no such file beside result.json")
    return problems
