"""The typed boundary of edgewise: what an episode is and what an edge is.

Field names on the wire are the seed's camelCase (`relationshipType`, `validAt`, ...) so that a result
serializes exactly to the seed's `{"edges": [...]}` shape; Python code uses snake_case attributes.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_serializer,
    field_validator,
)
from pydantic.alias_generators import to_camel

AttributeKind = Literal["string", "number", "integer", "boolean"]


def _valid_unicode(value: str) -> str:
    """Refuse a lone surrogate (a JSON `\\ud800` escape): no provider accepts it and no UTF-8 output holds it."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as error:
        raise ValueError(
            f"contains \\u{ord(error.object[error.start]):04x}, half of a surrogate pair, which is not valid Unicode"
        ) from None
    return value


Text = Annotated[str, AfterValidator(_valid_unicode)]


class _CamelModel(BaseModel):
    """Accepts both camelCase (the seed's JSON) and snake_case (Python) and writes camelCase."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    def to_json_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


def format_utc(value: datetime) -> str:
    """ISO 8601 with the "Z" suffix the seed asks for (2025-04-30T00:00:00Z)."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _as_utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


class Entity(_CamelModel):
    """A node already known for the episode; edges may only connect these."""

    name: Text = Field(min_length=1)
    type: Text | None = None
    summary: Text | None = None


class EdgeAttribute(_CamelModel):
    """One concrete attribute an edge type declares (never an open `dict[str, Any]`)."""

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    kind: AttributeKind = "string"
    description: str = ""


EntityTypeName = Annotated[Text, Field(min_length=1)]


class EdgeType(_CamelModel):
    """A relationship type the caller cares about, with its meaning and optional attributes.

    `source_types` / `target_types` are its signature: the entity types its source and target may
    have (None: any). Each must be the type of some entity of the episode (checked by `Episode`).
    """

    name: Text = Field(min_length=1)
    description: Text = ""
    source_types: list[EntityTypeName] | None = None
    target_types: list[EntityTypeName] | None = None
    symmetric: bool = False
    attributes: list[EdgeAttribute] = Field(default_factory=list)


AttributeValue = str | int | float | bool | None


# The fields every reply shape asks for, each described once: the descriptions are the prompt's words.
_RelationType = Annotated[str, Field(description="SCREAMING_SNAKE_CASE relationship type, e.g. WORKS_AT")]
_SubjectName = Annotated[str, Field(description="exact name of the subject entity from ENTITIES")]
_ObjectName = Annotated[str, Field(description="exact name of the object entity from ENTITIES")]
_Fact = Annotated[
    str, Field(description="the fact: one short sentence quoting or closely paraphrasing the source")
]
_UtcInstant = Annotated[str | None, Field(description='ISO 8601 UTC with "Z", or null')]


# Kept apart from `Edge` so that a model's "2021" or "last May" reaches post-processing (which
# normalizes or rejects it with a warning) instead of failing the whole reply's validation. Its
# docstring becomes the JSON schema's description in every prompt, so it stays one short line.
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


class Edge(_CamelModel):
    """A temporal graph edge between two entities of the episode."""

    relationship_type: str
    source_entity_name: str
    target_entity_name: str
    fact: str
    valid_at: datetime | None = None
    invalid_at: datetime | None = None
    attributes: dict[str, AttributeValue] = Field(default_factory=dict)

    @field_validator("valid_at", "invalid_at")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return _as_utc(value)

    @field_serializer("valid_at", "invalid_at")
    def _write_z(self, value: datetime | None) -> str | None:
        return None if value is None else format_utc(value)


class Episode(_CamelModel):
    """The input of one extraction: the seed's context (episode, history, entities, time, types)."""

    episode_content: Text
    previous_episodes: list[Text] = Field(default_factory=list)
    entities: list[Entity] = Field(default_factory=list)
    reference_time: datetime
    edge_types: list[EdgeType] = Field(default_factory=list)
    custom_prompt: Text = ""

    @field_validator("reference_time")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return _as_utc(value)

    @field_validator("edge_types")
    @classmethod
    def _known_entity_types(cls, value: list[EdgeType], info: ValidationInfo) -> list[EdgeType]:
        """A signature may name only entity types the episode's entities have (when they have any).

        A misspelt type in `sourceTypes` would otherwise make every edge of that type impossible and
        drop it; an error that names the field is the clearer outcome.
        """
        known = {entity.type for entity in info.data.get("entities") or [] if entity.type}
        if not known:
            return value  # untyped entities: signatures cannot apply, and are not an error
        for index, edge_type in enumerate(value):
            for field, names in (
                ("sourceTypes", edge_type.source_types),
                ("targetTypes", edge_type.target_types),
            ):
                unknown = [name for name in names or [] if name not in known]
                if unknown:
                    raise ValueError(
                        f"edgeTypes[{index}].{field}: {', '.join(map(repr, unknown))} is not the type of any "
                        f"entity of this episode (entity types: {', '.join(sorted(known))})"
                    )
        return value

    def edge_type(self, name: str) -> EdgeType | None:
        return next((t for t in self.edge_types if t.name == name), None)


class ExtractionWarning(_CamelModel):
    """A change post-processing made to the model's output; nothing is dropped silently."""

    code: str
    message: str
    edge: dict[str, Any] | None = None


class StepUsage(_CamelModel):
    """LM usage of one step (extract, reflexion, attributes) of one extraction."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    """Of `prompt_tokens`, those the server reused from its prompt cache (0 where it does not say)."""

    def __add__(self, other: StepUsage) -> StepUsage:
        return StepUsage(
            calls=self.calls + other.calls,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            cached_prompt_tokens=self.cached_prompt_tokens + other.cached_prompt_tokens,
        )


class ExtractionResult(_CamelModel):
    """What every extractor returns: the seed's `{"edges": [...]}` plus warnings and usage."""

    edges: list[Edge] = Field(default_factory=list)
    warnings: list[ExtractionWarning] = Field(default_factory=list)
    usage: dict[str, StepUsage] = Field(default_factory=dict)
    parse_failures: int = 0

    def total_usage(self) -> StepUsage:
        total = StepUsage()
        for step in self.usage.values():
            total = total + step
        return total


Granularity = Literal["year", "month", "day", "instant"]


class GoldEdge(Edge):
    """A labeled edge: other acceptable type names and how precisely each date is known."""

    aliases: list[str] = Field(default_factory=list)
    valid_at_granularity: Granularity | None = None
    invalid_at_granularity: Granularity | None = None


class LabeledEpisode(Episode):
    """One line of `data/episodes/*.jsonl`: an episode with its gold edges.

    `exhaustive` is false for sources that label only some facts; the metric then forgives
    predictions it cannot judge (see `edgewise.eval`).
    """

    id: str
    source: str
    license: str
    exhaustive: bool = True
    edges: list[GoldEdge] = Field(default_factory=list)

    def episode(self) -> Episode:
        return Episode.model_validate(self.model_dump(include=set(Episode.model_fields)))
