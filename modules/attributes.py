"""How a program fills the attributes its edges' relationship types declare: three formulations.

`ProgramOptions.attributes` chooses one (the program runs the step of that formulation:
`modules.steps`); an edge of a type that declares no attributes costs nothing
in any of them.

- `per-edge` (the default, the seed's): one `ExtractEdgeAttributes` call per such edge, whose reply type
  is that edge type's attributes.
- `per-episode`: one `ExtractEpisodeAttributes` call for all of an episode's such edges, each shown with
  its attributes' meanings; the reply has one slot per edge, fixed in the call's decoding schema
  (`slots_schema`). A reply with another number of slots fills nothing, with a warning.
- `in-extraction`: no call of its own. The extraction reply's edges carry `attributes`
  (`signatures.attributes_in_reply`), and each episode's decoding schema gives every edge, by its
  relationship type, exactly that type's attribute fields (`in_reply_schema`); the prompt shows the
  plain attributed edge, so the prompt cache's shared prefix is the same for every episode.

Values are checked against their declared kind in every formulation: the reply type does so for
`per-edge`, `typed_values` for the other two (a value of another kind is dropped with a warning), and
nulls (not stated) are left out of the edge (`cap_attributes`).
"""

from __future__ import annotations

import copy
from typing import Any, Final

import dspy
from pydantic import ValidationError

from edgewise.domain.episode import Episode
from edgewise.domain.names import to_screaming_snake
from edgewise.domain.types import AttributeValue, Edge, EdgeType, ExtractionWarning, format_utc
from edgewise.modules.call_context import CallContext
from edgewise.modules.calls import OneEach, answers_each, call_step, predicting
from edgewise.modules.options import ProgramOptions
from edgewise.modules.postprocess import cap_attributes
from edgewise.modules.vocabulary import reply_item_schema
from edgewise.signatures.attributes_in_reply import (
    EDGES_FIELD,
    with_attributes_in_reply,
)
from edgewise.signatures.extract_edge_attributes import (
    ExtractEdgeAttributes,
    attributes_model,
    attributes_schema,
    attributes_signature,
)
from edgewise.signatures.extract_episode_attributes import ExtractEpisodeAttributes, slots_schema
from edgewise.signatures.replies import ExtractedEdge
from edgewise.signatures.schema import ReplySchemas, with_reply_schemas

STEP_ATTRIBUTES: Final = "attributes"
_NO_ATTRIBUTES: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {},
    "required": [],
    "additionalProperties": False,
}


def attributes_predictor(options: ProgramOptions) -> dspy.Predict:
    """The `attributes` predictor: per episode for `per-episode`, else the seed's per-edge signature.

    `in-extraction` keeps the per-edge predictor, never called, so that every program has the same
    predictors and a program's saved state loads into any of them.
    """
    if options.attributes == "per-episode":
        return dspy.Predict(ExtractEpisodeAttributes)
    return dspy.Predict(ExtractEdgeAttributes)


def extraction_signature(signature: type[dspy.Signature], options: ProgramOptions) -> type[dspy.Signature]:
    """The extraction predictor's signature: with `in-extraction`, attributed edges and ATTRIBUTES."""
    if options.attributes != "in-extraction":
        return signature
    return with_attributes_in_reply(signature)


def in_reply_schema(
    signature: type[dspy.Signature], vocabulary: ReplySchemas, episode: Episode, type_key: str
) -> ReplySchemas:
    """The reply schema whose edges tie each edge's `attributes` to its relationship type.

    One alternative per type that declares attributes (the type as a `const`, its fields required,
    each of its kind or null) and one for every other type (`attributes` empty); the rest of each
    alternative is the edge's schema with the episode's `vocabulary`. With open types, the other types
    are any string.
    """
    (item,) = signature.output_fields[EDGES_FIELD].annotation.__args__
    edge = with_reply_schemas(
        reply_item_schema(item),
        {path[1:]: part for path, part in vocabulary.items() if path[0] == EDGES_FIELD and len(path) > 1},
    )
    properties = edge.get("properties", {})
    typed = [edge_type for edge_type in episode.edge_types if edge_type.attributes]
    others = properties.get(type_key, {"type": "string"})
    if "enum" in others:
        rest = [name for name in others["enum"] if name not in {t.name for t in typed}]
        others = {**others, "enum": rest} if rest else None
    alternatives = [
        _alternative(edge, type_key, {"const": edge_type.name}, attributes_schema(edge_type))
        for edge_type in typed
    ]
    if others is not None:
        alternatives.append(_alternative(edge, type_key, others, _NO_ATTRIBUTES))
    return {(EDGES_FIELD,): {"type": "array", "items": {"anyOf": alternatives}}}


def _alternative(
    edge: dict[str, Any], type_key: str, type_schema: dict[str, Any], attributes: dict[str, Any]
) -> dict[str, Any]:
    """The edge's schema with this type and these attributes; every property required, no others."""
    schema = copy.deepcopy(edge)
    schema.pop("title", None)
    schema["properties"][type_key] = type_schema
    schema["properties"]["attributes"] = attributes
    schema["required"] = list(schema["properties"])
    schema["additionalProperties"] = False
    return schema


