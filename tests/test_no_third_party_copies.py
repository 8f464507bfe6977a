"""No third-party data is committed: it is installed from its publisher (npm/, GSM8K from the hub or a folder).

Every tracked file is checked for the marks of the copies this repository used to carry: octokit's example
payloads and schemas, GitHub's REST description, GSM8K's JSONL, InferenceX's configs and sample rows, and
other projects' licence files. THIRD_PARTY_ALLOWED lists the paths allowed to be third-party; it is empty.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
THIRD_PARTY_ALLOWED: frozenset[str] = frozenset()
DATA_SUFFIXES = (".json", ".jsonl", ".yaml", ".yml", ".csv", ".txt")
# (mark in a data file's text, the file suffixes it counts in, what it reveals). GSM8K questions count only in
# JSONL, GSM8K's own format: a run's samples file (docs/gpu-runs/*/gsm8k.json) quotes the few it asked.
TEXT_MARKS = (
    ('"title": "GitHub v3 REST API"', DATA_SUFFIXES, "GitHub's REST description (github/rest-api-description)"),
    ("GitHub's official OpenAPI spec + Octokit extension", DATA_SUFFIXES, "GitHub's REST description (@octokit/openapi)"),
    ("Codertocat/Hello-World", DATA_SUFFIXES, "an octokit webhook example payload"),
    ('"$id": "issue_comment$created"', DATA_SUFFIXES, "an octokit webhook schema"),
    ("Natalia sold clips to 48 of her friends", (".jsonl",), "GSM8K's train split"),
    ("Janet\u2019s ducks lay 16 eggs per day", (".jsonl",), "GSM8K's test split"),
    ("github.com/SemiAnalysisAI/InferenceX/pull/", DATA_SUFFIXES, "InferenceX's perf-changelog"),
    ("nvcr.io/nvidia/ai-dynamo/", DATA_SUFFIXES, "an InferenceX master config"),
)
NAME_MARKS = (
    (lambda name: name.endswith(".payload.json"), "an octokit example payload file name"),
    (lambda name: name.endswith(".schema.json"), "an octokit schema file name"),
    (lambda name: name.endswith(".sample.yaml") or name == "expected-test-config.json", "an InferenceX sample file"),
    (lambda name: name.split(".")[0].upper() in ("LICENSE", "LICENCE", "COPYING", "NOTICE"), "another project's licence file"),
)
GSM8K_SIZED_ROWS = 1000  # GSM8K's splits have 1,319 and 7,473 rows; our own problem sets are a few dozen


def third_party_reason(path: str, text: str) -> str | None:
    """Why the file at `path` (relative to the repository) with content `text` looks like a third-party copy."""
    name = path.rsplit("/", 1)[-1]
    for matches, what in NAME_MARKS:
        if matches(name):
            return what
    if not name.endswith(DATA_SUFFIXES):
        return None  # code and prose may name these sources; only data files are copies
    for mark, suffixes, what in TEXT_MARKS:
        if name.endswith(suffixes) and mark in text:
            return what
    if name.endswith(".jsonl") and text.count('"question"') >= GSM8K_SIZED_ROWS:
        return "a GSM8K-sized question/answer JSONL"
    return None


def tracked_files() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
        return sorted(p for p in out.decode().split("\0") if p and (ROOT / p).is_file())
    except (OSError, subprocess.CalledProcessError):  # an unpacked archive: every file but the ignored caches
        skip = {".git", ".venv", ".engine", ".upstream", "__pycache__", ".pytest_cache", ".hypothesis"}
        return sorted(p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*")
                      if p.is_file() and not skip & set(p.relative_to(ROOT).parts))


def test_no_tracked_file_is_a_third_party_copy() -> None:
    found = {}
    for path in tracked_files():
        text = (ROOT / path).read_text(encoding="utf-8", errors="replace")
        reason = third_party_reason(path, text)
        if reason is not None and path not in THIRD_PARTY_ALLOWED:
            found[path] = reason
    assert found == {}, "third-party copies in the repository (install them instead; see README):\n" + \
        "\n".join(f"  {p}: {r}" for p, r in found.items())


@pytest.mark.parametrize("path, text, reason", [
    ("sandbox/github_sandbox/spec/api.json", '{"openapi": "3.0.3", "info": {"title": "GitHub v3 REST API"}}', "REST description"),
    ("x/issue_comment/created.payload.json", "{}", "example payload file name"),
    ("x/data.json", '{"repository": {"full_name": "Codertocat/Hello-World"}}', "webhook example payload"),
    ("x/common/user.schema.json", "{}", "schema file name"),
    ("bot/data/gsm8k/test.jsonl", '{"question": "Janet\u2019s ducks lay 16 eggs per day."}', "test split"),
    ("data/big.jsonl", '{"question": "q", "answer": "#### 1"}\n' * 1319, "GSM8K-sized"),
    ("tests/fixtures/ix/perf.yaml", "pr-link: https://github.com/SemiAnalysisAI/InferenceX/pull/2420", "perf-changelog"),
    ("tests/fixtures/ix/nvidia-master.sample.yaml", "a: 1", "InferenceX sample"),
    ("bot/data/gsm8k/LICENSE", "MIT License", "licence file"),
    ("vendor/COPYING.txt", "GPL", "licence file"),
], ids=["openapi-title", "payload-name", "payload-marker", "schema-name", "gsm8k-question", "gsm8k-sized-jsonl",
        "inferencex-changelog", "inferencex-sample-name", "others-license", "others-copying"])
def test_each_kind_of_copy_is_recognised(path: str, text: str, reason: str) -> None:
    assert reason in (third_party_reason(path, text) or "")


@pytest.mark.parametrize("path, text", [
    ("tests/test_events.py", '"https://api.github.com/repos/Codertocat/Hello-World/pulls/1"'),
    ("docs/sandbox.md", 'GitHub\'s description ("GitHub v3 REST API")'),
    ("bot/data/sample_problems/test.jsonl", '{"question": "q", "answer": "#### 1"}\n' * 12),
    ("tests/fixtures/inferencex/perf-changelog.yaml", "pr-link: https://github.com/example-org/x/pull/1"),
    ("docs/gpu-runs/r/gsm8k.json", '{"samples": [{"question": "Janet\u2019s ducks lay 16 eggs per day."}]}'),
], ids=["code-may-name-octokit-examples", "prose-may-name-the-title", "our-small-problem-set",
        "our-changelog-fixture", "a-runs-samples-file-quotes-questions"])
def test_our_own_files_are_not_flagged(path: str, text: str) -> None:
    assert third_party_reason(path, text) is None
