"""Fuzzing what arrives from outside: 10,000 malformed webhook payloads, 1,000 malformed result files
and 1,000 malformed artifacts. Zero crashes: each is parsed, or refused with the module's own error.

Examples are derived from well-formed inputs written here (not copied from anywhere), with a few
fields deleted or replaced by the values that break parsers: wrong types, NaN, Infinity, 1e308,
huge integers, empty strings, truncated text, dot-dot paths.
"""
from __future__ import annotations

import io
import json
import math
import pathlib
import tempfile
import zipfile
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.core import commands
from bot.core.events import CommentEvent, EventError, Ignored, PullRequestEvent, parse_event
from bot.report import build, chart, collect, compare, render
from tests import synthetic
from bot.report.fetch import ArtifactRejected, Limits, extract_safely
from bot.report.model import Meta

SHA = "a" * 40
USER = {"login": "carol", "type": "User"}
REPO = {"full_name": "acme/bench", "default_branch": "main"}
PULL = {"number": 7, "state": "open", "draft": False, "user": USER, "labels": [{"name": "sweep-enabled"}],
        "head": {"sha": SHA, "ref": "feature", "repo": {"full_name": "acme/bench"}},
        "base": {"sha": "b" * 40, "ref": "main", "repo": {"full_name": "acme/bench"}}}
PAYLOADS = {
    "issue_comment": {"action": "created", "repository": REPO, "sender": USER,
                      "issue": {"number": 7, "state": "open", "pull_request": {"url": "x"}},
                      "comment": {"id": 5, "body": "/sweep tiny* --conc 4,8", "user": USER}},
    "pull_request_target": {"action": "labeled", "repository": REPO, "sender": USER, "pull_request": PULL,
                            "label": {"name": "sweep-enabled"}},
    "pull_request_review": {"action": "submitted", "repository": REPO, "sender": USER, "pull_request": PULL,
                            "review": {"id": 9, "body": "/ok-to-test aaaaaaa", "user": USER}},
}

WEIRD = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e308, -1e308, math.inf, -math.inf, math.nan, -1, 0, 2 ** 63, 10 ** 30, "", "0", "../x",
                     "created", "labeled", "/sweep", "\x00", "🚀" * 50]),
    st.text(max_size=30), st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
)


def paths(value: Any, prefix: tuple = ()) -> list[tuple]:
    """Every location in a JSON document (dict keys and list indexes)."""
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths(item, prefix + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += paths(item, prefix + (index,))
    return found


@st.composite
def mutated(draw, document: Any) -> Any:
    doc = json.loads(json.dumps(document))
    for _ in range(draw(st.integers(1, 4))):
        locations = paths(doc)
        if not locations:
            break
        where = draw(st.sampled_from(locations))
        parent = doc
        for part in where[:-1]:
            parent = parent[part]
        if isinstance(parent, dict) and draw(st.booleans()):
            del parent[where[-1]]
        else:
            parent[where[-1]] = draw(WEIRD)
    return doc


@st.composite
def payloads(draw) -> tuple[str, Any]:
    event = draw(st.sampled_from([*PAYLOADS, "pull_request", "push", ""]))
    base = PAYLOADS.get(event) or PAYLOADS["pull_request_target"]
    if draw(st.integers(0, 19)) == 0:
        return event, draw(WEIRD)  # not even an object
    return event, draw(mutated(base))


@settings(max_examples=10_000, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(payloads())
def test_ten_thousand_malformed_payloads_parse_or_fail_with_event_error(case):
    event_name, payload = case
    try:
        event = parse_event(event_name, payload)
    except EventError as exc:
        assert str(exc).startswith("the event"), exc  # one clear sentence naming the field
        return
    assert isinstance(event, (CommentEvent, PullRequestEvent, Ignored))
    if isinstance(event, CommentEvent):
        parsed = commands.parse_comment(event.body)
        assert isinstance(parsed.commands, tuple)


def _good_result() -> dict:
    plan = synthetic.sweep_plan("tiny-cpu", arms=("tp1",), concurrencies=(1, 4), gpus=1, command="/sweep")
    return json.loads(synthetic.run_sweep(plan).model_dump_json())


GOOD_RESULT = _good_result()


@st.composite
def result_files(draw) -> bytes:
    kind = draw(st.integers(0, 9))
    if kind == 0:
        return draw(st.binary(max_size=200))
    text = json.dumps(draw(mutated(GOOD_RESULT)), allow_nan=True)  # Python writes NaN and Infinity
    if kind == 1:
        return text[: draw(st.integers(0, len(text)))].encode()
    return text.encode()


def _finite(value: Any) -> bool:
    return not isinstance(value, float) or math.isfinite(value)


@settings(max_examples=1_000, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(result_files())
def test_a_thousand_malformed_result_files_never_crash_the_report_nor_reach_the_chart(data):
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        for side in ("head", "base"):
            (root / side / "result-x").mkdir(parents=True)
            (root / side / "result-x" / "result.json").write_bytes(data)
        collection = collect.collect(root / "head")
        baseline = compare.load_baseline(root / "base")
        report = build.build_report(collection, baseline, compare.thresholds_from(None), Meta(sha=SHA))
        text = render.render_comment(report).text
        assert text
        for series in chart.series_from(report):
            for x, y in series.points:
                assert math.isfinite(x) and math.isfinite(y) and abs(y) <= 1e9
        loaded = [job.result for job in collection.jobs]
        for result in loaded:
            for case in result.cases:
                for point in case.points:
                    if point.metrics is not None:
                        assert all(_finite(v) for v in point.metrics.model_dump().values()
                                   if not isinstance(v, dict))


NAMES = st.one_of(st.sampled_from(["result.json", "a", "a/b", "a/b/c.json", "../escape", "/abs", "x/../../up",
                                   "./ok", "dir/", "", ".", "a\\b", "con", "ok/result.json"]),
                  st.text(min_size=1, max_size=12))


@st.composite
def archives(draw) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zipped:
        for name, content in draw(st.lists(st.tuples(NAMES, st.binary(max_size=64)), max_size=6)):
            try:
                zipped.writestr(name, content)
            except (ValueError, UnicodeEncodeError, IndexError):  # names zipfile itself cannot write
                pass
        if draw(st.integers(0, 9)) == 0:
            zipped.writestr("bomb.txt", b"0" * (3 << 20))  # 3 MiB of zeros: a ratio over 200
    data = buffer.getvalue()
    mode = draw(st.integers(0, 5))
    if mode == 0:
        return data[: draw(st.integers(0, len(data)))]  # truncated
    if mode == 1:
        return draw(st.binary(max_size=100))  # not a zip
    return data


@pytest.mark.filterwarnings("ignore:Duplicate name")
@settings(max_examples=1_000, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(archives())
def test_a_thousand_malformed_artifacts_extract_whole_or_are_rejected(archive):
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        dest = root / "run-1" / "result-x"
        try:
            count = extract_safely(archive, dest, Limits(max_total_bytes=4 << 20, max_members=5))
        except ArtifactRejected as exc:
            assert str(exc)
            assert not dest.exists()  # all or nothing
            count = None
        written = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
        assert all(p.startswith("run-1/result-x/") for p in written), written  # nothing outside
        if count is not None:
            assert len(written) <= count
