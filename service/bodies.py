"""The service's request and response bodies beside `Episode` and `ExtractionResult`, and the limits
this server puts on them, written into its OpenAPI document so that a client knows them in advance."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from edgewise.service.errors import ErrorBody, FieldProblem, invalid_request
from edgewise.signatures.episode import ENTITY_LISTS, Episode
from edgewise.signatures.types import ExtractionResult


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
    here: a client (or a fuzzer) then knows that 201 entities is refused before it sends them.
    """
    schemas = schema.get("components", {}).get("schemas", {})
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
