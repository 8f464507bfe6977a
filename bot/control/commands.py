"""PR comment commands: the registry (which also renders /help) and the line-anchored parser."""
from __future__ import annotations

import argparse
import dataclasses
import difflib
import functools
import re
import shlex
from collections.abc import Callable, Iterable

from markdown_it import MarkdownIt

# Anything a user may name as a recipe or an E2E case: glob characters, no quotes, no spaces,
# no backticks, no shell or Markdown syntax. Comment text never reaches a shell, but an
# allowlist keeps it that way when it is echoed into a workflow input or a reply.
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_.*?\[\]/:+=-]{1,200}$")
SHA_PREFIX = re.compile(r"^[0-9a-f]{7,40}$")
VERB = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,39}$")
MAX_ARGUMENTS = 64
MAX_CONCURRENCIES = 64
MAX_COMMANDS = 10


class UsageError(Exception):
    """Raised by a command's argument parser; the text says what was wrong."""


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
    search: bool = False  # /sweep --search: arms with a `search:` run it instead of their list
    cases: tuple[str, ...] = ()
    failed: bool = False
    sha_prefix: str | None = None
    topic: str | None = None  # /help <topic>
    reason: str | None = None  # /accept-regression <recipe> <reason ...>

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
        if self.search:
            filters["search"] = True
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
        if self.evals_only:
            words.append("--evals-only")
        if self.search:
            words.append("--search")
        if self.fail_fast:
            words.append("--fail-fast")
        if self.failed:
            words.append("failed")
        if self.sha_prefix:
            words.append(self.sha_prefix)
        if self.topic:
            words.append(self.topic)
        if self.reason:
            words.append(self.reason)
        return " ".join(words)


@dataclasses.dataclass(frozen=True)
class CommandError:
    """A line that looked like a command but could not be used; the reply shows `usage`."""

    name: str  # the verb as written
    line: int
    text: str  # the command line as written
    message: str
    usage: str | None  # None for an unknown verb
    suggestion: str | None = None  # the registered verb it most resembles


@dataclasses.dataclass(frozen=True)
class ParsedComment:
    commands: tuple[Command, ...]
    errors: tuple[CommandError, ...]

    @property
    def empty(self) -> bool:
        return not self.commands and not self.errors


@dataclasses.dataclass(frozen=True)
class CommandSpec:
    """A registered command: grammar, default policy and help text (one source for all three)."""

    name: str
    usage: str
    summary_en: str
    summary_zh: str
    min_permission: str  # default; the repository config may raise or lower it
    examples: tuple[str, ...]
    starts_gpu_work: bool  # gated on draft/closed state, fork approval and cooldown
    author_may_use: bool  # the PR's own author may use it on their PR without the permission
    build: Callable[[argparse.ArgumentParser], None]
    order: int  # commands of one comment run in this order: approvals before runs

    def parser(self) -> argparse.ArgumentParser:
        return _parser(self.name)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse would print and exit
        raise UsageError(message)

    def exit(self, status: int = 0, message: str | None = None) -> None:
        raise UsageError(message or "invalid arguments")


def _names(kind: str) -> Callable[[str], str]:
    def check(value: str) -> str:
        if not NAME_PATTERN.match(value):
            raise argparse.ArgumentTypeError(
                f"{kind} {value[:60]!r} may use only letters, digits and _ . * ? [ ] / : + = -"
            )
        return value

    check.__name__ = kind  # argparse names the type in its messages
    return check


def _concurrencies(value: str) -> tuple[int, ...]:
    parts = [p for p in value.split(",") if p.strip()]
    if not parts:
        raise argparse.ArgumentTypeError("expected a comma-separated list such as 4,8,16")
    out: set[int] = set()
    for part in parts:
        part = part.strip()
        if not part.isascii() or not part.isdigit() or not 1 <= int(part) <= 100_000:
            raise argparse.ArgumentTypeError(f"{part[:20]!r} is not a concurrency between 1 and 100000")
        out.add(int(part))
    if len(out) > MAX_CONCURRENCIES:
        raise argparse.ArgumentTypeError(f"at most {MAX_CONCURRENCIES} concurrencies")
    return tuple(sorted(out))


