"""`LabelPairs`: the pairwise formulation of edge extraction (DialogRE, DocRED).

Instead of writing an edge list from scratch, the model is shown every candidate pair of entities and
labels each one with a relationship type or NONE, then writes the fact and dates of the pairs it
keeps, in the same reply. A small model that never thinks of a pair when writing a list still has to
answer for it here. The seed's extraction and datetime rules apply unchanged.
"""

from __future__ import annotations

from typing import Final

import dspy
from pydantic import BaseModel, ConfigDict, Field

from edgewise.signatures.extract_edges import EpisodeInputs, ExtractEdges

NO_RELATION: Final = "NONE"


class PairLabel(BaseModel):
    """One candidate pair as the model labels it: a type, or NONE with nothing else."""

    model_config = ConfigDict(populate_by_name=True)

    pair: str = Field(description="the candidate pair, as listed")
    relationshipType: str = Field(description=f"SCREAMING_SNAKE_CASE relationship type, or {NO_RELATION}")
    sourceEntityName: str = Field(default="", description="which of the two is the subject")
    fact: str = Field(default="", description="one short sentence quoting or closely paraphrasing the source")
    validAt: str | None = Field(default=None, description='ISO 8601 UTC with "Z", or null')
    invalidAt: str | None = Field(default=None, description='ISO 8601 UTC with "Z", or null')


_PAIR_TASK: Final = """
    # PAIRS
    CANDIDATE PAIRS lists pairs of ENTITIES, one per line as "A | B". Answer every pair, in order:
    - relationshipType NONE when the CURRENT EPISODE states no fact between the two;
    - otherwise the relationship type of the fact, sourceEntityName (which of the two is the subject:
      for PARENT_OF the parent, for WORKS_AT the person), the fact and its dates.
    """


class LabelPairs(EpisodeInputs):
    __doc__ = (ExtractEdges.__doc__ or "") + _PAIR_TASK

    candidate_pairs: list[str] = dspy.InputField(desc="CANDIDATE PAIRS: 'A | B', one per pair of ENTITIES")
    pairs: list[PairLabel] = dspy.OutputField(desc="one label per candidate pair, in the listed order")
