"""`ExtractEdgeAttributes`: the seed's `extract_attributes` prompt as a DSPy signature.

The seed lets the model fill an untyped bag of attributes; here each edge type declares concrete
attributes, and `attributes_signature` builds a signature whose output is a pydantic model of exactly
those fields, so structured outputs can constrain the reply. The type is the prompt's and the
parser's too, so it is a real type, made once per edge type's attributes (their content, not the
episode that brought them) and kept in a bounded cache.
"""

from __future__ import annotations

import functools
from typing import Any

import dspy
from pydantic import BaseModel, Field, create_model

from edgewise.domain.types import AttributeKind, EdgeType
from edgewise.signatures.schema import KEPT_SIGNATURES

_Declared = tuple[tuple[str, AttributeKind, str], ...]

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
    """A pydantic model with one optional field per declared attribute (null = not stated); the same
    type name and attributes give the same class."""
    declared = tuple(
        (attribute.name, attribute.kind, attribute.description) for attribute in edge_type.attributes
    )
    return _attributes_model(edge_type.name, declared)


@functools.lru_cache(maxsize=KEPT_SIGNATURES)
def _attributes_model(name: str, declared: _Declared) -> type[BaseModel]:
    fields: dict[str, Any] = {
        field: (_KIND_TO_TYPE[kind] | None, Field(default=None, description=text))
        for field, kind, text in declared
    }
    return create_model(f"{_camel(name)}Attributes", **fields)


def attributes_schema(edge_type: EdgeType) -> dict[str, Any]:
    """The JSON schema of one edge's attributes object in a per-call reply schema: every declared
    attribute present, of its kind or null, and nothing else (what `attributes_model` states, in the
    shape a decoding grammar and a strict structured output both take)."""
    return {
        "type": "object",
        "properties": {
            attribute.name: {
                "type": [attribute.kind, "null"],
                **({"description": attribute.description} if attribute.description else {}),
            }
            for attribute in edge_type.attributes
        },
        "required": [attribute.name for attribute in edge_type.attributes],
        "additionalProperties": False,
    }


def attributes_signature(base: type[dspy.Signature], edge_type: EdgeType) -> type[dspy.Signature]:
    """`base` (the possibly tuned `ExtractEdgeAttributes`) with its output typed for `edge_type`.

    Built from the predictor's current signature so that tuned instructions carry over; the same
    signature and attributes give the same class.
    """
    return _attributes_signature(base, attributes_model(edge_type))


@functools.lru_cache(maxsize=KEPT_SIGNATURES)
def _attributes_signature(base: type[dspy.Signature], model: type[BaseModel]) -> type[dspy.Signature]:
    return base.with_updated_fields("attributes", type_=model)


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.lower().split("_")) or "Edge"
