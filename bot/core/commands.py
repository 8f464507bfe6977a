"""PR comment commands: the typed Command and the line-anchored parser over the registry (bot.core.registry)."""
from __future__ import annotations

import argparse
import dataclasses
import difflib
import functools
import re
import shlex
from collections.abc import Iterable
from typing import Any

from markdown_it import MarkdownIt

from bot.core.registry import (  # noqa: F401  (re-exported: the registry's names are part of this API)
    GPU_COMMANDS, MAX_CONCURRENCIES, NAME_PATTERN, REGISTRY, REQUIRED, SHA_PREFIX, SPECS, CommandSpec, Invalid,
    UsageError, as_written,
)
from bot.core.messages import Message, msg

VERB = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,39}$")
MAX_ARGUMENTS = 64
MAX_COMMANDS = 10


# The on/off flags of a command, in the order normalized() writes them.
_SWITCHES = (("evals_only", "--evals-only"), ("all_evals", "--all-evals"), ("agentx_fast", "--agentx-fast"),
             ("no_canary", "--no-canary"), ("search", "--search"), ("compare", "--compare"),
             ("fail_fast", "--fail-fast"))


@dataclasses.dataclass(frozen=True)
class Command:
    """One parsed command line, with its options normalized."""

    name: str
    line: int  # 1-based line of the comment it came from
    recipes: tuple[str, ...] = ()
    conc: tuple[int, ...] = ()
    scope: str | None = None
    fail_fast: bool = False
    evals_only: bool = False
    all_evals: bool = False  # InferenceX's all-evals: an accuracy gate on every eligible arm
    agentx_fast: bool = False  # InferenceX's agentx-fast: the fast AgentX profile for agentic rows
    no_canary: bool = False  # InferenceX's *-no-canary labels: no canary row first
    search: bool = False  # /sweep --search: arms with a `search:` run it instead of their list
    compare: bool = False  # /e2e --compare: a suite's compare: arms side by side
    cases: tuple[str, ...] = ()
    failed: bool = False
    sha_prefix: str | None = None
    topic: str | None = None  # /help <topic>
    reason: str | None = None  # /accept-regression <recipe> <reason ...>
    run_id: int | None = None  # /reuse <run-id>
    max_gpu_hours: float | None = None  # /approve-planner <sha> --max-gpu-hours N

    @property
    def spec(self) -> CommandSpec:
        return REGISTRY[self.name]

    def plan_filters(self) -> dict[str, object]:
        """The planner's PlanFilters fields for this command (bot.plan.model.PlanFilters(**...))."""
        if self.name not in ("sweep", "e2e"):
            raise ValueError(f"/{self.name} does not plan GPU work")
        filters: dict[str, object] = {"kind": self.name, "fail_fast": self.fail_fast}
        if self.recipes:
            filters["recipes"] = self.recipes
        if self.cases:
            filters["cases"] = self.cases
        if self.conc:
            filters["conc"] = self.conc
        if self.scope:
            filters["scope"] = self.scope
        if self.evals_only:
            filters["evals_only"] = True
        if self.all_evals:
            filters["all_evals"] = True
        if self.agentx_fast:
            filters["agentx_fast"] = True
        if self.no_canary:
            filters["canary"] = False
        if self.search:
            filters["search"] = True
        if self.compare:
            filters["compare"] = True
        return filters

    def normalized(self) -> str:
        """The canonical command line: what is dispatched and what the run title shows."""
        words = [f"/{self.name}"]
        words += self.recipes if self.name in ("sweep", "accept-regression") else ()
        words += self.cases if self.name == "e2e" else ()
        if self.conc:
            words += ["--conc", ",".join(str(c) for c in self.conc)]
        if self.scope:
            words += ["--scope", self.scope]
        words += [flag for attr, flag in _SWITCHES if getattr(self, attr)]
        if self.failed:
            words.append("failed")
        if self.sha_prefix:
            words.append(self.sha_prefix)
        if self.topic:
            words.append(self.topic)
        if self.reason:
            words.append(self.reason)
        if self.run_id is not None:
            words.append(str(self.run_id))
        if self.max_gpu_hours is not None:
            words += ["--max-gpu-hours", f"{self.max_gpu_hours:g}"]
        return " ".join(words)


@dataclasses.dataclass(frozen=True)
class CommandError:
    """A line that looked like a command but could not be used; the reply shows `usage`."""

    name: str  # the verb as written
    line: int
    text: str  # the command line as written
    message: Message
    usage: str | None  # None for an unknown verb
    suggestion: str | None = None  # the registered verb it most resembles


