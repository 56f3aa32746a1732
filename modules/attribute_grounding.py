"""Attribute values the episode states: a text value whose words are not in the episode is dropped.

An attribute holds what the current episode states or directly entails, else null. A small model fills
the slot anyway: a role remembered from an earlier episode ("data analyst" where this one only says
Maya is at work), a guess ("volunteer"), the word "null" as a string, or the attribute's own
description copied back. A value the text states is, after normalization, made of the text's words
or the names of the episode's entities (whom the text calls "I" or "my sister" is one of them),
so a text value with an item that does not occur in the episode's words is dropped, with an
`attribute_ungrounded` warning (the option `attribute_grounding`). An attribute describes the
relationship, not its two ends, so the same option takes the edge's own source or target entity out
of a value that names it ("Leila and Fatima" as whom Leila lives with, a pet's name as its breed),
with an `attribute_own_end` warning; a value that named nothing else is dropped. Numbers and booleans are left
alone (a count may be written as a word), and so are values the episode spells with other words
("nurse" for "I work on a ward" is lost: the rule trades such values for the guesses).

`value_items` is also the metric's normalization (`eval.attributes`): the value as a set of items,
each decomposed (diacritics dropped), casefolded, without punctuation or the articles a, an, the,
cut at commas, semicolons, "&" and the word "and".
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Final

from edgewise.domain.episode import Episode
from edgewise.domain.types import Edge
from edgewise.modules.call_context import CallContext

_ITEM_SEPARATORS: Final = re.compile(r"\s*(?:[,;&]|\band\b)\s*")
_ARTICLES: Final = frozenset({"a", "an", "the"})


def _folded(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()


def _words(text: str) -> list[str]:
    return "".join(ch if ch.isalnum() else " " for ch in text).split()


@lru_cache(maxsize=1 << 14)
def value_items(text: str) -> frozenset[str] | None:
    """A text value's normalized items (see the module docstring); None when nothing is left."""
    items = set()
    for item in _ITEM_SEPARATORS.split(_folded(text)):
        kept = " ".join(word for word in _words(item) if word not in _ARTICLES)
        if kept:
            items.add(kept)
    return frozenset(items) or None


def _episode_words(episode: Episode) -> str:
    """The episode's words and its entities' names (the speaker the text calls "I" is one), normalized
    as an item is (articles dropped) and space-delimited, so that ` item ` finds a whole-word run; each
    name stands apart, so that no run crosses from one into the next."""
    texts = [episode.episode_content, *(entity.name for entity in episode.entities)]
    runs = (" ".join(word for word in _words(_folded(text)) if word not in _ARTICLES) for text in texts)
    return " " + " | ".join(runs) + " "


def ground_attributes(edges: list[Edge], episode: Episode, context: CallContext) -> list[Edge]:
    """The edges with their own ends taken out of their text attribute values, and every value the
    episode does not state dropped, each change with a warning."""
    text = _episode_words(episode)
    grounded: list[Edge] = []
    for edge in edges:
        kept = {}
        for name, value in edge.attributes.items():
            if isinstance(value, str):
                value = _without_own_ends(edge, name, value, context)
                if value is None:
                    continue
                if not _stated(value, text):
                    context.note(
                        "attribute_ungrounded",
                        f"dropped: {name}={value!r} is not in the episode's words",
                        edge,
                    )
                    continue
            kept[name] = value
        grounded.append(edge if kept == edge.attributes else edge.model_copy(update={"attributes": kept}))
    return grounded


def _without_own_ends(edge: Edge, name: str, value: str, context: CallContext) -> str | None:
    """`value` without the items that name the edge's source or target; None when nothing else is left."""
    ends = {value_items(edge.source_entity_name), value_items(edge.target_entity_name)}
    parts = [part for part in _ITEM_SEPARATORS.split(value) if value_items(part) is not None]
    others = [part for part in parts if value_items(part) not in ends]
    if len(others) == len(parts):
        return value
    left = " and ".join(part.strip() for part in others) or None
    context.note(
        "attribute_own_end",
        f"{name}={value!r} names the edge's own " + (f"end: {left!r} kept" if left else "end: dropped"),
        edge,
    )
    return left


def _stated(value: str, text: str) -> bool:
    items = value_items(value)
    return items is not None and all(f" {item} " in text for item in items)
