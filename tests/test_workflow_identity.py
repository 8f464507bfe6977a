"""The bot's identity in the shipped workflows: every job that writes to GitHub can write as the App, and only there."""
import pathlib

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
APP_ACTION = "actions/create-github-app-token@"
TOKEN = "${{ steps.app.outputs.token || github.token }}"


def jobs(name):
    return yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))["jobs"]


def writing_jobs():
    for name in ("recipe-bot.yml", "gpu.yml", "gpu-run.yml"):
        for job_name, job in jobs(name).items():
            perms = job.get("permissions") or {}
            if any(level == "write" for level in perms.values()):
                yield pytest.param(name, job_name, job, id=f"{name}:{job_name}")


def app_step(job):
    found = [s for s in job.get("steps", []) if str(s.get("uses", "")).startswith(APP_ACTION)]
    assert len(found) == 1, "one App-token step per writing job"
    return found[0]


@pytest.mark.parametrize(("name", "job_name", "job"), list(writing_jobs()))
def test_a_writing_job_mints_the_apps_token_with_the_jobs_own_least_privilege(name, job_name, job):
    step = app_step(job)
    assert step["id"] == "app" and step["if"] == "vars.RECIPE_BOT_APP_ID != ''"
    granted = {k.removeprefix("permission-"): v for k, v in step["with"].items() if k.startswith("permission-")}
    assert granted == job["permissions"], "the App token may do what the job's own token may do, and no more"
    assert step["with"]["private-key"] == "${{ secrets.RECIPE_BOT_APP_KEY }}"


@pytest.mark.parametrize(("name", "job_name", "job"), list(writing_jobs()))
def test_a_writing_job_takes_the_apps_key_only_from_the_default_branch_environment(name, job_name, job):
    assert "recipe-bot" in str(job.get("environment", "")), "the key is an environment secret, not a repository one"
    steps = job.get("steps", [])
    assert steps[0] is app_step(job), "the token is minted before anything else runs"
    for step in steps:
        token = (step.get("env") or {}).get("GITHUB_TOKEN")
        assert token in (None, TOKEN), f"{step.get('name')}: writes as the App when it is configured"


def test_a_review_is_never_handled_with_the_apps_key():
    # GitHub runs a review's workflow from the PR's merge ref: that job must not reach the environment.
    handle = jobs("recipe-bot.yml")["handle"]
    assert handle["environment"] == "${{ github.event_name != 'pull_request_review' && 'recipe-bot' || '' }}"
    assert "!(github.event_name == 'pull_request_review' && vars.RECIPE_BOT_APP_ID != '')" in handle["if"]


def test_no_job_without_writes_sees_the_apps_key():
    for name in ("recipe-bot.yml", "gpu.yml", "gpu-run.yml"):
        text = (WORKFLOWS / name).read_text(encoding="utf-8")
        for job_name, job in jobs(name).items():
            perms = job.get("permissions") or {}
            if not any(level == "write" for level in perms.values()):
                assert "environment" not in job and "RECIPE_BOT_APP_KEY" not in yaml.safe_dump(job), (name, job_name)
        assert text.count("secrets.RECIPE_BOT_APP_KEY") == sum(1 for _ in writing_jobs_of(name))


def writing_jobs_of(name):
    return [p for p in writing_jobs() if p.values[0] == name]


@pytest.mark.parametrize(("bot_login", "says_so"), [("github-actions[bot]", True), ("recipe-bot[bot]", False)])
def test_the_gate_says_plainly_that_a_github_token_check_can_be_forged(bot_login, says_so):
    from bot.core import i18n
    from bot.report import gate
    from bot.report.gate_runs import render

    verdict = gate.GateVerdict("failure", 1, 0, (), (("tiny", "tp1-c1"),), (), ())
    _, _, section = render(verdict, sha="a" * 40, bot_login=bot_login)
    english, chinese = section.split(i18n.SEPARATOR)
    assert ("any write collaborator's branch workflow can post this check" in english) is says_so
    assert ("任何有写权限的协作者都能在自己分支的工作流中发布此检查" in chinese) is says_so
