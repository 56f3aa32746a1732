"""The HTTP service: the seed's context object in, the seed's `{"edges": [...]}` out, over HTTP.

A TypeScript app that built the seed prompt itself posts the same context object to
`POST /v1/extract` and gets edges (plus warnings and usage) from the compiled program instead. The
service is a thin layer: it validates the request into an `Episode`, runs the program in a bounded
thread pool, and turns every failure into a JSON error with a status, a reason and no secrets.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import threading
import traceback
from collections.abc import Awaitable, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, asynccontextmanager
from functools import partial
from importlib.metadata import version
from typing import Any, Final

import dspy
from pydantic import BaseModel, Field, ValidationError

from edgewise.runtime.episode_fields import input_warnings
from edgewise.runtime.faults import failure_reason, retry_after_seconds
from edgewise.runtime.redaction import MIN_SECRET_CHARS, env_secrets, redact
from edgewise.runtime.runner import run_episode
from edgewise.signatures.errors import (
    REASON_BAD_REQUEST,
    REASON_BODY_TOO_LARGE,
    REASON_CONTEXT_WINDOW,
    REASON_INTERNAL,
    REASON_INVALID_REQUEST,
    REASON_PROVIDER_ERROR,
    REASON_RATE_LIMITED,
    REASON_UNAUTHORIZED,
    REASONS,
    EdgewiseError,
    reason_of_status,
    status_of,
)
from edgewise.signatures.names import field_path
from edgewise.signatures.types import ENTITY_LISTS, Episode, ExtractionResult

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

logger = logging.getLogger("edgewise.service")

DEFAULT_MAX_BODY_BYTES: Final = 1_000_000
DEFAULT_MAX_ENTITIES: Final = 200
DEFAULT_MAX_BATCH: Final = 64
DEFAULT_WORKERS: Final = 4
API_PREFIX: Final = "/v1/"


# ---------------------------------------------------------------------------------------------------
# Errors: one JSON shape for every failure, in a whole response or in one batch item.


class FieldProblem(BaseModel):
    """One invalid request field: its path as a client writes it (`nodes[2].name`) and what is wrong."""

    field: str
    message: str


class ErrorBody(BaseModel):
    """What went wrong: the HTTP status, a stable machine-readable reason, and a message for people."""

    status: int
    reason: str
    message: str
    fields: list[FieldProblem] = Field(default_factory=list)


class ErrorResponse(BaseModel):
    error: ErrorBody


class ServiceError(EdgewiseError):
    """A failure with the status and reason the client should see; its message is already redacted."""

    def __init__(
        self,
        status: int,
        reason: str,
        message: str,
        *,
        fields: Sequence[FieldProblem] = (),
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        if reason not in REASONS or status_of(reason) != status:
            raise ValueError(f"ServiceError: {reason!r} is not answered with {status} (signatures/errors.py)")
        self.reason = reason
        self.body = ErrorBody(status=status, reason=reason, message=message, fields=list(fields))
        self.headers = headers or {}

    def response(self) -> JSONResponse:
        return error_response(self.body, self.headers)


def error_response(body: ErrorBody, headers: dict[str, str] | None = None) -> JSONResponse:
    """The JSON answer for one failure: `{"error": {...}}` with the body's status."""
    return JSONResponse(
        status_code=body.status, content=ErrorResponse(error=body).model_dump(mode="json"), headers=headers
    )


def known_secrets(lm: dspy.BaseLM | None, api_token: str | None) -> set[str]:
    """Secrets the service must never echo: the LM's key, the service token, key-like env variables."""
    found = {api_token or "", str(getattr(lm, "kwargs", {}).get("api_key") or "") if lm is not None else ""}
    found.update(env_secrets())
    return {secret for secret in found if len(secret) >= MIN_SECRET_CHARS}


def provider_failure(error: BaseException, secrets: Iterable[str] = ()) -> ServiceError:
    """Map an exception from running the program to what the client sees: the failure reason of
    every edgewise command, with its HTTP status (signatures/errors.py) and `Retry-After` when the
    provider gave one."""
    text = redact(f"{type(error).__name__}: {error}", secrets)
    reason = failure_reason(error)
    if reason == REASON_INTERNAL and type(error).__module__.split(".")[0] in ("litellm", "openai", "httpx"):
        reason = REASON_PROVIDER_ERROR
    status = status_of(reason)
    what = REASONS[reason].meaning  # failure_reason answers only with words of the vocabulary
    if reason == REASON_CONTEXT_WINDOW:
        what += "; shorten episodeContent or previousEpisodes"
    headers = {}
    hint = retry_after_seconds(error)
    if reason == REASON_RATE_LIMITED and hint is not None:
        headers["Retry-After"] = str(max(1, round(hint)))
    fields = (
        [FieldProblem(field="episodeContent", message="too long for the model's context window")]
        if reason == REASON_CONTEXT_WINDOW
        else None
    )
    return ServiceError(status, reason, f"{what} ({text})", headers=headers, fields=fields or ())


