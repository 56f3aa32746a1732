"""One JSON shape for every failure of the service, in a whole response or in one batch item.

Each failure carries a reason word of the one vocabulary (`domain/errors.py`) with the status that
word is answered with, a message with no secret in it, and the request fields it names.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import dspy
from pydantic import BaseModel, Field

from edgewise.domain.errors import (
    REASON_CONTEXT_WINDOW,
    REASON_INTERNAL,
    REASON_INVALID_REQUEST,
    REASON_PROVIDER_ERROR,
    REASON_RATE_LIMITED,
    REASONS,
    EdgewiseError,
    status_of,
)
from edgewise.domain.names import field_path
from edgewise.runtime.faults import failure_reason, retry_after_seconds
from edgewise.runtime.redaction import MIN_SECRET_CHARS, env_secrets, redact

if TYPE_CHECKING:  # the serve extra's; the error bodies are read without it
    from starlette.responses import JSONResponse


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
            raise ValueError(f"ServiceError: {reason!r} is not answered with {status} (domain/errors.py)")
        self.reason = reason
        self.body = ErrorBody(status=status, reason=reason, message=message, fields=list(fields))
        self.headers = headers or {}

    def response(self) -> JSONResponse:
        return error_response(self.body, self.headers)


def error_response(body: ErrorBody, headers: dict[str, str] | None = None) -> JSONResponse:
    """The JSON answer for one failure: `{"error": {...}}` with the body's status."""
    from starlette.responses import JSONResponse

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
    every edgewise command, with its HTTP status (domain/errors.py) and `Retry-After` when the
    provider gave one. An edgewise error that carries its reason word (a reply that could not be
    parsed on its retry either: `parse_failure`, 502) is answered with that word."""
    text = redact(f"{type(error).__name__}: {error}", secrets)
    own = getattr(error, "reason", None) if isinstance(error, EdgewiseError) else None
    reason = own if isinstance(own, str) and own in REASONS else failure_reason(error)
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
