"""Attributes written inside the extraction reply: each reply edge carries its type's attributes.

`with_attributes_in_reply` turns the extraction signature (tuned instructions and all) into one whose
reply edges have an `attributes` object and whose inputs add ATTRIBUTES: each relationship type that
declares attributes, with their names and meanings. Both are the same for every episode of a user, so
the prompt keeps one shared prefix for llama-server's prompt cache; what differs per episode (which
fields an edge of each type may write) is in the decoding schema only (`modules.attributes`).
"""

from __future__ import annotations

from typing import Final

import dspy
from pydantic import Field

from edgewise.domain.episode import Episode
from edgewise.domain.types import AttributeValue
from edgewise.signatures.replies import ExtractedEdge

ATTRIBUTES_INPUT: Final = "relationship_attributes"
EDGES_FIELD: Final = "edges"
"""`ExtractEdges`' output field."""
_AFTER_INPUT: Final = "relationship_types"


class AttributedEdge(ExtractedEdge):
    """An edge as the model writes it, with its relationship type's attributes."""

    attributes: dict[str, AttributeValue] = Field(
        default_factory=dict,
        description="the attributes ATTRIBUTES lists for this relationshipType, each as the CURRENT EPISODE "
        "states it, or null; {} for a type without attributes",
    )


def with_attributes_in_reply(signature: type[dspy.Signature]) -> type[dspy.Signature]:
    """`signature` (the seed reply shape, possibly tuned) with attributed edges and the ATTRIBUTES input."""
    (item,) = signature.output_fields[EDGES_FIELD].annotation.__args__
    if item is not ExtractedEdge:
        raise ValueError("attributes in the extraction reply need the seed reply shape (output_shape 'seed')")
    inputs = list(signature.input_fields)
    position = inputs.index(_AFTER_INPUT) + 1 if _AFTER_INPUT in inputs else len(inputs)
    return signature.with_updated_fields(EDGES_FIELD, type_=list[AttributedEdge]).insert(
        position,
        ATTRIBUTES_INPUT,
        dspy.InputField(
            desc="ATTRIBUTES: for each relationship type that has attributes, its attribute names and what each "
            "means; write them in that type's edges"
        ),
        type_=dict[str, dict[str, str]],
    )


def relationship_attributes(episode: Episode) -> dict[str, dict[str, str]]:
    """The ATTRIBUTES input: type name -> attribute name -> description, for types that declare any."""
    return {
        edge_type.name: {attribute.name: attribute.description for attribute in edge_type.attributes}
        for edge_type in episode.edge_types
        if edge_type.attributes
    }