@dataclasses.dataclass(frozen=True)
class ParsedComment:
    commands: tuple[Command, ...]
    errors: tuple[CommandError, ...]

    @property
    def empty(self) -> bool:
        return not self.commands and not self.errors


_COMMAND_LINE = re.compile(r"^ {0,3}/(\S+)(.*)$")
# Inline markup a reader sees as the characters typed (`*`, `_`, backticks) is put back, so that a
# line that opens with inline code or emphasis does not start with "/".
_MARKUP = frozenset({"em_open", "em_close", "strong_open", "strong_close"})


@functools.cache
def _markdown() -> Any:
    return MarkdownIt("commonmark")


# A body that is one line of only these characters, opening with "/", is one top-level paragraph
# whose text is that line, whatever CommonMark reads (no block opens with "/"; none of these characters
# is inline markup, an entity or an escape; a paragraph's trailing spaces are excluded).
_PLAIN_COMMAND = re.compile(r"/[A-Za-z0-9][A-Za-z0-9 .:=,/@+-]*(?<! )\n*")


def _lines(body: str) -> Iterable[tuple[int, str]]:
    """visible_lines(body), answered without the CommonMark parse (and markdown_it's import, a tenth of
    `recipe-bot handle`'s start-up) where the parse cannot tell anything else: a plain `/sweep`, or a
    body with no "/" and no entity (no line it shows can then open with "/")."""
    text = body.replace("\r\n", "\n").replace("\r", "\n")
    if "/" not in text and "&" not in text:
        return ()
    if _PLAIN_COMMAND.fullmatch(text):
        return ((1, text.rstrip("\n")),)
    return visible_lines(body)


def visible_lines(body: str) -> Iterable[tuple[int, str]]:
    """The lines a reader sees as prose, from a CommonMark parse: top-level paragraphs only.

    Whatever the rendered page hides or shows as something else never carries a command: HTML blocks
    and inline HTML (comments, attributes, <script>, <style>), link reference definitions (their
    titles and the `[//]: # (...)` comment idiom), code blocks and inline code, block quotes, lists
    and headings; and whatever a `<details>` element holds (collapsed on the page, paragraphs too)
    up to its `</details>`. Line numbers are the body's own, 1-based.
    """
    text = body.replace("\r\n", "\n").replace("\r", "\n")
    tokens = _markdown().parse(text)
    depth = 0  # <details> elements open here: what they hold is collapsed, whatever Markdown it is
    for index, token in enumerate(tokens):
        opener = tokens[index - 1] if index else None
        if token.type == "html_block":
            depth = _details_depth(depth, token.content)
            continue
        if token.type != "inline" or token.map is None or opener is None \
                or opener.type != "paragraph_open" or opener.level != 0:
            for child in token.children or ():  # a list's or a quote's inline HTML opens and closes too
                if child.type == "html_inline":
                    depth = _details_depth(depth, child.content)
            continue
        number, parts, hidden = token.map[0] + 1, [], depth > 0
        for child in token.children or ():
            if child.type in ("softbreak", "hardbreak"):
                if not hidden:
                    yield number, "".join(parts)
                number, parts, hidden = number + 1, [], depth > 0
            elif child.type == "text":
                parts.append(child.content)
            elif child.type == "code_inline":
                parts.append(f"{child.markup}{child.content}{child.markup}")
            elif child.type in _MARKUP:
                parts.append(child.markup)
            elif child.type == "html_inline":
                number += child.content.count("\n")  # hidden, but it spans lines of the body
                depth = _details_depth(depth, child.content)
                hidden = hidden or depth > 0  # a line that is partly inside a collapsed block is not run
        if not hidden:
            yield number, "".join(parts)


_DETAILS_TAG = re.compile(r"<(/?)details(?=[\s/>]|$)", re.IGNORECASE)
_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)


def _details_depth(depth: int, html: str) -> int:
    """How many <details> elements are open after this HTML (a tag inside an HTML comment is no tag)."""
    for match in _DETAILS_TAG.finditer(_HTML_COMMENT.sub("", html)):
        depth = max(0, depth - 1) if match.group(1) else depth + 1
    return depth


