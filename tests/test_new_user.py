"""What a new user hits on the command line: one clear line and a non-zero exit for bad input, never a traceback."""
from __future__ import annotations

import json
import re
import shutil
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from bot.cli import main
from tests import synthetic
from git_helpers import git

ROOT = Path(__file__).resolve().parents[1]
SUBCOMMANDS = ("handle", "plan", "run", "report", "demo", "slurm-cancel")


def invoke(*args: str, env: dict[str, str] | None = None):
    # Through the whole group, as `recipe-bot` runs: the guard lives there.
    result = CliRunner().invoke(main, [str(a) for a in args], env=env, catch_exceptions=False)
    assert "Traceback" not in result.output
    return result


def closed_port() -> int:
    """A port nothing listens on: connecting to it is refused at once (GitHub unreachable)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def recipes_repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(ROOT / "recipes", root / "recipes")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root


def _set_concurrency(root: Path, text: str) -> None:
    path = root / "recipes" / "tiny-cpu.yaml"
    path.write_text(path.read_text().replace("concurrency: [1, 2, 4, 8, 16, 32]", f"concurrency: {text}"))


@pytest.mark.parametrize("value, message", [
    pytest.param("[0, 2]", "concurrency values must be from 1 to 100000 (got 0)", id="zero"),
    pytest.param("[-4, 2]", "concurrency values must be from 1 to 100000 (got -4)", id="negative"),
    pytest.param("[1, 100000000000000000000000000000]",
                 "concurrency values must be from 1 to 100000 (got 100000000000000000000000000000)",
                 id="beyond-64-bits"),
    pytest.param("[1, 1, 2]", "concurrency values must be distinct (1 is listed twice)", id="duplicate"),
])
def test_a_bad_recipe_concurrency_is_one_file_line_field_error(recipes_repo, value, message):
    _set_concurrency(recipes_repo, value)
    result = invoke("plan", "--repo", recipes_repo)
    assert result.exit_code == 1
    assert f"`recipes/tiny-cpu.yaml:7`, field `concurrency`: `{message}`" in result.output


@pytest.mark.parametrize("line, field, english, chinese", [
    pytest.param("  prompts_per_concurrency: 100000000000000000000000", "workload.prompts_per_concurrency",
                 "must be from 1 to 10000000 (got 100000000000000000000000)",
                 "应在 1 到 10000000 之间（实际为 100000000000000000000000）", id="prompts-beyond-64-bits"),
    pytest.param("  repeats: 0", "workload.repeats", "must be from 1 to 10 (got 0)", "应在 1 到 10 之间（实际为 0）",
                 id="repeats-below-range"),
    pytest.param("  num_warmups: -1", "workload.num_warmups", "must be from 0 to 10000000 (got -1)",
                 "应在 0 到 10000000 之间（实际为 -1）", id="warmups-negative"),
    pytest.param("  random_range_ratio: 5", "workload.random_range_ratio", "must be from 0 to 1 (got 5)",
                 "应在 0 到 1 之间（实际为 5）", id="ratio-above-range"),
])
def test_a_count_out_of_range_names_the_field_and_the_range_in_both_languages(recipes_repo, line, field,
                                                                               english, chinese):
    path = recipes_repo / "recipes" / "tiny-cpu.yaml"
    key = line.split(":")[0]
    kept = [old for old in path.read_text().splitlines() if old.split(":")[0] != key]
    at = next(i for i, old in enumerate(kept) if old.startswith("workload:")) + 1
    path.write_text("\n".join([*kept[:at], line, *kept[at:]]) + "\n")
    for form in ("markdown", "json"):
        result = invoke("plan", "--repo", recipes_repo, "--recipe", "tiny-cpu", "--format", form)
        assert result.exit_code == 1 and "TypeError" not in result.output
        assert english in result.output and field in result.output
    assert chinese in result.output


def test_a_number_no_field_bounds_is_refused_before_the_plan_json(recipes_repo):
    path = recipes_repo / "recipes" / "tiny-cpu.yaml"
    path.write_text(path.read_text() + "launch:\n  devices: [99999999999999999999999]\n")
    result = invoke("plan", "--repo", recipes_repo, "--recipe", "tiny-cpu", "--format", "json")
    assert result.exit_code == 1 and "Integer exceeds" not in result.output
    assert "launch.devices[0]" in result.output
    assert "99999999999999999999999 is out of range: numbers up to 9007199254740992 are accepted" in result.output
    assert "超出范围" in result.output


@pytest.mark.parametrize("args, english, chinese", [
    pytest.param(["demo", "--port", "99999"], "99999 is not in the range 1<=x<=65535", "不在范围 1<=x<=65535 内",
                 id="demo-port"),
    pytest.param(["demo", "--port", "0"], "0 is not in the range 1<=x<=65535", "不在范围", id="demo-port-zero"),
    pytest.param(["serve", "--port", "-1"], "-1 is not in the range 0<=x<=65535", "不在范围", id="serve-port"),
    pytest.param(["demo", "--command", "x" * 65537], "a comment must have from 1 to 65536 characters (got 65537)",
                 "评论的长度必须在 1 到 65536 个字符之间（实际为 65537）", id="demo-command-too-long"),
    pytest.param(["demo", "--command", " "], "a comment must have from 1 to 65536 characters (got 0)",
                 "评论的长度必须在 1 到 65536 个字符之间", id="demo-command-empty"),
    pytest.param(["report", "--results", ".", "--pr", "99999999999999999999"], "is not in the range 1<=x<=2147483647",
                 "不在范围", id="report-pr"),
])
def test_a_port_or_text_out_of_range_is_refused_naming_the_range(args, english, chinese):
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert english in result.output and chinese in result.output
    assert "OverflowError" not in result.output


def test_a_valid_recipe_concurrency_still_plans(recipes_repo):
    _set_concurrency(recipes_repo, "[1, 3]")
    result = invoke("plan", "--repo", recipes_repo, "--recipe", "tiny-cpu", "--format", "json")
    assert result.exit_code == 0, result.output
    jobs = json.loads(result.output)["jobs"]
    assert sorted(p["concurrency"] for j in jobs for c in j["cases"] for p in c["points"]) == [1, 3]


def test_an_error_in_a_shared_base_file_is_listed_once(recipes_repo):
    base = recipes_repo / "recipes" / "_base" / "tiny-cpu.yaml"
    base.write_text(base.read_text() + "  bogus: 1\n")  # tiny-cpu and tiny-cpu-e2e both include it
    result = invoke("plan", "--repo", recipes_repo)
    assert result.exit_code == 1
    assert result.output.count("estimate.bogus") == 2  # once in English, once in Chinese
    assert "a recipe or config file is invalid" in result.output and "有一个配方或配置文件无效" in result.output


@pytest.mark.parametrize("args, expected", [
    pytest.param(["--repo", "/nope/such/dir"], "--repo /nope/such/dir: no such directory", id="missing-repo"),
    pytest.param(["--label", "sweep-enabld"], "--label 'sweep-enabld' is not a sweep label (accepted: sweep-enabled",
                 id="unknown-label"),
])
def test_bad_plan_arguments_are_one_error_and_a_non_zero_exit(recipes_repo, args, expected):
    result = invoke("plan", "--repo", recipes_repo, *args) if args[0] != "--repo" else invoke("plan", *args)
    assert result.exit_code != 0
    assert expected in result.output
    assert "Nothing to run" not in result.output


def test_an_empty_directory_is_not_a_repository_to_plan(tmp_path):
    result = invoke("plan", "--repo", tmp_path)
    assert result.exit_code != 0
    assert "no recipes here" in result.output


def test_a_known_label_still_plans(recipes_repo):
    result = invoke("plan", "--repo", recipes_repo, "--label", "sweep-enabled", "--recipe", "tiny-cpu")
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("fmt, expected", [
    pytest.param("table", "Nothing to run: no point matches --conc 3", id="table"),
    pytest.param("markdown", "无需运行：没有测试点的并发数符合 `--conc 3`", id="markdown-zh"),
])
def test_a_conc_that_matches_no_point_says_so(recipes_repo, fmt, expected):
    result = invoke("plan", "--repo", recipes_repo, "--recipe", "tiny-cpu", "--conc", "3", "--format", fmt)
    assert result.exit_code == 0, result.output
    assert expected in result.output
    assert "no recipe is touched" not in result.output
    assert "its concurrencies: 1, 2, 4, 8, 16, 32" in result.output


def test_an_untouched_change_still_says_no_recipe_is_touched(recipes_repo):
    (recipes_repo / "notes.txt").write_text("unrelated\n")
    git(recipes_repo, "add", "-A")
    git(recipes_repo, "commit", "-q", "-m", "docs")
    result = invoke("plan", "--repo", recipes_repo, "--base", "HEAD~1", "--head", "HEAD")
    assert result.exit_code == 0
    assert "Nothing to run: no recipe is touched by this change." in result.output


@pytest.mark.parametrize("named", ["qwen3.5-122b-a10b-afd", "baseline-eager", "qwen3.5-*"],
                         ids=["suite", "case", "suite-glob"])
def test_e2e_naming_an_untouched_suite_or_case_runs_it(recipes_repo, named):
    (recipes_repo / "notes.txt").write_text("unrelated\n")
    git(recipes_repo, "add", "-A")
    git(recipes_repo, "commit", "-q", "-m", "docs")
    result = invoke("plan", "--repo", recipes_repo, "--base", "HEAD~1", "--head", "HEAD",
                    "--command", f"/e2e {named}", "--format", "json")
    assert result.exit_code == 0, result.output
    jobs = json.loads(result.output)["jobs"]
    assert [j["recipe"] for j in jobs] == ["qwen3.5-122b-a10b-afd"]
    expected_cases = ["baseline-eager"] if named == "baseline-eager" else ["baseline-eager", "afd-eager-4a4f"]
    assert [c["name"] for c in jobs[0]["cases"]] == expected_cases


def test_e2e_naming_nothing_that_exists_runs_nothing(recipes_repo):
    result = invoke("plan", "--repo", recipes_repo, "--base", "HEAD", "--head", "HEAD",
                    "--command", "/e2e no-such-suite", "--format", "json")
    assert json.loads(result.output)["jobs"] == []


@pytest.mark.parametrize("subcommand", SUBCOMMANDS)
def test_dash_h_is_help_everywhere(subcommand):
    result = invoke(subcommand, "-h")
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"Usage: main {subcommand}") or "Usage:" in result.output
    assert "No such option" not in result.output


def _commands() -> dict[str, object]:
    """Every command of `recipe-bot`, the subcommands of its groups included."""
    import importlib

    from bot.cli import SUBCOMMANDS

    found: dict[str, object] = {}
    for name, (module_name, attr) in SUBCOMMANDS.items():
        command = getattr(importlib.import_module(module_name), attr)
        found[name] = command
        for sub_name, sub in getattr(command, "commands", {}).items():
            found[f"{name} {sub_name}"] = sub
    return found


@pytest.mark.parametrize("name", sorted(_commands()))
def test_every_command_takes_dash_h_wherever_it_runs(name):
    # click keeps a command's help option from the first context it ran in: a command first run on
    # its own (a test, a library caller) lost -h under `recipe-bot` for the rest of the process.
    # So each command declares -h itself, and takes it run on its own.
    command = _commands()[name]
    assert "-h" in command.context_settings.get("help_option_names", [])
    alone = CliRunner().invoke(command, ["-h"])
    assert alone.exit_code == 0, alone.output
    assert invoke(*name.split(), "-h").exit_code == 0


def test_run_given_a_plan_says_pick_a_job(recipes_repo, tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(invoke("plan", "--repo", recipes_repo, "--recipe", "tiny-cpu", "--format", "json").output)
    result = invoke("run", "--job", plan, "--out", tmp_path / "out")
    assert result.exit_code == 2
    assert "is a plan, not a job; pick a job with `recipe-bot plan ... --jobs-dir DIR`" in result.output
    assert "tiny-cpu--tp1" in result.output and "是运行计划而不是作业" in result.output
    assert "validation" not in result.output.lower()


def test_demo_with_a_model_path_that_does_not_exist_points_to_model_not_setup(tmp_path, monkeypatch):
    monkeypatch.setenv("RECIPE_BOT_VLLM", shutil.which("true") or "/bin/true")  # an engine is "installed"
    result = invoke("demo", "--model", tmp_path / "nope", "--out", tmp_path / "out")
    assert result.exit_code != 0
    assert "no config.json there; give a Hugging Face model directory" in result.output
    assert "setup-cpu-engine" not in result.output
    assert "该目录下没有 config.json" in result.output


def test_handle_with_a_non_utf8_event_file_is_one_bilingual_error(tmp_path):
    event = tmp_path / "event.json"
    event.write_bytes(b'{"comment": {"body": "\xff\xfe"}}')
    result = invoke("handle", "--event-name", "issue_comment", "--event-path", event,
                    env={"GITHUB_API_URL": f"http://127.0.0.1:{closed_port()}", "GITHUB_TOKEN": "t",
                         "GITHUB_REPOSITORY": "o/r"})
    assert result.exit_code == 1
    assert f"{event}: the event is not UTF-8 text (byte 22)" in result.output
    assert "事件文件不是 UTF-8 文本" in result.output


def _unreachable_env() -> dict[str, str]:
    return {"GITHUB_API_URL": f"http://127.0.0.1:{closed_port()}", "GITHUB_TOKEN": "t",
            "GITHUB_REPOSITORY": "octo/demo", "RECIPE_BOT_DEBUG": "",
            "RECIPE_BOT_GITHUB_ATTEMPTS": "1"}  # no retries: the first refused connection is the answer


def _comment_event(tmp_path: Path) -> Path:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({
        "action": "created", "repository": {"full_name": "octo/demo", "default_branch": "main"},
        "issue": {"number": 1, "pull_request": {"url": "x"}, "state": "open"},
        "comment": {"id": 5, "body": "/help", "user": {"login": "alice", "type": "User"},
                    "author_association": "MEMBER"},
        "sender": {"login": "alice", "type": "User"},
    }))
    return event


def _report_inputs(tmp_path: Path) -> dict:
    return synthetic.materialize(synthetic.passing_sweep(), tmp_path / "in")


@pytest.mark.parametrize("how", ["handle", "report-post", "report-baseline"])
def test_github_unreachable_is_one_bilingual_line(tmp_path, monkeypatch, how):
    monkeypatch.chdir(tmp_path)
    if how == "handle":
        args = ["handle", "--event-name", "issue_comment", "--event-path", _comment_event(tmp_path)]
    else:
        paths = _report_inputs(tmp_path)
        args = ["report", "--results", paths["results"], "--out", tmp_path / "out", "--bot-login", "bot"]
        args += ["--post"] if how == "report-post" else ["--baseline-from-github", "main"]
    result = invoke(*args, env=_unreachable_env())
    assert result.exit_code != 0 and "Traceback" not in result.output
    lines = result.output.splitlines()
    # bot/core/github.py names the API it could not reach; the CLI says so in English and in Chinese
    assert any("cannot reach the GitHub API at http://127.0.0.1:" in line for line in lines), result.output
    assert any(re.search("[\u4e00-\u9fff]", line) and "GitHub" in line for line in lines), result.output


def _boom_command():
    import click

    @click.command("boom")
    def boom() -> None:
        raise KeyError("an internal slip")

    return boom


@pytest.fixture
def boom(monkeypatch):
    """A subcommand with a bug in it, registered the way every subcommand is."""
    import sys as _sys
    import types

    module = types.ModuleType("bot_test_boom")
    module.boom_cmd = _boom_command()
    monkeypatch.setitem(_sys.modules, "bot_test_boom", module)
    from bot import cli

    monkeypatch.setitem(cli.SUBCOMMANDS, "boom", ("bot_test_boom", "boom_cmd"))


def test_an_unexpected_error_is_one_bilingual_line_not_a_traceback(boom):
    result = invoke("boom", env={"RECIPE_BOT_DEBUG": ""})
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert lines == ["Error: unexpected error: KeyError: 'an internal slip' (run with RECIPE_BOT_DEBUG=1 for the "
                     "traceback)",
                     "错误：意外错误：KeyError：'an internal slip'（设置 RECIPE_BOT_DEBUG=1 可查看完整的回溯信息）"]


def test_recipe_bot_debug_shows_the_traceback(boom):
    result = CliRunner().invoke(main, ["boom"], env={"RECIPE_BOT_DEBUG": "1"})
    assert isinstance(result.exception, KeyError)  # re-raised, so Python prints the traceback


def test_the_engine_set_up_states_its_measured_cost():
    """The banner and the demo's hint state the disk the engine leaves as bench/bench_demo.py measured
    it (bench/results/demo.json, committed with the figure), and never the old 600 MB claim."""
    from bot.demo.cli import SETUP_HINT

    measured_gib = json.loads((ROOT / "bench" / "results" / "demo.json").read_text(encoding="utf-8"))[
        "this"]["disk_mib"][".engine"] / 1024
    banner = (ROOT / "scripts" / "setup-cpu-engine.sh").read_text(encoding="utf-8")
    for text in (banner, str(SETUP_HINT)):
        assert "600 MB" not in text
        stated = [float(g) for g in re.findall(r"(\d+(?:\.\d+)?) GiB", text)]
        assert stated, "no disk size stated"
        assert all(abs(g - measured_gib) <= 0.1 * measured_gib for g in stated), (stated, measured_gib)