def field_problems(
    errors: Iterable[dict[str, Any]], *, drop_prefix: str | None = "body", under: Sequence[str | int] = ()
) -> list[FieldProblem]:
    """Pydantic/FastAPI error records as `nodes[0].name: Field required`-style problems.

    `under` is prepended to every path (a batch item's errors read `episodes[3].nodes[0].name`).
    """
    problems: list[FieldProblem] = []
    for record in errors:
        location = list(record.get("loc") or ())
        if drop_prefix is not None and location[:1] == [drop_prefix]:
            location = location[1:]
        location = [*under, *location]
        message = str(record.get("msg") or "invalid")
        if record.get("type") == "json_invalid":
            message = "request body is not valid JSON: " + str(
                (record.get("ctx") or {}).get("error", message)
            )
            location = list(under)
        problems.append(FieldProblem(field=field_path(tuple(location)) or "body", message=message))
    return problems


def invalid_request(problems: Sequence[FieldProblem]) -> ServiceError:
    summary = "; ".join(f"{problem.field}: {problem.message}" for problem in problems[:5])
    if len(problems) > 5:
        summary += f"; and {len(problems) - 5} more"
    return ServiceError(422, REASON_INVALID_REQUEST, f"invalid request: {summary}", fields=problems)


# ---------------------------------------------------------------------------------------------------
# The request: an `Episode`, the seed's context object, validated by the one input contract.


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


# ---------------------------------------------------------------------------------------------------
# Guard: bearer token and body size, checked before the body is read or parsed.


