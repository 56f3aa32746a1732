"""`ExtractEdges`: the seed's `edge` prompt as a DSPy signature.

The docstring is the instruction an optimizer tunes, so it carries every rule of the seed (task,
extraction rules, datetime rules) word for word; `tests/signatures/test_signatures.py` keeps it that way.
"""

from __future__ import annotations

import functools
from typing import Final, Literal

import dspy
from pydantic import BaseModel

from edgewise.domain.types import Edge, format_utc
from edgewise.signatures.replies import CompactEdge, CompactEdgeTextDates, ExtractedEdge, SpanEdge
from edgewise.signatures.schema import KEPT_SIGNATURES


class EpisodeInputs(dspy.Signature):
    """The seed's extraction inputs: the episode, its context, its entities and the types offered.

    Every formulation of the extraction (`ExtractEdges`, `LabelPairs`, `ExtractEdgesByEntity`) reads
    these same inputs; each subclass adds its reply and its own instructions.
    """

    # Inputs run from what a user's episodes share to what each one has alone: the request is then a
    # long common prefix (instructions, demos, types, the conversation so far) that llama-server's
    # prompt cache computes once, and only the tail is new for each episode.
    relationship_types: dict[str, str] = dspy.InputField(
        desc="RELATIONSHIP TYPES: name -> meaning of the most important relationship types"
    )
    custom_prompt: str = dspy.InputField(desc="extra instructions from the caller; may be empty")
    previous_episodes: list[str] = dspy.InputField(
        desc="PREVIOUS EPISODES, oldest first; only for disambiguating references and continuity"
    )
    entities: list[dict[str, str]] = dspy.InputField(
        desc="ENTITIES: the only names allowed as sourceEntityName and targetEntityName"
    )
    reference_time: str = dspy.InputField(
        desc="REFERENCE_TIME, ISO 8601 (UTC); used to resolve relative time mentions"
    )
    episode_content: str = dspy.InputField(desc="CURRENT EPISODE: the text to extract facts from")


class ExtractEdges(EpisodeInputs):
    """You are an expert fact extractor that extracts fact triples from text.
    1. Extracted fact triples should also be extracted with relevant date information.
    2. Treat the CURRENT TIME as the time the CURRENT EPISODE was created. All temporal information
    should be extracted relative to this time.

    # TASK
    Extract all factual relationships between the given ENTITIES based on the CURRENT EPISODE.
    Only extract facts that:
    - involve two DISTINCT ENTITIES from the ENTITIES list,
    - are clearly stated or unambiguously implied in the CURRENT EPISODE,
    and can be represented as edges in a knowledge graph.
    - The RELATIONSHIP TYPES provide a list of the most important types of relationships, make sure to
    extract any facts that could be classified into one of the provided relationship types

    You may use information from the PREVIOUS EPISODES only to disambiguate references or support
    continuity.

    # EXTRACTION RULES
    1. Only emit facts where both the subject and object match entities in ENTITIES.
    2. Each fact must involve two distinct entities.
    3. Use a SCREAMING_SNAKE_CASE string as the relationshipType (e.g., FOUNDED, WORKS_AT).
    4. Do not emit duplicate or semantically redundant facts.
    5. The fact should quote or closely paraphrase the original source sentence(s).
    6. Use REFERENCE_TIME to resolve vague or relative temporal expressions (e.g., "last week").
    7. Do not hallucinate or infer temporal bounds from unrelated events.

    # DATETIME RULES
    - Use ISO 8601 with "Z" suffix (UTC) (e.g., 2025-04-30T00:00:00Z).
    - If the fact is ongoing (present tense), set validAt to REFERENCE_TIME.
    - If a change/termination is expressed, set invalidAt to the relevant timestamp.
    - Leave both fields null if no explicit or resolvable time is stated.
    - If only a date is mentioned (no time), assume 00:00:00.
    - If only a year is mentioned, use January 1st at 00:00:00.
    """

    edges: list[ExtractedEdge] = dspy.OutputField(
        desc="the extracted edges, each fact once; an empty list when the episode states no fact between "
        "two ENTITIES"
    )


MISSING_FACTS_FIELD: Final = "missing_facts"


@functools.lru_cache(maxsize=KEPT_SIGNATURES)
def with_missing_facts(signature: type[dspy.Signature]) -> type[dspy.Signature]:
    """`signature` (possibly tuned) plus the reviewer's hints, for a re-extraction call only.

    The first pass has nothing to say here, so its signature has no such field (as DSPy's `Refine`
    adds its hint field only when there is a hint); tuned instructions and demos carry over. Made
    once per signature, not per call.
    """
    return signature.append(
        MISSING_FACTS_FIELD,
        dspy.InputField(
            desc="facts a reviewer found missing from an earlier pass; also extract edges for these"
        ),
        type_=list[str],
    )


