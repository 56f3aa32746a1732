"""The service's request and response bodies beside `Episode` and `ExtractionResult`, and the limits
this server puts on them, written into its OpenAPI document so that a client knows them in advance."""

from __future__ import annotations

import re
from typing import Annotated, Any, Final

from pydantic import BaseModel, BeforeValidator, Field, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from edgewise.domain.episode import ENTITY_LISTS, Episode
from edgewise.domain.types import ExtractionResult
from edgewise.service.errors import ErrorBody, FieldProblem, invalid_request

REFERENCE_TIME_PATTERN: Final = r"^(?!0001-01-01|9999-12-31)"
"""What the service's OpenAPI document adds to `referenceTime`'s `date-time`: not on the first day of
year 1 or the last day of year 9999. A time on those days can fall outside years 1-9999 once taken to
UTC (`0001-01-01T00:00:00+22:29` is in year 0), which no datetime holds; the document cannot say
"in range in UTC", so the service refuses the two days whole, and says so."""
REFERENCE_TIME_RULE: Final = (
    "an ISO 8601 date-time, taken to UTC; not on 0001-01-01 or 9999-12-31, where a time zone offset "
    "could put it outside years 1-9999 in UTC"
)


class BatchRequest(BaseModel):
    """Many episodes in one call; each item is validated and answered on its own."""

    episodes: list[Any] = Field(
        description="Episode objects. Each item is validated on its own: one that is not an Episode is "
        "answered with its own error in `results` (status 200), and the others still run.",
        json_schema_extra={"items": {"description": "an Episode object (see the Episode schema)"}},
    )


class BatchItem(BaseModel):
    """The answer for `episodes[index]`: a result when `ok`, else the error that item alone got."""

    index: int
    ok: bool
    result: ExtractionResult | None = None
    error: ErrorBody | None = None


class BatchResponse(BaseModel):
    results: list[BatchItem]


class Health(BaseModel):
    status: str
    program: str
    model: str | None
    workers: int


def _reference_time_in_range(data: Any) -> Any:
    """Refuse a `referenceTime` on the two days `REFERENCE_TIME_PATTERN` excludes, naming the field."""
    value = data.get("referenceTime", data.get("reference_time")) if isinstance(data, dict) else None
    if isinstance(value, str) and not re.match(REFERENCE_TIME_PATTERN, value):
        error = PydanticCustomError("reference_time_range", "{rule}", {"rule": REFERENCE_TIME_RULE})
        field = "referenceTime" if "referenceTime" in data else "reference_time"
        raise ValidationError.from_exception_data(
            "Episode", [InitErrorDetails(type=error, loc=(field,), input=value)]
        )
    return data


def request_episode(model: type[Episode] = Episode) -> Any:
    """`model` (the program's input contract: `Episode`, or `TextEpisode` for a program with an entity
    step) as the service reads one from a request: with the rule on `referenceTime` its OpenAPI
    document states (`REFERENCE_TIME_PATTERN`)."""
    return Annotated[model, BeforeValidator(_reference_time_in_range)]


def entity_limit(episode: Episode, max_entities: int) -> None:
    """Refuse an episode with more entities than this server takes (422 on its entity list)."""
    if len(episode.entities) > max_entities:
        problem = FieldProblem(
            field=episode.entities_field,
            message=f"{len(episode.entities)} entities; this server accepts at most {max_entities} "
            "(--max-entities)",
        )
        raise invalid_request([problem])


def documented_limits(schema: dict[str, Any], *, max_entities: int, max_batch: int) -> dict[str, Any]:
    """The OpenAPI document with this server's limits on the entity lists and the batch size.

    They are the app's settings, not the model's, so they are written into the generated document
    here: a client (or a fuzzer) then knows that 201 entities is refused before it sends them. So is
    the service's rule on `referenceTime` (`REFERENCE_TIME_PATTERN`).
    """
    schemas = schema.get("components", {}).get("schemas", {})
    reference_time = schemas.get("Episode", {}).get("properties", {}).get("referenceTime")
    if reference_time is not None:
        reference_time["pattern"] = REFERENCE_TIME_PATTERN
        reference_time["description"] = REFERENCE_TIME_RULE
    for name in ENTITY_LISTS:
        for variant in _array_variants(schemas.get("Episode", {}).get("properties", {}).get(name, {})):
            variant["maxItems"] = max_entities
    episodes = schemas.get("BatchRequest", {}).get("properties", {}).get("episodes")
    if episodes is not None:
        episodes["maxItems"] = max_batch
    return schema


def _array_variants(field_schema: dict[str, Any]) -> list[dict[str, Any]]:
    variants = field_schema.get("anyOf", [field_schema])
    return [variant for variant in variants if variant.get("type") == "array"]
