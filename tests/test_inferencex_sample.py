"""InferenceX compatibility: the reference sample's configs give exactly the rows InferenceX's own generator gave.

The sample (real InferenceX configs and `generate_sweep_configs.py test-config` output) is reference data
of the workspace, read here at test time from ../shared/reference/inferencex-sample (or
RECIPE_BOT_INFERENCEX_SAMPLE) and never copied into the repository. CI (RECIPE_BOT_CI=1) requires it;
elsewhere its absence skips these tests with that reason.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from bot.inferencex.generate import generate
from bot.inferencex.repo import load_inferencex
from bot.recipes.sources import DirSource

ENV_VAR = "RECIPE_BOT_INFERENCEX_SAMPLE"
MODES = {"default", "no-evals", "evals-only"}
# sample file -> where it lives in an InferenceX checkout
LAYOUT = {"nvidia-master.sample.yaml": "configs/nvidia-master.yaml", "amd-master.sample.yaml": "configs/amd-master.yaml",
          "runners.yaml": "configs/runners.yaml", "perf-changelog.sample.yaml": "perf-changelog.yaml"}


def sample_dir() -> Path | None:
    named = os.environ.get(ENV_VAR)
    folder = Path(named) if named else Path(__file__).resolve().parents[2] / "shared" / "reference" / "inferencex-sample"
    return folder if (folder / "expected-test-config.json").is_file() else None


SAMPLE = sample_dir()
EXPECTED = json.loads((SAMPLE / "expected-test-config.json").read_text()) if SAMPLE else {}
CASES = [(key, mode) for key, modes in EXPECTED.items() for mode in modes]


def _require_sample() -> Path:
    if SAMPLE is not None:
        return SAMPLE
    where = os.environ.get(ENV_VAR) or "../shared/reference/inferencex-sample"
    if os.environ.get("RECIPE_BOT_CI") == "1":
        pytest.fail(f"CI must provide the InferenceX reference sample at {where}")
    pytest.skip(f"the InferenceX reference sample is not on this machine ({where}); CI compares against it")
    raise AssertionError  # unreachable


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    sample = _require_sample()
    root = tmp_path_factory.mktemp("ix-sample")
    for name, target in LAYOUT.items():
        (root / target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(sample / name, root / target)
    return load_inferencex(DirSource(root))


def canonical(rows: list[dict]) -> list[str]:
    return sorted(json.dumps(row, sort_keys=True) for row in rows)


def test_the_sample_covers_every_config_and_mode(repo):
    assert set(EXPECTED) == set(repo.configs) and len(EXPECTED) >= 8
    assert all(set(modes) == MODES for modes in EXPECTED.values())


@pytest.mark.parametrize("key,mode", CASES or [("(sample absent)", "default")],
                         ids=[f"{k}[{m}]" for k, m in CASES] or ["sample-absent"])
def test_rows_match_inferencex_generator(repo, key, mode):
    rows = generate(repo.configs, repo.runners, [key], mode)
    assert canonical(rows) == canonical(EXPECTED[key][mode])
