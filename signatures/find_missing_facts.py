"""`FindMissingFacts`: the seed's `reflexion` prompt as a DSPy signature.

Its answer is fed back to `ExtractEdges` as hints; whether that pays for its calls is measured by
`edgewise bench`, which is why the extractor runs zero reflexion rounds by default.
"""

from __future__ import annotations

import dspy


class FindMissingFacts(dspy.Signature):
    """You are an AI assistant that determines which facts have not been extracted from the given
    context.

    Given the above EPISODES, list of EXTRACTED ENTITIES entities, and list of EXTRACTED FACTS;
    determine if any facts haven't been extracted.
    """

    previous_episodes: list[str] = dspy.InputField(desc="PREVIOUS EPISODES, oldest first")
    episode_content: str = dspy.InputField(desc="CURRENT EPISODE")
    entities: list[dict[str, str]] = dspy.InputField(desc="EXTRACTED ENTITIES")
    extracted_facts: list[str] = dspy.InputField(desc="EXTRACTED FACTS so far")
    missing_facts: list[str] = dspy.OutputField(
        desc="facts between the entities stated in the CURRENT EPISODE that are not among the "
        "EXTRACTED FACTS; an empty list when none are missing"
    )
