"""`ExtractEdgeAttributes`: the seed's `extract_attributes` prompt as a DSPy signature.

The seed lets the model fill an untyped bag of attributes; here each edge type declares concrete
attributes, and `attributes_signature` builds a signature whose output is a pydantic model of exactly
those fields, so structured outputs can constrain the reply. The type is the prompt's and the
parser's too, so it is a real type, made once per edge type's attributes (their content, not the
episode that brought them) and kept in a bounded cache.
"""

from __future__ import annotations

import functools

import dspy
from pydantic import BaseModel, Field, create_model

from edgewise.signatures.schema import KEPT_SIGNATURES
from edgewise.signatures.types import AttributeKind, EdgeAttribute, EdgeType

_KIND_TO_TYPE: dict[str, type] = {"string": str, "number": float, "integer": int, "boolean": bool}


class ExtractEdgeAttributes(dspy.Signature):
    """You are a helpful assistant that extracts fact properties from the provided text.

    Given the above EPISODE, its REFERENCE TIME, and the following FACT, update any of its attributes
    based on the information provided in EPISODE. Use the provided attribute descriptions to better
    understand how each attribute should be determined.

    Guidelines:
    1. Do not hallucinate entity property values if they cannot be found in the current context.
    2. Only use the provided EPISODES and FACT to set attribute values.
    """

    episode_content: str = dspy.InputField(desc="EPISODE")
    reference_time: str = dspy.InputField(desc="REFERENCE TIME, ISO 8601 (UTC)")
    fact: dict[str, str] = dspy.InputField(desc="FACT: the edge whose attributes to set")
    attributes: BaseModel = dspy.OutputField(
        desc="the attribute values; null for any value the EPISODE does not state"
    )


def attributes_model(edge_type: EdgeType) -> type[BaseModel]:
    """A pydantic model with one optional field per declared attribute (null = not stated)."""
    fields = {
        attribute.name: (
            _KIND_TO_TYPE[attribute.kind] | None,
            Field(default=None, description=attribute.description),
        )
        for attribute in edge_type.attributes
    }
    return create_model(f"{_camel(edge_type.name)}Attributes", **fields)


def attributes_signature(base: type[dspy.Signature], edge_type: EdgeType) -> type[dspy.Signature]:
    """`base` (the possibly tuned `ExtractEdgeAttributes`) with its output typed for `edge_type`.

    Built from the predictor's current signature so that tuned instructions carry over; the same
    signature and attributes give the same class.
    """
    declared = tuple(
        (attribute.name, attribute.kind, attribute.description) for attribute in edge_type.attributes
    )
    return _attributes_signature(base, edge_type.name, declared)


@functools.lru_cache(maxsize=KEPT_SIGNATURES)
def _attributes_signature(
    base: type[dspy.Signature], name: str, declared: tuple[tuple[str, AttributeKind, str], ...]
) -> type[dspy.Signature]:
    attributes = [EdgeAttribute(name=field, kind=kind, description=text) for field, kind, text in declared]
    return base.with_updated_fields(
        "attributes", type_=attributes_model(EdgeType(name=name, attributes=attributes))
    )


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.lower().split("_")) or "Edge"
