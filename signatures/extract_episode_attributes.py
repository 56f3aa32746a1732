"""`ExtractEpisodeAttributes`: the seed's `extract_attributes` prompt, once for all of an episode's facts.

The seed asks once per fact; this signature asks once per episode, for every fact whose relationship
type declares attributes. Each fact is shown with its attributes' names and meanings, and the reply
is one object per fact, in order. `slots_schema` gives the reply a per-call JSON schema: exactly
one slot per fact, each slot exactly that fact's attributes (of their kinds, or null), so a decoding
grammar writes nothing else; the prompt and the parser see the plain list (`signatures.schema`).
"""

from __future__ import annotations

from collections.abc import Sequence

import dspy

from edgewise.domain.types import AttributeValue, EdgeType
from edgewise.signatures.extract_edge_attributes import attributes_schema
from edgewise.signatures.schema import ReplySchemas

SLOTS_FIELD = "attributes"


class ExtractEpisodeAttributes(dspy.Signature):
    """You are a helpful assistant that extracts fact properties from the provided text.

    Given the above EPISODE, its REFERENCE TIME, and the following numbered FACTS, set the attributes
    of each fact based on the information provided in EPISODE. Each fact lists its attributes with
    their descriptions; use them to better understand how each attribute should be determined.

    Guidelines:
    1. Do not hallucinate entity property values if they cannot be found in the current context.
    2. Only use the provided EPISODE and FACTS to set attribute values.
    3. Give exactly one object per fact, in the order of the FACTS, with exactly that fact's attributes.
    """

    episode_content: str = dspy.InputField(desc="EPISODE")
    reference_time: str = dspy.InputField(desc="REFERENCE TIME, ISO 8601 (UTC)")
    facts: list[dict[str, object]] = dspy.InputField(
        desc="FACTS, numbered: each edge with `attributes`, the names of its attributes and what each means"
    )
    attributes: list[dict[str, AttributeValue]] = dspy.OutputField(
        desc="one object per fact, in order: each of its attributes as the EPISODE states it, or null"
    )


def slots_schema(edge_types: Sequence[EdgeType]) -> ReplySchemas:
    """The reply schema with one slot per fact, the i-th typed for `edge_types[i]`, for `reply_schemas`.

    A tuple (`prefixItems`) of exactly that length: llama.cpp's grammar reads `prefixItems` as a
    fixed-length array, and `minItems` / `maxItems` state the length to a provider that does not.
    """
    schema = {
        "type": "array",
        "prefixItems": [attributes_schema(edge_type) for edge_type in edge_types],
        "minItems": len(edge_types),
        "maxItems": len(edge_types),
    }
    return {(SLOTS_FIELD,): schema}
