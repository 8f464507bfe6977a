"""The comment grammar: line-anchored exact verbs, ignored quotes and code, argparse-style arguments."""
import pathlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.core import i18n
from bot.core import commands
from bot.core.commands import parse_comment

ROOT = pathlib.Path(__file__).resolve().parents[1]


def names(body):
    return [c.normalized() for c in parse_comment(body).commands]


@pytest.mark.parametrize("body, expected", [
    ("/sweep", ["/sweep"]),
    ("/sweep   ", ["/sweep"]),
    ("  /sweep", ["/sweep"]),
    ("/sweep\r\n/status", ["/sweep", "/status"]),
    ("thanks!\n/sweep llama3-* --conc 64,4,4\nmore prose", ["/sweep llama3-* --conc 4,64"]),
    ("/sweep --scope full --fail-fast", ["/sweep --scope full --fail-fast"]),
    ("/sweep --evals-only", ["/sweep --evals-only"]),
    ("/sweep a --conc 8 b", ["/sweep a b --conc 8"]),
    ("/e2e afd-2p2d --fail-fast", ["/e2e afd-2p2d --fail-fast"]),
    ("/rerun failed", ["/rerun failed"]),
    ("/rerun", ["/rerun"]),
    ("/cancel", ["/cancel"]),
    ("/ok-to-test 3f9c2ab", ["/ok-to-test 3f9c2ab"]),
    ("/status", ["/status"]),
    ("/help", ["/help"]),
    ("/help /sweep", ["/help sweep"]),
    ("/sweep --help", ["/help sweep"]),
    ("```\ncode\n```\n/sweep", ["/sweep"]),
    ("```/x``` inline\n/sweep", ["/sweep"]),
], ids=[
    "bare", "trailing-space", "indent-up-to-three", "crlf-two-commands", "amid-prose",
    "scope-and-fail-fast", "evals-only", "options-between-globs", "e2e-case", "rerun-failed",
    "rerun-all", "cancel", "ok-to-test", "status", "help", "help-topic-with-slash", "dash-dash-help",
    "after-a-closed-fence", "one-line-backticks-are-not-a-fence",
])
def test_commands_are_recognised(body, expected):
    assert names(body) == expected
    assert parse_comment(body).errors == ()


@pytest.mark.parametrize("body", [
    "> /sweep",
    ">/sweep",
    "  > /sweep",
    "```\n/sweep\n```",
    "~~~\n/sweep\n~~~",
    "````md\n```\n/sweep\n```\n````",
    "```\nunclosed fence\n/sweep",
    "`/sweep`",
    "please /sweep",
    "Could someone /sweep this?",
    "    /sweep",
    "\t/sweep",
    "<!-- /sweep -->",
    "<!--\n/sweep\n-->",
    "/usr/bin/vllm crashed",
    "/cc @alice",
    "",
    "/",
    "//sweep",
], ids=[
    "quoted", "quoted-no-space", "indented-quote", "backtick-fence", "tilde-fence", "nested-fence",
    "unclosed-fence-hides-the-rest", "inline-code", "prose-please", "prose-question",
    "indented-code-block", "tab-indented", "html-comment", "multiline-html-comment", "a-path",
    "another-bots-verb", "empty", "lone-slash", "double-slash",
])
def test_prose_quotes_and_code_never_fire(body):
    parsed = parse_comment(body)
    assert parsed.commands == ()
    assert parsed.errors == ()


@pytest.mark.parametrize("body, suggestion", [
    ("/sweepall", "sweep"),
    ("/Sweep", "sweep"),
    ("/swep", "sweep"),
    ("/rerun-failed", "rerun"),
    ("/ok-to-tset abc1234", "ok-to-test"),
], ids=["sweepall", "capitalised", "typo", "dashed", "transposed"])
def test_near_misses_start_nothing_and_get_a_suggestion(body, suggestion):
    parsed = parse_comment(body)
    assert parsed.commands == ()
    [error] = parsed.errors
    assert error.usage is None and error.suggestion == suggestion


