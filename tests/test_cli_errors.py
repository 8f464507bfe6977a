"""Every refusal reads in English, then 简体中文: the command line's own and click's, and a PR command's usage errors."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli import main
from message_scan import sample

ROOT = Path(__file__).resolve().parents[1]
CJK = re.compile(r"[\u4e00-\u9fff]")
# Errors a command shows as they are: click's, and the domain errors the commands turn into click's.
CLICK_ERRORS = {"ClickException", "BadParameter", "UsageError"}
DOMAIN_ERRORS = {"InputError", "EventError", "SeedError", "DemoError", "JobFileError", "GitHubError", "SourceError",
                 "CheckoutError", "SlurmUnavailable", "Refusal", "UsageRefusal"}
# A PR command's usage errors: the control plane's reply shows them in both halves (bot/core/registry.py).
COMMAND_ERRORS = {"UsageError", "ArgumentTypeError"}
# `f"{path}: {exc}"`, `f"--required: {exc}"`: the words come from the error wrapped (scanned where raised)
WRAPPER = re.compile(r"^(\S+: )?[X:;\s]*$")


def _message_of(call: ast.Call, path: Path) -> ast.AST | None:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    owner = getattr(func.value, "id", None) if isinstance(func, ast.Attribute) else None
    if name in CLICK_ERRORS and owner == "click" and call.args:
        return call.args[0]
    if name in DOMAIN_ERRORS and call.args:
        return call.args[0]
    if name in COMMAND_ERRORS and owner != "click" and path.parent.name in ("control", "core") and call.args:
        return call.args[0]
    if name == "ConfigError" and len(call.args) >= 4:  # (source, line, field, message)
        return call.args[3]
    if name == "ValueError" and path.name == "config.py" and call.args:  # the config's validators
        return call.args[0]
    return None


def refusals() -> list[tuple[str, str]]:
    """(where, message) for every literal message the commands can refuse with."""
    found = []
    for path in sorted((ROOT / "bot").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            message = _message_of(node, path) if isinstance(node, ast.Call) else None
            text = sample(message) if message is not None else None
            if text and not WRAPPER.match(text):
                found.append((f"{path.relative_to(ROOT)}:{node.lineno}", text))
    return found


REFUSALS = refusals()


def catalogue_refusals() -> list[tuple[str, str]]:
    """(where, message id) for every refusal raised as a catalogue message: msg("...") where it is raised."""
    found = []
    for path in sorted((ROOT / "bot").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            message = _message_of(node, path) if isinstance(node, ast.Call) else None
            if isinstance(message, ast.Call) and getattr(message.func, "id", "") == "msg" and message.args \
                    and isinstance(message.args[0], ast.Constant):
                found.append((f"{path.relative_to(ROOT)}:{node.lineno}", message.args[0].value))
    return found


CATALOGUE_REFUSALS = catalogue_refusals()


def test_the_scan_finds_the_refusals_raised_as_catalogue_messages():
    assert {"%(path)s: cannot read the event: %(reason)s", "%(path)s: the results directory does not exist",
            "no pytest node ids in the input; give the output of pytest --collect-only -q"} <= {
        text for _, text in CATALOGUE_REFUSALS}


@pytest.mark.parametrize("where, message_id", CATALOGUE_REFUSALS, ids=[where for where, _ in CATALOGUE_REFUSALS])
def test_every_catalogue_refusal_has_its_chinese_translation(where, message_id):
    from bot.core import catalogue

    chinese = catalogue.translations("zh").gettext(message_id)
    if WRAPPER.match(re.sub(r"%\(\w+\)s", "X", message_id)):  # `%(path)s: %(problem)s`: its words are the problem's
        assert chinese != message_id, where
    else:
        assert CJK.search(chinese), where


def test_the_scan_finds_the_refusals_it_should():
    texts = {text for _, text in REFUSALS} | {text for _, text in CATALOGUE_REFUSALS}
    assert "the following arguments are required: %(names)s" in texts
    assert len(REFUSALS) + len(CATALOGUE_REFUSALS) >= 40


def test_no_refusal_is_english_text_left_to_be_translated():
    """Every refusal the commands raise is a catalogue message (or written in both languages where it is
    raised): there is no table that would turn English text into Chinese any more."""
    assert [(where, text) for where, text in REFUSALS if not CJK.search(text)] == []


CASES = {
    "a results folder that is not there": (
        ["report", "--results", "{tmp}/nowhere", "--out", "{tmp}/out"], 1,
        "Error: {tmp}/nowhere: the results directory does not exist", "错误：{tmp}/nowhere：结果目录不存在"),
    "an option no command has": (
        ["plan", "--bogus"], 2, "No such option '--bogus'. Did you mean '--base'?", "错误：没有选项 '--bogus'。是否想用 '--base'？"),
    "an option the group does not have": (["--bogus"], 2, "No such option '--bogus'.", "错误：没有选项 '--bogus'。"),
    "a command that does not exist": (["nope"], 2, "No such command 'nope'.", "错误：没有命令 'nope'。"),
    "a required option left out": (["report"], 2, "Missing option '--results'.", "错误：缺少选项 '--results'。"),
    "a value outside the choices": (
        ["plan", "--format", "xml"], 2, "'xml' is not one of 'table', 'json', 'markdown'.",
        "错误：'--format' 的值无效：'xml' 不是可选值之一：'table', 'json', 'markdown'。"),
    "a command's own bad value": (
        ["plan", "--conc", "0", "--repo", "{tmp}"], 2, "Invalid value for --conc: '0' is not a positive integer",
        "错误：--conc 的值无效：'0' 不是正整数"),
    "a job file that is not YAML": (
        ["run", "--job", "{tmp}/job.yaml", "--out", "{tmp}/out"], 2,
        "job file {tmp}/job.yaml:2: cannot read it as YAML:", "错误：作业文件 {tmp}/job.yaml:2：无法按 YAML 读取："),
    "a Slurm keep-sha that is not a SHA": (
        ["slurm-cancel", "--pr", "1", "--keep-sha", "zz"], 2, "keep_sha 'zz' is not a commit SHA",
        "错误：--keep-sha 的值无效：keep_sha 'zz' 不是提交 SHA（7 到 40 位十六进制）"),
    "a revision the repository does not have": (
        ["plan", "--repo", "{tmp}", "--base", "nope"], 1, "Error: unknown revision 'nope' in", "错误：{tmp} 中没有修订版本 'nope'"),
    "an event file that is not there": (
        ["handle", "--event-name", "issue_comment", "--event-path", "{tmp}/event.json"], 1,
        "{tmp}/event.json: cannot read the event: No such file or directory", "错误：{tmp}/event.json：无法读取事件文件："),
}


@pytest.mark.parametrize("argv, code, english, chinese", CASES.values(), ids=CASES.keys())
def test_a_refusal_reads_in_english_then_in_chinese(tmp_path, argv, code, english, chinese):
    (tmp_path / "job.yaml").write_text("job_id: [\n")
    result = CliRunner().invoke(main, [a.format(tmp=tmp_path) for a in argv])
    assert result.exit_code == code, result.output
    english, chinese = english.format(tmp=tmp_path), chinese.format(tmp=tmp_path)
    assert english in result.output and chinese in result.output
    assert result.output.index(english) < result.output.index(chinese)
    assert "Traceback" not in result.output


def test_a_refusal_written_in_both_languages_is_not_given_a_second_chinese_line(tmp_path):
    event = tmp_path / "event.json"
    event.write_bytes(b'{"action": "\xff"}')
    result = CliRunner().invoke(main, ["handle", "--event-name", "issue_comment", "--event-path", str(event)])
    assert result.exit_code == 1
    assert result.output.count("错误：") == 1 and "事件文件不是 UTF-8 文本" in result.output


PR_COMMANDS = {
    "an unknown flag": ("/sweep --bogus", "无法识别的参数：--bogus"),
    "a value outside the choices": ("/sweep --scope wide", "参数 --scope：无效的选项 'wide'（可选：'lowest', 'full'）"),
    "a flag without its value": ("/sweep --conc", "参数 --conc：需要一个值"),
    "a concurrency that is not one": ("/sweep --conc x", "参数 --conc：'x' 不是 1 到 100000 之间的并发值"),
    "an unbalanced quote": ("/sweep 'tiny", "引号没有闭合"),
    "a required argument left out": ("/ok-to-test", "缺少必需的参数：sha"),
    "help on a command that does not exist": ("/help nope", "没有名为 'nope' 的命令；已有的命令："),
    "a glob with a character a name cannot have": ("/sweep a$b", "参数 recipes：recipe-glob 'a$b' 只能包含字母"),
}


@pytest.mark.parametrize("line, chinese", PR_COMMANDS.values(), ids=PR_COMMANDS.keys())
def test_a_pr_commands_usage_error_has_its_chinese_form(line, chinese):
    from bot.core.commands import parse_comment

    (error,) = parse_comment(line).errors
    assert error.message.render("zh").startswith(chinese)


def test_a_message_with_no_chinese_form_is_shown_as_it_is():
    from bot.cli import _in_both_languages
    import click

    error = click.ClickException("something only a plug-in would say")
    assert _in_both_languages(error) is error