class _GuardMiddleware:
    """Pure ASGI middleware: 401 without the token, 413 past the size limit, before any parsing.

    The body is buffered up to the limit and replayed to the app, so a chunked upload without a
    Content-Length is held to the same limit as one with it.
    """

    def __init__(self, app: Any, *, api_token: str | None, max_body_bytes: int) -> None:
        self.app = app
        self.api_token = api_token
        self.max_body_bytes = max_body_bytes

    async def __call__(
        self,
        scope: dict[str, Any],
        receive: Callable[[], Awaitable[dict[str, Any]]],
        send: Callable[[dict[str, Any]], Awaitable[None]],
    ) -> None:
        if scope["type"] != "http" or not str(scope.get("path", "")).startswith(API_PREFIX):
            await self.app(scope, receive, send)
            return
        headers = {
            name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]
        }
        if self.api_token is not None and not _token_matches(
            headers.get("authorization", ""), self.api_token
        ):
            error = ServiceError(
                401,
                REASON_UNAUTHORIZED,
                "missing or wrong bearer token: send the header `Authorization: Bearer <EDGEWISE_API_TOKEN>`",
                headers={"WWW-Authenticate": "Bearer"},
            )
            await error.response()(scope, receive, send)
            return
        declared = headers.get("content-length")
        if declared is not None:
            if not declared.isdigit():
                await ServiceError(400, REASON_BAD_REQUEST, "Content-Length is not a number").response()(
                    scope, receive, send
                )
                return
            if int(declared) > self.max_body_bytes:
                await self._too_large(int(declared), scope, receive, send)
                return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away before sending its body
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                await self._too_large(size, scope, receive, send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as error:
            problem = FieldProblem(
                field="body", message=f"not valid UTF-8 at byte {error.start}; JSON must be UTF-8"
            )
            await invalid_request([problem]).response()(scope, receive, send)
            return
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _too_large(self, size: int, scope: dict[str, Any], receive: Any, send: Any) -> None:
        error = ServiceError(
            413,
            REASON_BODY_TOO_LARGE,
            f"request body has at least {size} bytes; this server accepts at most {self.max_body_bytes} "
            "(--max-body-bytes)",
            headers={"Connection": "close"},
        )
        await error.response()(scope, receive, send)


def json_bad_request_protocol() -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol, answering a request its HTTP parser rejects with the JSON error shape.

    A request line or header that h11 (or httptools) cannot parse, such as `Content-Length: abc`,
    never reaches the app or `_GuardMiddleware`: uvicorn answers it with a plain-text 400 of its own.
    This subclass of the protocol uvicorn would pick sends that 400 as an `ErrorResponse` instead
    (reason `bad_request`), so every failure a client sees has one shape. It overrides uvicorn's
    `send_400_response`, which both of its parsers call for exactly this case.
    """
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    class JsonBadRequestProtocol(AutoHTTPProtocol):  # type: ignore[misc, valid-type]
        def send_400_response(self, msg: str) -> None:
            error = ErrorBody(
                status=400,
                reason=REASON_BAD_REQUEST,
                message=f"{msg.rstrip('.')}: the request is not valid HTTP/1.1 (for example a Content-Length "
                "that is not a number, or a malformed request line or header)",
            )
            body = json.dumps(ErrorResponse(error=error).model_dump(mode="json")).encode()
            head = [b"HTTP/1.1 400 Bad Request\r\n"]
            head += [name + b": " + value + b"\r\n" for name, value in self.server_state.default_headers]
            head += [
                b"content-type: application/json\r\n",
                b"content-length: " + str(len(body)).encode("ascii") + b"\r\n",
                b"connection: close\r\n\r\n",
            ]
            self.transport.write(b"".join(head) + body)
            self.transport.close()

    return JsonBadRequestProtocol


def _token_matches(header: str, token: str) -> bool:
    scheme, _, given = header.partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


# ---------------------------------------------------------------------------------------------------
# The app.


class _Runner:
    """Runs the program in a bounded thread pool under the service's LM; one per app."""

    def __init__(self, program: dspy.Module, lm: dspy.BaseLM | None, workers: int, secrets: set[str]) -> None:
        self.program = program
        self.lm = lm
        self.workers = workers
        self.secrets = secrets
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def executor(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    max_workers=self.workers, thread_name_prefix="edgewise-serve"
                )
            return self._executor

    def shutdown(self) -> None:
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)

    def _lm_scope(self) -> AbstractContextManager[Any]:
        """The service's LM, or `dspy.configure`'s; either way DSPy keeps no record of the calls
        beyond what the LM's `keep_history` says (a service runs for weeks)."""
        from edgewise.runtime.lm import history_settings, lm_context

        if self.lm is None:
            return dspy.context(**history_settings())
        return lm_context(self.lm)

    def _extract_sync(self, episode: Episode) -> ExtractionResult:
        with self._lm_scope():
            outcome = run_episode(self.program, episode)
        if outcome.error is not None:
            raise outcome.error
        if not isinstance(outcome.result, ExtractionResult):
            raise TypeError(
                f"the program returned {type(outcome.result).__name__} as .result, not an ExtractionResult"
            )
        return outcome.result

    async def extract(self, episode: Episode) -> ExtractionResult:
        """The program's result, or a `ServiceError` saying why not (secrets removed, failure logged)."""
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self.executor(), self._extract_sync, episode)
        except Exception as error:  # noqa: BLE001 - every failure becomes a status and a reason
            failure = provider_failure(error, self.secrets)
            if failure.body.reason == REASON_INTERNAL:
                trace = "".join(traceback.format_exception(error))
                logger.error("extraction failed: %s", redact(trace, self.secrets).replace("\n", " | "))
            else:
                logger.warning("extraction failed: %s: %s", failure.body.reason, failure.body.message)
            raise failure from None


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
    runner = _Runner(program, lm, workers, known_secrets(lm, api_token))

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
    app.add_middleware(_GuardMiddleware, api_token=api_token, max_body_bytes=max_body_bytes)
    security = [HTTPBearer(auto_error=False)] if api_token else []
    error_responses: dict[int | str, dict[str, Any]] = {
        status: {"model": ErrorResponse, "description": description}
        for status, description in (
            (401, "missing or wrong bearer token"),
            (413, "request body over --max-body-bytes"),
            (422, "invalid field (named in error.fields), or too many entities"),
            (502, "the model provider failed or answered nonsense"),
            (503, "the model provider is rate-limiting, slow or unreachable; retry later"),
        )
    }

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

    async def extract_one(episode: Episode) -> ExtractionResult:
        entity_limit(episode, max_entities)
        result = await runner.extract(episode)
        warnings = input_warnings("request", episode)
        if warnings:
            result = result.model_copy(update={"warnings": [*warnings, *result.warnings]})
        return result

    # The /v1/ routes: each checks the bearer token and documents the same error bodies.
    post_v1 = partial(app.post, responses=error_responses, dependencies=[*map(_as_dependency, security)])

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

    @app.get("/healthz", response_model=Health, summary="Liveness: the service is up and which model it uses")
    async def healthz() -> Health:
        return Health(
            status="ok",
            program=program_name or type(program).__name__,
            model=getattr(lm, "model", None),
            workers=workers,
        )

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
    return app


def _as_dependency(scheme: HTTPBearer) -> Any:
    """Declares the bearer scheme in the OpenAPI document; the middleware does the checking."""
    return Depends(scheme)
