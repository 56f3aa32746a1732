"""Attribute values the episode states: a text value whose words are not in the episode is dropped.

An attribute holds what the current episode states or directly entails, else null. A small model fills
the slot anyway: a role remembered from an earlier episode ("data analyst" where this one only says
Maya is at work), a guess ("volunteer"), the word "null" as a string, or the attribute's own
description copied back. A value the text states is, after normalization, made of the text's words,
so a text value with an item that does not occur in the episode's words is dropped, with an
`attribute_ungrounded` warning (the option `attribute_grounding`). Numbers and booleans are left
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

from edgewise.signatures.episode import Episode
from edgewise.signatures.types import Edge, ExtractionWarning

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
    """The episode's words, normalized as an item is (articles dropped) and space-delimited, so that
    ` item ` finds a whole-word run."""
    words = (word for word in _words(_folded(episode.episode_content)) if word not in _ARTICLES)
    return " " + " ".join(words) + " "


def ground_attributes(edges: list[Edge], episode: Episode, warnings: list[ExtractionWarning]) -> list[Edge]:
    """The edges with every text attribute value the episode does not state dropped, each with a warning."""
    text = _episode_words(episode)
    grounded: list[Edge] = []
    for edge in edges:
        kept = {}
        for name, value in edge.attributes.items():
            if isinstance(value, str) and not _stated(value, text):
                warnings.append(
                    ExtractionWarning(
                        code="attribute_ungrounded",
                        message=f"dropped: {name}={value!r} is not in the episode's words",
                        edge=edge.to_json_dict(),
                    )
                )
                continue
            kept[name] = value
        grounded.append(
            edge if len(kept) == len(edge.attributes) else edge.model_copy(update={"attributes": kept})
        )
    return grounded


def _stated(value: str, text: str) -> bool:
    items = value_items(value)
    return items is not None and all(f" {item} " in text for item in items)
