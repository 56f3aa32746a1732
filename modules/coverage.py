"""Coverage by entity: the reply schema with one slot per entity, and the edges its slots hold.

The slots follow the entities' first mention in the current episode (entities it does not mention
come last, in list order), at most `MAX_SLOTS`; a warning says how many were left out. Each slot's
`entity` is fixed by the schema (`const`), its edges' objects are the other entities, and their types
are those that may go from the slot's entity type to some other entity's type (`PairRule`; every type
when nothing is known), so an entity that can be the subject of no type gets an empty slot for two
tokens. Each slot holds at most `MAX_EDGES_PER_SLOT` edges.
"""

from __future__ import annotations

from typing import Any, Final

from edgewise.domain.episode import Episode
from edgewise.modules.call_context import CallContext
from edgewise.modules.type_signatures import PairRule
from edgewise.signatures.extract_by_entity import EntitySlot
from edgewise.signatures.replies import ExtractedEdge
from edgewise.signatures.schema import MAX_FACT_CHARS, NULLABLE_STRING, string_schema

MAX_SLOTS: Final = 16
"""Entities one reply answers for at most: an empty slot is cheap, but not free."""
MAX_EDGES_PER_SLOT: Final = 6


def slot_entities(episode: Episode, context: CallContext) -> list[str]:
    """The entities in slot order: first mention in the current episode, then the unmentioned ones."""
    content = episode.episode_content.casefold()

    def mention(item: tuple[int, str]) -> tuple[int, int, int]:
        index, name = item
        position = content.find(name.casefold())
        return (0, position, index) if position >= 0 else (1, index, index)

    ranked = sorted(enumerate(entity.name for entity in episode.entities), key=mention)
    names = [name for _, name in ranked]
    return context.capped(
        names,
        MAX_SLOTS,
        "entities_capped",
        f"{len(names)} entities, {MAX_SLOTS} answered for (the rest are mentioned later in the current "
        "episode, or not at all)",
    )


def slot_types(episode: Episode, rule: PairRule, entity: str, type_names: list[str]) -> list[str]:
    """The relationship types the entity may be the subject of, towards some other entity."""
    types = {e.name: e.type for e in episode.entities}
    return [
        name
        for name in type_names
        if any(rule.allowed(name, types[entity], types[other]) for other in types if other != entity)
    ]


def coverage_schema(
    episode: Episode, slots: list[str], rule: PairRule, type_names: list[str]
) -> dict[str, Any]:
    """The JSON schema of the `by_entity` reply: exactly one slot per entity of `slots`, in order."""
    names = [entity.name for entity in episode.entities]

    def slot(entity: str) -> dict[str, Any]:
        kinds = slot_types(episode, rule, entity, type_names)
        edge = {
            "type": "object",
            "properties": {
                "relationshipType": string_schema(kinds),
                "targetEntityName": string_schema([name for name in names if name != entity]),
                "fact": {"type": "string", "minLength": 1, "maxLength": MAX_FACT_CHARS},
                "validAt": NULLABLE_STRING,
                "invalidAt": NULLABLE_STRING,
            },
            "required": ["relationshipType", "targetEntityName", "fact", "validAt", "invalidAt"],
            "additionalProperties": False,
        }
        room = MAX_EDGES_PER_SLOT if kinds or not type_names else 0
        return {
            "type": "object",
            "properties": {
                "entity": {"const": entity},
                "edges": {"type": "array", "items": edge, "maxItems": room},
            },
            "required": ["entity", "edges"],
            "additionalProperties": False,
        }

    return {
        "type": "array",
        "prefixItems": [slot(entity) for entity in slots],
        "minItems": len(slots),
        "maxItems": len(slots),
    }


def slot_edges(reply: list[EntitySlot], slots: list[str]) -> list[ExtractedEdge]:
    """The edges of the reply's slots, each from its slot's entity (the listed one, if the model's
    spelling of it is not one of the slots)."""
    edges: list[ExtractedEdge] = []
    for position, slot in enumerate(reply):
        source = slot.entity if slot.entity in slots or position >= len(slots) else slots[position]
        edges.extend(edge.extracted(source) for edge in slot.edges)
    return edges