def _sha_prefix(value: str) -> str:
    if not SHA_PREFIX.match(value):
        raise argparse.ArgumentTypeError(
            f"{value[:60]!r} is not a commit SHA prefix (7 to 40 lowercase hex characters)"
        )
    return value


def _build_sweep(p: argparse.ArgumentParser) -> None:
    p.add_argument("recipes", nargs="*", type=_names("recipe-glob"))
    which = p.add_mutually_exclusive_group()
    which.add_argument("--conc", type=_concurrencies)
    which.add_argument("--scope", choices=("lowest", "full"))
    p.add_argument("--evals-only", action="store_true")
    p.add_argument("--search", action="store_true")
    p.add_argument("--fail-fast", action="store_true")


def _build_e2e(p: argparse.ArgumentParser) -> None:
    p.add_argument("cases", nargs="*", type=_names("case"))
    p.add_argument("--fail-fast", action="store_true")


def _build_rerun(p: argparse.ArgumentParser) -> None:
    p.add_argument("what", nargs="?", choices=("failed",))


def _build_nothing(p: argparse.ArgumentParser) -> None:
    pass


def _build_ok_to_test(p: argparse.ArgumentParser) -> None:
    p.add_argument("sha", type=_sha_prefix)


def _build_accept_regression(p: argparse.ArgumentParser) -> None:
    p.add_argument("recipes", nargs=1, type=_names("recipe"))
    p.add_argument("reason", nargs="+")


def _build_help(p: argparse.ArgumentParser) -> None:
    p.add_argument("topic", nargs="?", type=lambda v: v.lstrip("/"), choices=None)


@functools.cache
def _parser(name: str) -> argparse.ArgumentParser:
    """Built once per command: parsing keeps no state between calls, and building is the slow part."""
    parser = _Parser(prog=f"/{name}", add_help=False, allow_abbrev=False)
    REGISTRY[name].build(parser)
    return parser


