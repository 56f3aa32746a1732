"""The HTTP service: the seed's context object in, the seed's `{"edges": [...]}` out, over HTTP.

A TypeScript app that built the seed prompt itself posts the same context object to
`POST /v1/extract` and gets edges (plus warnings and usage) from the compiled program instead. The
service is a thin layer: the guard checks the token and the body's size (`guard.py`), the request is
validated into an `Episode`, the program runs in a bounded thread pool (`runner.py`), and every
failure becomes one JSON error shape with a status, a reason and no secrets (`errors.py`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import asynccontextmanager
from functools import partial
from importlib.metadata import version
from typing import Any, Final

import dspy
from pydantic import ValidationError

from edgewise.runtime.episode_fields import input_warnings
from edgewise.service.bodies import BatchRequest, BatchResponse, Health, documented_limits, entity_limit
from edgewise.service.errors import (
    ErrorBody,
    ErrorResponse,
    FieldProblem,
    ServiceError,
    error_response,
    field_problems,
    invalid_request,
    known_secrets,
)
from edgewise.service.guard import GuardMiddleware
from edgewise.service.runner import ProgramRunner
from edgewise.signatures.episode import Episode
from edgewise.signatures.errors import reason_of_status
from edgewise.signatures.types import ExtractionResult

try:  # FastAPI and uvicorn are the optional `serve` extra; the request models and helpers work without
    from fastapi import Depends, FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.openapi.utils import get_openapi
    from fastapi.responses import JSONResponse
    from fastapi.security import HTTPBearer
    from starlette.exceptions import HTTPException as StarletteHTTPException
except ModuleNotFoundError as _missing:  # pragma: no cover - depends on the installation
    _SERVE_EXTRA_MISSING: ModuleNotFoundError | None = _missing
else:
    _SERVE_EXTRA_MISSING = None

SERVE_EXTRA_HINT: Final = "the HTTP service needs FastAPI and uvicorn: pip install 'edgewise[serve]'"

DEFAULT_MAX_BODY_BYTES: Final = 1_000_000
DEFAULT_MAX_ENTITIES: Final = 200
DEFAULT_MAX_BATCH: Final = 64
DEFAULT_WORKERS: Final = 4

ERROR_STATUSES: Final = (
    (401, "missing or wrong bearer token"),
    (413, "request body over --max-body-bytes"),
    (422, "invalid field (named in error.fields), or too many entities"),
    (502, "the model provider failed or answered nonsense"),
    (503, "the model provider is rate-limiting, slow or unreachable; retry later"),
)
"""The error answers every /v1/ route documents, each with the one error body."""


def create_app(
    program: dspy.Module,
    lm: dspy.BaseLM | None,
    *,
    api_token: str | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    max_entities: int = DEFAULT_MAX_ENTITIES,
    workers: int = DEFAULT_WORKERS,
    max_batch: int = DEFAULT_MAX_BATCH,
    program_name: str | None = None,
) -> FastAPI:
    """The edgewise HTTP app around `program` (called as `program(episode=...)`, returning `.result`).

    `lm` is the model the program runs with (None: whatever `dspy.configure` set); `program_name` is
    what `/healthz` says runs (default: the program's class name). `api_token`, when
    set, is required as `Authorization: Bearer <token>` on every `/v1/` route. At most `workers`
    extractions run at once; other requests wait for a free worker.
    """
    if _SERVE_EXTRA_MISSING is not None:
        raise RuntimeError(f"{SERVE_EXTRA_HINT} ({_SERVE_EXTRA_MISSING})")
    for name, value in (
        ("max_body_bytes", max_body_bytes),
        ("max_entities", max_entities),
        ("workers", workers),
        ("max_batch", max_batch),
    ):
        if value < 1:
            raise ValueError(f"create_app: {name} must be at least 1, got {value}")
    runner = ProgramRunner(program, lm, workers, known_secrets(lm, api_token))

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> Any:
        try:
            yield
        finally:
            runner.shutdown()

    app = FastAPI(
        title="edgewise",
        version=version("edgewise"),
        description=(
            "Knowledge-graph edge extraction. `POST /v1/extract` takes the context object of the seed prompt "
            "(episodeContent, previousEpisodes, nodes, referenceTime, edgeTypes, customPrompt) and returns "
            '`{"edges": [...]}` in the seed\'s shape, with warnings and per-step usage.'
            + (" Every /v1/ route needs `Authorization: Bearer <token>`." if api_token else "")
        ),
        lifespan=lifespan,
    )
    app.add_middleware(GuardMiddleware, api_token=api_token, max_body_bytes=max_body_bytes)
    _answer_errors_in_one_shape(app)
    extract_one = partial(_extract_one, runner, max_entities=max_entities)
    _add_extract_routes(app, extract_one, max_batch=max_batch, bearer=api_token is not None)

    @app.get("/healthz", response_model=Health, summary="Liveness: the service is up and which model it uses")
    async def healthz() -> Health:
        return Health(
            status="ok",
            program=program_name or type(program).__name__,
            model=getattr(lm, "model", None),
            workers=workers,
        )

    _document_limits(app, max_entities=max_entities, max_batch=max_batch)
    return app


def _answer_errors_in_one_shape(app: FastAPI) -> None:
    """Every failure FastAPI or Starlette raises becomes the one error body."""

    @app.exception_handler(ServiceError)
    async def _service_error(_request: Request, error: ServiceError) -> JSONResponse:
        return error.response()

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_request: Request, error: StarletteHTTPException) -> JSONResponse:
        body = ErrorBody(
            status=error.status_code, reason=reason_of_status(error.status_code), message=str(error.detail)
        )
        return error_response(body, error.headers)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_request: Request, error: RequestValidationError) -> JSONResponse:
        return invalid_request(field_problems(error.errors())).response()


async def _extract_one(runner: ProgramRunner, episode: Episode, *, max_entities: int) -> ExtractionResult:
    """One episode within this server's limits, its result led by the request's input warnings."""
    entity_limit(episode, max_entities)
    result = await runner.extract(episode)
    warnings = input_warnings("request", episode)
    if warnings:
        result = result.model_copy(update={"warnings": [*warnings, *result.warnings]})
    return result


def _add_extract_routes(
    app: FastAPI, extract_one: Callable[[Episode], Any], *, max_batch: int, bearer: bool
) -> None:
    """The /v1/ routes: each documents the bearer scheme (the guard checks it) and the error bodies."""
    responses: dict[int | str, dict[str, Any]] = {
        status: {"model": ErrorResponse, "description": description} for status, description in ERROR_STATUSES
    }
    dependencies = [Depends(HTTPBearer(auto_error=False))] if bearer else []
    post_v1 = partial(app.post, responses=responses, dependencies=dependencies)

    @post_v1("/v1/extract", response_model=ExtractionResult, summary="Extract edges from one episode")
    async def extract(episode: Episode) -> JSONResponse:
        result = await extract_one(episode)
        return JSONResponse(result.to_json_dict())

    @post_v1(
        "/v1/extract/batch",
        response_model=BatchResponse,
        summary="Extract edges from many episodes; one bad item never fails the others",
    )
    async def extract_batch(request: BatchRequest) -> JSONResponse:
        if len(request.episodes) > max_batch:
            problem = FieldProblem(
                field="episodes",
                message=f"{len(request.episodes)} episodes; this server accepts at most {max_batch} (--max-batch)",
            )
            raise invalid_request([problem])

        async def one(index: int, raw: Any) -> dict[str, Any]:
            try:
                parsed = Episode.model_validate(raw)
                result = await extract_one(parsed)
            except ValidationError as error:
                failure = invalid_request(
                    field_problems(error.errors(), drop_prefix=None, under=("episodes", index))
                )
            except ServiceError as error:
                failure = error
            else:
                return {"index": index, "ok": True, "result": result.to_json_dict(), "error": None}
            return {
                "index": index,
                "ok": False,
                "result": None,
                "error": failure.body.model_dump(mode="json"),
            }

        results = await asyncio.gather(*(one(index, raw) for index, raw in enumerate(request.episodes)))
        return JSONResponse({"results": list(results)})


def _document_limits(app: FastAPI, *, max_entities: int, max_batch: int) -> None:
    """`/openapi.json` with this server's limits written in (`documented_limits`)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = documented_limits(
                get_openapi(
                    title=app.title, version=app.version, description=app.description, routes=app.routes
                ),
                max_entities=max_entities,
                max_batch=max_batch,
            )
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
