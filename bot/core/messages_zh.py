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
    # artifacts of earlier runs that cannot be used (bot/report/fetch.py, extract_safely)
    ("not a zip archive ({})", "不是 zip 归档（{0}）"),
    ("{} members, more than {}", "有 {0} 个成员，超过上限 {1}"),
    ("member {} points outside the artifact folder", "成员 {0} 指向 artifact 目录之外"),
    ("member {} expands {} bytes from {} (ratio limit {})", "成员 {0} 从 {2} 字节解压为 {1} 字节（压缩比上限 {3}）"),
    ("expands to {} bytes, more than {}", "解压后为 {0} 字节，超过上限 {1}"),
    ("member {} is larger than its header says", "成员 {0} 比其文件头声明的更大"),
    ("{} exists already (two artifacts of one name)", "{0} 已存在（两个 artifact 同名）"),
    ("cannot be extracted ({})", "无法解压（{0}）"),
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
    # the command line's refusals (bot/*/cli.py, report inputs, GitHub events), shown by bot/cli.py
    ("{} is not a positive integer", "{0} 不是正整数"),
    ("a comment must have from 1 to {} characters (got {})", "评论的长度必须在 1 到 {0} 个字符之间（实际为 {1}）"),
    ("{}; check GITHUB_API_URL and the network", "{0}；请检查 GITHUB_API_URL 和网络"),
    ("the bot posts as {}, but bot_login is {}, so it does not recognise its own comments (the claim of {} on PR "
     "#{}): set bot_login to {} in {}, or leave it out (the bot then asks GitHub who it is)",
     "bot 以 {0} 发布，但 bot_login 是 {1}，因此认不出自己的评论（PR #{3} 上 {2} 的认领评论）：请在 {5} 中把 "
     "bot_login 设为 {4}，或删除它（bot 会向 GitHub 查询自己的身份）"),
    ("cannot tell which account the bot posts as ({}); set bot_login in {} or pass --bot-login",
     "无法确定 bot 以哪个账号发布（{0}）；请在 {1} 中设置 bot_login，或传入 --bot-login"),
    ("cannot read the earlier runs of {}: {}", "无法读取 {0} 之前的运行：{1}"),
    ("cannot listen on {}: {}", "无法监听 {0}：{1}"),
    ("cannot read the seed file: {}", "无法读取 seed 文件：{0}"),
    ("not valid YAML: {}", "不是有效的 YAML：{0}"),
    ("the seed must be a mapping with at least `repository: owner/name`",
     "seed 必须是映射，至少包含 `repository: owner/name`"),
    ("the file must be a mapping of settings", "配置文件必须是设置项的映射"),
    ("duplicate key; write each key once", "重复的键；每个键只能写一次"),
    ("unknown key; accepted: {}", "未知的键；可用的有：{0}"),
    ("{} is not a GitHub login", "{0} 不是 GitHub 登录名"),
    ("{} is not a team; write it as org/team-slug", "{0} 不是团队；请写成 org/team-slug"),
    ("no command {}; accepted: {}", "没有命令 {0}；可用的有：{1}"),
    ("a label may start /sweep or /e2e, not /{}", "标签只能启动 /sweep 或 /e2e，不能启动 /{0}"),
    ("{} is not a registry such as docker.io/vllm or ghcr.io/acme", "{0} 不是镜像仓库地址，例如 docker.io/vllm 或 ghcr.io/acme"),
    ("{} must contain {pr}, e.g. docs/waiver/{pr}.md", "{0} 必须包含 {{pr}}，例如 docs/waiver/{{pr}}.md"),
    ("{} is not a workflow file name such as gpu.yml", "{0} 不是工作流文件名，例如 gpu.yml"),
    ("keep_sha {} is not a commit SHA (7 to 40 hex digits)", "keep_sha {0} 不是提交 SHA（7 到 40 位十六进制）"),
    ("GITHUB_TOKEN and GITHUB_REPOSITORY must be set (as GitHub Actions sets them)",
     "必须设置 GITHUB_TOKEN 和 GITHUB_REPOSITORY（GitHub Actions 会设置它们）"),
    ("{} must be set (as GitHub Actions sets them)", "必须设置 {0}（GitHub Actions 会设置它们）"),
    ("GITHUB_REPOSITORY={} is not owner/name", "GITHUB_REPOSITORY={0} 不是 owner/name 格式"),
    ("GET artifact {}: {}", "GET artifact {0} 失败：{1}"),
    ("the delivery names no installation, so no installation token can be made",
     "这次投递没有指明 installation，因此无法生成 installation 令牌"),
    ("could not record the request {} on PR #{} (its claim comment is missing)",
     "无法在 PR #{1} 上记录请求 {0}（它的认领评论不见了）"),
    ("{}; the reply is not there, so it was not posted", "{0}；回复不在，因此没有发布"),
    ("{}; no run for request {} exists, so nothing was started", "{0}；请求 {1} 没有对应的运行，因此什么也没有启动"),
    ("POST /graphql (edit history): {}", "POST /graphql（编辑历史）失败：{0}"),
    ("unknown revision {} in {}", "{1} 中没有修订版本 {0}"),
    ("{} is not a checkout of {} (HEAD is {} {})", "{0} 不是 {1} 的检出（当前检出的是 {2} {3}）"),
    ("git {}: {}", "git {0} 失败：{1}"),
    ("squeue failed: {}", "squeue 失败：{0}"),
    # a PR command's usage errors (bot/control: registry.py, commands.py) and argparse's own wording
    ("argument {}: {}", "参数 {0}：{1}"),
    ("unrecognized arguments: {}", "无法识别的参数：{0}"),
    ("the following arguments are required: {}", "缺少必需的参数：{0}"),
    ("expected one argument", "需要一个值"),
    ("expected at least one argument", "至少需要一个值"),
    ("invalid choice: {} (choose from {})", "无效的选项 {0}（可选：{1}）"),
    ("no closing quotation", "引号没有闭合"),
    ("no escaped character", "转义符后缺少字符"),
    ("at most {} arguments", "最多 {0} 个参数"),
    ("no command named {}; known: {}", "没有名为 {0} 的命令；已有的命令：{1}"),
    ("unknown command /{}", "未知命令 /{0}"),
    ("expected exactly one command line such as '/sweep --scope lowest'",
     "应恰好是一行命令，例如 '/sweep --scope lowest'"),
    ("{} {} may use only letters, digits and _ . * ? [ ] / : + = -", "{0} {1} 只能包含字母、数字和 _ . * ? [ ] / : + = -"),
    ("expected a comma-separated list such as 4,8,16", "应为逗号分隔的列表，例如 4,8,16"),
    ("{} is not a concurrency between 1 and 100000", "{0} 不是 1 到 100000 之间的并发值"),
    ("at most {} concurrencies", "最多 {0} 个并发值"),
    ("{} is not a commit SHA prefix (7 to 40 lowercase hex characters)", "{0} 不是提交 SHA 前缀（7 到 40 个小写十六进制字符）"),
    ("{} is not a workflow run id (the number in .../actions/runs/<id>)",
     "{0} 不是工作流运行 id（.../actions/runs/<id> 中的数字）"),
    # click's own usage errors, as click 8 words them
    ("No such option {}. Did you mean {}?", "没有选项 {0}。是否想用 {1}？"),
    ("No such option {}. (Did you mean one of: {}?)", "没有选项 {0}。（是否想用其中之一：{1}？）"),
    ("No such option {}.", "没有选项 {0}。"),
    ("No such command {}.", "没有命令 {0}。"),
    ("Missing command.", "缺少子命令。"),
    ("Missing option {}.", "缺少选项 {0}。"),
    ("Missing argument {}.", "缺少参数 {0}。"),
    ("Option {} requires an argument.", "选项 {0} 需要一个值。"),
    ("Invalid value for {}: {}", "{0} 的值无效：{1}"),
    ("{} is not one of {}.", "{0} 不是可选值之一：{1}。"),
    ("{} is not a valid integer.", "{0} 不是有效的整数。"),
    ("{} is not in the range {}.", "{0} 不在范围 {1} 内。"),
    ("File {} does not exist.", "文件 {0} 不存在。"),
    ("Directory {} does not exist.", "目录 {0} 不存在。"),
    ("Path {} does not exist.", "路径 {0} 不存在。"),
    ("File {} is a directory.", "{0} 是目录，不是文件。"),
    ("Directory {} is a file.", "{0} 是文件，不是目录。"),
    ("Got unexpected extra argument ({})", "多余的参数（{0}）"),
    ("Got unexpected extra arguments ({})", "多余的参数（{0}）"),
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
