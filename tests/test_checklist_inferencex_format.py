"""The sign-off reads a repository's own checklist in InferenceX's format: fenced, unnumbered, unversioned."""
from __future__ import annotations

import pathlib

import pytest

from bot.checklist import rules
from bot.checklist.signoff import find
from bot.checklist.template import load_templates

FIXTURE = pathlib.Path(__file__).parent / "fixtures" / "ix-checklist" / "PR_REVIEW_CHECKLIST.md"
TEXT = FIXTURE.read_text(encoding="utf-8")
TEMPLATES = load_templates({"en": ("docs/PR_REVIEW_CHECKLIST.md", TEXT)}, 1)


def filled(open_items: tuple[int, ...] = (), detail: str = "", drop: tuple[int, ...] = (), signed: str = "alice") -> str:
    """The fenced template pasted into a review as a reviewer does: boxes ticked, the login filled in."""
    body = TEXT.split("```\n", 1)[1].split("```", 1)[0]
    lines, box = [], 0
    for line in body.splitlines():
        if "- [ ] " in line:
            box += 1
            if box in drop:
                continue
            if box not in open_items:
                line = line.replace("- [ ] ", "- [x] ", 1)
        lines.append(line)
    text = "\n".join(lines).replace("FILL_IN_GITHUB_USERNAME", signed)
    return text.replace("- insert any additional info here", f"- {detail}") if detail else text


def template_and_boxes(body: str) -> tuple[str, str]:
    found = find(body, TEMPLATES)
    assert found is not None and found.signoff is not None, found
    ev = rules.Evidence(pr=7, head_sha="a" * 40, author="carol", source=rules.Source("c1", "alice", False),
                        signoff=found.signoff, body=body, templates=TEMPLATES, ownership=None, benchmark=None,
                        files=(), settings=None)
    return rules.template(ev).status, rules.boxes(ev).status


def test_the_fenced_unnumbered_unversioned_template_is_read_item_by_item():
    (template,) = TEMPLATES.current
    assert template.version is None and not template.numbered
    assert template.ids == ("C1", "C2", "C3", "C4", "C5", "C6")  # the sub-item counts, in reading order
    assert dict(template.items)["C5"].startswith("Linked the upstream page")
    assert template.phrase == "as a pr reviewer and codeowner, i have reviewed this and have"
    assert template.detail == "additional detail section:" and template.signed == "signed"


def test_a_filled_in_signoff_has_every_item_and_its_signer():
    found = find(filled(), TEMPLATES)
    signoff = found.signoff
    assert signoff.version is None and signoff.signed == "alice"
    assert signoff.items == tuple((f"C{n}", True) for n in range(1, 7))
    assert template_and_boxes(filled()) == ("pass", "pass")


@pytest.mark.parametrize("body,expected", [
    (filled(open_items=(4, 5)), ("pass", "fail")),
    (filled(open_items=(4, 5), detail="No upstream recipe exists for this new hardware yet"), ("pass", "pass")),
    (filled(drop=(3,)), ("fail", "pass")),
], ids=["unticked-unexplained", "unticked-with-reasoning", "item-missing"])
def test_unticked_and_missing_items_of_the_inferencex_format(body, expected):
    assert template_and_boxes(body) == expected


def test_the_template_inside_its_own_fence_is_not_a_signoff():
    assert find(TEXT, TEMPLATES).signoff is None  # quoted in code: it is the form, not an act


def test_a_chinese_file_with_the_english_trigger_and_fewer_items_reads_its_own_signoffs():
    zh = (FIXTURE.parent / "PR_REVIEW_CHECKLIST_zh.md").read_text(encoding="utf-8")
    both = load_templates({"en": ("en.md", TEXT), "zh": ("zh.md", zh)}, 1)  # unnumbered: counts may differ
    body = zh.split("```\n", 1)[1].split("```", 1)[0].replace("- [ ] ", "- [x] ").replace(
        "FILL_IN_GITHUB_USERNAME", "alice")
    signoff = find(body, both).signoff
    assert signoff.lang == "zh" and [i for i, _ in signoff.items] == ["C1", "C2", "C3", "C4"]
    assert both.ids_for("zh") == ("C1", "C2", "C3", "C4") and len(both.ids_for("en")) == 6