OutputShape = Literal["seed", "compact", "compact-text-dates"]
OUTPUT_SHAPES: Final[tuple[OutputShape, ...]] = ("seed", "compact", "compact-text-dates")
_REPLY_EDGE: Final[dict[str, type[BaseModel]]] = {
    "seed": ExtractedEdge,
    "compact": CompactEdge,
    "compact-text-dates": CompactEdgeTextDates,
}


SEED_INPUT_ORDER: Final = (
    "previous_episodes", "episode_content", "entities", "reference_time", "relationship_types", "custom_prompt",
)  # fmt: skip
"""The seed prompt's order of the context: the conversation and the episode first, types last."""


def in_seed_order(signature: type[dspy.Signature]) -> type[dspy.Signature]:
    """`signature` with its inputs in `SEED_INPUT_ORDER` (others after them), outputs unchanged.

    The default order puts what episodes share first, so that a server's prompt cache reuses it; the
    seed's order puts the episode before the entities and types, which a small model may read better.
    """
    inputs = signature.input_fields
    order = [name for name in SEED_INPUT_ORDER if name in inputs] + [
        name for name in inputs if name not in SEED_INPUT_ORDER
    ]
    fields = {name: inputs[name] for name in order} | dict(signature.output_fields)
    return dspy.Signature(
        {name: (field.annotation, field) for name, field in fields.items()}, signature.instructions
    )


_SPAN_TASK: Final = (
    "\n\n# SENTENCES\nThe CURRENT EPISODE's sentences are numbered [1], [2], ... Instead of writing each "
    "fact, give the number of the sentence that states it: that sentence is the fact."
)


def span_signature(signature: type[dspy.Signature]) -> type[dspy.Signature]:
    """`signature` whose edges name the sentence that states them instead of writing the fact."""
    return (
        signature.with_instructions(signature.instructions + _SPAN_TASK)
        .with_updated_fields(
            "episode_content", desc="CURRENT EPISODE: the text to extract facts from, its sentences numbered"
        )
        .with_updated_fields("edges", type_=list[SpanEdge])
    )


def extract_signature(
    shape: OutputShape, input_order: str = "shared-first", *, fact_span: bool = False
) -> type[dspy.Signature]:
    """`ExtractEdges` with the reply shape the model writes, its inputs in `input_order`; with
    `fact_span`, each edge names its sentence instead of writing its fact (the seed shape only)."""
    if fact_span and shape != "seed":
        raise ValueError("a fact span replaces the seed shape's fact; other reply shapes have none")
    signature = span_signature(ExtractEdges) if fact_span else _shaped_signature(shape)
    return in_seed_order(signature) if input_order == "seed" else signature


def _shaped_signature(shape: OutputShape) -> type[dspy.Signature]:
    """`ExtractEdges` with the reply shape the model writes.

    `seed`: the seed's edge objects (camelCase keys, ISO 8601 instants). `compact`: subject, type,
    object, fact and day-precision dates under short keys, which is fewer generated tokens per edge
    under a decoding grammar; the module maps it back to the seed's shape. `compact-text-dates`: the
    same, but a date may also be the text's own time words ("in 1964", "last May"), which
    post-processing resolves against REFERENCE_TIME, so that the model copies instead of computing.
    Same instructions for all.
    """
    if shape == "seed":
        return ExtractEdges
    if shape in _REPLY_EDGE:
        return ExtractEdges.with_updated_fields("edges", type_=list[_REPLY_EDGE[shape]])
    raise ValueError(f"unknown output shape {shape!r}; known: {', '.join(OUTPUT_SHAPES)}")


def reply_edge(edge: Edge, shape: OutputShape) -> BaseModel:
    """`edge` written as the model would write it in `shape` (a gold edge shown as a demo)."""
    if shape == "seed":
        return ExtractedEdge(
            relationshipType=edge.relationship_type,
            sourceEntityName=edge.source_entity_name,
            targetEntityName=edge.target_entity_name,
            fact=edge.fact,
            validAt=format_utc(edge.valid_at) if edge.valid_at else None,
            invalidAt=format_utc(edge.invalid_at) if edge.invalid_at else None,
        )
    day = {
        name: value.date().isoformat() if value else None
        for name, value in (("validAt", edge.valid_at), ("invalidAt", edge.invalid_at))
    }
    return _REPLY_EDGE[shape](
        source=edge.source_entity_name,
        type=edge.relationship_type,
        target=edge.target_entity_name,
        fact=edge.fact,
        **day,
    )
