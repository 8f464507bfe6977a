"""The checklist template (checklists/PR_REVIEW_CHECKLIST*.md): its trigger, version, items and labels."""
from __future__ import annotations

import dataclasses
import re

from bot.checklist.blocks import Block, normalize, parse
from bot.core.messages import Message, msg

CHECKBOX = re.compile(r"^\[([ xX])\]\s*([A-Za-z]{1,3}\d{1,3})\b\s*[.:：)\-—–]?\s*(.*)$", re.S)
# InferenceX's own checklist numbers nothing: an item is its box and its text, known by its place
UNNUMBERED = re.compile(r"^\[([ xX])\]\s*(\S.*)$", re.S)
VERSION = re.compile(r"\bv(\d{1,4})\b", re.I)
_VERSION_TAG = re.compile(r"[(（][^()（）]*\bv\d+[^()（）]*[)）]", re.I)
LABEL = re.compile(r"^\s*([^\s:：]{1,20})\s*[:：]")
PLACEHOLDER = "fill_in_github_username"


class TemplateError(ValueError):
    """The repository's template cannot be used; names the file and line and what the shape must be."""

    def __init__(self, source: str, line: int | None, message: Message):
        self.source, self.line, self.message = source, line, message
        where = f"{source}:{line}" if line else source
        super().__init__(f"{where}: {message}")


@dataclasses.dataclass(frozen=True)
class Template:
    lang: str
    source: str
    version: int | None  # None: the repository's template carries no version tag (InferenceX's own)
    trigger: str  # the trigger line as written
    phrase: str  # normalize(trigger) without its version tag and closing colon: what a sign-off must start with
    items: tuple[tuple[str, str], ...]  # (id, text) in order
    detail: str  # normalized heading of the additional-detail section
    signed: str  # normalized label of the Signed: line ("signed", "签名")
    numbered: bool = True  # False: items without ids, named C1, C2, ... by their place and known by their text

    def id_for(self, text: str, position: int) -> str:
        """The id of an unnumbered item written in a sign-off: the template item with its text, else its place."""
        wanted = normalize(text)[:80]
        for item_id, item_text in self.items:
            if normalize(item_text)[:80] == wanted:
                return item_id
        return f"C{position + 1}"

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
    """(ticked, id, text) of a task-list item, or None for any other block; the id is "" for an item
    written without one (InferenceX's own checklist)."""
    if block.kind != "item":
        return None
    match = CHECKBOX.match(block.text.strip())
    if not match:
        plain = UNNUMBERED.match(block.text.strip())
        return (plain.group(1) != " ", "", plain.group(2).strip()) if plain else None
    return match.group(1) != " ", match.group(2).upper(), match.group(3).strip()


def _template_blocks(text: str) -> tuple[list[Block], int]:
    """The blocks the template is made of, and the line they start at: the document's own, or, when its
    task list sits in a code fence for copying (as InferenceX's `## Template` does), the fence's."""
    doc = parse(text)
    blocks = [b for b in doc.blocks if not b.quoted]
    if any(checkbox(b) for b in blocks):
        return blocks, 0
    for code, line in doc.code:
        inner = [b for b in parse(code).blocks if not b.quoted]
        if any(checkbox(b) for b in inner):
            return inner, line  # the fence's opening line: its content starts one line below
    return blocks, 0


def parse_template(text: str, source: str, lang: str) -> Template:
    """Read a template; the trigger is the paragraph just before the first task list."""
    blocks, offset = _template_blocks(text)
    blocks = [dataclasses.replace(b, line=b.line + offset) for b in blocks] if offset else blocks
    start = next((i for i in range(1, len(blocks)) if checkbox(blocks[i]) and blocks[i - 1].kind != "item"), None)
    if start is None:
        raise TemplateError(source, None, msg("no task list (`- [ ] C1 ...`) after a trigger line"))
    trigger = blocks[start - 1]
    version = version_of(trigger.text)
    boxes = []
    index = start
    while index < len(blocks) and (box := checkbox(blocks[index])):
        boxes.append((box, blocks[index].line))
        index += 1
    numbered = all(box[1] for box, _ in boxes)
    if numbered and version is None:
        raise TemplateError(source, trigger.line,
                            msg("the trigger line has no version tag such as (PR_REVIEW_CHECKLIST v1)"))
    items: list[tuple[str, str]] = []
    for position, (box, line) in enumerate(boxes):
        item_id = box[1] if numbered else f"C{position + 1}"
        if item_id in dict(items):
            raise TemplateError(source, line, msg("item id %(item)s is used twice", item=item_id))
        items.append((item_id, box[2]))
    heading = next((b for b in blocks[index:] if b.kind == "heading"), None)
    if heading is None:
        raise TemplateError(source, None, msg("no additional-detail heading after the items"))
    signed = next((b for b in reversed(blocks) if b.line > heading.line and LABEL.match(b.text)), None)
    if signed is None:
        raise TemplateError(source, None, msg("no `Signed: FILL_IN_GITHUB_USERNAME` line at the end"))
    label = LABEL.match(signed.text)
    assert label is not None
    return Template(lang=lang, source=source, version=version, trigger=trigger.text.strip(),
                    phrase=trigger_phrase(trigger.text), items=tuple(items),
                    detail=normalize(heading.text), signed=normalize(label.group(1)), numbered=numbered)


@dataclasses.dataclass(frozen=True)
class Templates:
    """The current template in each language; a sign-off may follow either."""

    current: tuple[Template, ...]

    @property
    def version(self) -> int | None:
        return self.current[0].version

    @property
    def ids(self) -> tuple[str, ...]:
        return self.current[0].ids

    def ids_for(self, lang: str) -> tuple[str, ...]:
        """The ids of the template a sign-off in `lang` follows (unnumbered templates may differ by language)."""
        return next((t.ids for t in self.current if t.lang == lang), self.ids)

    def text_of(self, item_id: str, lang: str) -> str:
        template = next((t for t in self.current if t.lang == lang), self.current[0])
        return dict(template.items).get(item_id, item_id)


def load_templates(texts: dict[str, tuple[str, str]], version: int) -> Templates:
    """texts: lang → (source, text). Both languages must carry the configured version and the same ids."""
    parsed = [parse_template(text, source, lang) for lang, (source, text) in texts.items()]
    for template in parsed:
        if template.version is not None and template.version != version:
            raise TemplateError(template.source, None, msg(
                "the template is v%(template)s but .github/recipe-bot.yaml says checklist.version: %(config)s; "
                "make them the same", template=template.version, config=version))
    first = parsed[0]
    for other in parsed[1:]:
        # unnumbered items are known by their place in their own language's file, which may lag the other's
        if other.ids != first.ids and other.numbered and first.numbered:
            raise TemplateError(other.source, None, msg("its items %(items)s differ from %(other)s's %(other_items)s",
                                                        items=", ".join(other.ids), other=first.source,
                                                        other_items=", ".join(first.ids)))
    return Templates(tuple(parsed))
