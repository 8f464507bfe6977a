"""The repository config: strict, defaulted, and every error names the file, line and field."""
import pathlib

import pytest

from bot.core.config import CONFIG_PATH, ConfigError, RepoConfig, load_config, read_repo_config

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_empty_file_means_safe_defaults():
    config = load_config("", "x.yaml")
    assert config == RepoConfig()
    assert config.min_permission("sweep") == "write" and config.min_permission("status") == "none"
    assert config.gpu_workflow == "gpu.yml" and config.cooldown_seconds == 0
    assert config.report.thresholds == {"tput_per_gpu": 5.0, "ttft_p99": 10.0}


def test_default_labels_follow_inferencex():
    config = RepoConfig()
    assert config.label_command("sweep-enabled").normalized() == "/sweep --scope lowest"
    assert config.label_command("full-sweep-fail-fast").normalized() == "/sweep --scope full --fail-fast"
    assert config.label_command("evals-only").evals_only
    assert config.label_command("bug") is None


def test_this_repositorys_own_config_is_valid():
    text = (ROOT / CONFIG_PATH).read_text(encoding="utf-8")
    config = load_config(text, CONFIG_PATH)
    assert config.bot_login and config.labels


def test_thresholds_accept_percent_strings_and_keep_defaults():
    config = load_config("report:\n  thresholds:\n    tput_per_gpu: 3%\n    itl_p50: 7.5\n", "x.yaml")
    assert config.report.thresholds == {"tput_per_gpu": 3.0, "ttft_p99": 10.0, "itl_p50": 7.5}


def test_overrides_are_read():
    config = load_config(
        "bot_login: recipe-bot[bot]\ngpu_workflow: bench.yaml\ncooldown_seconds: 600\n"
        "permissions: {status: read, sweep: maintain}\n"
        "trusted: {users: [alice], teams: [acme/core]}\n"
        "labels: {run-it: /e2e --fail-fast}\n", "x.yaml")
    assert config.min_permission("sweep") == "maintain"
    assert config.trusted.teams == ["acme/core"]
    assert config.label_command("run-it").name == "e2e"
    assert "sweep-enabled" not in config.labels  # a labels: section replaces the defaults


BAD = [
    ("unknown-top-key", "bot_login: x\ngpu-workflow: a.yml\n", 2, "gpu-workflow", "accepted: bot_login"),
    ("unknown-nested-key", "trusted:\n  users: [a]\n  tems: [b]\n", 3, "trusted.tems", "accepted: users, teams"),
    ("bad-login", "trusted:\n  users:\n    - ok\n    - 'bad user'\n", 4, "trusted.users.1", "GitHub login"),
    ("bad-team", "trusted:\n  teams: [core]\n", 2, "trusted.teams.0", "org/team-slug"),
    ("unknown-command", "permissions:\n  sweep: write\n  deploy: admin\n", 3, "permissions.deploy",
     "accepted: sweep"),
    ("bad-permission", "permissions:\n  sweep: writer\n", 2, "permissions.sweep", "'write'"),
    ("label-bad-command", "labels:\n  ok: /sweep\n  x: /sweepp\n", 3, "labels.x", "unknown command"),
    ("label-bad-argument", "labels:\n  x: /sweep --conc zero\n", 2, "labels.x", "not a concurrency"),
    ("label-non-gpu-command", "labels:\n  x: /status\n", 2, "labels.x", "may start /sweep or /e2e"),
    ("negative-cooldown", "cooldown_seconds: -5\n", 1, "cooldown_seconds", "greater than or equal to 0"),
    ("bad-threshold", "report:\n  thresholds:\n    tput_per_gpu: -1\n", 3, "report.thresholds.tput_per_gpu",
     "greater than 0"),
    ("workflow-path", "gpu_workflow: ../evil.yml\n", 1, "gpu_workflow", "workflow file name"),
    ("duplicate-key", "cooldown_seconds: 1\ncooldown_seconds: 2\n", 2, "cooldown_seconds", "duplicate key"),
    ("not-a-mapping", "- a\n- b\n", 1, "", "must be a mapping"),
    ("not-yaml", "labels: [\n", 2, "", "not valid YAML"),
    # Well-formed YAML that safe_load cannot build: was "unexpected error: ConstructorError".
    ("unknown-tag", "cooldown_seconds: 1\nx: !foo 1\n", 2, "", "could not determine a constructor"),
    ("bad-binary", "labels: !!binary zzz\n", 1, "", "failed to decode base64"),
]


@pytest.mark.parametrize("text, line, field, fragment", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_config_gives_one_error_with_file_line_and_field(text, line, field, fragment):
    with pytest.raises(ConfigError) as caught:
        load_config(text, ".github/recipe-bot.yaml")
    error = caught.value
    assert (error.source, error.line, error.field) == (".github/recipe-bot.yaml", line, field)
    assert fragment in str(error.message)
    assert str(error).startswith(f".github/recipe-bot.yaml:{line}: ")


class Contents:
    def __init__(self, files):
        self.files, self.asked = files, []

    def get_text(self, path, ref):
        self.asked.append((path, ref))
        return self.files.get((path, ref))


def test_config_is_read_from_the_default_branch_only():
    reader = Contents({(CONFIG_PATH, "main"): "cooldown_seconds: 9\n",
                       (CONFIG_PATH, "feature"): "cooldown_seconds: 0\n"})
    assert read_repo_config(reader, "main").cooldown_seconds == 9
    assert reader.asked == [(CONFIG_PATH, "main")]


def test_missing_config_file_means_defaults():
    assert read_repo_config(Contents({}), "main") == RepoConfig()


def test_errors_from_the_api_name_the_branch():
    with pytest.raises(ConfigError, match=r"recipe-bot\.yaml@main:1: cooldown_seconds"):
        read_repo_config(Contents({(CONFIG_PATH, "main"): "cooldown_seconds: x\n"}), "main")


@pytest.mark.parametrize("text", [
    "trusted:\n  users: [alice]\n  teams: [acme/ops]\n",
    "base: &b {users: [alice], teams: [acme/ops]}\n".replace("base", "trusted"),
    "trusted:\n  <<: {users: [alice]}\n  teams: [acme/ops]\n",  # a merge key: the data is built apart
])
def test_the_config_reads_as_yaml_reads_it_with_anchors_and_merge_keys(text):
    config = load_config(text, "x.yaml")
    assert config.trusted.users == ["alice"] and config.trusted.teams == ["acme/ops"]


def test_an_error_under_a_merge_key_names_the_line_of_the_key_holding_it():
    with pytest.raises(ConfigError) as caught:
        load_config("# settings\ntrusted:\n  <<: {users: [alice], nobody: 1}\n", "x.yaml")
    assert str(caught.value).startswith("x.yaml:2: trusted.nobody: unknown key")
