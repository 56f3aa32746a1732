"""`ExtractEdgesByEntity`: the seed's `edge` prompt with one reply slot per entity.

A small model writing an edge list stops after the first one or two edges. Here the reply has one
slot per ENTITY (in order of first mention in the CURRENT EPISODE), each holding the edges that
entity is the subject of, so the model is asked about every entity; an empty slot costs a few
tokens, far fewer than labeling every pair. The seed's rules apply unchanged.
"""

from __future__ import annotations

from typing import Final

import dspy
from pydantic import BaseModel, ConfigDict, Field

from edgewise.signatures.extract_edges import EpisodeInputs, ExtractEdges
from edgewise.signatures.replies import ExtractedEdge

_FIELDS: Final = ExtractedEdge.model_fields


class EntityEdge(BaseModel):
    """An edge from the slot's entity, as the model writes it."""

    model_config = ConfigDict(populate_by_name=True)

    relationshipType: str = Field(description=_FIELDS["relationshipType"].description)
    targetEntityName: str = Field(description=_FIELDS["targetEntityName"].description)
    fact: str = Field(description=_FIELDS["fact"].description)
    validAt: str | None = Field(default=None, description=_FIELDS["validAt"].description)
    invalidAt: str | None = Field(default=None, description=_FIELDS["invalidAt"].description)

    def extracted(self, source: str) -> ExtractedEdge:
        """The seed's edge, from `source` (the slot's entity, which the edge does not repeat)."""
        return ExtractedEdge(**self.model_dump(), sourceEntityName=source)


class EntitySlot(BaseModel):
    """One entity and the edges it is the subject of."""

    entity: str = Field(description="the entity's exact name from ENTITIES")
    edges: list[EntityEdge] = Field(
        default_factory=list, description="the edges with this entity as source; [] when it has none"
    )


_COVERAGE_TASK: Final = """
    # ONE SLOT PER ENTITY
    Answer for every entity, in the order of the reply's slots: in each slot, the facts of the CURRENT
    EPISODE in which that entity is the subject (sourceEntityName), each with its object
    (targetEntityName), relationship type, fact and dates; an empty list when there are none.
    """


class ExtractEdgesByEntity(EpisodeInputs):
    __doc__ = (ExtractEdges.__doc__ or "") + _COVERAGE_TASK

    by_entity: list[EntitySlot] = dspy.OutputField(
        desc="one slot per entity of ENTITIES, in order of first mention in the CURRENT EPISODE"
    )
