"""简体中文 for the messages the planner, the recipe loader and the command line write (errors, notes, reasons).

Those messages are built in English where the fact is found; the Chinese half of a comment shows
them through the templates' `zh` filter, which matches each against the English patterns below and
fills the Chinese form with the same values. Terms follow docs/glossary.md. tests/test_glossary.py
checks that every message the code can write has a pattern here.
"""
from __future__ import annotations

import functools
import re

# (English, 简体中文): `{}` in English is a value; `{0}`, `{1}` ... in Chinese place them.
PATTERNS: tuple[tuple[str, str], ...] = (
    # E2E suites over the repository's own harness (bot/runner/command_case.py)
    ("{} must be an existing directory (got {})", "{0} 必须是一个已存在的目录（实际为 {1}）"),
    ("{}={} is not a comma-separated list of device ids", "{0}={1} 不是以逗号分隔的设备 ID 列表"),
    ("{} must contain exactly {} device ids (got {}: {})", "{0} 必须恰好包含 {1} 个设备 ID（实际 {2} 个：{3}）"),
    ("{} must list each device once ({} repeated: {})", "{0} 中每个设备只能出现一次（{1} 重复：{2}）"),
    ("role {} takes position {} of {}, which lists {} device(s)", "角色 {0} 占用 {2} 的第 {1} 个位置，但它只列出 {3} 个设备"),
    ("{}: device {} is given to both {} and {}; roles must use disjoint devices",
     "{0}：设备 {1} 同时分给了 {2} 和 {3}；各角色的设备不能重叠"),
    ("node {} not started: {}", "节点 {0} 未启动：{1}"),
    ("node {} did not finish ({})", "节点 {0} 未完成（{1}）"),
    ("node {} was skipped ({}); a skip fails the gate", "节点 {0} 被跳过（{1}）；跳过即门禁失败"),
    ("node {} failed: {}", "节点 {0} 失败：{1}"),
    ("node {} errored: {}", "节点 {0} 出错：{1}"),
    ("{} test(s) passed where {} were expected", "通过了 {0} 个测试，应为 {1} 个"),
    ("the harness was stopped before it exited ({})", "harness 在退出前被停止（{0}）"),
    ("the harness exited with code {}", "harness 以退出码 {0} 退出"),
    ("node {}: the harness was stopped before it exited ({})", "节点 {0}：harness 在退出前被停止（{1}）"),
    ("node {}: the harness exited with code {}", "节点 {0}：harness 以退出码 {1} 退出"),
    ("the harness exited and left process(es) {} running in its process group",
     "harness 已退出，但在其进程组中留下了仍在运行的进程 {0}"),
    ("the case's time limit of {} s was reached", "已达到用例的时间上限 {0} 秒"),
    ("no result in the JUnit report", "JUnit 报告中没有结果"),
    ("no JUnit report was written", "没有写出 JUnit 报告"),
    ("the harness's JUnit report {} cannot be read: {}", "无法读取 harness 的 JUnit 报告 {0}：{1}"),
    ("setup step {} ({}) exited with code {}", "setup 步骤 {0}（{1}）以退出码 {2} 退出"),
    ("setup step {} ({}) could not run: {}", "setup 步骤 {0}（{1}）无法运行：{2}"),
    # what a glob was for (bot/control/gate_events.py: `/sweep: no recipe matches ...`)
    ("no {} matches {}", "没有{0}符合 {1}"),
    # why a case could not start on the runner (bot/runner: environment.py, engines.py, local.py)
    ("{}: this case is opt-in and fails rather than skips without them", "{0}：这个用例需要显式开启（opt-in），缺少这些设置时判为失败，而不是跳过"),
    ("required environment variable {} not set", "未设置必需的环境变量 {0}"),
    ("required environment variables {} not set", "未设置必需的环境变量 {0}"),
    ("required setting {} not met", "必需的设置 {0} 未满足"),
    ("required settings {} not met", "必需的设置 {0} 未满足"),
    ("{} refers to ${{}}, which is not set in the runner's environment", "{0} 引用了 ${{{1}}}，但 runner 的环境中没有设置它"),
    ("{}={} is not a comma-separated list of GPU indices", "{0}={1} 不是以逗号分隔的 GPU 编号列表"),
    ("devices {} are outside the {} GPU(s) that {}={} lists; devices index into that list",
     "devices {0} 超出了 {2}={3} 列出的 {1} 张 GPU；devices 是该列表中的位置"),
    ("devices {} are outside the {} GPU(s) this runner was given (CUDA_VISIBLE_DEVICES={}); devices index into that list",
     "devices {0} 超出了分配给这个 runner 的 {1} 张 GPU（CUDA_VISIBLE_DEVICES={2}）；devices 是该列表中的位置"),
    ("no vLLM found: set RECIPE_BOT_VLLM, put `vllm` on PATH, or run scripts/setup-cpu-engine.sh for the CPU engine",
     "找不到 vLLM：请设置 RECIPE_BOT_VLLM、把 `vllm` 加入 PATH，或运行 scripts/setup-cpu-engine.sh 安装 CPU 引擎"),
    ("launch_script {} points outside the repository {}", "launch_script {0} 指向仓库 {1} 之外"),
    ("launch_script {} does not exist under {}", "launch_script {0} 在 {1} 下不存在"),
    ("port {} is already in use before the case started (held by {})", "用例开始前端口 {0} 已被占用（占用者：{1}）"),
    ("port {} is already in use before the case started", "用例开始前端口 {0} 已被占用"),
    ("the case's GPUs are busy before it started ({}); an idle GPU has no compute process and at most {} MiB used ({})",
     "用例启动前它的 GPU 已被占用（{0}）；空闲的 GPU 没有计算进程，显存占用不超过 {1} MiB（{2}）"),
    ("{}={} is not a number of MiB from 0 to 1048576", "{0}={1} 不是 0 到 1048576 之间的 MiB 数"),
    ("not run: {}", "未运行：{0}"),
    ("GSM8K data is not available on this runner ({}); set {} to a folder holding GSM8K's test.jsonl and "
     "train.jsonl, or give the recipe's accuracy.data_path",
     "这个 runner 上没有 GSM8K 数据（{0}）；请把 {1} 设为包含 GSM8K 的 test.jsonl 和 train.jsonl 的目录，"
     "或在配方中给出 accuracy.data_path"),
    ("runner error: {}", "runner 错误：{0}"),
    # pydantic's own wording, while bot/core/config.py and bot/runner/cli.py show it as text (bot/core/validation.py
    # has the catalogue's messages)
    ("Input should be greater than or equal to {}", "应大于或等于 {0}"),
    ("Input should be greater than {}", "应大于 {0}"),
    ("Input should be less than or equal to {}", "应小于或等于 {0}"),
    ("Input should be less than {}", "应小于 {0}"),
    ("List should have at least {} item after validation, not {}", "列表至少应有 {0} 项，实际为 {1} 项"),
    ("List should have at least {} items after validation, not {}", "列表至少应有 {0} 项，实际为 {1} 项"),
    ("String should match pattern {}", "字符串应符合模式 {0}"),
    # refusals still written in English (recipe sources, git, squeue), shown by bot/cli.py
    ("unknown revision {} in {}", "{1} 中没有修订版本 {0}"),
    ("git {}: {}", "git {0} 失败：{1}"),
    ("squeue failed: {}", "squeue 失败：{0}"),
)
CJK = re.compile(r"[\u4e00-\u9fff]")  # a text that already has its Chinese
# A message that names where first (`file:line: message`, `--flag: message`): the place stays as it is.
_LOCATED = re.compile(r"^(\S+?): (.+)$", re.S)
# Suffixes the loader adds to a message: the value that was given.
_SUFFIXES = ((re.compile(r"^(.*), got (.*)$", re.S), "{0}，实际为 {1}"), (re.compile(r"^(.*); got (.*)$", re.S), "{0}；实际为 {1}"))
_WORDS = {"recipe": "配方", "case": "用例"}  # `no {} matches {}`: what the glob was for


