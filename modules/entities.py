"""The entity step's rules around its model call: the entity types it is shown, and what is kept of
its reply.

The types: the episode's own `entityTypes` when it gives them; else the entity types its relationship
types' signatures name (`sourceTypes`, `targetTypes`), so that the entities found can be joined by
those relationship types; else none, and the model names a type itself.

The reply: names are stripped, and a name given twice (as `normalize_name` compares names, the rule
the metric and post-processing apply) is kept once, in its first spelling. Where the episode lists
its entity types, a type outside them becomes null, with a warning, so that no type the caller never
declared reaches the graph; a type that differs from a declared one only in case takes its spelling.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from edgewise.domain.episode import Episode
from edgewise.domain.names import normalize_name
from edgewise.domain.types import Entity, ExtractionResult
from edgewise.modules.call_context import CallContext
from edgewise.modules.postprocess import postprocess
from edgewise.signatures.extract_entities import ExtractedEntity
from edgewise.signatures.replies import ExtractedEdge

UNKNOWN_ENTITY_TYPE: Final = "entity_type_unknown"
"""The warning for an entity whose type is none of the episode's entity types (its type is dropped)."""


def entity_type_inputs(episode: Episode) -> dict[str, str]:
    """ENTITY TYPES as the entity step is shown them: name -> meaning (see the module docstring)."""
    if episode.entity_types:
        return {entity_type.name: entity_type.description for entity_type in episode.entity_types}
    named: dict[str, str] = {}
    for edge_type in episode.edge_types:
        for name in (*(edge_type.source_types or ()), *(edge_type.target_types or ())):
            named.setdefault(name, "")
    return named


def found_entities(
    reply: Sequence[ExtractedEntity], declared: Sequence[str], context: CallContext
) -> list[Entity]:
    """The entities kept of the step's reply, in its order; `declared` are the episode's own entity
    types (empty: any type the model names is kept)."""
    spelling = {name.casefold(): name for name in declared}
    seen: set[str] = set()
    kept: list[Entity] = []
    for item in reply:
        name = " ".join(item.name.split())
        key = normalize_name(name)
        if not key or key in seen:
            continue
        seen.add(key)
        kind = (item.type or "").strip() or None
        if kind is not None and spelling:
            if kind.casefold() not in spelling:
                context.note(
                    UNKNOWN_ENTITY_TYPE,
                    f"entity {name!r}: type {kind!r} is none of the episode's entity types "
                    f"({', '.join(declared)}); it is left without a type",
                )
                kind = None
            else:
                kind = spelling[kind.casefold()]
        kept.append(Entity(name=name, type=kind))
    return kept


def one_reply_result(
    raw: list[ExtractedEdge], episode: Episode, named: Sequence[ExtractedEntity], context: CallContext
) -> ExtractionResult:
    """The result of a program whose one reply names entities and edges together (a framework's
    prompt): the named entities kept by the entity step's rules, unless the episode gave its own
    (never replaced), then the edges post-processed against the entities in force."""
    found: list[Entity] | None = None
    if not episode.entities:
        declared = [entity_type.name for entity_type in episode.entity_types]
        found = found_entities(named, declared, context)
        episode = episode.model_copy(update={"entities": found})
    edges, cleanup_warnings = postprocess(raw, episode)
    context.warn_all(cleanup_warnings)
    return context.result(edges, found)