def parse_comment(body: str | None) -> ParsedComment:
    """Every command in a comment body; never raises, whatever the body holds."""
    commands: list[Command] = []
    errors: list[CommandError] = []
    for number, line in _lines(body or ""):
        match = _COMMAND_LINE.match(line)
        if not match:
            continue  # prose, a quote (`> /sweep`), inline code (`` `/sweep` ``), an indented block
        verb, rest = match.group(1), match.group(2)
        text = line.strip()
        if verb not in REGISTRY:
            suggestion = _suggest(verb)
            if suggestion is not None:
                errors.append(CommandError(verb, number, text, msg("unknown command"), None, suggestion))
            continue  # a path such as /usr/bin, or a verb of another bot: not ours to answer
        if len(commands) + len(errors) >= MAX_COMMANDS:
            errors.append(CommandError(verb, number, text, msg("at most %(count)s commands per comment",
                                                                   count=MAX_COMMANDS),
                                       REGISTRY[verb].usage))
            break
        try:
            commands.append(parse_command_line(verb, rest, number))
        except UsageError as exc:
            errors.append(CommandError(verb, number, text, exc.message, REGISTRY[verb].usage))
    return ParsedComment(tuple(commands), tuple(errors))

# What shlex says of a line it cannot split, and argparse of an option's values (its own English text).
_SHLEX_ERRORS = {"No closing quotation": msg("no closing quotation"), "No escaped character": msg("no escaped character")}
_ARGPARSE_PROBLEMS = {"expected one argument": msg("expected one argument"),
                      "expected at least one argument": msg("expected at least one argument")}
_NOT_ALLOWED_WITH = "not allowed with argument "


def _argparse_problem(text: str) -> Message:
    if text in _ARGPARSE_PROBLEMS:
        return _ARGPARSE_PROBLEMS[text]
    if text.startswith(_NOT_ALLOWED_WITH):  # --conc and --scope together
        return msg("not allowed with argument %(other)s", other=text[len(_NOT_ALLOWED_WITH):])
    return as_written(text)


def _refuse_invalid(parser: argparse.ArgumentParser, ns: argparse.Namespace) -> None:
    """The first value an argument's type refused (registry.Invalid), named as argparse names the argument."""
    for action in parser._actions:  # argparse keeps the arguments here; no public accessor
        value = getattr(ns, action.dest, None)
        for one in value if isinstance(value, list) else [value]:
            if isinstance(one, Invalid):
                name = "/".join(action.option_strings) or action.metavar or action.dest
                raise UsageError(msg("argument %(name)s: %(problem)s", name=name, problem=one.message))


def parse_command_line(verb: str, rest: str, line: int = 1) -> Command:
    """Parse the arguments of one registered command; raises UsageError with what was wrong."""
    spec = REGISTRY[verb]
    try:
        tokens = shlex.split(rest, comments=False, posix=True)
    except ValueError as exc:  # an unbalanced quote
        raise UsageError(_SHLEX_ERRORS.get(str(exc), as_written(str(exc).lower()))) from None
    if len(tokens) > MAX_ARGUMENTS:
        raise UsageError(msg("at most %(count)s arguments", count=MAX_ARGUMENTS))
    if "-h" in tokens or "--help" in tokens:
        return Command(name="help", line=line, topic=verb)
    parser = spec.parser()
    try:
        ns, extra = parser.parse_known_intermixed_args(tokens)
    except argparse.ArgumentError as exc:
        raise UsageError(msg("argument %(name)s: %(problem)s", name=exc.argument_name,
                             problem=_argparse_problem(exc.message))) from None
    except (TypeError, ValueError) as exc:
        raise UsageError(as_written(str(exc))) from None
    _refuse_invalid(parser, ns)  # argparse stopped at a value its type refused, before the words it did not know
    if extra:
        raise UsageError(msg("unrecognized arguments: %(arguments)s", arguments=" ".join(extra)))
    flags = {action.dest: action.option_strings[0] for action in parser._actions if action.option_strings}
    missing = [flags.get(name, name) for name in REQUIRED.get(verb, ()) if getattr(ns, name) in (None, [])]
    if missing:
        raise UsageError(msg("the following arguments are required: %(names)s", names=", ".join(missing)))
    if verb == "help" and ns.topic is not None and ns.topic not in REGISTRY:
        raise UsageError(msg("no command named %(name)s; known: %(known)s", name=repr(ns.topic[:40]),
                             known=", ".join(REGISTRY)))
    recipes = getattr(ns, "recipes", ()) or ()
    if isinstance(recipes, str):  # /accept-regression names one recipe
        recipes = (recipes,)
    return Command(
        name=verb,
        line=line,
        recipes=tuple(dict.fromkeys(recipes)),
        cases=tuple(dict.fromkeys(getattr(ns, "cases", ()) or ())),
        conc=getattr(ns, "conc", None) or (),
        scope=getattr(ns, "scope", None),
        fail_fast=bool(getattr(ns, "fail_fast", False)),
        evals_only=bool(getattr(ns, "evals_only", False)),
        all_evals=bool(getattr(ns, "all_evals", False)),
        agentx_fast=bool(getattr(ns, "agentx_fast", False)),
        no_canary=bool(getattr(ns, "no_canary", False)),
        search=bool(getattr(ns, "search", False)),
        compare=bool(getattr(ns, "compare", False)),
        failed=getattr(ns, "what", None) == "failed",
        sha_prefix=getattr(ns, "sha", None),
        topic=getattr(ns, "topic", None),
        reason=" ".join(getattr(ns, "reason", None) or ()) or None,
        run_id=getattr(ns, "run_id", None),
        max_gpu_hours=getattr(ns, "max_gpu_hours", None),
    )