@pytest.mark.parametrize("body, fragment", [
    ("/sweep --conc x", "not a concurrency"),
    ("/sweep --conc 0", "not a concurrency"),
    ("/sweep --conc ４", "not a concurrency"),
    ("/sweep --conc", "expected one argument"),
    ("/sweep --scope widest", "invalid choice"),
    ("/sweep --conc 4 --scope full", "not allowed with"),
    ("/sweep --fail", "unrecognized arguments"),
    ("/sweep `rm -rf /`", "may use only"),
    ("/sweep $(id)", "may use only"),
    ("/sweep 'unclosed", "no closing quotation"),
    ("/rerun everything", "invalid choice"),
    ("/ok-to-test", "required"),
    ("/ok-to-test 12ab", "not a commit SHA prefix"),
    ("/ok-to-test ABCDEF1", "not a commit SHA prefix"),
    ("/cancel now", "unrecognized arguments"),
    ("/help frobnicate", "no command named"),
    ("/sweep " + " ".join(["x"] * 65), "at most 64 arguments"),
], ids=[
    "conc-not-a-number", "conc-zero", "conc-fullwidth-digit", "conc-missing-value", "scope-unknown",
    "conc-and-scope", "abbreviated-option", "backticks", "shell-substitution", "unbalanced-quote",
    "rerun-unknown", "ok-to-test-no-sha", "ok-to-test-short", "ok-to-test-uppercase",
    "cancel-extra", "help-unknown-topic", "too-many-arguments",
])
def test_malformed_arguments_give_a_usage_error(body, fragment):
    parsed = parse_comment(body)
    assert parsed.commands == ()
    [error] = parsed.errors
    assert fragment in str(error.message)
    assert error.usage == commands.REGISTRY[error.name].usage


def test_several_commands_per_comment_keep_their_lines_and_run_approvals_first():
    parsed = parse_comment("/status\n/sweep\n/ok-to-test abcdef1\n/cancel")
    assert [c.line for c in parsed.commands] == [1, 2, 3, 4]
    assert [c.name for c in commands.ordered(parsed.commands)] == ["ok-to-test", "cancel", "sweep", "status"]


def test_a_comment_holds_at_most_ten_commands():
    parsed = parse_comment("\n".join(["/status"] * 12))
    assert len(parsed.commands) == commands.MAX_COMMANDS
    assert "at most" in str(parsed.errors[0].message)


def test_normalized_command_parses_back_to_itself():
    command = parse_comment("/sweep b* a --fail-fast --conc 16,4").commands[0]
    again = parse_comment(command.normalized()).commands[0]
    assert again.normalized() == command.normalized() == "/sweep b* a --conc 4,16 --fail-fast"


@pytest.mark.parametrize("line, error", [
    ("/sweep --scope lowest", None),
    ("/status\n/sweep", "exactly one"),
    ("/sweepp", "unknown command"),
    ("prose", "exactly one"),
], ids=["one-command", "two-commands", "unknown", "no-command"])
def test_parse_single_is_strict_for_configured_lines(line, error):
    if error is None:
        assert commands.parse_single(line).scope == "lowest"
    else:
        with pytest.raises(commands.UsageError, match=error):
            commands.parse_single(line)


def test_help_lists_every_registered_command_in_both_languages():
    rows = commands.help_rows({"status": "read"})
    text = i18n.render_bilingual("control/help", rows=rows, topic=None, labels=[("sweep-enabled", "/sweep")])
    english, chinese = text.split(i18n.SEPARATOR)
    for spec in commands.SPECS:
        assert spec.usage in english and spec.usage in chinese
        assert spec.summary_en in english and spec.summary.render("zh") in chinese
        assert spec.examples[0] in english
    assert "`read` permission" in english  # the repository's override, not the default


def test_help_for_one_topic_shows_only_that_command():
    text = i18n.render("control/help", "en", rows=commands.help_rows(), topic="cancel", labels=[])
    assert "/cancel" in text and "/sweep [" not in text


def test_docs_commands_md_is_generated_from_the_registry():
    from bot.control.help_docs import render_docs
    path = ROOT / "docs" / "commands.md"
    assert path.read_text(encoding="utf-8") == render_docs(), \
        "docs/commands.md is stale: run `recipe-bot ci commands-doc > docs/commands.md`"


# A comment body can be anything a user types; the parser must return, never raise. The pieces
# below are the grammar's own tokens and the characters that break naive parsers.
_TOKENS = [
    "/sweep", "/e2e", "/rerun", "/cancel", "/ok-to-test", "/status", "/help", "/sweepall", "/", "--conc",
    "--scope", "--fail-fast", "--evals-only", "failed", "lowest", "full", "4,8", ",", "'", '"', "\\",
    "`", "```", "~~~", ">", "<!--", "-->", "\n", "\r\n", "\t", " ", "   ", "-h", "*", "[", "]", "\x00",
    "é", "中", "\u202e", "\ufeff", "0", "-1", "abcdef1", "a" * 41, "x",
]
_body = st.one_of(
    st.text(max_size=80),
    st.lists(st.sampled_from(_TOKENS), max_size=24).map("".join),
)


