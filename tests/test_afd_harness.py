"""A suite over the repository's own pytest harness (an afd-plugin-shaped fixture of our own): the verdict
comes from its exit status and JUnit report, case by case, each failure naming its node id."""
import json

import pytest

from afd_fixture import NODE, git, make_repo, plan_jobs, run_job
from bot.inferencex.catalog import load_catalog


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    return make_repo(tmp_path_factory.mktemp("fixture"))


@pytest.fixture(scope="module")
def job_file(repo, tmp_path_factory):
    return plan_jobs(repo, tmp_path_factory.mktemp("jobs"))["fixture-e2e"]


def test_the_recipe_folder_is_the_one_the_repository_config_names(repo):
    catalog = load_catalog(repo)
    assert catalog.names() == ["fixture-e2e", "fixture-manual"]
    assert catalog.entries["fixture-e2e"].path == "recipe/fixture-e2e.yaml"


def test_each_case_runs_its_node_id_with_the_harness_own_command(job_file):
    job = json.loads(job_file.read_text(encoding="utf-8"))
    assert [c["command"]["nodes"] for c in job["cases"]] == [[NODE.format("baseline-tiny")],
                                                             [NODE.format("plugin-tiny")]]
    assert job["cases"][0]["command"]["argv"] == ["python", "-m", "pytest", "-q"]
    assert job["cases"][0]["servers"] == []


def test_the_suite_passes_when_the_harness_passes(job_file, repo, tmp_path):
    result = run_job(job_file, repo, tmp_path / "out")
    assert result.status == "passed", result.reason
    for case in result.cases:
        assert case.harness.exit_code == 0 and case.harness.passed == 1
        assert any(f.endswith(f"results_{case.name}.json") for f in case.harness.result_files)
        assert case.cleanup.ports == [18431] and case.cleanup.clean
    assert result.setup[0]["exit_code"] == 0
    assert result.software["plugin"] == "pytest" and result.software["plugin_version"]
    assert "driver" in result.software and "torch" in result.software  # recorded, None where absent


# The limit that cuts a hanging node short: long enough for the nodes before it to start and pass on
# a busy 2-core machine (8 s was not, under load), so only the hanging node is what runs out of time.
HANG_LIMIT_S = 25


@pytest.mark.parametrize("mode, says", [
    ("fail", "failed:"), ("skip", "was skipped"), ("error", "errored:"), ("hang", "did not finish"),
])
def test_a_node_that_fails_skips_errors_or_is_cut_short_fails_by_its_node_id(job_file, repo, tmp_path, mode, says):
    result = run_job(job_file, repo, tmp_path / "out", timeout_s=HANG_LIMIT_S if mode == "hang" else None,
                     FIXTURE_MODE_PLUGIN_TINY=mode)
    baseline, plugin = result.cases
    assert result.status == "failed"
    assert baseline.status == "passed"
    assert plugin.status == "failed" and NODE.format("plugin-tiny") in str(plugin.reason) and says in str(plugin.reason)
    assert plugin.cleanup.groups_gone  # the cut-short harness's group is gone too


@pytest.mark.parametrize("devices, says", [
    ("0,0", "must list each device once"), ("0,1,2", "exactly 2 device ids"), ("0", "exactly 2 device ids"),
])
def test_a_wrong_device_list_fails_each_node_before_it_starts(job_file, repo, tmp_path, devices, says):
    result = run_job(job_file, repo, tmp_path / "out", FIXTURE_E2E_DEVICES=devices)
    assert [c.status for c in result.cases] == ["failed", "failed"]
    assert NODE.format("baseline-tiny") in str(result.cases[0].reason) and says in str(result.cases[0].reason)
    assert result.cases[0].harness.exit_code is None  # nothing was started


def test_the_harness_own_refusal_fails_the_node_when_recipe_bot_does_not_check(repo, tmp_path):
    job_file = plan_jobs(repo, tmp_path / "jobs")["fixture-e2e"]
    job = json.loads(job_file.read_text(encoding="utf-8"))
    for case in job["cases"]:
        case["command"]["opt_in"] = None
    job_file.write_text(json.dumps(job), encoding="utf-8")
    result = run_job(job_file, repo, tmp_path / "out", FIXTURE_E2E_DEVICES="0,0")
    assert "FIXTURE_E2E_DEVICES must contain exactly 2 unique IDs" in str(result.cases[0].reason)
    assert NODE.format("baseline-tiny") in str(result.cases[0].reason)


