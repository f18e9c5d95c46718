"""Slack's limits on one message, and text split to fit them without cutting a word.

Slack refuses a message with more than 50 blocks, a section longer than 3,000 characters or a header
longer than 150, and answers `msg_blocks_too_long` near 13,000 characters of text in all; a message
it refuses is never delivered, however often the outbox retries it. render_slack keeps every
message under TOTAL_MAX (a margin below that) by splitting long texts into several sections here,
and by folding alerts into one-line summaries when even that is too much.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

MAX_BLOCKS = 50  # blocks of the message and of its attachment, together
SECTION_MAX = 3000
HEADER_MAX = 150
CONTEXT_MAX = 3000  # one text element of a context block
TOTAL_MAX = 11_500  # visible characters in all; Slack's own bound is undocumented, reported near 13k

# Where a text may be split, best first: before a numbered step (`2) `), after a sentence, at a space.
_CUTS = (re.compile(r"\s(?=\d{1,2}\)\s)"), re.compile(r"(?<=[.!?;:])\s"), re.compile(r"\s"))


def split(text: str, limit: int = SECTION_MAX) -> list[str]:
    """`text` in pieces of at most `limit` characters, cut before a numbered step, else after a sentence,
    else at a space; joined with single spaces the pieces give back the text."""
    pieces: list[str] = []
    while len(text) > limit:
        cut = _cut_at(text, limit)
        pieces.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    pieces.append(text)
    return pieces


def _cut_at(text: str, limit: int) -> int:
    window = text[: limit + 1]
    floor = limit // 3  # a cut this early would leave a stub of a section: take a weaker boundary instead
    for pattern in _CUTS:
        found = [m.start() for m in pattern.finditer(window) if floor <= m.start() <= limit]
        if found:
            return found[-1]
    return limit  # one word longer than a section: nothing else to do


def pack(paragraphs: Iterable[str], limit: int = SECTION_MAX) -> list[str]:
    """Paragraphs joined by newlines into as few texts of at most `limit` as fit, each split only if alone too long."""
    texts: list[str] = []
    current = ""
    for paragraph in paragraphs:
        for piece in split(paragraph, limit):
            if current and len(current) + 1 + len(piece) <= limit:
                current += "\n" + piece
            else:
                if current:
                    texts.append(current)
                current = piece
    if current:
        texts.append(current)
    return texts


def block_texts(block: dict[str, Any]) -> list[str]:
    """The visible texts of one block."""
    texts = []
    if isinstance(block.get("text"), dict):
        texts.append(block["text"].get("text", ""))
    for element in block.get("elements") or []:
        if isinstance(element.get("text"), dict):
            texts.append(element["text"].get("text", ""))
        elif isinstance(element.get("text"), str):
            texts.append(element["text"])
    return texts


def all_blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The message's blocks, then its attachments' blocks."""
    blocks = list(message.get("blocks") or [])
    for attachment in message.get("attachments") or []:
        blocks += attachment.get("blocks") or []
    return blocks


def visible_length(message: dict[str, Any]) -> int:
    """Characters of text in every block of the message."""
    return sum(len(t) for b in all_blocks(message) for t in block_texts(b))


def problems(message: dict[str, Any]) -> list[str]:
    """What in the message Slack would refuse ([] when it fits)."""
    out = []
    blocks = all_blocks(message)
    if len(blocks) > MAX_BLOCKS:
        out.append(f"{len(blocks)} blocks, above Slack's {MAX_BLOCKS}")
    for b in blocks:
        limit = HEADER_MAX if b["type"] == "header" else SECTION_MAX if b["type"] == "section" else CONTEXT_MAX
        for t in block_texts(b):
            if len(t) > limit:
                out.append(f"a {b['type']} of {len(t)} characters, above {limit}")
    if visible_length(message) > TOTAL_MAX:
        out.append(f"{visible_length(message)} characters in all, above {TOTAL_MAX}")
    return out
