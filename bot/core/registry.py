"""The PR comment command registry: each command's grammar, default policy and help text."""
from __future__ import annotations

import argparse
import dataclasses
import functools
import re
from collections.abc import Callable

from bot.core.messages import Message, msg

# Anything a user may name as a recipe or an E2E case: glob characters, no quotes, no spaces,
# no backticks, no shell or Markdown syntax. Comment text never reaches a shell, but an
# allowlist keeps it that way when it is echoed into a workflow input or a reply.
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_.*?\[\]/:+=-]{1,200}$")
SHA_PREFIX = re.compile(r"^[0-9a-f]{7,40}$")
MAX_CONCURRENCIES = 64


class UsageError(Exception):
    """Raised by a command's argument parser; its message says what was wrong (str() is its English form)."""

    def __init__(self, message: Message) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return str(self.message)


@dataclasses.dataclass(frozen=True)
class CommandSpec:
    """A registered command: grammar, default policy and help text (one source for all three)."""

    name: str
    usage: str
    summary: Message
    min_permission: str  # default; the repository config may raise or lower it
    examples: tuple[str, ...]
    starts_gpu_work: bool  # gated on draft/closed state, fork approval and cooldown
    author_may_use: bool  # the PR's own author may use it on their PR without the permission
    build: Callable[[argparse.ArgumentParser], None]
    order: int  # commands of one comment run in this order: approvals before runs
    who: Message | None = None  # /help's "Who:" when a permission alone does not say it (a code owner's command)

    @property
    def summary_en(self) -> str:
        return str(self.summary)

    def parser(self) -> argparse.ArgumentParser:
        return _parser(self.name)


@dataclasses.dataclass(frozen=True)
class Invalid:
    """A value a command's argument does not accept: kept as parsed, refused after parsing with its message.

    argparse would turn a type's error into its own English text; the parser's caller raises this message
    instead, so the reply gives it in each language."""

    message: Message


class _Parser(argparse.ArgumentParser):
    """argparse without its own error text: errors come back as exceptions the caller words (commands.py)."""

    def __init__(self, **kwargs: object) -> None:
        super().__init__(exit_on_error=False, **kwargs)  # type: ignore[arg-type]

    def error(self, message: str) -> None:  # argparse would print and exit
        raise UsageError(as_written(message))

    def exit(self, status: int = 0, message: str | None = None) -> None:
        raise UsageError(msg("invalid arguments"))


def as_written(text: str) -> Message:
    """Text argparse or shlex words in a way commands.py does not know: shown as it is in every language."""
    return msg("%(problem)s", problem=text)


def _names(kind: str) -> Callable[[str], str | Invalid]:
    def check(value: str) -> str | Invalid:
        if not NAME_PATTERN.match(value):
            return Invalid(msg("%(kind)s %(value)s may use only letters, digits and _ . * ? [ ] / : + = -",
                               kind=kind, value=repr(value[:60])))
        return value

    check.__name__ = kind  # argparse names the type in its messages
    return check


def _choices(*accepted: str) -> Callable[[str], str | Invalid]:
    def check(value: str) -> str | Invalid:
        if value not in accepted:
            return Invalid(msg("invalid choice: %(value)s (choose from %(choices)s)", value=repr(value),
                               choices=", ".join(map(repr, accepted))))
        return value

    return check


def _concurrencies(value: str) -> tuple[int, ...] | Invalid:
    parts = [p for p in value.split(",") if p.strip()]
    if not parts:
        return Invalid(msg("expected a comma-separated list such as 4,8,16"))
    out: set[int] = set()
    for part in parts:
        part = part.strip()
        if not part.isascii() or not part.isdigit() or not 1 <= int(part) <= 100_000:
            return Invalid(msg("%(value)s is not a concurrency between 1 and 100000", value=repr(part[:20])))
        out.add(int(part))
    if len(out) > MAX_CONCURRENCIES:
        return Invalid(msg("at most %(count)s concurrencies", count=MAX_CONCURRENCIES))
    return tuple(sorted(out))


def _sha_prefix(value: str) -> str | Invalid:
    if not SHA_PREFIX.match(value):
        return Invalid(msg("%(value)s is not a commit SHA prefix (7 to 40 lowercase hex characters)",
                           value=repr(value[:60])))
    return value


