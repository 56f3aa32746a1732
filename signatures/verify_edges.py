"""`VerifyEdges`: the precision step, which asks whether the current episode states each extracted edge.

CORE's extraction ends in such a filter; on chat a small model writes several edges per gold edge,
most of them not stated. The reply is one yes/no per edge, in order (`verdicts_schema` fixes its
length in the reply's JSON schema, so a decoding grammar writes exactly one verdict per edge).
"""

from __future__ import annotations

import dspy

from edgewise.signatures.schema import ReplySchemas


class VerifyEdges(dspy.Signature):
    """You are a careful fact checker for a knowledge graph.

    For each numbered CANDIDATE FACT, decide whether the CURRENT EPISODE clearly states it or
    unambiguously implies it, with the same two entities in the same roles and a relationship of
    the given type. Answer false for facts that are only possible, guessed, about other entities,
    or stated only in the PREVIOUS EPISODES. Give exactly one answer per candidate, in order.
    """

    previous_episodes: list[str] = dspy.InputField(desc="PREVIOUS EPISODES, oldest first; context only")
    episode_content: str = dspy.InputField(desc="CURRENT EPISODE")
    candidate_facts: list[str] = dspy.InputField(
        desc="CANDIDATE FACTS, numbered: 'N. SOURCE -RELATIONSHIP_TYPE-> TARGET: fact'"
    )
    stated: list[bool] = dspy.OutputField(
        desc="one answer per candidate fact, in order: true if the CURRENT EPISODE states it, else false"
    )


def verdicts_schema(count: int) -> ReplySchemas:
    """The reply schema whose `stated` list has exactly `count` items, for `reply_schemas`."""
    return {
        ("stated",): {"type": "array", "items": {"type": "boolean"}, "minItems": count, "maxItems": count}
    }
