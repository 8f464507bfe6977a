"""Find the one sign-off in a comment or review body, by its trigger line, in either language."""
from __future__ import annotations

import dataclasses
import re
import unicodedata

from bot.checklist.blocks import Block, normalize, parse
from bot.checklist.template import PLACEHOLDER, Template, Templates, checkbox, version_of

_IDS = re.compile(r"^\s*((?:[A-Za-z]{1,3}\d{1,3}\s*[,，、/&和及]\s*)*[A-Za-z]{1,3}\d{1,3})\s*[:：\-—–)]\s*(\S.*)$")
_ID = re.compile(r"[A-Za-z]{1,3}\d{1,3}")
_LOGIN = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})(?:\[bot\])?")
_LABELLED = re.compile(r"^\s*([^\s:]{1,20})\s*:(.*)$")
_PLACEHOLDERS = ("insert any additional info here", "在此填写补充信息")


@dataclasses.dataclass(frozen=True)
class SignOff:
    lang: str  # which template's trigger it follows
    version: int | None  # the version tag on its trigger line
    items: tuple[tuple[str, bool], ...]  # (id, ticked) in the order written
    explained: tuple[tuple[str, str], ...]  # (id, reason) from the additional-detail section
    signed: str | None  # the login after Signed:, None when missing or still the placeholder
    line: int

    @property
    def ticked(self) -> dict[str, bool]:
        return dict(self.items)

    @property
    def reasons(self) -> dict[str, str]:
        return dict(self.explained)


@dataclasses.dataclass(frozen=True)
class Found:
    """What a body holds: one sign-off, or a problem code ("two", "quoted") with the lines involved."""

    signoff: SignOff | None = None
    problem: str | None = None
    lines: tuple[int, ...] = ()


def _squash(text: str) -> str:
    return normalize(text).replace(" ", "")


def _trigger(text: str, templates: Templates) -> Template | None:
    head = _squash(text)
    return next((t for t in templates.current if head.startswith(t.phrase.replace(" ", ""))), None)


def _closest(blocks: tuple[Block, ...], trigger: Block, templates: Templates) -> Template | None:
    """Of templates sharing one trigger line (InferenceX's Chinese file keeps the English trigger), the one
    whose item texts the sign-off's boxes repeat most."""
    head = _squash(trigger.text)
    same = [t for t in templates.current if head.startswith(t.phrase.replace(" ", ""))]
    if len(same) < 2:
        return None
    written = {normalize(box[2])[:80] for b in blocks if (box := checkbox(b))}
    return max(same, key=lambda t: sum(normalize(text)[:80] in written for _, text in t.items))


def find(body: str, templates: Templates) -> Found | None:
    """None when the body has no trigger at all (it is not a sign-off attempt)."""
    doc = parse(body)
    hits = [(i, b, t) for i, b in enumerate(doc.blocks) if b.kind != "item" and (t := _trigger(b.text, templates))]
    live = [(i, b, t) for i, b, t in hits if not b.quoted]
    if len(live) > 1:
        return Found(problem="two", lines=tuple(b.line for _, b, _ in live))
    if live:
        index, block, template = live[0]
        template = _closest(doc.blocks[index:], block, templates) or template
        return Found(signoff=_read(doc.blocks[index:], template, templates))
    phrases = [t.phrase.replace(" ", "") for t in templates.current]
    in_code = [line for text, line in doc.code if any(p in _squash(text) for p in phrases)]
    if hits or in_code:
        return Found(problem="quoted", lines=tuple(b.line for _, b, _ in hits) + tuple(in_code))
    return None


def _read(blocks: tuple[Block, ...], template: Template, templates: Templates) -> SignOff:
    trigger, rest = blocks[0], [b for b in blocks[1:] if not b.quoted]
    items: list[tuple[str, bool]] = []
    explained: list[tuple[str, str]] = []
    signed: str | None = None
    labels = {t.signed for t in templates.current}
    details = {t.detail for t in templates.current}
    in_detail = False
    for block in rest:
        if block.kind == "heading" and normalize(block.text) in details:
            in_detail = True
            continue
        box = None if in_detail else checkbox(block)
        if box is not None:
            items.append((box[1] or template.id_for(box[2], len(items)), box[0]))
        for line in block.text.splitlines():
            label, value = _split_label(line)
            if label in labels:
                signed = _login(value)
            elif in_detail:
                explained += _explanations(line) if template.numbered else _free_reason(line)
    if not template.numbered and explained:  # no ids to name: the reasoning below covers the open boxes
        explained = [(item_id, explained[0][1]) for item_id, ticked in items if not ticked]
    return SignOff(lang=template.lang, version=version_of(trigger.text), items=tuple(items),
                   explained=tuple(explained), signed=signed, line=trigger.line)


def _split_label(line: str) -> tuple[str, str]:
    """("signed", "@alice") for "Signed: @alice"; fullwidth colons fold to ":" first."""
    match = _LABELLED.match(unicodedata.normalize("NFKC", line))
    return (normalize(match.group(1)), match.group(2)) if match else ("", "")


def _login(value: str) -> str | None:
    text = value.replace("`", " ").replace("*", " ").strip().lstrip("@")
    match = _LOGIN.match(text)
    if not match or match.group(0).lower() == PLACEHOLDER:
        return None
    return match.group(0)


def _free_reason(line: str) -> list[tuple[str, str]]:
    """A line of reasoning under an unnumbered template's detail heading (its placeholder is none)."""
    reason = line.strip().lstrip("-*").strip()
    if normalize(reason) in _PLACEHOLDERS or len(reason) < 3:
        return []
    return [("*", reason)]


def _explanations(line: str) -> list[tuple[str, str]]:
    match = _IDS.match(line)
    if not match:
        return []
    reason = match.group(2).strip()
    if normalize(reason) in _PLACEHOLDERS or len(reason) < 3:
        return []
    return [(item_id.upper(), reason) for item_id in _ID.findall(match.group(1))]
