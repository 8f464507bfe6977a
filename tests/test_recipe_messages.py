"""A recipe's or config's problem is a catalogue message: its English as before, its 简体中文 from the catalogue,
kept as its id and parameters in the plan's JSON and read back from there."""
from __future__ import annotations

import json
import re

import pytest
from pydantic import BaseModel, Field, ValidationError

from bot.core import i18n
from bot.core.messages import Message, msg
from bot.core.validation import error_message
from bot.inferencex.catalog import load_catalog
from bot.plan.render import errors_markdown
from bot.recipes import RecipeError
from bot.recipes.errors import RecipeProblem
from test_recipes import BROKEN, GOOD, _repo_with

CJK = re.compile(r"[\u4e00-\u9fff]")


def _problem(tmp_path, old: str, new: str) -> RecipeProblem:
    with pytest.raises(RecipeError) as caught:
        load_catalog(_repo_with(tmp_path, GOOD.replace(old, new)), inferencex=False)
    (problem,) = caught.value.problems
    return problem


@pytest.mark.parametrize("old,new,words", [(b[1], b[2], b[6]) for b in BROKEN], ids=[b[0] for b in BROKEN])
def test_each_broken_recipe_reads_in_chinese_without_its_english_words(tmp_path, old, new, words):
    problem = _problem(tmp_path, old, new)
    assert isinstance(problem.message, Message)
    chinese = problem.as_message().render("zh")
    assert CJK.search(chinese), chinese
    assert "_" in words or words not in chinese, chinese  # a field name stays as it is typed
    assert problem.file in chinese


def test_a_schema_validators_refusal_keeps_its_english_and_has_its_chinese(tmp_path):
    problem = _problem(tmp_path, "  num_prompts: 8\n", "  num_prompts: 8\n  prompts_per_concurrency: 2\n")
    assert str(problem) == ("recipes/broken.yaml:8: field `workload`: give exactly one of num_prompts and "
                            "prompts_per_concurrency")
    assert problem.as_message().render("zh") == ("recipes/broken.yaml:8：字段 `workload`："
                                                 "num_prompts 和 prompts_per_concurrency 必须且只能给出一个")


def test_a_suffixed_loader_message_has_its_value_in_both_languages(tmp_path):
    problem = _problem(tmp_path, "  isl: 128\n", "  isl: lots\n")
    assert str(problem.message) == "expected an integer, got 'lots'"
    assert problem.message.render("zh") == "应为整数，实际为 'lots'"


class _Bounded(BaseModel):
    low: int = Field(default=1, ge=1)
    items: list[int] = Field(default=[1], min_length=1)
    pair: tuple[int, int] = (1, 2)


@pytest.mark.parametrize("data,english,chinese", [
    ({"low": 0}, "Input should be greater than or equal to 1", "应大于或等于 1"),
    ({"items": []}, "List should have at least 1 item after validation, not 0", "列表至少应有 1 项，实际为 0 项"),
    ({"pair": [1, 2, 3]}, "Tuple should have at most 2 items after validation, not 3", None),
], ids=["ge", "list-too-short", "no-catalogue-form"])
def test_pydantics_own_wording_is_its_english_byte_for_byte(data, english, chinese):
    with pytest.raises(ValidationError) as caught:
        _Bounded.model_validate(data)
    message = error_message(caught.value.errors()[0])
    assert str(message) == english
    if chinese is None:  # a wording the catalogue has no form of stays pydantic's text, never a wrong sentence
        assert message == english
    else:
        assert isinstance(message, Message) and message.render("zh") == chinese


def test_a_problem_kept_as_json_data_reads_back_in_both_languages():
    problem = RecipeProblem("recipes/a.yaml", 3, "kind", msg("%(value)s is not accepted", value="'swep'"),
                            ("e2e", "sweep"))
    back = RecipeProblem.from_dict(json.loads(json.dumps(problem.as_dict())))
    assert back == problem
    assert str(back) == "recipes/a.yaml:3: field `kind`: 'swep' is not accepted (accepted: e2e, sweep)"
    assert back.as_message().render("zh") == "recipes/a.yaml:3：字段 `kind`：不接受 'swep'（可用的有：e2e、sweep）"


@pytest.mark.parametrize("message", [
    "not a list",  # an older plan.json: English text
    {"id": "no such message %(x)s", "params": {"x": 1}},  # not the catalogue's: shown as the data it is
], ids=["older-text", "unknown-id"])
def test_a_problem_read_from_an_older_or_foreign_file_is_shown_as_text(message):
    problem = RecipeProblem.from_dict({"file": "recipes/a.yaml", "line": 1, "field": None, "message": message})
    assert isinstance(problem.message, str) and problem.file in str(problem)


def test_the_recipe_error_markdown_has_no_english_message_in_its_chinese_half(tmp_path):
    problem = _problem(tmp_path, "  dataset: random\n", "  dataset: sharegpt\n")
    english, chinese = errors_markdown([problem]).split(i18n.SEPARATOR)
    assert "'sharegpt' is not accepted" in english
    assert "不接受 'sharegpt'" in chinese and "is not accepted" not in chinese


def test_a_failed_plan_jobs_json_errors_read_back_as_messages(tmp_path):
    from bot.control.gate_events import plan_problems

    problem = _problem(tmp_path, "kind: sweep\n", "kind: sweep\nrunner: h100\n")
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"errors": [problem.as_dict()]}), encoding="utf-8")
    (shown,) = plan_problems(path)
    assert str(shown) == str(problem)
    assert "未知的 runner 标签 'h100'" in shown.render("zh")


def test_a_plan_errors_message_kept_as_data_reads_back_as_a_message(tmp_path):
    from bot.control.gate_events import plan_problems
    from bot.core.messages import to_data

    refusal = msg("%(message)s (accepted: %(accepted)s)", message=msg("unknown key"), accepted="tiny-cpu")
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({"errors": [{"message": to_data(refusal), "accepted": ["tiny-cpu"]}]}), encoding="utf-8")
    assert plan_problems(path) == [refusal]


def test_a_packing_verdict_reads_in_chinese_and_is_kept_as_data_in_the_plan():
    from bot.core.messages import from_data
    from bot.inferencex.packing import verdict
    from bot.plan import PlanFilters
    from bot.plan.model import InferenceXPlan, Plan
    from bot.plan.render import dump_json, plan_document

    found = verdict([{"conc": 4}, {"conc": 8}], {}, {})
    assert str(found.reason).startswith("no benchmark script found for this config")
    assert found.reason.render("zh").startswith("找不到这个配置的基准测试脚本")
    packing = [{"config_key": "k", "runner_label": "cpu", "rows": 2, "packs": False, "why": found.reason}]
    plan = Plan(base=None, head="h", filters=PlanFilters(), inferencex=InferenceXPlan(packing=packing))
    (kept,) = json.loads(dump_json(plan_document(plan)))["inferencex"]["packing"]
    assert from_data(kept["why"]) == found.reason


def test_a_cut_short_accepted_list_says_how_many_more_in_each_language():
    from bot.core.messages import msg
    from bot.recipes.errors import RecipeProblem

    problem = RecipeProblem("c.yaml", 2, "config-keys[0]", "no such key",
                            ("a", "b", msg("... %(more)s more", more=3)))
    back = RecipeProblem.from_dict(problem.as_dict())
    assert str(back) == "c.yaml:2: field `config-keys[0]`: no such key (accepted: a, b, ... 3 more)"
    assert back.as_message().render("zh").endswith("（可用的有：a、b、…… 另有 3 个）")
