"""The shapes a model writes its edges in, each field described once in the prompt's words.

Kept apart from `Edge` so that a model's "2021" or "last May" reaches post-processing (which
normalizes or rejects it with a warning) instead of failing the whole reply's validation.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from edgewise.domain.types import format_utc

# The fields every reply shape asks for, each described once: the descriptions are the prompt's words.
_RelationType = Annotated[str, Field(description="SCREAMING_SNAKE_CASE relationship type, e.g. WORKS_AT")]
_SubjectName = Annotated[str, Field(description="exact name of the subject entity from ENTITIES")]
_ObjectName = Annotated[str, Field(description="exact name of the object entity from ENTITIES")]
_Fact = Annotated[
    str, Field(description="the fact: one short sentence quoting or closely paraphrasing the source")
]
_UtcInstant = Annotated[str | None, Field(description='ISO 8601 UTC with "Z", or null')]


# Its docstring becomes the JSON schema's description in every prompt, so it stays one short line.
class ExtractedEdge(BaseModel):
    """An edge as the model writes it."""

    model_config = ConfigDict(populate_by_name=True)

    relationshipType: _RelationType
    sourceEntityName: _SubjectName
    targetEntityName: _ObjectName
    fact: _Fact
    validAt: _UtcInstant = None
    invalidAt: _UtcInstant = None


class CompactEdge(BaseModel):
    """An edge as the model writes it: subject, relation, object, the fact, then its dates."""

    source: _SubjectName
    type: _RelationType
    target: _ObjectName
    fact: _Fact
    validAt: str | None = Field(default=None, description="date it became true, YYYY-MM-DD (UTC), or null")
    invalidAt: str | None = Field(default=None, description="date it stopped being true, YYYY-MM-DD, or null")

    def extracted(self, reference_time: datetime) -> ExtractedEdge:
        """The seed's field names; a date on REFERENCE_TIME's day is REFERENCE_TIME itself.

        The compact shape asks for dates without a time of day (eight generated tokens fewer per
        date); the seed's rule "ongoing: validAt = REFERENCE_TIME" is then kept exactly by mapping
        the reference day back to the reference instant.
        """
        reference_day = reference_time.astimezone(UTC).date().isoformat()

        def instant(value: str | None) -> str | None:
            return (
                format_utc(reference_time) if value is not None and value.strip() == reference_day else value
            )

        return ExtractedEdge(
            relationshipType=self.type,
            sourceEntityName=self.source,
            targetEntityName=self.target,
            fact=self.fact,
            validAt=instant(self.validAt),
            invalidAt=instant(self.invalidAt),
        )


class CompactEdgeTextDates(CompactEdge):
    """An edge as the model writes it: subject, relation, object, the fact, then when, in words."""

    validAt: str | None = Field(
        default=None,
        description='when it became true: YYYY-MM-DD, or the time words of the text ("in 1964", "last May", '
        '"now" if ongoing), or null',
    )
    invalidAt: str | None = Field(
        default=None,
        description="when it stopped being true: YYYY-MM-DD, or the time words of the text, or null",
    )


class SpanEdge(BaseModel):
    """An edge as the model writes it, with the number of the sentence that states it."""

    model_config = ConfigDict(populate_by_name=True)

    relationshipType: _RelationType
    sourceEntityName: _SubjectName
    targetEntityName: _ObjectName
    sentence: int = Field(description="the number of the CURRENT EPISODE's sentence that states the fact")
    validAt: _UtcInstant = None
    invalidAt: _UtcInstant = None

    def extracted(self, fact: str) -> ExtractedEdge:
        """The seed's edge, with `fact` (the sentence the number names) in place of the number."""
        return ExtractedEdge(**self.model_dump(exclude={"sentence"}), fact=fact)
