"""The PR comment command registry: each command's grammar, default policy and help text."""
from __future__ import annotations

import argparse
import dataclasses
import functools
import re
from collections.abc import Callable

# Anything a user may name as a recipe or an E2E case: glob characters, no quotes, no spaces,
# no backticks, no shell or Markdown syntax. Comment text never reaches a shell, but an
# allowlist keeps it that way when it is echoed into a workflow input or a reply.
NAME_PATTERN = re.compile(r"^[A-Za-z0-9_.*?\[\]/:+=-]{1,200}$")
SHA_PREFIX = re.compile(r"^[0-9a-f]{7,40}$")
MAX_CONCURRENCIES = 64


class UsageError(Exception):
    """Raised by a command's argument parser; the text says what was wrong."""



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
    p.add_argument("what", nargs="?", choices=("failed",))


def _build_nothing(p: argparse.ArgumentParser) -> None:
    pass


def _build_ok_to_test(p: argparse.ArgumentParser) -> None:
    p.add_argument("sha", type=_sha_prefix)


def _build_accept_regression(p: argparse.ArgumentParser) -> None:
    p.add_argument("recipes", nargs=1, type=_names("recipe"))
    p.add_argument("reason", nargs="+")


def _run_id(value: str) -> int:
    if not value.isascii() or not value.isdigit() or len(value) > 20 or int(value) == 0:
        raise argparse.ArgumentTypeError(f"{value[:40]!r} is not a workflow run id (the number in .../actions/runs/<id>)")
    return int(value)


def _build_reuse(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_id", type=_run_id)


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
        usage="/sweep [recipe-glob ...] [--conc 4,8,...] [--scope lowest|full] [--evals-only] [--all-evals] [--agentx-fast] [--no-canary] [--search] [--fail-fast]",
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
        usage="/e2e [case ...] [--compare] [--fail-fast]",
        summary_en="Run the end-to-end suites this PR touches (or the named cases); "
                   "--compare runs a suite's two compare: arms side by side on one host.",
        summary_zh="运行本 PR 涉及的端到端（E2E）测试套件（或指定的用例）；"
                   "--compare 在同一台主机上并排运行套件 compare: 中的两个对照组。",
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
        name="approve-budget",
        usage="/approve-budget <full-40-hex-sha>",
        summary_en="Start the GPU runs waiting above the budget (`budget:` in the config) on exactly this head "
        "commit, named by its full 40-character SHA; each starts once. A later push needs a new command.",
        summary_zh="启动在这个头提交上因超出预算（配置中的 `budget:`）而等待的 GPU 运行；须写出完整的 40 位 SHA，"
        "每个只启动一次。之后再推送需要重新发出命令。",
        min_permission="maintain",
        examples=("/approve-budget 3f9c2ab1d0e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8",),
        starts_gpu_work=False,  # the waiting request was gated when it was made; this names its commit
        author_may_use=False,
        build=_build_ok_to_test,
        order=2,
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
        name="reuse",
        usage="/reuse <run-id>",
        summary_en="Let the merge gate of the head commit reuse an earlier GPU run of this PR, only when every "
        "touched recipe's fingerprint at the head equals the one at that run's commit; a push that changes a "
        "touched recipe ends it.",
        summary_zh="让头提交的合并门禁沿用本 PR 之前的一次 GPU 运行，前提是每个被改动配方在头提交上的配方指纹"
        "都与该运行所测提交上的相同；改动了这些配方的推送会使其失效。",
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
        summary_en="List this PR's GPU runs and their states, their jobs with the time each waited for a "
        "runner, queued and running jobs per runner label across the repository, and infrastructure failures per "
        "runner host.",
        summary_zh="列出本 PR 的 GPU 运行及其状态、各作业等待 runner 的时间、整个仓库按 runner 标签统计的排队中和运行中的作业，"
        "以及按 runner 主机统计的基础设施失败。",
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
