"""An eval row is charged as InferenceX's template runs it: once, at its eval concurrency, not once per listed
concurrency (run-sweep.yml passes `eval-conc`, or every concurrency joined under `eval-all-concs`)."""
from __future__ import annotations

import pytest

from bot.inferencex.launches import EVAL_S, STARTUP_S, FIXED_POINT_S, LaunchGroup, eval_concurrencies, points_run
from bot.plan.inferencex_plan import _row_entry

MULTI = {"runner": "gb200", "isl": 8192, "osl": 1024,
         "prefill": {"num-worker": 1, "tp": 4, "ep": 4}, "decode": {"num-worker": 1, "tp": 8, "ep": 8}}


@pytest.mark.parametrize(("fields", "expected"), [
    pytest.param({"conc": [64, 128, 256], "eval-conc": 256}, [256], id="eval-conc-once"),
    pytest.param({"conc": [64, 128, 256], "eval-conc": "64 128"}, [64, 128], id="eval-conc-space-separated-list"),
    pytest.param({"conc": [64, 128, 256], "eval-all-concs": True}, [64, 128, 256], id="eval-all-concs-every-one"),
    pytest.param({"conc": [64, 256, 128]}, [256], id="no-eval-conc-template-takes-the-highest"),
    pytest.param({"conc": 32}, [32], id="single-node-eval-one-concurrency"),
])
def test_an_eval_row_runs_its_eval_at_the_concurrencies_the_template_passes(fields, expected):
    assert eval_concurrencies({**MULTI, "eval-only": True, **fields}) == expected


def test_a_throughput_row_is_charged_every_listed_concurrency():
    assert points_run({**MULTI, "conc": [64, 128, 256], "eval-conc": 256}) == 3  # not eval-only: every point


def test_a_multi_node_eval_row_costs_one_eval_not_one_per_listed_concurrency():
    row = {**MULTI, "conc": [64, 128, 256], "eval-only": True, "run-eval": True, "eval-conc": 256}
    gpus = 4 + 8
    hours = LaunchGroup("k", "gb200", [row]).gpu_hours(packed=False)
    assert hours == pytest.approx(gpus * (STARTUP_S + EVAL_S) / 3600)
    assert hours < gpus * (STARTUP_S + 3 * EVAL_S) / 3600  # what it was charged before


def test_the_matrix_entry_estimate_charges_the_eval_once():
    row = {**MULTI, "conc": [64, 128, 256], "eval-only": True, "run-eval": True, "eval-conc": 256,
           "model": "m", "framework": "dynamo-trt", "precision": "fp4", "exp-name": "x"}
    throughput = {k: v for k, v in row.items() if k not in ("eval-only", "run-eval", "eval-conc")}
    assert _row_entry("k", row, None).estimate_s == STARTUP_S + EVAL_S
    assert _row_entry("k", throughput, None).estimate_s == STARTUP_S + 3 * FIXED_POINT_S