_MAX_PLACES = 3  # `file:line: field: message` names two places; a value is a message at most two deep
_MAX_DEPTH = 2
_MAX_PARTS = 16  # reasons joined with "; " in one message


def _match(parts: list[str], text: str) -> list[str] | None:
    """The values of `text` under one English pattern split at its `{}`s, or None.

    What `^p0(.+?)p1(.+?)...pn$` matches, found in one pass of str.find: each literal part found leftmost
    after a value of at least one character, the last part a suffix. Leftmost is what the regex would
    settle on, and no backtracking means a long text (a PR's comment, a recipe's value) costs a scan per
    pattern, never a scan per pair of its characters.
    """
    first, last = parts[0], parts[-1]
    if len(parts) == 1:
        return [] if text == first else None
    end = len(text) - len(last)
    if end <= len(first) or not text.startswith(first) or not text.endswith(last):
        return None
    values, position = [], len(first)
    for part in parts[1:-1]:
        found = text.find(part, position + 1, end)
        if found < 0:
            return None
        values.append(text[position:found])
        position = found + len(part)
    if position >= end:
        return None
    values.append(text[position:end])
    return values


@functools.cache
def _compiled() -> tuple[tuple[list[str], str], ...]:
    return tuple((en.split("{}"), zh) for en, zh in PATTERNS)


def known(text: str) -> bool:
    """Whether `text` has a Chinese form (a test checks that every message the code writes does)."""
    return translate(text) != text


def translate(text: str) -> str:
    """The Chinese form of one message; unknown text is returned as it is (it may be a path or a name).

    A message that names where first (`file:line: field: message`) keeps its places and has the rest
    translated."""
    text = str(text)
    places, rest = [], text
    for _ in range(_MAX_PLACES + 1):
        chinese = _translated(rest, 0)
        if chinese is not None:
            return "".join(f"{place}：" for place in places) + chinese
        located = _LOCATED.match(rest)
        if located is None:
            break
        places.append(located.group(1))
        rest = located.group(2)
    return text


def _value(text: str, depth: int) -> str:
    """A value inside a message: a word the glossary has, a message of its own, or as it is."""
    if text in _WORDS:
        return _WORDS[text]
    if depth >= _MAX_DEPTH:
        return text
    chinese = _translated(text, depth + 1)
    return text if chinese is None else chinese


def _translated(text: str, depth: int) -> str | None:
    for parts, zh in _compiled():
        values = _match(parts, text)
        if values is not None:
            # A value may itself be a message (`{}: this case is opt-in ...`): shown in Chinese too.
            return zh.format(*[_value(v, depth) for v in values])
    for regex, zh in _SUFFIXES:
        found = regex.match(text)
        if found and depth < _MAX_DEPTH:
            head = _translated(found.group(1), depth + 1)
            if head is not None:
                return zh.format(head, found.group(2))
    if "; " in text and depth < _MAX_DEPTH:  # reasons joined into one line (`recipe changed; include ...`)
        parts = text.split("; ")
        if len(parts) > _MAX_PARTS:
            return None
        chinese = []
        for part in parts:
            found = _translated(part, depth + 1)
            if found is None:
                return None
            chinese.append(found)
        return "；".join(chinese)
    return None
