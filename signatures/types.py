"""The typed boundary of edgewise: what an episode is and what an edge is.

Field names on the wire are the seed's camelCase (`relationshipType`, `validAt`, ...) so that a result
serializes exactly to the seed's `{"edges": [...]}` shape; Python code uses snake_case attributes.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    create_model,
    field_serializer,
    field_validator,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import InitErrorDetails, PydanticCustomError

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
    try:
        return value.astimezone(UTC)
    except OverflowError:  # 0001-01-01T00:00:00+13:59 is in year 0 in UTC
        raise ValueError(f"{value.isoformat()} is outside the years 1-9999 in UTC") from None


class Entity(_CamelModel):
    """A node already known for the episode; edges may only connect these.

    Other fields of a node (the seed's nodes carry `uuid`, `labels`, `attributes`, ...) are ignored,
    and the episode lists them in `ignored_fields`, so that a memory system's own node objects can
    be passed as they are.
    """

    model_config = ConfigDict(extra="ignore")

    name: Text = Field(min_length=1)
    type: Text | None = None
    summary: Text | None = None


class EdgeAttribute(_CamelModel):
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


class EdgeType(_CamelModel):
    """A relationship type the caller cares about, with its meaning and optional attributes.

    `source_types` / `target_types` are its signature: the entity types its source and target may
    have (None: any). A memory system keeps one schema for its whole graph, so a signature may name
    types that no entity of this episode has; where it fits no pair of the episode, the type simply
    never applies (`edgewise.signatures.file_types` finds the names no entity of a whole file has).
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
    __base__=_CamelModel,
    __doc__="An edge type's fields other than its name: a value of the seed's `edgeTypes` object.",
    **{name: (field.annotation, field) for name, field in EdgeType.model_fields.items() if name != "name"},
)

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


class SpanEdge(BaseModel):
    """An edge as the model writes it, with the number of the sentence that states it."""

    model_config = ConfigDict(populate_by_name=True)

    relationshipType: _RelationType
    sourceEntityName: _SubjectName
    targetEntityName: _ObjectName
    sentence: int = Field(description="the number of the CURRENT EPISODE's sentence that states the fact")
    validAt: _UtcInstant = None
    invalidAt: _UtcInstant = None


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


def _name_as_entity(value: Any) -> Any:
    """The seed's `nodes` may be plain names; a name means `{"name": ...}`."""
    return {"name": value} if isinstance(value, str) else value


def _object_as_text(value: Any) -> Any:
    """A previous episode given as an object is shown to the model as its JSON, as the seed does."""
    return json.dumps(value, ensure_ascii=False) if isinstance(value, dict | list) else value


def _edge_types_as_list(value: Any) -> Any:
    """The seed's `edgeTypes` object (name -> description, or name -> EdgeType fields) as a list."""
    if not isinstance(value, dict):
        return value
    return [
        {"name": name, **spec} if isinstance(spec, dict) else {"name": name, "description": spec}
        for name, spec in value.items()
    ]


def _time_text(value: Any) -> Any:
    """REFERENCE_TIME is an ISO 8601 string (or a datetime in Python), never a bare number.

    Pydantic would read a number as seconds since 1970; in a JSON episode that is almost always a
    mistake (a year, milliseconds), so it is refused with the format that is expected.
    """
    if isinstance(value, bool | int | float) or (isinstance(value, str) and value.strip().isdigit()):
        raise ValueError("expected an ISO 8601 time string such as 2025-04-30T00:00:00Z, not a number")
    return value


EntityInput = Annotated[
    Entity,
    BeforeValidator(_name_as_entity, json_schema_input_type=Entity | Annotated[str, Field(min_length=1)]),
]
PreviousEpisode = Annotated[
    Text, BeforeValidator(_object_as_text, json_schema_input_type=str | dict[str, Any] | list[Any])
]
EdgeTypeList = Annotated[
    list[EdgeType],
    BeforeValidator(
        _edge_types_as_list,
        json_schema_input_type=list[EdgeType]
        | dict[Annotated[str, Field(min_length=1)], str | EdgeTypeFields],
    ),
]
CustomPrompt = Annotated[
    Text, BeforeValidator(lambda value: "" if value is None else value, json_schema_input_type=str | None)
]
ReferenceTime = Annotated[datetime, BeforeValidator(_time_text, json_schema_input_type=datetime)]
ENTITY_LISTS = ("entities", "nodes")
"""The two names of an episode's entity list: edgewise's own, and the seed's."""
NO_ENTITIES = "no entities: edges need at least two entities to connect"
_CLOSE_MATCH_CUTOFF = 0.7


def _entities_given(data: Mapping[str, Any]) -> str:
    """Which entity list an input names: the one with entities, else the one given, else `entities`."""
    given = [name for name in ENTITY_LISTS if name in data]
    full = [name for name in given if data.get(name)]
    return (full or given or ["entities"])[0]


def no_entities_message(field: str, unknown: Iterable[str] = ()) -> str:
    """Why an episode without entities is refused, and the unknown field that was probably meant.

    `field` is the name the input used for the list (`entities`, or the seed's `nodes`); a given
    key close to either name ("entites", "node") is pointed out.
    """
    meant = [
        key
        for key in sorted(unknown)
        if difflib.get_close_matches(key.casefold(), ENTITY_LISTS, n=1, cutoff=_CLOSE_MATCH_CUTOFF)
    ]
    hint = (
        f' (this episode has {", ".join(repr(key) for key in meant)}; the list is named "{field}")'
        if meant
        else ""
    )
    return f'{NO_ENTITIES}; give them as "{field}": [{{"name": ...}}, ...]{hint}'


