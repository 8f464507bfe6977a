"""`recipe-bot report` on the command line: its output files, its errors, its config."""
import json

import pytest
from click.testing import CliRunner

from bot.cli import main
from tests import synthetic


@pytest.fixture(autouse=True)
def outside_the_checkout(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    for name in ("GITHUB_RUN_ID", "GITHUB_REPOSITORY", "GITHUB_SERVER_URL"):
        monkeypatch.delenv(name, raising=False)


def invoke(*args, env=None):
    return CliRunner().invoke(main, ["report", *map(str, args)], env=env)


def inputs(tmp_path, scenario=None):
    return synthetic.materialize(scenario or synthetic.lost_runner(), tmp_path / "in")


def test_report_writes_comment_summary_chart_and_full_results(tmp_path):
    paths = inputs(tmp_path)
    out = tmp_path / "out"
    result = invoke("--results", paths["results"], "--jobs", paths["plan"],
                    "--baseline", paths["baseline"], "--out", out)
    assert result.exit_code == 0, result.output
    assert result.output.startswith("verdict: failure · jobs 3 · points 5")
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["verdict"] == "failure"
    assert summary["counts"]["jobs"] == {"passed": 1, "failed": 0, "lost": 2, "cancelled": 0,
                                         "skipped": 0}
    assert summary["sha"] == synthetic.HEAD_SHA and summary["pr"] == synthetic.PR
    full = json.loads((out / "full-results.json").read_text(encoding="utf-8"))
    rows = [row for recipe in full["report"]["recipes"] for row in recipe["rows"]]
    assert len(rows) == 5 and sorted({row["status"] for row in rows}) == ["lost", "passed"]
    assert [row["status"] for row in full["report"]["e2e"]] == ["lost"]
    assert (out / "comment.md").read_text(encoding="utf-8").startswith("<!-- recipe-bot:report")
    assert (out / "chart.png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize("flag, code", [([], 0), (["--fail-on-failure"], 1)],
                         ids=["verdict-in-files", "verdict-as-exit-code"])
def test_a_failure_verdict_is_an_exit_code_only_when_asked(tmp_path, flag, code):
    paths = inputs(tmp_path)
    result = invoke("--results", paths["results"], "--jobs", paths["plan"], "--out",
                    tmp_path / "out", *flag)
    assert result.exit_code == code


def test_the_job_summary_gets_the_same_markdown(tmp_path):
    paths = inputs(tmp_path, synthetic.passing_sweep())
    step = tmp_path / "step.md"
    result = invoke("--results", paths["results"], "--out", tmp_path / "out",
                    env={"GITHUB_STEP_SUMMARY": str(step)})
    assert result.exit_code == 0, result.output
    comment = (tmp_path / "out" / "comment.md").read_text(encoding="utf-8")
    assert step.read_text(encoding="utf-8") == comment.split("\n", 1)[1]


def test_the_run_url_comes_from_the_actions_variables(tmp_path):
    paths = inputs(tmp_path, synthetic.passing_sweep())
    result = invoke("--results", paths["results"], "--out", tmp_path / "out", env={
        "GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "acme/bench",
        "GITHUB_RUN_ID": "99"})
    assert result.exit_code == 0, result.output
    comment = (tmp_path / "out" / "comment.md").read_text(encoding="utf-8")
    assert "[workflow run](https://github.com/acme/bench/actions/runs/99)" in comment


def test_thresholds_come_from_the_config_file(tmp_path):
    paths = inputs(tmp_path, synthetic.regression())
    config = tmp_path / "recipe-bot.yaml"
    config.write_text("report:\n  thresholds:\n    tput_per_gpu: 12\n    ttft_p99: 15\n",
                      encoding="utf-8")
    default = invoke("--results", paths["results"], "--baseline", paths["baseline"],
                     "--out", tmp_path / "a")
    relaxed = invoke("--results", paths["results"], "--baseline", paths["baseline"],
                     "--out", tmp_path / "b", "--config", config)
    assert default.output.startswith("verdict: failure")
    assert relaxed.output.startswith("verdict: success"), relaxed.output


@pytest.mark.parametrize("config_text, expected", [
    ("report:\n  thresholds:\n    speed: 5\n",
     "report.thresholds.speed: unknown metric; accepted: tput_per_gpu"),
    ("report:\n  thresholds: [\n", "not valid YAML"),
    ("report:\n  colour: red\n", ":2: report.colour: unknown key"),
], ids=["unknown-metric", "bad-yaml", "unknown-key"])
def test_a_bad_config_is_one_error_naming_the_file(tmp_path, config_text, expected):
    paths = inputs(tmp_path)
    config = tmp_path / "recipe-bot.yaml"
    config.write_text(config_text, encoding="utf-8")
    result = invoke("--results", paths["results"], "--out", tmp_path / "out", "--config", config)
    assert result.exit_code == 1
    assert f"Error: {config}" in result.output and expected in result.output
    assert not (tmp_path / "out").exists()  # nothing half-written


@pytest.mark.parametrize("make_args, expected", [
    (lambda p, t: ["--results", t / "missing"], "the results directory does not exist"),
    (lambda p, t: ["--results", p["results"], "--jobs", t / "nope.json"],
     "nope.json: no such plan file or directory"),
    (lambda p, t: ["--results", p["results"], "--baseline", t / "nobase"],
     "nobase: the baseline directory does not exist"),
], ids=["no-results", "no-plan", "no-baseline"])
def test_missing_inputs_are_clear_errors(tmp_path, make_args, expected):
    paths = inputs(tmp_path)
    result = invoke(*make_args(paths, tmp_path), "--out", tmp_path / "out")
    assert result.exit_code != 0 and expected in result.output


def test_posting_needs_a_pr_and_a_sha(tmp_path):
    (tmp_path / "empty").mkdir()
    result = invoke("--results", tmp_path / "empty", "--out", tmp_path / "out", "--post",
                    env={"GITHUB_TOKEN": "t", "GITHUB_REPOSITORY": "acme/bench"})
    assert result.exit_code == 1
    assert "--post needs the PR number and the head SHA" in result.output


def test_every_report_flag_lands_in_one_group_of_the_typed_options():
    import pathlib

    from bot.report.cli import report_cmd
    from bot.report.options import ReportOptions

    values = {param.name: param.default for param in report_cmd.params if param.name != "help"}
    values["results_dir"], values["pr"], values["dry_run"] = pathlib.Path("r"), 7, True
    options = ReportOptions.from_cli(**values)
    assert (options.sources.results_dir, options.identity.pr, options.posting.dry_run) == (pathlib.Path("r"), 7, True)
    assert options.sources.workflow == "gpu.yml" and options.out_dir == pathlib.Path("report-out")
