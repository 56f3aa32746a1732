"""`ChooseTypes`: a multiple-choice question per edge whose type cannot connect its two entities.

A small model often joins the right two entities under a type that cannot hold between them (MANAGES
from a person to a company). Dropping such an edge loses a right pair; asking again, with only the
types that can connect the two entities as options plus NONE, recovers it for a few generated tokens
(relation extraction as multiple-choice question answering, as QA4RE formulates it). All of an
episode's questions go in one call, and the reply schema gives each answer exactly its own options.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

import dspy

from edgewise.signatures.schema import ReplySchemas

NONE_OF_THEM: Final = "NONE"


class ChooseTypes(dspy.Signature):
    """You are an expert fact checker for a knowledge graph.

    Each numbered QUESTION names two ENTITIES, a fact about them, and the relationship types that can
    hold between them. Answer each question, in order, with the option that the CURRENT EPISODE states
    or unambiguously implies between the two, read as in RELATIONSHIP TYPES; answer NONE when it
    states none of them.
    """

    relationship_types: dict[str, str] = dspy.InputField(
        desc="RELATIONSHIP TYPES: name -> meaning of each relationship type"
    )
    previous_episodes: list[str] = dspy.InputField(desc="PREVIOUS EPISODES, oldest first; context only")
    episode_content: str = dspy.InputField(desc="CURRENT EPISODE")
    questions: list[str] = dspy.InputField(
        desc="QUESTIONS, numbered: 'N. SOURCE -> TARGET: fact | options: TYPE_A, TYPE_B, NONE'"
    )
    answers: list[str] = dspy.OutputField(desc="one option per question, in order: a listed type or NONE")


def answers_schema(options: Sequence[Sequence[str]]) -> ReplySchemas:
    """The reply schema whose `answers` has one slot per question, each one of its own options (and
    NONE), for `reply_schemas`."""
    slots = [{"type": "string", "enum": [*choices, NONE_OF_THEM]} for choices in options]
    return {
        ("answers",): {"type": "array", "prefixItems": slots, "minItems": len(slots), "maxItems": len(slots)}
    }