@pytest.mark.parametrize("path", ["tests/e2e/runner.py", "fixture_plugin/__init__.py"])
def test_a_change_to_the_harness_or_the_plugin_changes_the_fingerprint(tmp_path, path):
    repo = make_repo(tmp_path)
    before = load_catalog(repo, "HEAD").entries["fixture-e2e"].fingerprint
    (repo / path).write_text((repo / path).read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")
    git(repo, "commit", "-qam", "change")
    after = load_catalog(repo, "HEAD").entries["fixture-e2e"].fingerprint
    assert before != after
    from bot.control.reuse import differences  # /reuse refuses a run of other code

    assert [d.recipe for d in differences(["fixture-e2e"], {"fixture-e2e": after}, {"fixture-e2e": before})] == [
        "fixture-e2e"]


def test_a_touched_manual_suite_is_never_planned_for_the_gate(tmp_path):
    repo = make_repo(tmp_path)
    base = git(repo, "rev-parse", "HEAD")
    test = repo / "tests/e2e/test_fixture.py"
    test.write_text(test.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")
    git(repo, "commit", "-qam", "touch the harness")
    jobs = plan_jobs(repo, tmp_path / "jobs", "--base", base, "--head", "HEAD")
    assert list(jobs) == ["fixture-e2e"]  # the manual suite uses the same file and is left out
    named = plan_jobs(repo, tmp_path / "named", "--base", base, "--head", "HEAD", "--recipe", "fixture-manual")
    assert list(named) == ["fixture-manual"]


def test_compare_plans_both_arms_in_one_job_with_the_same_points(repo, tmp_path):
    jobs = plan_jobs(repo, tmp_path / "jobs", "--compare")
    (job_file,) = jobs.values()
    job = json.loads(job_file.read_text(encoding="utf-8"))
    assert job["compare_arms"] == ["native", "plugin"]
    native, plugin = job["cases"]
    strip = [{k: v for k, v in p.items() if k != "point_id"} for p in native["points"]]
    assert strip == [{k: v for k, v in p.items() if k != "point_id"} for p in plugin["points"]]
    assert {p["repeats"] for p in native["points"]} == {2}


def test_cases_come_from_the_harness_own_collection(repo, tmp_path):
    import subprocess
    import sys

    import yaml
    from click.testing import CliRunner

    from bot.cli import main

    collected = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                                "tests/e2e/test_fixture.py"], cwd=repo, capture_output=True, text=True, check=True)
    result = CliRunner().invoke(main, ["e2e-cases", "-"], input=collected.stdout)
    assert result.exit_code == 0, result.output
    recipe = yaml.safe_load((repo / "recipe/fixture-e2e.yaml").read_text(encoding="utf-8"))
    assert yaml.safe_load(result.output)["cases"] == recipe["cases"]
    empty = CliRunner().invoke(main, ["e2e-cases", "-"], input="no tests ran\n")
    assert empty.exit_code != 0 and "no pytest node ids" in empty.output


def test_a_run_stopped_after_its_report_was_written_still_fails_by_node_id():
    from bot.core.results import NodeOutcome
    from bot.runner.junit import verdict

    node = NODE.format("plugin-tiny")
    passed = [NodeOutcome(node_id=node, outcome="passed")]
    assert list(map(str, verdict(None, passed, 1, "job timeout of 1 s reached", [node]))) == [
        f"node {node}: the harness was stopped before it exited (job timeout of 1 s reached)"]
    assert list(map(str, verdict(3, passed, 1, None, [node]))) == [f"node {node}: the harness exited with code 3"]
    assert verdict(0, passed, 1, None, [node]) == []


def test_a_manual_suite_run_on_command_says_so_on_the_report(repo, tmp_path):
    from bot.report.arms import section

    job_file = plan_jobs(repo, tmp_path / "jobs", "--recipe", "fixture-manual")["fixture-manual"]
    assert json.loads(job_file.read_text(encoding="utf-8"))["manual"] == "needs more devices than the PR gate allows"
    result = run_job(job_file, repo, tmp_path / "out")
    assert result.status == "passed" and result.cases[0].harness.passed == 2  # a module node: both tests
    text = section([result])
    assert "never required by the gate" in text and "从不属于门禁必需项" in text
    assert "`needs more devices than the PR gate allows`" in text


@pytest.mark.parametrize("field, value, says", [
    ("cwd", "../elsewhere", "must be a path inside the repository"),
    ("keep", ["/etc/*"], "must be a path inside the repository"),
    ("ports", [70000], "port 70000 is not between 1 and 65535"),
    ("setup", [[]], "every setup step is a non-empty argv list"),
])
def test_a_bad_harness_section_is_one_clear_error_naming_the_file(tmp_path, field, value, says):
    import yaml

    from bot.recipes.errors import RecipeError

    repo = make_repo(tmp_path)
    path = repo / "recipe/fixture-e2e.yaml"
    recipe = yaml.safe_load(path.read_text(encoding="utf-8"))
    recipe["harness"][field] = value
    path.write_text(yaml.safe_dump(recipe), encoding="utf-8")
    with pytest.raises(RecipeError) as caught:
        load_catalog(repo)
    assert "recipe/fixture-e2e.yaml" in str(caught.value) and says in str(caught.value)


