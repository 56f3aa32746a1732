"""The one input contract: `Episode`, read the same way from a JSONL line, a Ray row, an HTTP request
and Python, the seed's shapes included (plain-string nodes, the `edgeTypes` object, object previous
episodes). An unknown field is kept in `ignored_fields`, never dropped silently.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Annotated, Any, ClassVar, Final

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from edgewise.domain.types import CamelModel, EdgeType, EdgeTypeFields, Entity, EntityType, Text, as_utc


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


def _entity_types_as_list(value: Any) -> Any:
    """Entity types as a list of names, of `{name, description}` objects, or an object name -> description."""
    if isinstance(value, dict):
        return [{"name": name, "description": description} for name, description in value.items()]
    if isinstance(value, list):
        return [{"name": item} if isinstance(item, str) else item for item in value]
    return value


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
EntityTypeList = Annotated[
    list[EntityType],
    BeforeValidator(
        _entity_types_as_list,
        json_schema_input_type=list[EntityType | Annotated[str, Field(min_length=1)]]
        | dict[Annotated[str, Field(min_length=1)], str],
    ),
]
CustomPrompt = Annotated[
    Text, BeforeValidator(lambda value: "" if value is None else value, json_schema_input_type=str | None)
]
ReferenceTime = Annotated[datetime, BeforeValidator(_time_text, json_schema_input_type=datetime)]
ENTITY_LISTS = ("entities", "nodes")
"""The two names of an episode's entity list: edgewise's own, and the seed's."""
NO_ENTITIES = "no entities: edges need at least two entities to connect"
FIND_ENTITIES_HINT = (
    "or run a program with an entity step, which finds them in the text "
    "(edgewise extract --find-entities, ProgramOptions(entity_step=True))"
)
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
    return f'{NO_ENTITIES}; give them as "{field}": [{{"name": ...}}, ...]{hint}, {FIND_ENTITIES_HINT}'


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


class Episode(CamelModel):
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
    entity_types: EntityTypeList = Field(
        default_factory=list,
        exclude_if=lambda value: (
            not value
        ),  # an episode written out (a data line) stays as it was without them
        description="the types an entity step may give the entities it finds (names, or name -> meaning); "
        "unused when the entities are given",
    )

    entities_required: ClassVar[bool] = True
    """An `Episode` must list its entities; a `TextEpisode`, read for a program with an entity step, may not."""

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
        if not episode.entities and cls.entities_required:
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
        return as_utc(value)

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


class TextEpisode(Episode):
    """An episode that may come as text alone: a program with an entity step finds its entities.

    Everything else is `Episode`'s contract; given entities are read, and never replaced, as there.
    """

    model_config = ConfigDict(json_schema_extra=None)

    entities_required: ClassVar[bool] = False


def withheld(episode: Episode) -> TextEpisode:
    """`episode` as text alone: its entities withheld, everything else as given (the entity types an
    entity step is shown then come from the relationship types' signatures)."""
    return TextEpisode.model_validate(episode.model_dump(by_alias=True, exclude={"entities"}))


def episode_model(finds_entities: bool) -> type[Episode]:
    """The input contract of a program: `TextEpisode` when it has an entity step, else `Episode`."""
    return TextEpisode if finds_entities else Episode


LABELED_FIELDS: Final = frozenset(
    {
        "id",
        "source",
        "license",
        "exhaustive",
        "exhaustiveEntities",
        "exhaustive_entities",
        "edges",
        "injections",
    }
)
"""The fields `gold.LabeledEpisode` adds to an episode (tests/signatures/test_signatures.py checks that they agree):
named here, since the labeled episode is built on this one."""


def _unknown_fields(model: type[BaseModel], data: Mapping[str, Any]) -> list[str]:
    """The keys of `data` (and of its entity objects) that `model` and `Entity` do not read.

    A labeled episode's fields are known in an input that has gold `edges` (see `Episode`).
    """
    known = _field_names(model) | (LABELED_FIELDS if "edges" in data else frozenset())
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
