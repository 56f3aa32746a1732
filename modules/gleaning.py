"""Gleaning: a continuation turn for the edges the first reply missed, which can only add.

The chat so far (the extraction request and the model's own reply, `modules.transcript`) is sent
again with one more user turn, `GleanEdges`' instruction. Its reply schema leaves out every
(source, type, target) triple already written: for each source entity, one branch per type it
already used (with the objects it already joined by that type left out) and one for its other types.
An open vocabulary cannot be enumerated, so there only the names are constrained and post-processing
merges a repeated edge. A forced turn must add at least one edge: asked whether it missed anything,
a small model at temperature 0 answers with an empty list almost always.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from edgewise.domain.episode import Episode
from edgewise.domain.names import to_screaming_snake
from edgewise.modules.coverage import slot_types
from edgewise.modules.postprocess import EntityIndex
from edgewise.modules.transcript import note_messages
from edgewise.modules.type_signatures import PairRule
from edgewise.modules.typed_grammar import pair_types, typed_branches
from edgewise.modules.vocabulary import VocabularyJSONAdapter
from edgewise.signatures.glean_edges import EARLIER_TURNS
from edgewise.signatures.replies import ExtractedEdge
from edgewise.signatures.schema import MAX_FACT_CHARS, NULLABLE_STRING, string_schema

Triple = tuple[str, str, str]


def written_triples(raw: Iterable[ExtractedEdge], episode: Episode) -> set[Triple]:
    """The (source, type, target) triples a reply wrote, names resolved to the episode's entities;
    symmetric types count in both directions."""
    index = EntityIndex([entity.name for entity in episode.entities])
    symmetric = {edge_type.name for edge_type in episode.edge_types if edge_type.symmetric}
    found: set[Triple] = set()
    for edge in raw:
        source, target = index.resolve(edge.sourceEntityName), index.resolve(edge.targetEntityName)
        kind = to_screaming_snake(edge.relationshipType)
        if source is None or target is None or not kind:
            continue
        found.add((source, kind, target))
        if kind in symmetric:
            found.add((target, kind, source))
    return found


_FACT_AND_DATES: Final[dict[str, Any]] = {
    "fact": {"type": "string", "minLength": 1, "maxLength": MAX_FACT_CHARS},
    "validAt": NULLABLE_STRING,
    "invalidAt": NULLABLE_STRING,
}
_NAME_KEYS: Final = ("sourceEntityName", "targetEntityName", "relationshipType")


def _edge(kind: dict[str, Any], source: str, targets: list[str]) -> dict[str, Any]:
    properties = {
        "relationshipType": kind,
        "sourceEntityName": {"const": source},
        "targetEntityName": string_schema(targets),
        **_FACT_AND_DATES,
    }
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def exclusion_schema(
    episode: Episode,
    written: set[Triple],
    rule: PairRule,
    type_names: list[str],
    *,
    forced: bool = False,
    typed: bool = False,
) -> dict[str, Any]:
    """The JSON schema of an edge list that contains none of the `written` triples (see the module
    docstring); each source entity keeps only the types it may be the subject of. `forced`: at least
    one edge, when any is left to write. `typed`: the typed grammar's branches instead
    (`modules.typed_grammar`), one per entity pair with the types it allows and has not written."""
    if typed and type_names:
        left = {
            (source, target): [kind for kind in kinds if (source, kind, target) not in written]
            for (source, target), kinds in pair_types(episode, rule, type_names).items()
        }
        typed_items = typed_branches({"properties": _FACT_AND_DATES}, _NAME_KEYS, left, type_names)
        if typed_items is None:
            return {"type": "array", "maxItems": 0}
        return {"type": "array", "items": {"anyOf": typed_items}, **({"minItems": 1} if forced else {})}
    names = [entity.name for entity in episode.entities]
    branches: list[dict[str, Any]] = []
    for source in names:
        others = [name for name in names if name != source]
        kinds = slot_types(episode, rule, source, type_names) if type_names else []
        if type_names and not kinds:
            continue
        used: dict[str, set[str]] = {}
        for subject, kind, target in written:
            if subject == source:
                used.setdefault(kind, set()).add(target)
        if not type_names:
            branches.append(_edge({"type": "string"}, source, others))
            continue
        for kind in kinds:
            if kind in used and (targets := [name for name in others if name not in used[kind]]):
                branches.append(_edge({"const": kind}, source, targets))
        if fresh := [kind for kind in kinds if kind not in used]:
            branches.append(_edge(string_schema(fresh), source, others))
    if not branches:
        return {"type": "array", "maxItems": 0}
    return {"type": "array", "items": {"anyOf": branches}, **({"minItems": 1} if forced else {})}


class ContinuationAdapter(VocabularyJSONAdapter):
    """The JSON adapter for a continuation turn: the earlier chat as it was, then the signature's
    instruction and reply format as one new user message (no system message or inputs again)."""

    def format(
        self, signature: Any, demos: list[dict[str, Any]], inputs: dict[str, Any]
    ) -> list[dict[str, Any]]:
        request = f"{signature.instructions}\n\n{self.user_message_output_requirements(signature)}"
        messages = [*inputs[EARLIER_TURNS], {"role": "user", "content": request}]
        note_messages(messages)
        return messages
