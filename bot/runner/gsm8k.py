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

from bot.core.messages import Message, msg

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

# Offline fleets: a folder with GSM8K's test.jsonl and train.jsonl (e.g. a copy of openai/gsm8k's main config).
DATA_ENV = "RECIPE_BOT_GSM8K_DIR"
HUB_SOURCE = "huggingface:openai/gsm8k@main"
# recipe-bot's own GSM8K-format problems, not GSM8K: only where named (data_path or RECIPE_BOT_GSM8K_DIR),
# as the offline CPU demo and the tests name them; never a silent stand-in for GSM8K.
SAMPLE_DIR = Path(__file__).resolve().parents[1] / "data" / "sample_problems"
SAMPLE_SOURCE = "recipe-bot-sample-problems"


class GSM8KUnavailable(ValueError):
    """No GSM8K here: the gate fails with this reason rather than score other problems."""


def is_sample(source: str) -> bool:
    """Whether a source (what load_docs returns) is recipe-bot's own sample problems, not GSM8K."""
    return source.startswith(SAMPLE_SOURCE + ":")


def _named(test_path: Path, how: str) -> str:
    if test_path.resolve().parent == SAMPLE_DIR.resolve():
        return f"{SAMPLE_SOURCE}:{test_path} (not GSM8K: recipe-bot's own sample problems, named by {how})"
    return f"local:{test_path} ({how})"


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
                raise ValueError(msg("%(file)s:%(line)s: expected a JSON object with 'question' and 'answer' "
                                     "(%(why)s)", file=str(path), line=number, why=str(exc))) from exc
    return docs


def local_split_paths(data_path: Path) -> tuple[Path, Path]:
    """(test, train) JSONL files: a folder holding test.jsonl and train.jsonl, or a test file
    with train.jsonl beside it."""
    if data_path.is_dir():
        return data_path / "test.jsonl", data_path / "train.jsonl"
    return data_path, data_path.parent / "train.jsonl"


def load_from_hub() -> tuple[list[Doc], list[Doc]]:
    """openai/gsm8k (config main) through Hugging Face datasets, as lm-evaluation-harness loads it; raises
    when it cannot (datasets not installed, hub not reachable and nothing cached)."""
    import datasets  # optional: only on runners that have it

    splits = datasets.load_dataset("openai/gsm8k", "main")
    return ([Doc(r["question"], r["answer"]) for r in splits["test"]],
            [Doc(r["question"], r["answer"]) for r in splits["train"]])


def _env_dir(folder: Path | None) -> Path | None:
    if folder is None or not str(folder).strip():
        return None
    value = str(folder)
    if not (folder / "test.jsonl").is_file():
        raise ValueError(msg("%(name)s=%(value)s: expected a folder holding GSM8K's test.jsonl (and train.jsonl for "
                             "few-shot prompts)", name=DATA_ENV, value=value))
    return folder


def _read(test_path: Path, train_path: Path, num_shots: int) -> tuple[list[Doc], list[Doc]]:
    return load_jsonl(test_path), (load_jsonl(train_path) if num_shots > 0 else [])


def load_docs(data_path: Path | None, num_shots: int, env_folder: Path | None = None) -> tuple[list[Doc], list[Doc], str]:
    """(test docs, train docs, where they came from), first of: the recipe's `data_path`; `env_folder`, the
    folder in RECIPE_BOT_GSM8K_DIR (the caller reads the setting); openai/gsm8k from the Hugging Face hub.
    Raises GSM8KUnavailable otherwise.

    An explicit path always wins, so a pinned recipe or an offline fleet never touches the hub.
    recipe-bot's own sample problems are read only where one of the two names them, and their
    source then says they are not GSM8K.
    """
    if data_path is not None:
        test_path, train_path = local_split_paths(data_path)
        return *_read(test_path, train_path, num_shots), _named(test_path, "data_path given in the recipe")
    folder = _env_dir(env_folder)
    if folder is not None:
        test_path, train_path = local_split_paths(folder)
        return *_read(test_path, train_path, num_shots), _named(test_path, DATA_ENV)
    try:
        test, train = load_from_hub()
        return test, train, HUB_SOURCE
    except ImportError:
        hub_problem: Message = msg("Hugging Face datasets is not installed")
    except Exception as exc:  # noqa: BLE001 - offline, no cache: the gate cannot be scored
        hub_problem = msg("hub not reachable: %(error)s", error=type(exc).__name__)
    raise GSM8KUnavailable(msg("GSM8K data is not available on this runner (%(why)s); set %(name)s to a folder "
                               "holding GSM8K's test.jsonl and train.jsonl, or give the recipe's accuracy.data_path",
                               why=hub_problem, name=DATA_ENV))
