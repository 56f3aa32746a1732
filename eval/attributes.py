"""Attribute accuracy: on a matched edge, is each labeled attribute the value the text states, or null?

The rules (the bench's notes and the data card repeat them):

- A slot is one attribute a matched gold edge labels: a key of its `attributes`, whose value may be
  null ("the text does not say"). Attributes the gold does not label are not judged, and an edge that
  no prediction matched has no slots (edge-F1 counts it already).
- A slot is right when the predicted value, normalized, equals the gold value, normalized. A null is
  right only where the gold is null; an attribute the prediction leaves out counts as null.
- Normalization: a boolean is the word true or false; two numbers, or text that reads as one, compare
  as numbers ("3" = 3 = 3.0); other text is decomposed (diacritics dropped) and casefolded, cut into
  items at commas, semicolons, "&" and the word "and", and each item loses its punctuation and the
  articles a, an and the, with whitespace collapsed. The items compare as a set, so "Marco and
  Giulia" = "giulia, marco"; text with nothing left (an empty string, "the") is null.
- accuracy = right slots / slots.
- precision = supported values / predicted values, over the slots where the prediction wrote a
  non-null value: a value is supported when it is the gold value. 1 - precision is the share of
  written values the text does not support, either because the gold is null (nothing stated) or
  because it states another value.
- recall = supported values / gold values (slots whose gold is not null).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from edgewise.domain.gold import GoldEdge
from edgewise.domain.types import AttributeValue, Edge
from edgewise.modules.attribute_grounding import value_items

ValueKey = float | frozenset[str] | None
"""A normalized attribute value: a number, a set of text items, or null."""


class AttributeJudgement(NamedTuple):
    """One matched edge's attribute slots: counts for the scores and the names that were wrong."""

    right: int
    total: int
    values: int
    supported: int
    gold_values: int
    wrong: tuple[str, ...]


def value_key(value: AttributeValue) -> ValueKey:
    """The normalized form two attribute values are compared by (see the module docstring)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return frozenset({"true" if value else "false"})
    if isinstance(value, int | float):
        return float(value)
    text = str(value).strip()
    try:
        number = float(text)
    except ValueError:
        return value_items(text)
    return number if math.isfinite(number) else value_items(text)


def same_value(gold: AttributeValue, predicted: AttributeValue) -> bool:
    """Whether `predicted` states the gold attribute value (null is right only for null)."""
    return value_key(gold) == value_key(predicted)


def judge_attributes(predicted: Edge, gold: GoldEdge) -> AttributeJudgement:
    """Judge every attribute `gold` labels against the matched `predicted` edge's value."""
    right = values = supported = gold_values = 0
    wrong: list[str] = []
    for name, gold_value in gold.attributes.items():
        gold_key = value_key(gold_value)
        predicted_key = value_key(predicted.attributes.get(name))
        hit = gold_key == predicted_key
        right += hit
        if predicted_key is not None:
            values += 1
            supported += hit
        if gold_key is not None:
            gold_values += 1
        if not hit:
            wrong.append(name)
    return AttributeJudgement(right, len(gold.attributes), values, supported, gold_values, tuple(wrong))
