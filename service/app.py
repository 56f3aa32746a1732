"""The HTTP service: the seed's context object in, the seed's `{"edges": [...]}` out, over HTTP.

A TypeScript app that built the seed prompt itself posts the same context object to
`POST /v1/extract` and gets edges (plus warnings and usage) from the compiled program instead. The
service is a thin layer: the guard checks the token, the body's size and read time, and holds each
request to its deadline and its client (`guard.py`); the request is validated into an `Episode`; the
program runs on a bounded number of workers behind a bounded queue (`runner.py`); a stop drains
(`lifecycle.py`); and every failure becomes one JSON error shape with a status, a reason and no
secrets (`errors.py`). What happens before a request reaches the app (slow headers, too many
connections) is the HTTP protocol's (`connections.py`).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from functools import partial
from importlib.metadata import version
from typing import Any, Final

import dspy
from pydantic import TypeAdapter, ValidationError

from edgewise.domain.episode import Episode
from edgewise.domain.errors import MissingExtraError, UsageError, reason_of_status
from edgewise.domain.types import ExtractionResult
from edgewise.modules.program_io import input_model
from edgewise.runtime.episode_fields import input_warnings
from edgewise.service.bodies import (
    BatchRequest,
    BatchResponse,
    Health,
    documented_limits,
    entity_limit,
    request_episode,
)
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
from edgewise.service.lifecycle import Lifecycle
from edgewise.service.runner import ProgramRunner, shutting_down

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
DEFAULT_MAX_QUEUE: Final = 64
DEFAULT_REQUEST_TIMEOUT_S: Final = 120.0
DEFAULT_READ_TIMEOUT_S: Final = 10.0
MIN_API_TOKEN_CHARS: Final = 16
"""A shorter bearer token is refused: guessable, or a placeholder left in a config."""

ERROR_STATUSES: Final = (
    (401, "missing or wrong bearer token"),
    (408, "request body not received within --read-timeout"),
    (413, "request body over --max-body-bytes"),
    (
        422,
        (
            "invalid field (named in error.fields), too many entities, or a body the JSON parser cannot read "
            "(nested about 1,000 levels deep, or an integer over 4,300 digits)"
        ),
    ),
    (502, "the model provider failed or answered nonsense"),
    (
        503,
        (
            "the model provider is rate-limiting, slow or unreachable; the queue is full (with Retry-After); "
            "the request ran past --request-timeout; or the service is stopping. Retry later"
        ),
    ),
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
    max_queue: int = DEFAULT_MAX_QUEUE,
    request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S,
    read_timeout_s: float = DEFAULT_READ_TIMEOUT_S,
    lifecycle: Lifecycle | None = None,
    program_name: str | None = None,
) -> FastAPI:
    """The edgewise HTTP app around `program` (called as `program(episode=...)`, returning `.result`).

    `lm` is the model the program runs with (None: whatever `dspy.configure` set); `program_name` is
    what `/healthz` says runs (default: the program's class name). `api_token`, when set (at least
    `MIN_API_TOKEN_CHARS` characters), is required as `Authorization: Bearer <token>` on every `/v1/`
    route. At most `workers` extractions run at once and `max_queue` more wait; past that a request
    gets 503 `overloaded`. A request has `request_timeout_s` seconds from its headers to its answer,
    and its body `read_timeout_s` seconds to arrive. `lifecycle` learns of uvicorn's stop from the
    service's HTTP protocol (`connections.guarded_protocol`); without one the app never drains.
    """
    if _SERVE_EXTRA_MISSING is not None:
        raise MissingExtraError(f"{SERVE_EXTRA_HINT} ({_SERVE_EXTRA_MISSING})")
    for name, value in (
        ("max_body_bytes", max_body_bytes),
        ("max_entities", max_entities),
        ("workers", workers),
        ("max_batch", max_batch),
    ):
        if value < 1:
            raise UsageError(f"create_app: {name} must be at least 1, got {value}")
    if max_queue < 0:
        raise UsageError(f"create_app: max_queue must be at least 0, got {max_queue}")
    for name, seconds in (("request_timeout_s", request_timeout_s), ("read_timeout_s", read_timeout_s)):
        if not seconds > 0:
            raise UsageError(f"create_app: {name} must be > 0, got {seconds}")
    check_api_token(api_token)
    lifecycle = lifecycle or Lifecycle()
    runner = ProgramRunner(
        program,
        lm,
        workers,
        known_secrets(lm, api_token),
        max_queue=max_queue,
        request_timeout_s=request_timeout_s,
        lifecycle=lifecycle,
    )

    app = FastAPI(
        title="edgewise",
        version=version("edgewise"),
        description=(
            "Knowledge-graph edge extraction. `POST /v1/extract` takes the context object of the seed prompt "
            "(episodeContent, previousEpisodes, nodes, referenceTime, edgeTypes, customPrompt) and returns "
            '`{"edges": [...]}` in the seed\'s shape, with warnings and per-step usage.'
            + (" Every /v1/ route needs `Authorization: Bearer <token>`." if api_token else "")
        ),
    )
    app.add_middleware(
        GuardMiddleware,
        api_token=api_token,
        max_body_bytes=max_body_bytes,
        read_timeout_s=read_timeout_s,
        request_timeout_s=request_timeout_s,
        lifecycle=lifecycle,
    )
    _answer_errors_in_one_shape(app)
    extract_one = partial(_extract_one, runner, max_entities=max_entities)
    _add_extract_routes(
        app, extract_one, max_batch=max_batch, bearer=api_token is not None, model=input_model(program)
    )

    @app.get(
        "/healthz",
        response_model=Health,
        summary="Liveness: the service is up and which model it uses",
        responses={503: {"model": ErrorResponse, "description": "the service is stopping"}},
    )
    async def healthz() -> Health:
        if lifecycle.draining:
            raise shutting_down()
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
        unreadable = _unreadable_json(error)
        if unreadable is not None:
            return invalid_request([unreadable]).response()
        body = ErrorBody(
            status=error.status_code, reason=reason_of_status(error.status_code), message=str(error.detail)
        )
        return error_response(body, error.headers)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_request: Request, error: RequestValidationError) -> JSONResponse:
        return invalid_request(field_problems(error.errors())).response()


def check_api_token(token: str | None, *, name: str = "the API token") -> None:
    """Refuse a bearer token that is set but empty or short (a `UsageError` naming it as `name`): an
    empty one would leave the service open while its operator believes it guarded, a short one is
    guessable."""
    if token is None:
        return
    if not token.strip():
        raise UsageError(
            f"{name} is set but empty, which would leave the service without a token; unset it to serve "
            f"without one, or set one of at least {MIN_API_TOKEN_CHARS} characters"
        )
    if len(token) < MIN_API_TOKEN_CHARS:
        raise UsageError(
            f"{name} has {len(token)} characters; use at least {MIN_API_TOKEN_CHARS}, for example the output "
            "of: python -c 'import secrets; print(secrets.token_urlsafe(32))'"
        )


def _unreadable_json(error: StarletteHTTPException) -> FieldProblem | None:
    """A body FastAPI could not parse for a reason other than bad JSON syntax (that one is already a
    422): nested deeper than Python's JSON parser goes (`RecursionError`), or holding an integer of
    more digits than Python converts (`ValueError`). FastAPI answers both 400; they are the body's
    fault and named as such, 422."""
    cause = error.__cause__
    if error.status_code != 400 or not isinstance(cause, RecursionError | ValueError):
        return None
    if isinstance(cause, RecursionError):
        what = "arrays or objects nested too deeply (about 1,000 levels) for the JSON parser"
    else:
        what = (
            f"a number the JSON parser does not read (an integer over {sys.get_int_max_str_digits()} digits)"
        )
    return FieldProblem(field="body", message=f"request body has {what}")


async def _extract_one(runner: ProgramRunner, episode: Episode, *, max_entities: int) -> ExtractionResult:
    """One episode within this server's limits, its result led by the request's input warnings."""
    entity_limit(episode, max_entities)
    result = await runner.extract(episode)
    warnings = input_warnings("request", episode)
    if warnings:
        result = result.model_copy(update={"warnings": [*warnings, *result.warnings]})
    return result


def _add_extract_routes(
    app: FastAPI,
    extract_one: Callable[[Episode], Any],
    *,
    max_batch: int,
    bearer: bool,
    model: type[Episode] = Episode,
) -> None:
    """The /v1/ routes: each documents the bearer scheme (the guard checks it) and the error bodies.

    `model` is the program's input contract: with an entity step a request may leave out its entities.
    """
    body_type = request_episode(model)
    read_item = TypeAdapter(body_type)
    responses: dict[int | str, dict[str, Any]] = {
        status: {"model": ErrorResponse, "description": description} for status, description in ERROR_STATUSES
    }
    dependencies = [Depends(HTTPBearer(auto_error=False))] if bearer else []
    post_v1 = partial(app.post, responses=responses, dependencies=dependencies)

    async def extract(episode: Episode) -> JSONResponse:
        result = await extract_one(episode)
        return JSONResponse(result.to_json_dict())

    # The body's type is the program's input contract, known only now: FastAPI reads it from here.
    extract.__annotations__["episode"] = body_type
    post_v1("/v1/extract", response_model=ExtractionResult, summary="Extract edges from one episode")(extract)

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
                parsed = read_item.validate_python(raw)
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
