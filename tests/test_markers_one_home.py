"""Every hidden `<!-- recipe-bot:... -->` marker has one home: its format and parser live in bot/core's markers modules only."""
from __future__ import annotations

import re
from pathlib import Path

from bot.core import markers, stage_markers as sm

ROOT = Path(__file__).resolve().parent.parent
HOMES = {Path("bot/core/markers.py"), Path("bot/core/stage_markers.py")}
_PREFIX = re.compile(r"<!-- recipe-bot:([a-z-]+)")
SHA = "0123456789abcdef0123456789abcdef01234567"


def _bot_sources() -> list[Path]:
    """bot/'s text sources outside the templates (which render bodies, never markers' formats)."""
    return [p for p in sorted((ROOT / "bot").rglob("*"))
            if p.is_file() and p.suffix in {".py", ".yaml", ".yml", ".toml", ".json"}
            and "templates" not in p.relative_to(ROOT).parts and "__pycache__" not in p.parts]


def test_marker_prefixes_are_spelled_only_in_the_markers_modules() -> None:
    outside = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}" for p in _bot_sources()
               if p.relative_to(ROOT) not in HOMES
               for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
               if "<!-- recipe-bot:" in line]
    assert outside == [], "a marker format outside bot/core/markers.py and bot/core/stage_markers.py:\n" + "\n".join(outside)


def test_every_marker_kind_is_one_row_of_the_kinds_table() -> None:
    # each kind is a row of markers.KINDS, which both builds and parses it: no module spells a kind's own prefix
    assert {"ack", "reply", "ok-to-test", "claim", "estimate", "budget-wait", "reuse", "sign-off",
            "accept-regression", "report", "infra-runners", "runners-approved", "planner-approved"} == set(markers.KINDS)
    spelled = {f"{path}: {kind}" for path in HOMES
               for kind in _PREFIX.findall((ROOT / path).read_text(encoding="utf-8"))}
    assert spelled == set(), "a marker kind spelled outside the table"


def test_each_kind_builds_what_it_parses_and_no_other_kind_reads_it() -> None:
    for kind in markers.KINDS.values():
        if not kind.fields:
            continue  # infra-runners: its pairs have their own pattern (test_the_moved_markers_read_back...)
        values = {key: (SHA if pattern == markers.SHA else _sample(pattern)) for key, pattern in kind.fields}
        line = kind.build(**values)
        assert kind.parse(line) == values, line
        assert [k.name for k in markers.KINDS.values() if k.fields and k.parse(line)] == [kind.name]


def _sample(pattern: str) -> str:
    """A value the pattern accepts, for the table's own patterns."""
    for candidate in ("7", "ab", "applies", "-", "1.5", "abcdef0", "x"):
        if re.fullmatch(pattern, candidate):
            return candidate
    raise AssertionError(f"no sample for {pattern}")


def test_the_moved_markers_read_back_what_they_wrote() -> None:
    wait = sm.Waiting("label-sweep", SHA, "carol", 2.5, "/sweep tiny", "run gpu")
    reuse = sm.Reuse(SHA, 42, SHA, "alice", "ended")
    ack = sm.Ack(SHA, "tiny-cpu", "alice", "known slowdown, see #12")
    assert sm.read_estimate_markers(sm.estimate_marker("c-1", SHA, 1.234) + "\ntext") == [("c-1", SHA, 1.23)]
    assert sm.parse_wait_marker(sm.wait_marker(wait)) == wait
    assert sm.parse_reuse_marker(sm.reuse_marker(reuse)) == reuse
    assert sm.parse_ack_marker(sm.ack_marker(ack)) == ack
    assert sm.parse_sign_off_marker(sm.sign_off_marker(SHA, "comment-7", "abc123")) == sm.SignOffMarker(
        SHA, "comment-7", "abc123")
    report = sm.report_marker(SHA, ["k1", "k2"])
    assert sm.parse_report_marker(report) == sm.ReportMarker(SHA, frozenset({sm.failure_digest("k1"),
                                                                          sm.failure_digest("k2")}))
    record = sm.infra_record_line({"gpu-node-07": 2, "host-3": 1})
    assert sm.parse_infra_record(f"{report}\n{record}\n## report") == {"gpu-node-07": 2, "host-3": 1}


def test_a_marker_below_the_header_is_text() -> None:
    body = "an answer\n" + sm.estimate_marker("c-1", SHA, 1.0)
    assert sm.read_estimate_markers(body) == []
    assert sm.parse_sign_off_marker("quoted:\n" + sm.sign_off_marker(SHA, "none", "ab")) is None
    assert sm.parse_infra_record("## report\n" + sm.infra_record_line({"n1": 1})) == {}
