"""Samples and votes: several replies to one request, merged into one edge list by a vote threshold.

A reply at temperature > 0 is one draw of what the model would write; an edge that several draws
write is likelier to be stated, and one that only some draws write is an edge a single greedy reply
may miss. `merge_votes` keeps each (source, type, target) that at least `votes` of the replies wrote,
in order of first appearance, as the first reply that wrote it has it: the same replies always give
the same list. The usual post-processing follows.
"""

from __future__ import annotations

from collections.abc import Sequence

from edgewise.domain.episode import Episode
from edgewise.domain.names import to_screaming_snake
from edgewise.modules.postprocess import EntityIndex
from edgewise.signatures.replies import ExtractedEdge


def vote_key(edge: ExtractedEdge, index: EntityIndex, symmetric: frozenset[str]) -> tuple[str, str, str]:
    """What counts as the same edge across replies: resolved names, the type in SCREAMING_SNAKE_CASE,
    either direction for a symmetric type (a name no entity has is kept as written)."""
    source = index.resolve(edge.sourceEntityName) or edge.sourceEntityName
    target = index.resolve(edge.targetEntityName) or edge.targetEntityName
    kind = to_screaming_snake(edge.relationshipType)
    if kind in symmetric:
        source, target = sorted((source, target))
    return (source, kind, target)


def merge_votes(
    replies: Sequence[Sequence[ExtractedEdge]], episode: Episode, votes: int
) -> list[ExtractedEdge]:
    """The edges written by at least `votes` of `replies` (see the module docstring)."""
    index = EntityIndex([entity.name for entity in episode.entities])
    symmetric = frozenset(edge_type.name for edge_type in episode.edge_types if edge_type.symmetric)
    first: dict[tuple[str, str, str], ExtractedEdge] = {}
    count: dict[tuple[str, str, str], int] = {}
    for reply in replies:
        seen: set[tuple[str, str, str]] = set()
        for edge in reply:
            key = vote_key(edge, index, symmetric)
            first.setdefault(key, edge)
            if key not in seen:
                seen.add(key)
                count[key] = count.get(key, 0) + 1
    return [edge for key, edge in first.items() if count[key] >= votes]
