"""Result files read through the bounded validator: the same JobResult, or the same error, as the model's own."""
from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from bot import results
from bot.report import collect, synthetic
from bot.results import CaseResult, JobResult, PointResult, read_result_json

PLAN = synthetic.sweep_plan("tiny-cpu", arms=("tp1", "tp2"), concurrencies=(1, 4), job_id="sweep")


def result_text(**changes) -> str:
    """A result with per-request data and repeats, as JSON, its first point's metrics changed."""
    result = synthetic.run_sweep(PLAN, per_request=True)
    point = result.cases[0].points[0]
    result.cases[0].points[0] = point.model_copy(update={"repeats": [point.metrics, point.metrics]})
    data = json.loads(result.model_dump_json())
    metrics = data["cases"][0]["points"][0]["metrics"]
    for path, value in changes.items():
        *parents, last = path.split("__")
        target = metrics
        for name in parents:
            target = target[name]
        target[last] = value
    return json.dumps(data)


def outcome(read, text: str) -> tuple[str, object]:
    try:
        return "read", read(text)
    except ValidationError as exc:
        return "refused", str(exc)


def test_the_bounded_validator_is_in_use_and_leaves_the_models_finished():
    assert results._bounded_validator() is not None
    assert all(cls.__pydantic_complete__ for cls in (JobResult, CaseResult, PointResult))


def test_a_good_file_reads_as_the_model_reads_it():
    text = result_text()
    fast, model = read_result_json(text), JobResult.model_validate_json(text)
    assert fast == model and type(fast.cases[0].points[0].metrics) is results.PointMetrics
    assert fast.cases[0].points[0].metrics.requests is not None and len(fast.cases[0].points[0].repeats) == 2


@pytest.mark.parametrize("changes", [
    {"ttft_ms__p99": 1e300}, {"tput_per_gpu": 1e308}, {"interactivity": -1.0}, {"completed": 10 ** 9 + 1},
    {"failed": -1}, {"e2el_ms__p99": 1_000_000_001.0}, {"duration_s": "sixty"}, {"unknown": 1},
], ids=["percentile-absurd", "throughput-absurd", "negative", "count-absurd", "negative-count",
        "just-past-the-limit", "wrong-type", "extra-field"])
def test_a_bad_file_gets_the_models_own_error(changes):
    text = result_text(**changes)
    fast, model = outcome(read_result_json, text), outcome(JobResult.model_validate_json, text)
    assert fast[0] == "refused" and fast == model


@pytest.mark.parametrize("changes", [
    {"ttft_ms__p99": 1e9}, {"interactivity": None}, {"completed": 10 ** 9}, {"ttft_ms__p99": -0.0},
], ids=["at-the-limit", "no-interactivity", "count-at-the-limit", "negative-zero"])
def test_values_on_the_bounds_are_read_as_the_model_reads_them(changes):
    text = result_text(**changes)
    fast = outcome(read_result_json, text)
    assert fast[0] == "read" and fast == outcome(JobResult.model_validate_json, text)


def test_infinity_in_a_file_is_refused_as_the_model_refuses_it():
    text = result_text().replace('"tput_per_gpu":', '"tput_per_gpu": Infinity, "x":', 1)
    assert outcome(read_result_json, text) == outcome(JobResult.model_validate_json, text)
    assert outcome(read_result_json, text)[0] == "refused"


VALUES = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                   st.sampled_from([1e9, 1e9 + 1, -1e-300, 2 ** 63, 10 ** 30, "", "1"]))
FIELDS = st.sampled_from(["completed", "failed", "duration_s", "tput_per_gpu", "interactivity",
                          "ttft_ms__p99", "tpot_ms__median", "itl_ms__mean", "e2el_ms__p90",
                          "inferencex__x"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(FIELDS, VALUES, min_size=1, max_size=3))
def test_any_figure_is_read_or_refused_exactly_as_the_model_does(changes):
    text = result_text(**changes)
    assert outcome(read_result_json, text) == outcome(JobResult.model_validate_json, text)


def test_an_absurd_figure_fails_its_job_naming_the_file_and_field(tmp_path):
    path = tmp_path / "artifact-a" / "result.json"
    path.parent.mkdir()
    path.write_text(result_text(ttft_ms__p99=math.ldexp(1, 60)), encoding="utf-8")
    job = collect.collect(tmp_path, [PLAN]).jobs[0]
    assert job.result.status == "failed" and job.problem == "invalid result.json"
    assert job.result.reason.startswith("artifact-a/result.json is not a valid result: field cases.0.points.0.metrics")
    assert "ttft_ms.p99 = 1.152921504606847e+18 is not a plausible measurement" in job.result.reason


def test_where_the_schema_is_laid_out_otherwise_files_are_read_by_the_model(monkeypatch):
    def unexpected():
        raise LookupError("no PointMetrics definition")

    monkeypatch.setattr(results, "_bounded", None)
    monkeypatch.setattr(results, "_build_bounded", unexpected)
    text = result_text()
    assert results._bounded_validator() is None
    assert read_result_json(text) == JobResult.model_validate_json(text)
    bad = result_text(ttft_ms__p99=1e300)
    assert outcome(read_result_json, bad) == outcome(JobResult.model_validate_json, bad)
