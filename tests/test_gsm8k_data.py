"""Where GSM8K comes from (recipe path, RECIPE_BOT_GSM8K_DIR, the hub, our own problems) and scoring on real data.

Our own GSM8K-format problems (bot/data/sample_problems) carry the awkward answer forms; the real split
is checked where CI provides it (RECIPE_BOT_GSM8K_DIR, set by .ci/run to ../shared/data/gsm8k).
"""
from __future__ import annotations

import ast
import json
import operator
import os
import re
from pathlib import Path

import pytest

from bot.runner import gsm8k
from bot.runner.gsm8k import Doc

SAMPLE_TEST = gsm8k.load_jsonl(gsm8k.SAMPLE_DIR / "test.jsonl")
SAMPLE_TRAIN = gsm8k.load_jsonl(gsm8k.SAMPLE_DIR / "train.jsonl")
HUB_DOCS = ([Doc("hub q", "#### 1")], [Doc("hub train", "#### 2")])


def _by_gold(gold: str) -> Doc:
    [doc] = [d for d in SAMPLE_TEST if d.answer.rsplit("#### ", 1)[1] == gold]
    return doc


# (our problem's reference answer, response, strict correct, flexible correct)
@pytest.mark.parametrize("gold, response, strict_ok, flexible_ok", [
    ("18", " 168 - 150 = 18 rolls.\n#### 18", True, True),
    ("14,400", " The shop takes in $14,400.\n#### 14400", True, True),
    ("14,400", " It takes in 14400 dollars.\n#### 14,400.", True, True),
    ("14,400", " It takes in\n#### $14,400", False, True),
    ("-12", " 7 - 19 = -12\n#### -12", True, True),
    ("-12", " It was 12 below zero.\n#### 12", False, False),
    ("2.5", " Each gets 2.5 litres.\n#### 2.5", True, True),
    ("2.5", " Each gets\n#### 2.50", False, False),
    ("1.25", " His change is $1.25.", False, True),
    ("-130", " Her balance is -$130.", False, True),
    ("1800", " He keeps 1,800 apples.\n#### 1,800.", True, True),
    ("110", " 90 + 20 = 110 minutes, so\n#### 100", False, False),
], ids=["plain", "reference-has-comma", "response-comma-trailing-period", "dollar-after-hashes",
        "negative", "negative-sign-dropped", "decimal", "decimal-trailing-zero", "dollar-decimal-no-hashes",
        "negative-dollar-no-hashes", "comma-and-period", "wrong-number"])
def test_scoring_our_problems_follows_lm_eval_for_awkward_answer_forms(gold: str, response: str, strict_ok: bool,
                                                                     flexible_ok: bool) -> None:
    scored = gsm8k.score(response, _by_gold(gold))
    assert (scored.strict_correct, scored.flexible_correct) == (strict_ok, flexible_ok)


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def _calc(node: ast.AST) -> float:
    if isinstance(node, ast.Expression):
        return _calc(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_calc(node.operand)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_calc(node.left), _calc(node.right))
    raise ValueError(f"not arithmetic: {ast.dump(node)}")


@pytest.mark.parametrize("doc", SAMPLE_TEST + SAMPLE_TRAIN, ids=lambda d: d.question[:40])
def test_our_problems_are_gsm8k_format_and_their_arithmetic_holds(doc: Doc) -> None:
    notes = re.findall(r"<<([^=<>]+)=([^<>]+)>>", doc.answer)
    assert notes and doc.answer.count("#### ") == 1
    for expression, result in notes:
        assert _calc(ast.parse(expression, mode="eval")) == pytest.approx(float(result)), expression
    assert gsm8k.normalise(doc.answer) == gsm8k.normalise(f"#### {notes[-1][1]}".removesuffix(".0"))


def test_our_problem_set_covers_the_awkward_reference_forms() -> None:
    golds = [d.answer.rsplit("#### ", 1)[1] for d in SAMPLE_TEST]
    assert any("," in g for g in golds) and any(g.startswith("-") for g in golds) and any("." in g for g in golds)
    assert len(SAMPLE_TEST) == 12 and len(SAMPLE_TRAIN) >= 5  # 5 shots: the largest few-shot of our recipes


def _write_split(folder: Path, test: list[Doc], train: list[Doc]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, docs in (("test", test), ("train", train)):
        (folder / f"{name}.jsonl").write_text(
            "".join(json.dumps({"question": d.question, "answer": d.answer}) + "\n" for d in docs))
    return folder


@pytest.mark.parametrize("recipe_path, env_dir, hub, source", [
    (True, True, True, "local:{recipe}/test.jsonl (data_path given in the recipe)"),
    (False, True, True, "local:{env}/test.jsonl (RECIPE_BOT_GSM8K_DIR)"),
    (False, False, True, "huggingface:openai/gsm8k@main"),
], ids=["recipe-path-wins", "env-dir-before-hub", "hub-when-online"])
def test_gsm8k_is_read_from_the_first_available_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       recipe_path: bool, env_dir: bool, hub: bool,
                                                       source: str) -> None:
    recipe = _write_split(tmp_path / "recipe", [Doc("recipe q", "#### 3")], [Doc("recipe t", "#### 4")])
    env = _write_split(tmp_path / "env", [Doc("env q", "#### 5")], [Doc("env t", "#### 6")])

    def hub_load() -> tuple[list[Doc], list[Doc]]:
        if not hub:
            raise ConnectionError("offline")
        return HUB_DOCS

    monkeypatch.setattr(gsm8k, "load_from_hub", hub_load)
    test, train, got = gsm8k.load_docs(recipe if recipe_path else None, num_shots=1,
                                      env_folder=env if env_dir else None)
    assert got == source.format(recipe=recipe, env=env, sample=gsm8k.SAMPLE_DIR)
    expected_first = {"local:" + str(recipe): "recipe q", "local:" + str(env): "env q",
                      "huggingface": "hub q", "recipe-bot-sample-problems": SAMPLE_TEST[0].question}
    assert test[0].question == next(v for k, v in expected_first.items() if got.startswith(k)) and train


