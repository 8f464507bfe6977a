"""The checklist template (checklists/PR_REVIEW_CHECKLIST*.md): its trigger, version, items and labels."""
from __future__ import annotations

import dataclasses
import re

from bot.checklist.blocks import Block, normalize, parse

CHECKBOX = re.compile(r"^\[([ xX])\]\s*([A-Za-z]{1,3}\d{1,3})\b\s*[.:：)\-—–]?\s*(.*)$", re.S)
VERSION = re.compile(r"\bv(\d{1,4})\b", re.I)
_VERSION_TAG = re.compile(r"[(（][^()（）]*\bv\d+[^()（）]*[)）]", re.I)
LABEL = re.compile(r"^\s*([^\s:：]{1,20})\s*[:：]")
PLACEHOLDER = "fill_in_github_username"


class TemplateError(ValueError):
    """The repository's template cannot be used; names the file and line and what the shape must be."""

    def __init__(self, source: str, line: int | None, message: str, message_zh: str):
        self.source, self.line, self.message, self.message_zh = source, line, message, message_zh
        where = f"{source}:{line}" if line else source
        super().__init__(f"{where}: {message}")


@dataclasses.dataclass(frozen=True)
class Template:
    lang: str
    source: str
    version: int
    trigger: str  # the trigger line as written
    phrase: str  # normalize(trigger) without its version tag and closing colon: what a sign-off must start with
    items: tuple[tuple[str, str], ...]  # (id, text) in order
    detail: str  # normalized heading of the additional-detail section
    signed: str  # normalized label of the Signed: line ("signed", "签名")

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(item_id for item_id, _ in self.items)


def trigger_phrase(text: str) -> str:
    """The part of a trigger line that identifies it: no version tag, no closing colon."""
    return normalize(_VERSION_TAG.sub(" ", text)).rstrip(" :：")


def version_of(text: str) -> int | None:
    match = VERSION.search(text)
    return int(match.group(1)) if match else None


def checkbox(block: Block) -> tuple[bool, str, str] | None:
    """(ticked, id, text) of a task-list item, or None for any other block."""
    if block.kind != "item":
        return None
    match = CHECKBOX.match(block.text.strip())
    if not match:
        return None
    return match.group(1) != " ", match.group(2).upper(), match.group(3).strip()


def parse_template(text: str, source: str, lang: str) -> Template:
    """Read a template; the trigger is the paragraph just before the first task list."""
    blocks = [b for b in parse(text).blocks if not b.quoted]
    start = next((i for i in range(1, len(blocks)) if checkbox(blocks[i]) and blocks[i - 1].kind != "item"), None)
    if start is None:
        raise TemplateError(source, None, "no task list (`- [ ] C1 ...`) after a trigger line",
                            "找不到触发行之后的任务列表（`- [ ] C1 ...`）")
    trigger = blocks[start - 1]
    version = version_of(trigger.text)
    if version is None:
        raise TemplateError(source, trigger.line, "the trigger line has no version tag such as (PR_REVIEW_CHECKLIST v1)",
                            "触发行缺少版本标记，例如（PR_REVIEW_CHECKLIST v1）")
    items: list[tuple[str, str]] = []
    index = start
    while index < len(blocks) and (box := checkbox(blocks[index])):
        if box[1] in dict(items):
            raise TemplateError(source, blocks[index].line, f"item id {box[1]} is used twice",
                                f"条目编号 {box[1]} 重复出现")
        items.append((box[1], box[2]))
        index += 1
    heading = next((b for b in blocks[index:] if b.kind == "heading"), None)
    if heading is None:
        raise TemplateError(source, None, "no additional-detail heading after the items",
                            "条目之后缺少“补充说明”标题")
    signed = next((b for b in reversed(blocks) if b.line > heading.line and LABEL.match(b.text)), None)
    if signed is None:
        raise TemplateError(source, None, "no `Signed: FILL_IN_GITHUB_USERNAME` line at the end",
                            "末尾缺少 `Signed: FILL_IN_GITHUB_USERNAME` 签名行")
    label = LABEL.match(signed.text)
    assert label is not None
    return Template(lang=lang, source=source, version=version, trigger=trigger.text.strip(),
                    phrase=trigger_phrase(trigger.text), items=tuple(items),
                    detail=normalize(heading.text), signed=normalize(label.group(1)))


@dataclasses.dataclass(frozen=True)
class Templates:
    """The current template in each language; a sign-off may follow either."""

    current: tuple[Template, ...]

    @property
    def version(self) -> int:
        return self.current[0].version

    @property
    def ids(self) -> tuple[str, ...]:
        return self.current[0].ids

    def text_of(self, item_id: str, lang: str) -> str:
        template = next((t for t in self.current if t.lang == lang), self.current[0])
        return dict(template.items).get(item_id, item_id)


def load_templates(texts: dict[str, tuple[str, str]], version: int) -> Templates:
    """texts: lang → (source, text). Both languages must carry the configured version and the same ids."""
    parsed = [parse_template(text, source, lang) for lang, (source, text) in texts.items()]
    for template in parsed:
        if template.version != version:
            raise TemplateError(template.source, None,
                                f"the template is v{template.version} but .github/recipe-bot.yaml says "
                                f"checklist.version: {version}; make them the same",
                                f"模板版本为 v{template.version}，而 .github/recipe-bot.yaml 中 "
                                f"checklist.version 为 {version}；请保持一致")
    first = parsed[0]
    for other in parsed[1:]:
        if other.ids != first.ids:
            raise TemplateError(other.source, None,
                                f"its items {', '.join(other.ids)} differ from {first.source}'s {', '.join(first.ids)}",
                                f"其条目 {', '.join(other.ids)} 与 {first.source} 的 {', '.join(first.ids)} 不一致")
    return Templates(tuple(parsed))
