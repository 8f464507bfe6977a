"""Honest packing: rows share a server launch only when nothing that starts the server reads a per-point value."""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from bot.core.messages import Message, msg
from bot.core.results import listed
from bot.inferencex.rowenv import server_envs, template_env

SCRIPT_DIRS = ("benchmarks/single_node/fixed_seq_len", "benchmarks/single_node/agentic")
READY_MARKERS = ("wait_for_server_ready",)
# Values the template derives from a row's point that never reach a server: the name of the result file.
CLIENT_ONLY = frozenset({"RESULT_FILENAME"})


@dataclass(frozen=True)
class PackVerdict:
    packs: bool
    reason: Message
    scripts: tuple[str, ...] = ()


def per_point_values(rows: list[dict], one_server: bool = False) -> dict[str, list[str]]:
    """Environment variables whose value differs between the rows (CONC, EXP_NAME, ...), with the values.
    `one_server`: the rows are one server configuration's (equal but for the point's own fields)."""
    envs, keys = server_envs(rows, "runner_0") if one_server else ([template_env(r, "runner_0") for r in rows], None)
    first = envs[0]
    if keys is not None:  # only these can differ between the rows
        varying = {k for k in keys if any(env[k] != first[k] for env in envs[1:])}
        return {k: [e[k] for e in envs] for k in sorted(varying) if k not in CLIENT_ONLY}
    try:
        # a key of the first environment varies when another lacks it or gives it another value: the
        # difference of the item sets says so without a Python loop over every key
        varying = {k for env in envs[1:] for k, _ in first.items() - env.items()}
    except TypeError:  # a value that is not hashable (the template's values are strings)
        varying = {k for k, v in first.items() if any(e.get(k) != v for e in envs[1:])}
    return {k: [e.get(k, "") for e in envs] for k in sorted(varying) if k not in CLIENT_ONLY}


def per_point_vars(rows: list[dict]) -> list[str]:
    return list(per_point_values(rows))


def _reads(text: str, name: str, values: list[str] | None = None) -> bool:
    """Whether the line uses the variable in a way that differs between rows, read as shell reads it:
    `$NAME`, `${NAME...}`, a bare NAME inside arithmetic (`$((2*NAME))`, `(( NAME ))`, `let`, `declare -i`,
    an array index). `${NAME%%_*}` (the part before the first `_`, as launchers pick a script by the
    model code in EXP_NAME) counts only when that part differs."""
    for match in re.finditer(rf"\$(\{{)?{re.escape(name)}\b(%%_\*\}})?", text):
        if match.group(2) and values is not None and len({v.split("_", 1)[0] for v in values}) == 1:
            continue
        return True
    return _arithmetic_read(text, name)


_ARITHMETIC = re.compile(r"\$?\(\((.*?)\)\)|\$\[(.*?)\]|\[([^\[\]]*)\]")
_INTEGER_BUILTINS = re.compile(r"^\s*(?:let|declare|typeset|local|export|readonly)\b(.*)$")


def _arithmetic_read(text: str, name: str) -> bool:
    bare = re.compile(rf"(?<![\w$]){re.escape(name)}\b")
    if any(bare.search(" ".join(g for g in m.groups() if g)) for m in _ARITHMETIC.finditer(text)):
        return True
    builtin = _INTEGER_BUILTINS.match(text)
    if builtin is None:
        return False
    words = builtin.group(1)
    # `let X=NAME*2` is arithmetic; `declare -i X=NAME` is too (an integer variable evaluates its value)
    return text.lstrip().startswith("let") and bool(bare.search(words)) or \
        (re.search(r"\s-\w*i", words) is not None and bool(re.search(rf"=[^\s]*(?<![\w$]){name}\b", words)))


def _indirect_reads(lines: list[tuple[int, str]], name: str) -> list[tuple[int, str]]:
    """`ref=NAME ... ${!ref}`: the assignment naming the variable and the line expanding it."""
    refs = {m.group(1): (number, line) for number, line in lines
            for m in [re.match(rf"^\s*(?:local\s+|declare\s+|export\s+)?(\w+)=[\"']?{re.escape(name)}[\"']?\s*$",
                               line)] if m}
    hits = []
    for number, line in lines:
        for ref, assignment in refs.items():
            if re.search(rf"\$\{{!{re.escape(ref)}\}}", line):
                hits += [assignment, (number, line)]
    return list(dict.fromkeys(hits))


@functools.lru_cache(maxsize=10_000)
def server_side(text: str) -> tuple[list[tuple[int, str]], bool]:
    """`_server_side(text)`, once per script text: configs of one model share their scripts (read-only)."""
    return _server_side(text)


def _server_side(text: str) -> tuple[list[tuple[int, str]], bool]:
    """The script's lines up to the point where it waits for its server (comments left out), and whether
    that point was found (without it the whole script counts as server side)."""
    lines: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if any(marker in line for marker in READY_MARKERS) and not line.lstrip().startswith("#"):
            return lines, True
        if line.strip() and not line.lstrip().startswith("#"):
            lines.append((number, line))
    return lines, False


def verdict(rows: list[dict], scripts: dict[str, str], launchers: dict[str, str], one_server: bool = False
            ) -> PackVerdict:
    """Whether one server configuration's throughput rows can share a launch, and why (or why not).

    `scripts` are the benchmark scripts the rows' config may run, `launchers` the fleet launchers of its
    runner label (path → text). Launchers run before the server starts: any use there counts.
    """
    if len(rows) < 2:
        return PackVerdict(False, msg("one point: nothing to pack"))
    if not scripts:
        return PackVerdict(False, msg("no benchmark script found for this config: cannot tell whether its server "
                                      "reads the concurrency"))
    values = per_point_values(rows, one_server)
    varying = list(values)
    for path, text in sorted(launchers.items()):
        lines = text.splitlines()
        for name in varying:
            for number, line in enumerate(lines, 1):
                # `name in line` first: a line that never names the variable cannot read it
                if name in line and not line.lstrip().startswith("#") and _reads(line, name, values[name]):
                    return PackVerdict(False, msg("%(place)s reads $%(name)s before the server starts: %(line)s",
                                                  place=f"{path}:{number}", name=name, line=line.strip()[:100]),
                                       tuple(scripts))
    for path, text in sorted(scripts.items()):
        lines, found = server_side(text)
        hits = [(number, name, line) for number, line in lines for name in varying
                if name in line and _reads(line, name, values[name])]
        hits += [(number, name, line) for name in varying for number, line in _indirect_reads(lines, name)]
        if hits:
            hits = sorted(dict.fromkeys(hits))
            first_number, first_name, first_line = hits[0]
            values = {"place": f"{path}:{first_number}", "name": first_name, "line": first_line.strip()[:100]}
            reason = msg("%(place)s reads $%(name)s before the server is ready: %(line)s", **values) if found \
                else msg("%(place)s reads $%(name)s (no wait_for_server_ready: whole script): %(line)s", **values)
            if len(hits) > 1:  # every such line, so that one fix is not followed by the next refusal
                # the lines as one value, each a message: a message holds no list
                also = [msg("line %(line)s ($%(name)s)", line=n, name=v) for n, v, _ in hits[1:]]
                reason = msg("%(reason)s; also %(lines)s", reason=reason, lines=listed(also))
            return PackVerdict(False, reason, tuple(scripts))
        if not found:
            return PackVerdict(False, msg("%(path)s: no wait_for_server_ready, so where its server starts is unknown",
                                          path=path), tuple(scripts))
    return PackVerdict(True, msg("no per-point value (%(values)s) is read before the server is ready",
                                 values=", ".join("$" + v for v in varying)), tuple(scripts))