def _build_sweep(p: argparse.ArgumentParser) -> None:
    p.add_argument("recipes", nargs="*", type=_names("recipe-glob"))
    which = p.add_mutually_exclusive_group()
    which.add_argument("--conc", type=_concurrencies)
    which.add_argument("--scope", type=_choices("lowest", "full"))
    p.add_argument("--evals-only", action="store_true")
    p.add_argument("--all-evals", action="store_true")
    p.add_argument("--agentx-fast", action="store_true")
    p.add_argument("--no-canary", action="store_true")
    p.add_argument("--search", action="store_true")
    p.add_argument("--fail-fast", action="store_true")


def _build_e2e(p: argparse.ArgumentParser) -> None:
    p.add_argument("cases", nargs="*", type=_names("case"))
    p.add_argument("--compare", action="store_true")
    p.add_argument("--fail-fast", action="store_true")


def _build_rerun(p: argparse.ArgumentParser) -> None:
    p.add_argument("what", nargs="?", type=_choices("failed"))


def _build_nothing(p: argparse.ArgumentParser) -> None:
    pass


def _build_ok_to_test(p: argparse.ArgumentParser) -> None:
    p.add_argument("sha", nargs="?", type=_sha_prefix)  # required: commands.py names it when it is missing


def _gpu_hours(value: str) -> float | Invalid:
    try:
        hours = float(value)
    except ValueError:
        hours = 0.0
    if not 0 < hours <= 1_000_000:
        return Invalid(msg("%(value)s is not a number of GPU-hours between 0 and 1,000,000", value=repr(value[:40])))
    return hours


def _build_approve_planner(p: argparse.ArgumentParser) -> None:
    p.add_argument("sha", nargs="?", type=_sha_prefix)
    p.add_argument("--max-gpu-hours", dest="max_gpu_hours", type=_gpu_hours)


def _build_accept_regression(p: argparse.ArgumentParser) -> None:
    p.add_argument("recipes", nargs="?", type=_names("recipe"))  # required, as are the reason's words
    p.add_argument("reason", nargs="*")


def _run_id(value: str) -> int | Invalid:
    if not value.isascii() or not value.isdigit() or len(value) > 20 or int(value) == 0:
        return Invalid(msg("%(value)s is not a workflow run id (the number in .../actions/runs/<id>)",
                           value=repr(value[:40])))
    return int(value)