def test_a_harness_suite_case_without_a_node_is_refused(tmp_path):
    from bot.recipes.errors import RecipeError

    repo = make_repo(tmp_path)
    path = repo / "recipe/fixture-e2e.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace(
        "    node: tests/e2e/test_fixture.py::test_fixture[plugin-tiny]\n", "    servers: [{name: server}]\n"),
        encoding="utf-8")
    with pytest.raises(RecipeError, match="a suite with a harness runs node ids"):
        load_catalog(repo)


def test_a_job_out_of_time_before_the_harness_starts_fails_by_node_id(job_file, repo, tmp_path):
    result = run_job(job_file, repo, tmp_path / "out", timeout_s=0.001)
    assert result.status == "failed"
    first = result.cases[0]
    assert first.status == "failed" and f"node {NODE.format('baseline-tiny')} not started" in str(first.reason)


def test_a_failing_setup_step_runs_no_case_and_says_which_step(repo, tmp_path):
    job_file = plan_jobs(repo, tmp_path / "jobs")["fixture-e2e"]
    job = json.loads(job_file.read_text(encoding="utf-8"))
    for case in job["cases"]:
        case["command"]["setup"] = [["python", "-c", "raise SystemExit(3)"]]
    job_file.write_text(json.dumps(job), encoding="utf-8")
    result = run_job(job_file, repo, tmp_path / "out")
    assert result.status == "failed" and [c.status for c in result.cases] == ["skipped", "skipped"]
    assert "setup step 1 (python -c raise SystemExit(3)) exited with code 3" in str(result.cases[0].reason)
    assert result.setup[0]["exit_code"] == 3 and (tmp_path / "out" / result.setup[0]["log"]).is_file()


PLUGIN_NODE = NODE.format("plugin-tiny")


@pytest.mark.parametrize("env, timeout_s, says", [
    ({"FIXTURE_MODE_PLUGIN_TINY": "fail"}, None, f"node {PLUGIN_NODE} failed"),
    ({"FIXTURE_MODE_PLUGIN_TINY": "skip"}, None, f"node {PLUGIN_NODE} was skipped"),
    ({"FIXTURE_MODE_PLUGIN_TINY": "error"}, None, f"node {PLUGIN_NODE} errored"),
    ({"FIXTURE_MODE_PLUGIN_TINY": "hang"}, HANG_LIMIT_S, f"node {PLUGIN_NODE} did not finish"),
    ({"FIXTURE_E2E_DEVICES": "0,0"}, None, "FIXTURE_E2E_DEVICES must list each device once"),
], ids=["node-fails", "node-skipped", "node-errors", "cut-short", "wrong-devices"])
def test_e2e_through_the_sandbox_fails_the_check_naming_the_node(tmp_path, env, timeout_s, says):
    import os

    from rich.console import Console

    from afd_fixture import sandbox_files
    from bot.demo.loop import run_demo

    main, feature = sandbox_files()
    if timeout_s is not None:  # the suite's own time limit cuts the hanging harness short
        main["recipe/fixture-e2e.yaml"] += f"timeout_s: {timeout_s}\n"
    outcome = run_demo(tmp_path / "out", tmp_path / "work", Console(file=open(os.devnull, "w")), command="/e2e",
                       engine={"FIXTURE_E2E_DEVICES": "0,1", **env}, files=(main, feature))
    assert outcome.check["conclusion"] == "failure"
    assert says in outcome.comment and says in outcome.check["summary"]
    jobs = sorted(p.stem for p in (tmp_path / "out" / "jobs").glob("*.json"))
    assert jobs == ["fixture-e2e"]  # the touched manual suite is not part of /e2e


def test_a_failing_manual_suite_run_on_command_does_not_fail_the_gate(tmp_path):
    import os

    from rich.console import Console

    from afd_fixture import sandbox_files
    from bot.demo.loop import run_demo

    outcome = run_demo(tmp_path / "out", tmp_path / "work", Console(file=open(os.devnull, "w")),
                       command="/e2e fixture-manual", engine={"FIXTURE_E2E_DEVICES": "0,1",
                                                              "FIXTURE_MODE_PLUGIN_TINY": "fail"},
                       files=sandbox_files())
    assert "❌ failure" in outcome.comment and f"node {PLUGIN_NODE} failed" in outcome.comment  # its own report
    assert "never required by the gate" in outcome.comment
    # The gate requires what gate.required (/sweep and /e2e) plans for the PR's touch: fixture-e2e's cases,
    # never the manual suite, and the manual suite's failure is not the gate's.
    check = outcome.check
    assert check["name"] == "recipe-bot / benchmarks" and (check["status"], check["conclusion"]) == ("in_progress", None)
    gate_section = check["summary"].split("---")[0]
    assert "Required: **2**" in gate_section and "`fixture-e2e` `case:plugin-tiny`" in gate_section
    assert "fixture-manual" not in gate_section
