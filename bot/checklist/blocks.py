"""Markdown → the blocks a reader sees (paragraphs, headings, list items), with quoted text set apart."""
from __future__ import annotations

import dataclasses
import re
import unicodedata
from typing import Literal

from markdown_it import MarkdownIt
from markdown_it.token import Token

Kind = Literal["para", "heading", "item"]
_PARSER = MarkdownIt("commonmark")
_SPACES = re.compile(r"\s+")


@dataclasses.dataclass(frozen=True)
class Block:
    kind: Kind
    text: str  # plain text: emphasis, code and link markup removed
    line: int  # 1-based line in the source
    quoted: bool  # inside a block quote (the author is citing someone, not signing)


@dataclasses.dataclass(frozen=True)
class Document:
    blocks: tuple[Block, ...]
    code: tuple[tuple[str, int], ...]  # (text, line) of fenced/indented code and raw HTML blocks


def normalize(text: str) -> str:
    """Compare text as a reader would: fullwidth forms folded, case and spacing and stray emphasis ignored."""
    text = unicodedata.normalize("NFKC", text).replace("*", "").replace("`", "")
    text = re.sub(r"(?<!\w)_+|_+(?!\w)", "", text)
    return _SPACES.sub(" ", text).strip().lower()


def _plain(inline: Token) -> str:
    parts: list[str] = []
    for child in inline.children or ():
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append("\n")
        elif child.type == "image":
            parts.append(child.content)
    return "".join(parts)


def parse(body: str) -> Document:
    """Blocks in reading order. Text in code blocks and raw HTML is kept apart: it is never an act."""
    blocks: list[Block] = []
    code: list[tuple[str, int]] = []
    stack: list[str] = []
    item_started: list[bool] = []
    for token in _PARSER.parse(body or ""):
        line = token.map[0] + 1 if token.map else 0
        if token.nesting == 1:
            stack.append(token.type)
            if token.type == "list_item_open":
                item_started.append(False)
        elif token.nesting == -1:
            if stack:
                stack.pop()
            if token.type == "list_item_close" and item_started:
                item_started.pop()
        elif token.type in ("fence", "code_block", "html_block"):
            code.append((token.content, line))
        elif token.type == "inline":
            kind: Kind = "para"
            if stack and stack[-1] == "heading_open":
                kind = "heading"
            elif item_started and not item_started[-1] and "list_item_open" in stack:
                kind = "item"
                item_started[-1] = True
            blocks.append(Block(kind, _plain(token), line, "blockquote_open" in stack))
    return Document(tuple(blocks), tuple(code))
