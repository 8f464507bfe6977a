"""The GSM8K scorer gives lm-evaluation-harness's strict-match and flexible-extract verdicts.

Expected values are derived by hand from lm-eval v0.4.12's gsm8k.yaml: strict-match is
`#### (\\-?[0-9\\.\\,]+)`, first match; flexible-extract is `(-?[$0-9.,]{2,})|(-?[0-9]+)`, last
match, first non-empty group; "[invalid]" when nothing matches; then both prediction and reference
lose ",", "$", everything up to the last "#### " and one trailing ".", and are lower-cased. The
table was also run once through lm-eval 0.4.12's own RegexFilter, TakeFirstFilter and
exact_match_hf_evaluate (outside this suite: lm-eval is too heavy a test dependency), which agreed
on every row; likewise the few-shot draws below came from its ContextSampler seeded with 1234.
"""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.runner import gsm8k
from bot.runner.gsm8k import Doc

GOLD = "She eats 3 and bakes 4, so 16 - 3 - 4 = <<16-3-4=9>>9 remain.\n#### {}"

# (response, gold number, strict extracted, strict correct, flexible extracted, flexible correct)
TABLE = [
    pytest.param(" 16 - 3 - 4 = 9, and 9 * 2 = 18.\n#### 18", "18", "18", True, "18", True,
                 id="plain"),
    pytest.param(" The total is 1,234 dollars.\n#### 1,234", "1234", "1,234", True, "1,234", True,
                 id="thousands-separator"),
    pytest.param(" It grows to\n#### 1,000,000.", "1000000", "1,000,000.", True, "1,000,000.",
                 True, id="separators-and-trailing-period"),
    pytest.param(" He loses money.\n#### -5", "-5", "-5", True, "-5", True, id="negative"),
    pytest.param(" A loss of -$5 in all.", "-5", "[invalid]", False, "-$5", True,
                 id="negative-dollar-no-hashes"),
    pytest.param(" Half of 15 is 7.5.\n#### 7.5", "7.5", "7.5", True, "7.5", True, id="decimal"),
    pytest.param(" Exactly 18 dollars.\n#### 18.00", "18", "18.00", False, "18.00", False,
                 id="decimal-zeros-do-not-match-an-integer"),
    pytest.param(" She makes $18 every day.\n#### $18", "18", "[invalid]", False, "$18", True,
                 id="dollar-after-hashes"),
    pytest.param(" So she makes 9 * 2 = 18 dollars.", "18", "[invalid]", False, "18", True,
                 id="no-hashes"),
    pytest.param(" 9 * 2 = 18.", "18", "[invalid]", False, "18.", True,
                 id="no-hashes-trailing-period"),
    pytest.param(" First guess\n#### 5\nSecond thought\n#### 7", "7", "5", False, "7", True,
                 id="several-hashes-strict-takes-first"),
    pytest.param(" #### 18\nThen 3 more apples", "18", "18", True, "3", False,
                 id="several-numbers-flexible-takes-last"),
    pytest.param(" ####18", "18", "[invalid]", False, "18", True, id="hashes-without-space"),
    pytest.param(" In 2023, he had 5", "5", "[invalid]", False, "5", True,
                 id="year-with-comma-then-single-digit"),
    pytest.param(" It took 1.5 hours or 90 minutes", "90", "[invalid]", False, "90", True,
                 id="flexible-last-of-several"),
    pytest.param(" Total: 3, done", "3", "[invalid]", False, "3,", True,
                 id="flexible-keeps-trailing-comma"),
    pytest.param(" #### 18 apples", "18", "18", True, "18", True, id="trailing-words"),
    pytest.param(" #### .", "18", ".", False, "[invalid]", False, id="lone-period"),
    pytest.param("", "18", "[invalid]", False, "[invalid]", False, id="empty"),
    pytest.param(" no numbers here", "18", "[invalid]", False, "[invalid]", False,
                 id="no-numbers"),
]


@pytest.mark.parametrize(("response", "gold", "strict", "strict_ok", "flexible", "flexible_ok"),
                         TABLE)
def test_scorer_agrees_with_lm_eval(response: str, gold: str, strict: str, strict_ok: bool,
                                    flexible: str, flexible_ok: bool) -> None:
    doc = Doc(question="q", answer=GOLD.format(gold))

    scored = gsm8k.score(response, doc)

    assert (scored.strict_extracted, scored.strict_correct) == (strict, strict_ok)
    assert (scored.flexible_extracted, scored.flexible_correct) == (flexible, flexible_ok)


@pytest.mark.parametrize(("reference", "normalised"), [
    pytest.param("Natalia sold 48/2 = <<48/2=24>>24 clips.\n#### 72", "72", id="reasoning-dropped"),
    pytest.param("a #### 1\nb\n#### 2", "2", id="last-hashes-win"),
    pytest.param("Costs $1,250.", "costs 1250", id="no-hashes-keeps-text-lowercased"),
])
def test_reference_normalisation(reference: str, normalised: str) -> None:
    assert gsm8k.normalise(reference) == normalised


@given(st.integers(min_value=-10**9, max_value=10**9))
def test_any_integer_with_separators_matches_its_gold(value: int) -> None:
    doc = Doc(question="q", answer=GOLD.format(value))

    scored = gsm8k.score(f" Done.\n#### {value:,}", doc)

    assert scored.strict_correct and scored.flexible_correct


TRAIN = [Doc(question=f"train question {i}", answer=f"work {i}\n#### {i}") for i in range(7473)]
TEST = [Doc(question=f"test question {i}", answer=f"#### {i}") for i in range(3)]


def test_prompt_has_lm_eval_layout() -> None:
    prompt = gsm8k.build_prompts(TEST[:1], TRAIN, num_shots=2)[0]

    first, second, question = prompt.split("\n\n")
    n = int(first.split()[3])
    assert first == f"Question: train question {n}\nAnswer: work {n}\n#### {n}"
    assert second.startswith("Question: train question ") and "\nAnswer: work " in second
    assert question == "Question: test question 0\nAnswer:"


def test_few_shot_draws_match_lm_eval_context_sampler_seeded_1234() -> None:
    """lm-eval seeds one sampler per task and draws for each test doc in turn."""
    prompts = gsm8k.build_prompts(TEST, TRAIN, num_shots=3)

    drawn = [[int(line.split()[-1]) for line in p.splitlines()
              if line.startswith("Question: train question")] for p in prompts]
    assert drawn == LM_EVAL_DRAWS


def test_zero_shots_is_the_bare_question() -> None:
    assert gsm8k.build_prompts(TEST[:1], [], num_shots=0) == ["Question: test question 0\nAnswer:"]


# Indices that lm-eval 0.4.12's ContextSampler(train, rnd=None).set_rnd(1234) returned for three
# successive sample(3) calls over a 7,473-document pool (the size of GSM8K's train split).
LM_EVAL_DRAWS = [[6374, 3610, 957], [61, 742, 7462], [6610, 4769, 286]]
