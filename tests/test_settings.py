"""Every RECIPE_BOT_* variable is a field of one settings model: typed, described, documented, refused clearly."""
import pathlib
import re

import pytest
from click.testing import CliRunner

from bot.core.settings import PREFIX, Settings, SettingsError, load_settings, setting, settings_table

ROOT = pathlib.Path(__file__).resolve().parent.parent
# Names that are no setting: a tag the runner puts on its own children, a marker file beside random
# weights, a secret name scrubbed from a job's environment, the serve options' variable names (settings).
NOT_SETTINGS = {"RECIPE_BOT_RUN_ID", "RECIPE_BOT_RANDOM_WEIGHTS", "RECIPE_BOT_GITHUB_TOKEN", "RECIPE_BOT_REPORT_FORK"}


def test_docs_settings_md_is_generated_from_the_model_and_current():
    assert (ROOT / "docs" / "settings.md").read_text(encoding="utf-8") == settings_table(), (
        "docs/settings.md is stale: run `recipe-bot ci settings-doc > docs/settings.md`")


def test_every_variable_the_bot_names_is_a_described_setting():
    named = set()
    for path in (ROOT / "bot").rglob("*.py"):
        named |= set(re.findall(r"RECIPE_BOT_[A-Z0-9_]*[A-Z0-9]", path.read_text(encoding="utf-8")))
    fields = {PREFIX + name for name in Settings.model_fields}
    assert named - NOT_SETTINGS - {"RECIPE_BOT_GITHUB"} <= fields
    assert all(field.description for field in Settings.model_fields.values())


def test_an_empty_value_counts_as_unset_and_values_are_typed():
    settings = load_settings({"RECIPE_BOT_GITHUB_ATTEMPTS": "", "RECIPE_BOT_IDLE_GPU_MIB": "20",
                              "RECIPE_BOT_INPROCESS_CLIENT": "off"})
    assert (settings.GITHUB_ATTEMPTS, settings.IDLE_GPU_MIB, settings.INPROCESS_CLIENT) == (4, 20.0, False)


@pytest.mark.parametrize("name, value, english, chinese", [
    ("RECIPE_BOT_GITHUB_ATTEMPTS", "lots", "a whole number", "整数"),
    ("RECIPE_BOT_IDLE_GPU_MIB", "-1", "a number of MiB from 0 to 1048576", "0 到 1048576 之间的 MiB 数"),
    ("RECIPE_BOT_DEBUG", "maybe", "1/0, true/false, yes/no or on/off", "1/0、true/false、yes/no 或 on/off"),
    ("RECIPE_BOT_SLURM_POLL_S", "0", "a number of seconds above 0", "大于 0 的秒数"),
])
def test_a_bad_value_names_the_variable_and_what_it_accepts_in_both_languages(name, value, english, chinese):
    with pytest.raises(SettingsError) as err:
        load_settings({name: value})
    assert str(err.value) == (f"{name}={value!r} is not accepted: expected {english}\n"
                              f"{name}={value!r} 无效，应为：{chinese}")


def test_one_setting_is_read_without_the_others_being_valid():
    assert setting("VLLM", {"RECIPE_BOT_VLLM": "/opt/vllm", "RECIPE_BOT_GITHUB_ATTEMPTS": "lots"}) == "/opt/vllm"


def test_a_bad_variable_stops_a_command_with_one_bilingual_line_not_a_traceback(monkeypatch):
    from bot.core.github_retry import RetryPolicy

    with pytest.raises(SettingsError, match="RECIPE_BOT_GITHUB_TIMEOUT_S='1.5' is not accepted"):
        RetryPolicy.from_env({"RECIPE_BOT_GITHUB_TIMEOUT_S": "1.5"})
    from bot.core.cli_guard import explain

    try:
        load_settings({"RECIPE_BOT_GITHUB_TIMEOUT_S": "soon"})
    except SettingsError as exc:
        english, chinese = explain(exc, {}).render("en"), explain(exc, {}).render("zh")
    assert english.startswith("RECIPE_BOT_GITHUB_TIMEOUT_S='soon' is not accepted") and "无效" in chinese


def test_settings_doc_is_a_ci_subcommand():
    from bot.cli import main

    done = CliRunner().invoke(main, ["ci", "settings-doc"], prog_name="recipe-bot")
    assert done.exit_code == 0 and done.output == settings_table()


def test_an_environment_given_is_read_alone_not_mixed_with_the_process_environment(monkeypatch):
    monkeypatch.setenv("RECIPE_BOT_VLLM", "/from/the/process")
    assert load_settings({}).VLLM is None and setting("VLLM", {}) is None
    assert setting("VLLM") == "/from/the/process"


def test_a_renamed_variable_is_checked_as_its_setting_and_named_in_the_refusal():
    from bot.core.settings import setting_named

    assert setting_named("APP_ID", "MY_APP_ID", {"MY_APP_ID": "12", "RECIPE_BOT_APP_ID": "x"}) == "12"
    with pytest.raises(SettingsError, match="^MY_APP_ID='twelve' is not accepted: expected digits"):
        setting_named("APP_ID", "MY_APP_ID", {"MY_APP_ID": "twelve"})


def test_the_webhook_secret_is_a_secret_that_no_repr_shows():
    settings = load_settings({"RECIPE_BOT_WEBHOOK_SECRET": "hunter2"})
    assert settings.WEBHOOK_SECRET.get_secret_value() == "hunter2"
    assert "hunter2" not in repr(settings) and "hunter2" not in str(settings)


# The only places a setting is read on its own: where the value is needed is itself the edge (handle's
# --checkout default, the CLI's traceback switch at its last line, the process-wide template environment).
EDGE_READS = {"bot/cli.py", "bot/control/handle.py", "bot/core/i18n.py"}


def test_settings_are_read_once_at_an_edge_and_passed_down() -> None:
    import ast

    readers = set()
    for path in sorted((ROOT / "bot").rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        if rel == "bot/core/settings.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            func = node.func if isinstance(node, ast.Call) else None
            if getattr(func, "id", None) == "setting" or getattr(func, "attr", None) == "setting":
                readers.add(rel)
    assert readers <= EDGE_READS, f"setting() read below a command's edge: {sorted(readers - EDGE_READS)}"
    assert readers, "the scan found no reader at all: it no longer sees setting() calls"