def per_edge(
    predictor: dspy.Predict,
    edges: list[Edge],
    episode: Episode,
    context: CallContext,
) -> list[Edge]:
    """One attribute call per edge whose type declares attributes; other edges cost nothing."""
    filled: list[Edge] = []
    for edge in edges:
        edge_type = episode.edge_type(edge.relationship_type)
        if edge_type is None or not edge_type.attributes:
            filled.append(edge)
            continue
        ask = predicting(
            predictor,
            signature=attributes_signature(predictor.signature, edge_type),
            episode_content=episode.episode_content,
            reference_time=format_utc(episode.reference_time),
            fact=fact_row(edge),
        )
        reply = call_step(STEP_ATTRIBUTES, context, ask)
        if reply is None:
            filled.append(edge)
            continue
        values = reply.attributes.model_dump() if reply.attributes is not None else {}
        filled.append(edge.model_copy(update={"attributes": cap_attributes(values, edge, context)}))
    return filled


_SLOT_EACH: Final = OneEach(
    "attributes", "attributes_mismatch", "the attribute step", "facts", "no attributes set"
)
"""The per-episode attribute call answers one slot per fact."""


def per_episode(
    predictor: dspy.Predict,
    edges: list[Edge],
    episode: Episode,
    context: CallContext,
) -> list[Edge]:
    """One attribute call for every edge whose type declares attributes, one reply slot per edge."""
    targets = [
        (position, edge_type)
        for position, edge in enumerate(edges)
        if (edge_type := episode.edge_type(edge.relationship_type)) is not None and edge_type.attributes
    ]
    if not targets:
        return edges
    facts = [
        {
            "number": number,
            **fact_row(edges[position]),
            "attributes": {attribute.name: attribute.description for attribute in edge_type.attributes},
        }
        for number, (position, edge_type) in enumerate(targets, 1)
    ]
    schemas = slots_schema([edge_type for _, edge_type in targets])
    ask = predicting(
        predictor,
        episode_content=episode.episode_content,
        reference_time=format_utc(episode.reference_time),
        facts=facts,
    )
    slots = answers_each(STEP_ATTRIBUTES, context, ask, schemas, len(targets), _SLOT_EACH)
    if slots is None:
        return edges
    filled = list(edges)
    for (position, edge_type), values in zip(targets, slots, strict=True):
        edge = edges[position]
        filled[position] = edge.model_copy(
            update={"attributes": typed_values(edge_type, values, edge, context)}
        )
    return filled


def from_reply(
    edges: list[Edge], raw: list[ExtractedEdge], episode: Episode, context: CallContext
) -> list[Edge]:
    """The attributes each raw edge carried, on the clean edge made from it.

    Post-processing keeps a raw edge's fact and type (names resolved, a reversed edge flipped, later
    copies dropped), so the clean edge is found by its type and fact; the first raw edge with them wins.
    """
    written: dict[tuple[str, str], dict[str, AttributeValue]] = {}
    for item in raw:
        values = getattr(item, "attributes", None)
        if values:
            key = (to_screaming_snake(item.relationshipType), item.fact.strip())
            written.setdefault(key, values)
    filled: list[Edge] = []
    for edge in edges:
        edge_type = episode.edge_type(edge.relationship_type)
        values = written.get((edge.relationship_type, edge.fact))
        if edge_type is None or not edge_type.attributes or not values:
            filled.append(edge)
            continue
        filled.append(edge.model_copy(update={"attributes": typed_values(edge_type, values, edge, context)}))
    return filled


def typed_values(
    edge_type: EdgeType, values: Any, edge: Edge, context: CallContext
) -> dict[str, AttributeValue]:
    """`values` as `edge_type`'s attributes: its names only, each of its kind (coerced as the per-edge
    reply type coerces it), nulls left out; a name or value that does not fit is dropped with a warning."""
    declared = {attribute.name for attribute in edge_type.attributes}
    given = values if isinstance(values, dict) else {}
    unknown = sorted(set(given) - declared)
    if unknown:
        context.warn(
            _attribute_warning(f"dropped: {', '.join(unknown)} not declared by {edge_type.name}", edge)
        )
    kept = {name: value for name, value in given.items() if name in declared}
    model = attributes_model(edge_type)
    try:
        parsed = model.model_validate(kept)
    except ValidationError as error:
        bad = sorted({str(detail["loc"][0]) for detail in error.errors() if detail["loc"]})
        context.warn(_attribute_warning(f"dropped: {', '.join(bad)} not of the declared kind", edge))
        parsed = model.model_validate({name: value for name, value in kept.items() if name not in bad})
    return cap_attributes(parsed.model_dump(), edge, context)


def _attribute_warning(message: str, edge: Edge) -> ExtractionWarning:
    return ExtractionWarning(code="attribute_dropped", message=message, edge=edge.to_json_dict())


def fact_row(edge: Edge) -> dict[str, str]:
    """An edge as an attribute call shows it: its non-empty fields as text."""
    row = edge.to_json_dict()
    return {key: str(value) for key, value in row.items() if value not in (None, {}, [])}
