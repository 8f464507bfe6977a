"""GSM8K as lm-evaluation-harness v0.4.12 defines its `gsm8k` task: prompts, filters, exact match.

Every constant below is copied from lm_eval/tasks/gsm8k/gsm8k.yaml and the code it names
(RegexFilter and TakeFirstFilter in lm_eval/filters, exact_match_hf_evaluate in
lm_eval/api/metrics.py, ContextSampler in lm_eval/api/samplers.py), so scores here equal
lm-eval's on the same generations. The regexes and the filters' semantics are reimplemented, not
imported: lm-eval pulls in datasets, evaluate and sacrebleu, too much for a runner.
"""
from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

STRICT_PATTERN = r"#### (\-?[0-9\.\,]+)"  # strict-match: regex, group_select 0, take_first
FLEXIBLE_PATTERN = r"(-?[$0-9.,]{2,})|(-?[0-9]+)"  # flexible-extract: group_select -1
FALLBACK = "[invalid]"
# metric_list[0]: exact_match, ignore_case true, ignore_punctuation false, these regexes removed
# from prediction and reference alike, in this order.
REGEXES_TO_IGNORE = (",", "\\$", "(?s).*#### ", "\\.$")
STOP_SEQUENCES = ["Question:", "</s>", "<|im_end|>"]  # generation_kwargs.until
FEWSHOT_SEED = 1234  # lm-eval's CLI default seed "0,1234,1234,1234": the fewshot seed is 1234
TARGET_DELIMITER = " "
FEWSHOT_DELIMITER = "\n\n"

_STRICT = re.compile(STRICT_PATTERN)
_FLEXIBLE = re.compile(FLEXIBLE_PATTERN)

DATA_DIR = Path(__file__).resolve().parents[1] / "data" / "gsm8k"


@dataclass(frozen=True)
class Doc:
    question: str
    answer: str  # the full worked answer, ending in "#### N"


def regex_filter(response: str, pattern: re.Pattern[str], group_select: int) -> str:
    """lm-eval's RegexFilter on one response."""
    if not isinstance(response, str):
        response = ""
    matches = pattern.findall(response)
    if not matches:
        return FALLBACK
    match = matches[group_select]
    if isinstance(match, tuple):
        non_empty = [m for m in match if m]
        match = non_empty[0] if non_empty else FALLBACK
    return match.strip()


def strict_extract(response: str) -> str:
    return regex_filter(response, _STRICT, 0)


def flexible_extract(response: str) -> str:
    return regex_filter(response, _FLEXIBLE, -1)


def normalise(text: str) -> str:
    for pattern in REGEXES_TO_IGNORE:
        text = re.sub(pattern, "", text)
    return text.lower()


def exact_match(prediction: str, reference: str) -> bool:
    return normalise(prediction) == normalise(reference)


def doc_to_text(doc: Doc) -> str:
    return f"Question: {doc.question}\nAnswer:"


def build_prompts(test_docs: list[Doc], train_docs: list[Doc], num_shots: int,
                  seed: int = FEWSHOT_SEED) -> list[str]:
    """K-shot prompts as lm-eval builds them: one seeded sampler shared by all docs, in order.

    lm-eval seeds the task's sampler once and calls `rnd.sample(train, K)` for each test doc in
    turn, so doc i's shots depend on i; the whole train split must be there for the same draw.
    """
    rnd = random.Random(seed)
    prompts = []
    for doc in test_docs:
        shots = rnd.sample(train_docs, num_shots) if num_shots > 0 else []
        context = "".join(doc_to_text(shot) + TARGET_DELIMITER + shot.answer + FEWSHOT_DELIMITER
                          for shot in shots)
        prompts.append(context + doc_to_text(doc))
    return prompts


@dataclass(frozen=True)
class SampleScore:
    strict_extracted: str
    strict_correct: bool
    flexible_extracted: str
    flexible_correct: bool


def score(response: str, doc: Doc) -> SampleScore:
    strict = strict_extract(response)
    flexible = flexible_extract(response)
    return SampleScore(strict, exact_match(strict, doc.answer),
                       flexible, exact_match(flexible, doc.answer))


def load_jsonl(path: Path) -> list[Doc]:
    docs = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                docs.append(Doc(question=row["question"], answer=row["answer"]))
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}:{number}: expected a JSON object with 'question' and "
                                 f"'answer' ({exc})") from exc
    return docs


def local_split_paths(data_path: Path | None) -> tuple[Path, Path]:
    """(test, train) JSONL files: a folder holding test.jsonl and train.jsonl, or a test file
    with train.jsonl beside it; None means the copy shipped with recipe-bot."""
    if data_path is None:
        return DATA_DIR / "test.jsonl", DATA_DIR / "train.jsonl"
    if data_path.is_dir():
        return data_path / "test.jsonl", data_path / "train.jsonl"
    return data_path, data_path.parent / "train.jsonl"


def load_from_hub() -> tuple[list[Doc], list[Doc]]:
    """openai/gsm8k (config main) through Hugging Face datasets; raises when it cannot."""
    import datasets  # optional: only on runners that have it

    splits = datasets.load_dataset("openai/gsm8k", "main")
    return ([Doc(r["question"], r["answer"]) for r in splits["test"]],
            [Doc(r["question"], r["answer"]) for r in splits["train"]])


def load_docs(data_path: Path | None, num_shots: int) -> tuple[list[Doc], list[Doc], str]:
    """(test docs, train docs, where they came from): the hub when reachable, else local JSONL.

    An explicit data_path always wins, so a recipe pinned to local data never touches the hub.
    """
    if data_path is None:
        try:
            test, train = load_from_hub()
            return test, train, "huggingface:openai/gsm8k@main"
        except ImportError:
            hub_problem = "Hugging Face datasets is not installed"
        except Exception as exc:  # noqa: BLE001 - offline, no cache: use the local data
            hub_problem = f"hub not reachable: {type(exc).__name__}"
    else:
        hub_problem = "data_path given in the recipe"
    test_path, train_path = local_split_paths(data_path)
    test = load_jsonl(test_path)
    train = load_jsonl(train_path) if num_shots > 0 else []
    return test, train, f"local:{test_path} ({hub_problem})"
