"""`ExtractEntities`: the entity step, a fourth signature beside the seed's three.

The seed's prompts take the episode's entities as given, as Graphiti gives them: its `extract_nodes`
step runs first and the edge prompt joins only those nodes. Most text-to-graph users have no such
list. This signature is the step that makes one, shaped after Graphiti's `extract_nodes` prompt for
messages (the speaker first, explicit mentions only, no pronouns, abstract concepts, bare generic
nouns or dates, the most specific form of a name). Like the other signatures, its docstring is the
instruction an optimizer tunes.
"""

from __future__ import annotations

import dspy
from pydantic import BaseModel, ConfigDict, Field


# Its docstring becomes the JSON schema's description in every prompt, so it stays one short line.
class ExtractedEntity(BaseModel):
    """An entity as the model writes it."""

    model_config = ConfigDict(populate_by_name=True)

    name: str = Field(description="the entity's name as the CURRENT EPISODE writes it, its fullest form")
    type: str | None = Field(default=None, description="one of ENTITY TYPES, or null when none fits")


class ExtractEntities(dspy.Signature):
    """You are an entity extraction specialist: you find the entity nodes of a knowledge graph in text.

    # TASK
    Extract the entities that are explicitly mentioned in the CURRENT EPISODE and that a fact between
    two of them could join: people, organizations, places, products, works, events and other
    specific, concrete things.

    # RULES
    1. Extract the speaker of each line (the name before the colon in a dialogue line) as an entity.
    2. Extract each entity once, under its most specific and complete name in the CURRENT EPISODE
       (full names when given, "road cycling" rather than "cycling").
    3. Never extract pronouns, abstract concepts or feelings, generic nouns ("day", "work", "people"),
       dates, times or amounts.
    4. A bare relational term is qualified by its possessor: "Nisha's dad", not "dad".
    5. Entities mentioned only in the PREVIOUS EPISODES are not extracted; use them only to resolve
       references.
    6. Give each entity the ENTITY TYPE that fits it best, or null when none does; when ENTITY TYPES
       is empty, name a short type in PascalCase (Person, Organization, Location).
    7. When in doubt, do not extract.
    """

    entity_types: dict[str, str] = dspy.InputField(
        desc="ENTITY TYPES: name -> meaning of the types an entity may have; may be empty"
    )
    custom_prompt: str = dspy.InputField(desc="extra instructions from the caller; may be empty")
    previous_episodes: list[str] = dspy.InputField(
        desc="PREVIOUS EPISODES, oldest first; only for resolving references"
    )
    reference_time: str = dspy.InputField(desc="REFERENCE_TIME, ISO 8601 (UTC)")
    episode_content: str = dspy.InputField(desc="CURRENT EPISODE: the text to find entities in")
    entities: list[ExtractedEntity] = dspy.OutputField(
        desc="the entities of the CURRENT EPISODE, each once; an empty list when it names none"
    )