# A JSON Schema for the two rules between the lists: at least one is non-empty, and not both.
_ENTITY_LIST_RULES: dict[str, Any] = {
    "anyOf": [
        {"required": [name], "properties": {name: {"type": "array", "minItems": 1}}} for name in ENTITY_LISTS
    ],
    "not": {
        "required": list(ENTITY_LISTS),
        "properties": {name: {"type": "array", "minItems": 1} for name in ENTITY_LISTS},
    },
}


class Episode(_CamelModel):
    """The input of one extraction: the seed's context object (episode, history, entities, time, types).

    Every path (Python, a JSONL line, a Ray row, an HTTP request) validates this one model, so the
    seed's own context objects are accepted everywhere, in the seed's shapes:

    - the entities as `entities` or as the seed's `nodes` (an empty list beside a full one is not an
      error, two full ones are), each a node object or a plain name;
    - `edgeTypes` as a list of EdgeType objects or as the seed's object (name -> description, or
      name -> the other EdgeType fields), `sourceTypes` / `targetTypes` included;
    - previous episodes as text, or as objects shown to the model as their JSON.

    An episode without entities is refused: edges join two of the episode's entities, so it could
    only ever "succeed" with no edges, which hides a misspelled or misnamed list. Unknown fields are
    not errors; they are listed in `ignored_fields` and reported as an `ignored_field` warning. An
    input with gold `edges` is a labeled episode (a line of a labeled file, an input like any
    other): its own fields (`id`, `source`, `license`, `exhaustive`, `edges`: `LabeledEpisode`) are
    known there, and extraction does not read its gold.
    """

    model_config = ConfigDict(extra="ignore", json_schema_extra=_ENTITY_LIST_RULES)

    episode_content: Text
    previous_episodes: list[PreviousEpisode] = Field(default_factory=list)
    entities: list[EntityInput] = Field(
        default_factory=list, description="the entities edges may connect: node objects or plain names"
    )
    nodes: list[EntityInput] | None = Field(
        default=None, exclude=True, description="the seed's name for `entities`; give one of the two"
    )
    reference_time: ReferenceTime
    edge_types: EdgeTypeList = Field(default_factory=list)
    custom_prompt: CustomPrompt = ""

    _ignored_fields: tuple[str, ...] = PrivateAttr(default=())
    _entities_field: str = PrivateAttr(default="entities")

    @model_validator(mode="wrap")
    @classmethod
    def _seed_context(cls, data: Any, handler: Any) -> Episode:
        """Validate, then take the seed's `nodes` as the entities and note the fields that were ignored."""
        episode = handler(data)
        if not isinstance(data, Mapping):
            return episode
        if episode.nodes:
            episode.entities = episode.nodes
        episode.nodes = None  # read as the entities; never kept beside them
        unknown = _unknown_fields(cls, data)
        field = _entities_given(data)
        if not episode.entities:
            error = PydanticCustomError("no_entities", no_entities_message(field, unknown))
            raise ValidationError.from_exception_data(
                cls.__name__, [InitErrorDetails(type=error, loc=(field,), input=data)]
            )
        episode._ignored_fields = tuple(unknown)
        episode._entities_field = field
        return episode

    @field_validator("nodes")
    @classmethod
    def _one_entity_list(cls, value: list[Entity] | None, info: ValidationInfo) -> list[Entity] | None:
        if value and info.data.get("entities"):
            raise ValueError("give `nodes` or `entities`, not both (an empty list beside the other is fine)")
        return value

    @field_validator("reference_time")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return _as_utc(value)

    @property
    def ignored_fields(self) -> tuple[str, ...]:
        """The input's fields this episode did not read (`tags`, `nodes[0].uuid`), in input order."""
        return self._ignored_fields

    @property
    def entities_field(self) -> str:
        """The name the input gave its entity list (`entities`, or the seed's `nodes`), for errors."""
        return self._entities_field

    def edge_type(self, name: str) -> EdgeType | None:
        return next((t for t in self.edge_types if t.name == name), None)


def _unknown_fields(model: type[BaseModel], data: Mapping[str, Any]) -> list[str]:
    """The keys of `data` (and of its entity objects) that `model` and `Entity` do not read.

    A labeled episode's fields are known in an input that has gold `edges` (see `Episode`).
    """
    known = _field_names(model) | (_field_names(LabeledEpisode) if "edges" in data else frozenset())
    unknown = [str(key) for key in data if key not in known]
    entity_fields = _field_names(Entity)
    for name in ENTITY_LISTS:
        items = data.get(name)
        for index, item in enumerate(items if isinstance(items, list) else []):
            if isinstance(item, Mapping):
                unknown += [f"{name}[{index}].{key}" for key in item if key not in entity_fields]
    return unknown


def _field_names(model: type[BaseModel]) -> frozenset[str]:
    return frozenset(
        alias for name, field in model.model_fields.items() for alias in (name, field.alias) if alias
    )


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

    model_config = ConfigDict(extra="forbid")

    id: str
    source: str
    license: str
    exhaustive: bool = True
    edges: list[GoldEdge] = Field(default_factory=list)

    def episode(self) -> Episode:
        return Episode.model_validate(self.model_dump(include=set(Episode.model_fields) - {"nodes"}))
