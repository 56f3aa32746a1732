"""Candidate pairs for the pairwise program, the reply schema that labels them, and their edges.

Pairs are unordered: the model says which of the two is the subject. A pair is a candidate when some
relationship type may connect its entity types (`type_signatures.PairRule`; every type when nothing
is known). Episodes with many entities have many pairs, so at most `max_pairs` are labeled: pairs
whose two names both occur in the current episode come first, nearest mentions first, then the
rest in entity order; a warning says how many were left out.

The reply schema is a tuple with one slot per pair (`prefixItems`), each either
`{"pair", "relationshipType": "NONE"}` or the full label with the pair's own types and its two
names, so a decoding grammar writes exactly one answer per pair, in order, from its vocabulary.
"""

from __future__ import annotations

from itertools import combinations
from typing import Any, NamedTuple

from edgewise.domain.episode import Episode
from edgewise.modules.call_context import CallContext
from edgewise.modules.type_signatures import PairRule
from edgewise.signatures.label_pairs import NO_RELATION, PairLabel
from edgewise.signatures.replies import ExtractedEdge
from edgewise.signatures.schema import MAX_FACT_CHARS, NULLABLE_STRING, string_schema

_SEPARATOR = " | "


class CandidatePair(NamedTuple):
    """Two entities and the relationship types that may connect them (either way)."""

    first: str
    second: str
    types: tuple[str, ...]

    @property
    def text(self) -> str:
        return f"{self.first}{_SEPARATOR}{self.second}"


def _mention_distance(content: str, first: str, second: str) -> int | None:
    """Characters between the first mentions of two names in the episode; None if one is absent."""
    lowered = content.casefold()
    a, b = lowered.find(first.casefold()), lowered.find(second.casefold())
    return None if a < 0 or b < 0 else abs(a - b)


def candidate_pairs(
    episode: Episode, rule: PairRule, type_names: list[str], max_pairs: int, context: CallContext
) -> list[CandidatePair]:
    """The pairs to label, ranked and capped at `max_pairs` (see the module docstring)."""
    types = {entity.name: entity.type for entity in episode.entities}
    ranked: list[tuple[tuple[int, int, int], CandidatePair]] = []
    for position, (first, second) in enumerate(combinations([e.name for e in episode.entities], 2)):
        allowed = {
            *rule.types_between(types[first], types[second], type_names),
            *rule.types_between(types[second], types[first], type_names),
        }
        kinds = tuple(name for name in type_names if name in allowed) if type_names else ()
        if type_names and not kinds:
            continue  # no relationship type connects these entity types
        distance = _mention_distance(episode.episode_content, first, second)
        key = (0, distance, position) if distance is not None else (1, 0, position)
        ranked.append((key, CandidatePair(first, second, kinds)))
    ranked.sort(key=lambda item: item[0])
    kept = context.capped(
        ranked,
        max_pairs,
        "pairs_capped",
        f"{len(ranked)} candidate pairs, {max_pairs} labeled (the rest mention the two entities farther "
        "apart, or not both in the current episode)",
    )
    return [pair for _, pair in kept]


def pair_reply_schema(pairs: list[CandidatePair]) -> dict[str, Any]:
    """The JSON schema of the `pairs` reply: exactly one answer per pair, in order."""

    def slot(pair: CandidatePair) -> dict[str, Any]:
        none = {
            "type": "object",
            "properties": {"pair": {"const": pair.text}, "relationshipType": {"const": NO_RELATION}},
            "required": ["pair", "relationshipType"],
            "additionalProperties": False,
        }
        label = {
            "type": "object",
            "properties": {
                "pair": {"const": pair.text},
                "relationshipType": string_schema(list(pair.types)),
                "sourceEntityName": {"type": "string", "enum": [pair.first, pair.second]},
                "fact": {"type": "string", "minLength": 1, "maxLength": MAX_FACT_CHARS},
                "validAt": NULLABLE_STRING,
                "invalidAt": NULLABLE_STRING,
            },
            "required": ["pair", "relationshipType", "sourceEntityName", "fact", "validAt", "invalidAt"],
            "additionalProperties": False,
        }
        return {"anyOf": [none, label]}

    return {
        "type": "array",
        "prefixItems": [slot(pair) for pair in pairs],
        "minItems": len(pairs),
        "maxItems": len(pairs),
    }


def pair_edges(
    labels: list[PairLabel], pairs: list[CandidatePair], context: CallContext
) -> list[ExtractedEdge]:
    """The edges of the labeled pairs (NONE labels give none), matched to the pairs by text or place."""
    by_text = {pair.text: pair for pair in pairs}
    edges: list[ExtractedEdge] = []
    for position, label in enumerate(labels):
        if label.relationshipType.strip().upper() == NO_RELATION:
            continue
        pair = by_text.get(label.pair) or (pairs[position] if position < len(pairs) else None)
        if pair is None:
            context.note("unknown_pair", f"dropped: {label.pair!r} is not a candidate pair")
            continue
        source, target = (
            (pair.second, pair.first) if label.sourceEntityName == pair.second else (pair.first, pair.second)
        )
        edges.append(
            ExtractedEdge(
                relationshipType=label.relationshipType,
                sourceEntityName=source,
                targetEntityName=target,
                fact=label.fact,
                validAt=label.validAt,
                invalidAt=label.invalidAt,
            )
        )
    return edges