def parse_single(text: str) -> Command:
    """Parse a configured command line (a label's command): exactly one valid command."""
    parsed = parse_comment(text)
    if parsed.errors:
        error = parsed.errors[0]
        raise UsageError(error.message if error.usage else msg("unknown command /%(name)s", name=error.name))
    if len(parsed.commands) != 1:
        raise UsageError(msg("expected exactly one command line such as '/sweep --scope lowest'"))
    return parsed.commands[0]


def _suggest(verb: str) -> str | None:
    if not VERB.match(verb):
        return None
    lowered = verb.lower()
    for name in REGISTRY:
        if lowered == name or lowered.startswith(name) or name.startswith(lowered) and len(lowered) >= 3:
            return name
    close = difflib.get_close_matches(lowered, list(REGISTRY), n=1, cutoff=0.75)
    return close[0] if close else None


def ordered(commands: Iterable[Command]) -> list[Command]:
    """Approvals first, then cancellation, then GPU work, then read-only answers."""
    return sorted(commands, key=lambda c: (REGISTRY[c.name].order, c.line))


def help_rows(permissions: dict[str, str] | None = None) -> list[dict[str, object]]:
    """What /help and docs/commands.md show, from the registry (and the repository's overrides)."""
    rows = []
    for spec in SPECS:
        rows.append({
            "name": spec.name,
            "usage": spec.usage,
            "summary": spec.summary,
            "starts_gpu_work": spec.starts_gpu_work,
            "author_may_use": spec.author_may_use,
            "min_permission": (permissions or {}).get(spec.name, spec.min_permission),
            "who": spec.who,
            "examples": list(spec.examples),
        })
    return rows


_FLAGS = ("fail_fast", "evals_only", "all_evals", "agentx_fast", "no_canary", "search")


def combine_label_commands(triggers: list[tuple[str, Command]]) -> list[tuple[str, Command]]:
    """The labels on one PR as one run, the way InferenceX's workflow reads them all at once.

    Their /sweep commands merge into one named `label+label`: the widest scope (full over lowest),
    every flag any of them sets, the recipes of all (none named by one: what the PR touches), the
    concurrencies of all when no scope is given. Other commands (/e2e) stay runs of their own.
    """
    sweeps = [(label, c) for label, c in triggers if c is not None and c.name == "sweep"]
    if len(sweeps) < 2:
        return triggers
    others = [(label, c) for label, c in triggers if c is None or c.name != "sweep"]
    commands = [c for _, c in sweeps]
    scopes = {c.scope for c in commands if c.scope}
    scope = "full" if "full" in scopes else ("lowest" if scopes else None)
    recipes = () if any(not c.recipes for c in commands) else tuple(dict.fromkeys(r for c in commands for r in c.recipes))
    conc = () if scope else tuple(sorted({n for c in commands for n in c.conc}))
    flags = {name: any(getattr(c, name) for c in commands) for name in _FLAGS}
    merged = dataclasses.replace(commands[0], recipes=recipes, scope=scope, conc=conc, **flags)
    return [("+".join(label for label, _ in sweeps), merged), *others]


def label_triggers(config: Any, labels: list[str], new_label: str | None = None) -> list[tuple[str, Command]]:
    """The runs a PR's labels start (`config`: the RepoConfig). A new label (`labeled`) runs together with
    the PR's other labels, as InferenceX's workflow reads them all; one the config does not map starts none."""
    if new_label is not None:
        if new_label not in config.labels:
            return []
        labels = list(dict.fromkeys([*labels, new_label]))
    return combine_label_commands([(label, config.label_command(label)) for label in labels if label in config.labels])
