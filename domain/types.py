"""The typed boundary of edgewise: what an entity, an edge type and an edge are, and what every
extractor returns.

Field names on the wire are the seed's camelCase (`relationshipType`, `validAt`, ...) so that a result
serializes exactly to the seed's `{"edges": [...]}` shape; Python code uses snake_case attributes.
The episode (the input contract) is `episode.py`, the shapes a model replies in `replies.py`, the
labeled data `gold.py`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    create_model,
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


class CamelModel(BaseModel):
    """Accepts both camelCase (the seed's JSON) and snake_case (Python) and writes camelCase."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    def to_json_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


_Counts = TypeVar("_Counts", bound=BaseModel)


def summed(first: _Counts, second: _Counts) -> _Counts:
    """`first` and `second` added field by field: the sum of two models that hold only counts.

    Every field of the model is added, so a count added to the model later is summed without a
    change here (and a field that is not a number fails loudly instead of being dropped).
    """
    fields = type(first).model_fields
    return type(first)(**{name: getattr(first, name) + getattr(second, name) for name in fields})


def format_utc(value: datetime) -> str:
    """ISO 8601 with the "Z" suffix the seed asks for (2025-04-30T00:00:00Z)."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def as_utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00:00+13:59 is in year 0 in UTC
        raise ValueError(f"{value.isoformat()} is outside the years 1-9999 in UTC") from None


class Entity(CamelModel):
    """A node already known for the episode; edges may only connect these.

    Other fields of a node (the seed's nodes carry `uuid`, `labels`, `attributes`, ...) are ignored,
    and the episode lists them in `ignored_fields`, so that a memory system's own node objects can
    be passed as they are.
    """

    model_config = ConfigDict(extra="ignore")

    name: Text = Field(min_length=1)
    type: Text | None = None
    summary: Text | None = None


class EdgeAttribute(CamelModel):
    """One concrete attribute an edge type declares (never an open `dict[str, Any]`)."""

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    kind: AttributeKind = "string"
    description: str = ""

    def accepts(self, value: object) -> bool:
        """Whether `value` is null or of this attribute's kind (a JSON boolean is not a number)."""
        if value is None:
            return True
        if isinstance(value, bool):
            return self.kind == "boolean"
        if isinstance(value, int):
            return self.kind in ("integer", "number")
        if isinstance(value, float):
            return self.kind == "number"
        return isinstance(value, str) and self.kind == "string"


EntityTypeName = Annotated[Text, Field(min_length=1)]


class EntityType(CamelModel):
    """An entity type an entity step may give an entity it finds, with its meaning (Graphiti's entity
    types, LlamaIndex's `possible_entities`, LangChain's `allowed_nodes`)."""

    name: EntityTypeName
    description: Text = ""


class EdgeType(CamelModel):
    """A relationship type the caller cares about, with its meaning and optional attributes.

    `source_types` / `target_types` are its signature: the entity types its source and target may
    have (None: any). A memory system keeps one schema for its whole graph, so a signature may name
    types that no entity of this episode has; where it fits no pair of the episode, the type simply
    never applies (`edgewise.domain.file_types` finds the names no entity of a whole file has).
    """

    name: Text = Field(min_length=1)
    description: Text = ""
    source_types: list[EntityTypeName] | None = None
    target_types: list[EntityTypeName] | None = None
    symmetric: Annotated[bool, Field(strict=True)] = False  # JSON true/false, not 0, 1 or "yes"
    attributes: list[EdgeAttribute] = Field(default_factory=list)


# The seed's `edgeTypes` object maps a name to its description, or to the other EdgeType fields.
EdgeTypeFields = create_model(
    "EdgeTypeFields",
    __base__=CamelModel,
    __doc__="An edge type's fields other than its name: a value of the seed's `edgeTypes` object.",
    **{name: (field.annotation, field) for name, field in EdgeType.model_fields.items() if name != "name"},
)

AttributeValue = str | int | float | bool | None


class Edge(CamelModel):
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
        return as_utc(value)

    @field_serializer("valid_at", "invalid_at")
    def _write_z(self, value: datetime | None) -> str | None:
        return None if value is None else format_utc(value)


class ExtractionWarning(CamelModel):
    """A change post-processing made to the model's output; nothing is dropped silently."""

    code: str
    message: str
    edge: dict[str, Any] | None = None


class StepUsage(CamelModel):
    """LM usage of one step (extract, reflexion, attributes) of one extraction."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    """Of `prompt_tokens`, those the server reused from its prompt cache (0 where it does not say)."""

    def __add__(self, other: StepUsage) -> StepUsage:
        return summed(self, other)


class ExtractionResult(CamelModel):
    """What every extractor returns: the seed's `{"edges": [...]}` plus warnings and usage."""

    edges: list[Edge] = Field(default_factory=list)
    warnings: list[ExtractionWarning] = Field(default_factory=list)
    usage: dict[str, StepUsage] = Field(default_factory=dict)
    parse_failures: int = 0
    entities: list[Entity] | None = Field(default=None, exclude_if=lambda value: value is None)
    """The entities the program's entity step found, which the edges join; absent (not written) when
    the episode gave its entities, which are never replaced."""

    def total_usage(self) -> StepUsage:
        total = StepUsage()
        for step in self.usage.values():
            total = total + step
        return total