@pytest.mark.parametrize("content", ["missing", "empty-folder"])
def test_a_gsm8k_dir_without_test_jsonl_is_one_error_in_both_languages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               content: str) -> None:
    folder = tmp_path / "gsm8k"
    if content == "empty-folder":
        folder.mkdir()
    with pytest.raises(ValueError) as err:
        gsm8k.load_docs(None, num_shots=0, env_folder=folder)
    assert f"{gsm8k.DATA_ENV}={folder}" in str(err.value) and "test.jsonl" in str(err.value)
    assert "目录" in err.value.args[0].render("zh")


def _real_gsm8k_dir() -> Path | None:
    """The real split: RECIPE_BOT_GSM8K_DIR (CI sets it), else ../shared/data/gsm8k beside the checkout."""
    named = os.environ.get(gsm8k.DATA_ENV)
    folder = Path(named) if named else Path(__file__).resolve().parents[2] / "shared" / "data" / "gsm8k"
    if (folder / "test.jsonl").is_file():
        return folder
    if os.environ.get("RECIPE_BOT_CI") == "1":
        pytest.fail(f"CI must provide GSM8K's test split: {folder}/test.jsonl is missing (set {gsm8k.DATA_ENV})")
    pytest.skip(f"GSM8K's real split is not on this machine ({folder}); CI runs this with {gsm8k.DATA_ENV}")
    return None


def test_the_real_gsm8k_test_split_scores_its_own_references_as_correct() -> None:
    folder = _real_gsm8k_dir()
    assert folder is not None
    test = gsm8k.load_jsonl(folder / "test.jsonl")
    train = gsm8k.load_jsonl(folder / "train.jsonl")
    assert (len(test), len(train)) == (1319, 7473)  # openai/gsm8k main: the sizes lm-eval's task reads
    for doc in test:
        gold = doc.answer.rsplit("#### ", 1)[1]
        assert re.fullmatch(r"-?[0-9][0-9,]*(\.[0-9]+)?", gold), gold
        assert gsm8k.score(f" So the answer is {gold}.\n#### {gold}", doc).strict_correct
        assert not gsm8k.score(" #### 0.5", doc).strict_correct  # every real gold is an integer
    prompts = gsm8k.build_prompts(test[:2], train, num_shots=5)
    assert all(p.count("Question: ") == 6 and p.endswith("\nAnswer:") for p in prompts)


@pytest.mark.parametrize("hub_error", [ConnectionError("offline"), ImportError("no datasets")],
                         ids=["hub-not-reachable", "datasets-not-installed"])
def test_without_gsm8k_the_gate_fails_with_the_reason_never_on_other_problems(
        monkeypatch: pytest.MonkeyPatch, hub_error: Exception) -> None:
    from bot.core.failure_classes import classify_lines

    def hub_load() -> tuple[list[Doc], list[Doc]]:
        raise hub_error

    monkeypatch.setattr(gsm8k, "load_from_hub", hub_load)
    with pytest.raises(gsm8k.GSM8KUnavailable) as err:
        gsm8k.load_docs(None, num_shots=2)
    reason = str(err.value)
    assert reason.startswith("GSM8K data is not available on this runner (")
    assert "RECIPE_BOT_GSM8K_DIR" in reason and "accuracy.data_path" in reason
    assert err.value.args[0].render("zh").startswith("这个 runner 上没有 GSM8K 数据")
    assert classify_lines([reason], started=True).kind == "infrastructure"


@pytest.mark.parametrize("how", ["env", "recipe"])
def test_the_sample_problems_named_explicitly_say_they_are_not_gsm8k(monkeypatch: pytest.MonkeyPatch,
                                                                     how: str) -> None:
    test, _, source = gsm8k.load_docs(gsm8k.SAMPLE_DIR if how == "recipe" else None, num_shots=1,
                                      env_folder=gsm8k.SAMPLE_DIR if how == "env" else None)
    named = "RECIPE_BOT_GSM8K_DIR" if how == "env" else "data_path given in the recipe"
    assert source == (f"recipe-bot-sample-problems:{gsm8k.SAMPLE_DIR}/test.jsonl (not GSM8K: recipe-bot's own "
                      f"sample problems, named by {named})")
    assert gsm8k.is_sample(source) and len(test) == 12
