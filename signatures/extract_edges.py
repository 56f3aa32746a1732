"""`ExtractEdges`: the seed's `edge` prompt as a DSPy signature.

The docstring is the instruction an optimizer tunes, so it carries every rule of the seed (task,
extraction rules, datetime rules) word for word; `tests/test_signatures.py` keeps it that way.
"""

from __future__ import annotations

import dspy

from edgewise.signatures.types import ExtractedEdge


class ExtractEdges(dspy.Signature):
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

    previous_episodes: list[str] = dspy.InputField(
        desc="PREVIOUS EPISODES, oldest first; only for disambiguating references and continuity"
    )
    episode_content: str = dspy.InputField(desc="CURRENT EPISODE: the text to extract facts from")
    entities: list[dict[str, str]] = dspy.InputField(
        desc="ENTITIES: the only names allowed as sourceEntityName and targetEntityName"
    )
    reference_time: str = dspy.InputField(
        desc="REFERENCE_TIME, ISO 8601 (UTC); used to resolve relative time mentions"
    )
    relationship_types: dict[str, str] = dspy.InputField(
        desc="RELATIONSHIP TYPES: name -> meaning of the most important relationship types"
    )
    custom_prompt: str = dspy.InputField(desc="extra instructions from the caller; may be empty")
    missing_facts: list[str] = dspy.InputField(
        desc="facts a reviewer found missing from an earlier pass; also extract edges for these "
        "(empty on the first pass)"
    )
    edges: list[ExtractedEdge] = dspy.OutputField(
        desc="the extracted edges, each fact once; an empty list when the episode states no fact between "
        "two ENTITIES"
    )