@settings(max_examples=10_000, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_body)
def test_ten_thousand_generated_bodies_never_crash_the_parser(body):
    parsed = parse_comment(body)
    for command in parsed.commands:
        assert command.name in commands.REGISTRY
        assert commands.parse_comment(command.normalized()).commands  # what we dispatch parses back
    for error in parsed.errors:
        assert error.message


# The parser answers a plain one-line command, and a body with no "/" or entity, without the CommonMark
# parse (markdown_it is a tenth of `recipe-bot handle`'s start-up): its lines must be the parse's.
_plain_body = st.one_of(
    st.text(alphabet="/aZ09 .:=,@+-\n", max_size=16).map(lambda s: "/" + s),
    st.text(alphabet="ab .,:\n-+=#>*_`\\&;", max_size=16),
    st.sampled_from(["/sweep", "/sweep\n", "/sweep tiny-cpu --osl=64", "/sweep  a,b", "/sweep tiny-cpu ",
                     "&#47;sweep", "\\/sweep", "LGTM", "", "\n/sweep", " /sweep", "/sweep\n/e2e"]),
)


@settings(max_examples=3_000, deadline=None, derandomize=True, database=None)
@given(_plain_body)
def test_a_body_answered_without_the_markdown_parse_reads_as_the_parse_reads_it(body):
    def command_lines(lines):
        return [(number, line) for number, line in lines if commands._COMMAND_LINE.match(line)]

    assert command_lines(commands._lines(body)) == command_lines(commands.visible_lines(body))


def test_inferencex_flags_parse_normalize_and_reach_the_planner():
    from bot.core.commands import parse_single

    command = parse_single("/sweep --scope full --all-evals --agentx-fast --no-canary")
    assert command.normalized() == "/sweep --scope full --all-evals --agentx-fast --no-canary"
    filters = command.plan_filters()
    assert (filters["all_evals"], filters["agentx_fast"], filters["canary"]) == (True, True, False)


def test_inferencex_label_names_are_in_the_default_label_map():
    from bot.core.config import RepoConfig

    config = RepoConfig()
    assert config.label_command("full-sweep-enabled").normalized() == "/sweep --scope full"
    assert config.label_command("full-sweep-fail-fast-no-canary").normalized() == \
        "/sweep --scope full --no-canary --fail-fast"
    assert config.label_command("non-canary-full-sweep-enabled").plan_filters()["canary"] is False
    assert config.label_command("all-evals").plan_filters()["all_evals"] is True
    assert config.label_command("agentx-fast").plan_filters()["agentx_fast"] is True


def test_several_labels_on_a_pr_combine_into_one_run():
    from bot.core.config import RepoConfig
    from bot.core.commands import combine_label_commands

    config = RepoConfig()
    labels = ["sweep-enabled", "full-sweep-fail-fast", "all-evals", "agentx-fast"]
    ((label, command),) = combine_label_commands([(name, config.label_command(name)) for name in labels])
    assert label == "sweep-enabled+full-sweep-fail-fast+all-evals+agentx-fast"
    assert command.normalized() == "/sweep --scope full --all-evals --agentx-fast --fail-fast"


def test_one_label_and_an_e2e_label_stay_as_they_are():
    from bot.core.commands import combine_label_commands, parse_single

    triggers = [("sweep-enabled", parse_single("/sweep --scope lowest")), ("e2e", parse_single("/e2e"))]
    assert combine_label_commands(triggers) == triggers


def test_a_new_label_runs_together_with_the_labels_already_on_the_pr():
    from bot.core.config import RepoConfig
    from bot.core.commands import label_triggers

    config = RepoConfig()
    ((label, command),) = label_triggers(config, ["full-sweep-enabled", "bug"], "all-evals")
    assert label == "full-sweep-enabled+all-evals" and command.normalized() == "/sweep --scope full --all-evals"
    assert label_triggers(config, ["full-sweep-enabled"], "bug") == []  # an unmapped new label starts nothing


def test_help_says_who_may_approve_runner_labels_by_code_ownership_not_by_permission_alone():
    rows = commands.help_rows()
    for lang in ("en", "zh"):
        text = i18n.render("control/help", lang, rows=rows, topic="approve-runners", labels=[])
        who = next(line for line in text.splitlines() if "CODEOWNERS" in line)
        assert "configs/runners.yaml" in who
        assert "trusted list" not in text and "信任名单" not in text  # the trusted list never stands in for an owner
    sweep = i18n.render("control/help", "en", rows=rows, topic="sweep", labels=[])
    assert "`write` permission or the trusted list" in sweep  # a plain permission row keeps its wording
