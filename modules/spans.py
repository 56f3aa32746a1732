"""The fact as a span: the model names the sentence that states an edge, and that sentence is the fact.

A fact is most of what a small model generates per edge (15-30 tokens of paraphrase). Numbering the
current episode's sentences and asking for a number instead costs a few prompt tokens per sentence
and two generated tokens per edge; the fact is then the episode's own words, as the seed's rule 5
("quote or closely paraphrase the original source sentence(s)") asks.
"""

from __future__ import annotations

import re
from typing import Final

from edgewise.signatures.replies import ExtractedEdge, SpanEdge

_BOUNDARY: Final = re.compile(r"(?<=[.!?])\s+|(?<=[.!?][\"')\]])\s+|\n+")


def sentences(text: str) -> list[str]:
    """The sentences of `text` in order: split after . ! ? (and closing quotes) and at line breaks."""
    return [part.strip() for part in _BOUNDARY.split(text) if part and part.strip()]


def numbered(parts: list[str]) -> str:
    """The sentences as the model reads them: `[1] First. [2] Second.`"""
    return " ".join(f"[{number}] {sentence}" for number, sentence in enumerate(parts, 1))


def span_edge(edge: SpanEdge, parts: list[str]) -> ExtractedEdge:
    """The seed's edge with its sentence as the fact (an empty fact, dropped by post-processing with
    a warning, when the number names no sentence)."""
    number = edge.sentence
    fact = parts[number - 1] if isinstance(number, int) and 1 <= number <= len(parts) else ""
    return edge.extracted(fact)