SPECS: tuple[CommandSpec, ...] = (
    CommandSpec(
        name="sweep",
        usage="/sweep [recipe-glob ...] [--conc 4,8,...] [--scope lowest|full] [--evals-only] [--search] [--fail-fast]",
        summary_en="Benchmark the recipes this PR touches (or the ones named) on the GPU runners; "
                   "--search runs each arm's adaptive concurrency search.",
        summary_zh="在 GPU runner 上对本 PR 改动到的配方（或指定的配方）跑基准测试；"
                   "--search 对每个搜索分支运行自适应并发搜索。",
        min_permission="write",
        examples=("/sweep", "/sweep llama3-* --conc 4,64", "/sweep --scope full --fail-fast"),
        starts_gpu_work=True,
        author_may_use=False,
        build=_build_sweep,
        order=2,
    ),
    CommandSpec(
        name="e2e",
        usage="/e2e [case ...] [--fail-fast]",
        summary_en="Run the end-to-end suites this PR touches (or the named cases).",
        summary_zh="运行本 PR 涉及的端到端（E2E）测试套件（或指定的用例）。",
        min_permission="write",
        examples=("/e2e", "/e2e afd-2p2d --fail-fast"),
        starts_gpu_work=True,
        author_may_use=False,
        build=_build_e2e,
        order=2,
    ),
    CommandSpec(
        name="rerun",
        usage="/rerun [failed]",
        summary_en="`/rerun failed` reruns the failed jobs of the latest run on the current head; "
        "`/rerun` starts the PR's latest command again on the current head.",
        summary_zh="`/rerun failed` 只重跑当前头提交上最近一次运行中失败的作业；"
        "`/rerun` 在当前头提交上重新执行本 PR 最近一次的命令。",
        min_permission="write",
        examples=("/rerun failed", "/rerun"),
        starts_gpu_work=True,
        author_may_use=True,
        build=_build_rerun,
        order=2,
    ),
    CommandSpec(
        name="cancel",
        usage="/cancel",
        summary_en="Cancel this PR's queued and running GPU runs.",
        summary_zh="取消本 PR 排队中和运行中的 GPU 任务。",
        min_permission="write",
        examples=("/cancel",),
        starts_gpu_work=False,
        author_may_use=True,
        build=_build_nothing,
        order=1,
    ),
    CommandSpec(
        name="ok-to-test",
        usage="/ok-to-test <full-40-hex-sha>",
        summary_en="Approve GPU runs for exactly this head commit of a fork PR or of an author "
        "without write permission, named by its full 40-character SHA. A later push needs a new approval.",
        summary_zh="为 fork PR 或无写权限作者的 PR 批准当前这一个头提交上的 GPU 运行；"
        "须写出完整的 40 位 SHA；之后再推送需要重新批准。",
        min_permission="write",
        examples=("/ok-to-test 3f9c2ab1d0e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8",),
        starts_gpu_work=False,
        author_may_use=False,
        build=_build_ok_to_test,
        order=0,
    ),
    CommandSpec(
        name="accept-regression",
        usage="/accept-regression <recipe> <reason>",
        summary_en="Accept the performance regressions of one recipe on the current head commit, with the "
        "reason; the merge gate then passes and shows it. A new push clears it.",
        summary_zh="接受某个配方在当前头提交上的性能回退并写明原因；合并门禁随即通过并显示该确认。"
        "新的推送会清除它。",
        min_permission="maintain",
        examples=("/accept-regression tiny-cpu expected: larger batch trades TTFT for throughput",),
        starts_gpu_work=False,
        author_may_use=False,
        build=_build_accept_regression,
        order=3,  # after any run it shares a comment with: its marker must follow the dispatch ack
    ),
    CommandSpec(
        name="baseline",
        usage="/baseline",
        summary_en="Measure the default branch's own latest commit with its own code (baseline mode of the GPU "
        "workflow); only such runs become baselines.",
        summary_zh="用默认分支自己的代码测量其最新提交（GPU 工作流的基线模式）；只有这样的运行才会成为基线。",
        min_permission="maintain",
        examples=("/baseline",),
        starts_gpu_work=False,  # it runs the default branch, never the PR: no PR gating applies
        author_may_use=False,
        build=_build_nothing,
        order=2,
    ),
    CommandSpec(
        name="status",
        usage="/status",
        summary_en="List this PR's GPU runs and their states, and infrastructure failures per "
        "runner host.",
        summary_zh="列出本 PR 的 GPU 运行及其状态，以及按 runner 主机统计的基础设施失败。",
        min_permission="none",
        examples=("/status",),
        starts_gpu_work=False,
        author_may_use=True,
        build=_build_nothing,
        order=3,
    ),
    CommandSpec(
        name="help",
        usage="/help [command]",
        summary_en="Show the commands, who may use them, and examples.",
        summary_zh="显示所有命令、谁可以使用以及示例。",
        min_permission="none",
        examples=("/help", "/help sweep"),
        starts_gpu_work=False,
        author_may_use=True,
        build=_build_help,
        order=4,
    ),
)

REGISTRY: dict[str, CommandSpec] = {spec.name: spec for spec in SPECS}
GPU_COMMANDS = frozenset(spec.name for spec in SPECS if spec.starts_gpu_work)

_COMMAND_LINE = re.compile(r"^ {0,3}/(\S+)(.*)$")
# Inline markup a reader sees as the characters typed (`*`, `_`, backticks) is put back, so that a
# line that opens with inline code or emphasis does not start with "/".
_MARKUP = frozenset({"em_open", "em_close", "strong_open", "strong_close"})


@functools.cache
def _markdown() -> MarkdownIt:
    return MarkdownIt("commonmark")


def visible_lines(body: str) -> Iterable[tuple[int, str]]:
    """The lines a reader sees as prose, from a CommonMark parse: top-level paragraphs only.

    Whatever the rendered page hides or shows as something else never carries a command: HTML blocks
    and inline HTML (comments, attributes, <script>, <style>), link reference definitions (their
    titles and the `[//]: # (...)` comment idiom), code blocks and inline code, block quotes, lists
    and headings. Line numbers are the body's own, 1-based.
    """
    text = body.replace("\r\n", "\n").replace("\r", "\n")
    tokens = _markdown().parse(text)
    for index, token in enumerate(tokens):
        opener = tokens[index - 1] if index else None
        if token.type != "inline" or token.map is None or opener is None \
                or opener.type != "paragraph_open" or opener.level != 0:
            continue
        number, parts = token.map[0] + 1, []
        for child in token.children or ():
            if child.type in ("softbreak", "hardbreak"):
                yield number, "".join(parts)
                number, parts = number + 1, []
            elif child.type == "text":
                parts.append(child.content)
            elif child.type == "code_inline":
                parts.append(f"{child.markup}{child.content}{child.markup}")
            elif child.type in _MARKUP:
                parts.append(child.markup)
            elif child.type == "html_inline":
                number += child.content.count("\n")  # hidden, but it spans lines of the body
        yield number, "".join(parts)