def _build_reuse(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_id", nargs="?", type=_run_id)


def _build_help(p: argparse.ArgumentParser) -> None:
    p.add_argument("topic", nargs="?", type=lambda v: v.lstrip("/"), choices=None)


# The positional arguments a command cannot go without (argparse's nargs="?" above, checked after parsing
# so that the error is worded by commands.py, not by argparse).
REQUIRED: dict[str, tuple[str, ...]] = {"ok-to-test": ("sha",), "approve-runners": ("sha",),
                                        "approve-planner": ("sha", "max_gpu_hours"),
                                        "accept-regression": ("recipes", "reason"), "reuse": ("run_id",)}


@functools.cache
def _parser(name: str) -> argparse.ArgumentParser:
    """Built once per command: parsing keeps no state between calls, and building is the slow part."""
    parser = _Parser(prog=f"/{name}", add_help=False, allow_abbrev=False)
    REGISTRY[name].build(parser)
    return parser


SPECS: tuple[CommandSpec, ...] = (
    CommandSpec(
        name="sweep",
        usage="/sweep [recipe-glob ...] [--conc 4,8,...] [--scope lowest|full] [--evals-only] [--all-evals] [--agentx-fast] [--no-canary] [--search] [--fail-fast]",
        summary=msg("Benchmark the recipes this PR touches (or the ones named) on the GPU runners; "
                   "--search runs each arm's adaptive concurrency search."),
        min_permission="write",
        examples=("/sweep", "/sweep llama3-* --conc 4,64", "/sweep --scope full --fail-fast"),
        starts_gpu_work=True,
        author_may_use=False,
        build=_build_sweep,
        order=2,
    ),
    CommandSpec(
        name="e2e",
        usage="/e2e [case ...] [--compare] [--fail-fast]",
        summary=msg("Run the end-to-end suites this PR touches (or the named cases); "
                   "--compare runs a suite's two compare: arms side by side on one host."),
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
        summary=msg("`/rerun failed` reruns the failed jobs of the latest run on the current head; "
        "`/rerun` starts the PR's latest command again on the current head."),
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
        summary=msg("Cancel this PR's queued and running GPU runs."),
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
        summary=msg("Approve GPU runs for exactly this head commit of a fork PR or of an author "
        "without write permission, named by its full 40-character SHA. A later push needs a new approval."),
        min_permission="write",
        examples=("/ok-to-test 3f9c2ab1d0e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8",),
        starts_gpu_work=False,
        author_may_use=False,
        build=_build_ok_to_test,
        order=0,
    ),
    CommandSpec(
        name="approve-budget",
        usage="/approve-budget <full-40-hex-sha>",
        summary=msg("Start the GPU runs waiting above the budget (`budget:` in the config) on exactly this head "
        "commit, named by its full 40-character SHA; each starts once. A later push needs a new command."),
        min_permission="maintain",
        examples=("/approve-budget 3f9c2ab1d0e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8",),
        starts_gpu_work=False,  # the waiting request was gated when it was made; this names its commit
        author_may_use=False,
        build=_build_ok_to_test,
        order=2,
    ),
    CommandSpec(
        name="approve-runners",
        usage="/approve-runners <full-40-hex-sha>",
        summary=msg("Let the rows on the runner labels this head commit adds to `configs/runners.yaml` run, named "
        "by its full 40-character SHA: only its code owner (by the default branch's CODEOWNERS; without one, an "
        "admin or maintainer) may. Runs started afterwards include them; a later push needs a new approval."),
        min_permission="write",  # and the code owner of configs/runners.yaml (bot/control/runner_approval.py)
        examples=("/approve-runners 3f9c2ab1d0e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8",),
        starts_gpu_work=False,  # it records an approval; the runs after it are gated as usual
        author_may_use=False,
        build=_build_ok_to_test,
        order=0,  # before a run in the same comment, as /ok-to-test
        who=msg("a code owner of `configs/runners.yaml` by the default branch's CODEOWNERS, with `write` "
                "permission; where it names none, an admin or maintainer"),
    ),
    CommandSpec(
        name="approve-planner",
        usage="/approve-planner <full-40-hex-sha> --max-gpu-hours N",
        summary=msg("Let this head commit's own InferenceX planner (the processor, the generator and the files they "
                    "import, which this PR changes) plan its rows, named by its full 40-character SHA, with the "
                    "GPU-hours those rows may use: only the code owners of every changed planner file may. Runs "
                    "started afterwards plan with it; a later push needs a new approval."),
        min_permission="write",  # and the code owner of each changed planner file (bot/control/planner_approval.py)
        examples=("/approve-planner 3f9c2ab1d0e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8 --max-gpu-hours 200",),
        starts_gpu_work=False,  # it records an approval; the runs after it are gated as usual
        author_may_use=False,
        build=_build_approve_planner,
        order=0,  # before a run in the same comment, as /ok-to-test
        who=msg("a code owner of every planner file the PR changes, by the default branch's CODEOWNERS, with "
                "`write` permission; for a file it names no owner of, an admin or maintainer"),
    ),
    CommandSpec(
        name="accept-regression",
        usage="/accept-regression <recipe> <reason>",
        summary=msg("Accept the performance regressions of one recipe on the current head commit, with the "
        "reason; the merge gate then passes and shows it. A new push clears it."),
        min_permission="maintain",
        examples=("/accept-regression tiny-cpu expected: larger batch trades TTFT for throughput",),
        starts_gpu_work=False,
        author_may_use=False,
        build=_build_accept_regression,
        order=3,  # after any run it shares a comment with: its marker must follow the dispatch ack
    ),
    CommandSpec(
        name="reuse",
        usage="/reuse <run-id>",
        summary=msg("Let the merge gate of the head commit reuse an earlier GPU run of this PR, only when every "
        "touched recipe's fingerprint at the head equals the one at that run's commit; a push that changes a "
        "touched recipe ends it."),
        min_permission="maintain",
        examples=("/reuse 9876543210",),
        starts_gpu_work=False,
        author_may_use=False,
        build=_build_reuse,
        order=3,  # like /accept-regression: its marker follows any dispatch ack of the same comment
    ),
    CommandSpec(
        name="baseline",
        usage="/baseline",
        summary=msg("Measure the default branch's own latest commit with its own code (baseline mode of the GPU "
        "workflow); only such runs become baselines."),
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
        summary=msg("List this PR's GPU runs and their states, their jobs with the time each waited for a "
        "runner, queued and running jobs per runner label across the repository, and infrastructure failures per "
        "runner host."),
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
        summary=msg("Show the commands, who may use them, and examples."),
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
