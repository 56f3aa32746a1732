"""The guard before the app: the bearer token and the body size, checked before the body is read or
parsed, so that neither a client without the token nor an oversized body costs a parse."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from typing import Any, Final

from edgewise.service.errors import FieldProblem, ServiceError, invalid_request
from edgewise.signatures.errors import REASON_BAD_REQUEST, REASON_BODY_TOO_LARGE, REASON_UNAUTHORIZED

API_PREFIX: Final = "/v1/"
"""The routes the guard holds to the token and the size limit; `/healthz` and the docs are open."""


class GuardMiddleware:
    """Pure ASGI middleware: 401 without the token, 413 past the size limit, before any parsing.

    The body is buffered up to the limit and replayed to the app, so a chunked upload without a
    Content-Length is held to the same limit as one with it.
    """

    def __init__(self, app: Any, *, api_token: str | None, max_body_bytes: int) -> None:
        from fastapi.security import HTTPBearer

        self.app = app
        self.api_token = api_token
        self.max_body_bytes = max_body_bytes
        self._bearer = HTTPBearer(auto_error=False)

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
        if self.api_token is not None and not await self._token_matches(scope):
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

    async def _token_matches(self, scope: dict[str, Any]) -> bool:
        """`Authorization: Bearer <token>`, read by FastAPI's `HTTPBearer`, compared in constant time."""
        from starlette.requests import HTTPConnection

        credentials = await self._bearer(HTTPConnection(scope))
        return credentials is not None and hmac.compare_digest(
            credentials.credentials.encode(), self.api_token.encode() if self.api_token else b""
        )