def parse_comment(body: str | None) -> ParsedComment:
    """Every command in a comment body; never raises, whatever the body holds."""
    commands: list[Command] = []
    errors: list[CommandError] = []
    for number, line in visible_lines(body or ""):
        match = _COMMAND_LINE.match(line)
        if not match:
            continue  # prose, a quote (`> /sweep`), inline code (`` `/sweep` ``), an indented block
        verb, rest = match.group(1), match.group(2)
        text = line.strip()
        if verb not in REGISTRY:
            suggestion = _suggest(verb)
            if suggestion is not None:
                errors.append(CommandError(verb, number, text, "unknown command", None, suggestion))
            continue  # a path such as /usr/bin, or a verb of another bot: not ours to answer
        if len(commands) + len(errors) >= MAX_COMMANDS:
            errors.append(CommandError(verb, number, text, f"at most {MAX_COMMANDS} commands per comment",
                                       REGISTRY[verb].usage))
            break
        try:
            commands.append(parse_command_line(verb, rest, number))
        except UsageError as exc:
            errors.append(CommandError(verb, number, text, str(exc), REGISTRY[verb].usage))
    return ParsedComment(tuple(commands), tuple(errors))


def parse_command_line(verb: str, rest: str, line: int = 1) -> Command:
    """Parse the arguments of one registered command; raises UsageError with argparse's message."""
    spec = REGISTRY[verb]
    try:
        tokens = shlex.split(rest, comments=False, posix=True)
    except ValueError as exc:  # an unbalanced quote
        raise UsageError(str(exc).lower()) from None
    if len(tokens) > MAX_ARGUMENTS:
        raise UsageError(f"at most {MAX_ARGUMENTS} arguments")
    if "-h" in tokens or "--help" in tokens:
        return Command(name="help", line=line, topic=verb)
    parser = spec.parser()
    try:
        ns = parser.parse_intermixed_args(tokens)
    except (argparse.ArgumentError, TypeError, ValueError) as exc:
        raise UsageError(str(exc)) from None
    if verb == "help" and ns.topic is not None and ns.topic not in REGISTRY:
        raise UsageError(f"no command named {ns.topic[:40]!r}; known: {', '.join(REGISTRY)}")
    return Command(
        name=verb,
        line=line,
        recipes=tuple(dict.fromkeys(getattr(ns, "recipes", ()) or ())),
        cases=tuple(dict.fromkeys(getattr(ns, "cases", ()) or ())),
        conc=getattr(ns, "conc", None) or (),
        scope=getattr(ns, "scope", None),
        fail_fast=bool(getattr(ns, "fail_fast", False)),
        evals_only=bool(getattr(ns, "evals_only", False)),
        search=bool(getattr(ns, "search", False)),
        failed=getattr(ns, "what", None) == "failed",
        sha_prefix=getattr(ns, "sha", None),
        topic=getattr(ns, "topic", None),
        reason=" ".join(getattr(ns, "reason", None) or ()) or None,
    )


def parse_single(text: str) -> Command:
    """Parse a configured command line (a label's command): exactly one valid command."""
    parsed = parse_comment(text)
    if parsed.errors:
        error = parsed.errors[0]
        raise UsageError(error.message if error.usage else f"unknown command /{error.name}")
    if len(parsed.commands) != 1:
        raise UsageError("expected exactly one command line such as '/sweep --scope lowest'")
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
            "summary_en": spec.summary_en,
            "summary_zh": spec.summary_zh,
            "starts_gpu_work": spec.starts_gpu_work,
            "author_may_use": spec.author_may_use,
            "min_permission": (permissions or {}).get(spec.name, spec.min_permission),
            "examples": list(spec.examples),
        })
    return rows
