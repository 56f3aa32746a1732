"""The guard before the app: the bearer token, the body's size and read time, the request's deadline,
and the client's presence, all held before or around the app, so that neither a client without the
token, nor an oversized or slow body, nor a request that outlives its client or its deadline costs
the service more than its limits say.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Final

from edgewise.domain.errors import (
    REASON_BAD_REQUEST,
    REASON_BODY_TOO_LARGE,
    REASON_READ_TIMEOUT,
    REASON_REQUEST_TIMEOUT,
    REASON_UNAUTHORIZED,
)
from edgewise.service.errors import FieldProblem, ServiceError, invalid_request
from edgewise.service.lifecycle import Lifecycle
from edgewise.service.runner import shutting_down

API_PREFIX: Final = "/v1/"
"""The routes the guard holds to its limits; `/healthz` and the docs are open."""
_GONE: Final = "gone"  # why a request stopped: its client hung up

Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

logger = logging.getLogger("edgewise.service")


@dataclass(eq=False)
class GuardMiddleware:
    """Pure ASGI middleware around the /v1/ routes.

    Before the app: 401 without the token, 413 past the size limit, 408 when the body has not
    arrived `read_timeout_s` seconds after the headers, 503 `shutting_down` once the service stops.
    The body is buffered up to the limit and replayed to the app, so a chunked upload without a
    Content-Length is held to the same limit as one with it.

    Around the app: the request has `request_timeout_s` seconds from its headers to its answer, or it
    is answered 503 `request_timeout`; when its client hangs up, or the service's grace period to
    stop ends (503 `shutting_down`), the app's task is cancelled, and with it the work it waits for.
    """

    app: Any
    _: KW_ONLY
    api_token: str | None
    max_body_bytes: int
    read_timeout_s: float
    request_timeout_s: float
    lifecycle: Lifecycle
    _bearer: Any = field(init=False, repr=False)

    def __post_init__(self) -> None:
        from fastapi.security import HTTPBearer  # the serve extra: imported when an app is built

        self._bearer = HTTPBearer(auto_error=False)

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not str(scope.get("path", "")).startswith(API_PREFIX):
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        refusal = await self._refusal(scope)
        if refusal is not None:
            await refusal.response()(scope, receive, send)
            return
        body = await self._read_body(scope, receive, send)
        if body is not None:
            await self._run(scope, body, receive, send, deadline=started + self.request_timeout_s)

    async def _refusal(self, scope: dict[str, Any]) -> ServiceError | None:
        """Why the request is answered from its headers alone, if it is."""
        if self.lifecycle.draining:
            return shutting_down()
        if self.api_token is not None and not await self._token_matches(scope):
            return ServiceError(
                401,
                REASON_UNAUTHORIZED,
                "missing or wrong bearer token: send the header `Authorization: Bearer <EDGEWISE_API_TOKEN>`",
                headers={"WWW-Authenticate": "Bearer"},
            )
        headers = {
            name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]
        }
        declared = headers.get("content-length")
        if declared is not None:
            if not declared.isdigit():
                return ServiceError(400, REASON_BAD_REQUEST, "Content-Length is not a number")
            if int(declared) > self.max_body_bytes:
                return self._too_large(int(declared))
        return None

    async def _read_body(self, scope: dict[str, Any], receive: Receive, send: Send) -> bytes | None:
        """The whole body, or None once the request has been answered (or its client left)."""
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(self.read_timeout_s):
                while True:
                    message = await receive()
                    if message["type"] != "http.request":
                        return None  # the client went away before sending its body
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > self.max_body_bytes:
                        await self._too_large(size).response()(scope, receive, send)
                        return None
                    chunks.append(chunk)
                    if not message.get("more_body", False):
                        break
        except TimeoutError:
            error = ServiceError(
                408,
                REASON_READ_TIMEOUT,
                f"the request body did not arrive within {self.read_timeout_s:g} s of its headers "
                f"(--read-timeout); {size} bytes came",
                headers={"Connection": "close"},
            )
            await error.response()(scope, receive, send)
            return None
        body = b"".join(chunks)
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as error:
            problem = FieldProblem(
                field="body", message=f"not valid UTF-8 at byte {error.start}; JSON must be UTF-8"
            )
            await invalid_request([problem]).response()(scope, receive, send)
            return None
        return body

    async def _run(
        self, scope: dict[str, Any], body: bytes, receive: Receive, send: Send, *, deadline: float
    ) -> None:
        """The app on `body`, in a task of its own that is cancelled when the request must stop."""
        loop = asyncio.get_running_loop()
        stop: asyncio.Future[str] = loop.create_future()
        gone = asyncio.Event()
        answered = False
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            await gone.wait()  # the body is read: all that can come now is the client leaving
            return {"type": "http.disconnect"}

        async def tracked_send(message: dict[str, Any]) -> None:
            nonlocal answered
            answered = answered or message["type"] == "http.response.start"
            await send(message)

        async def watch_client() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            gone.set()
            if not stop.done():
                stop.set_result(_GONE)

        app = asyncio.create_task(self.app(scope, replay, tracked_send))
        watcher = asyncio.create_task(watch_client())
        unwatch = self.lifecycle.watch(stop)
        try:
            done, _ = await asyncio.wait(
                {app, stop},
                timeout=max(0.0, deadline - time.monotonic()),
                return_when=asyncio.FIRST_COMPLETED,
            )
            if app in done:
                app.result()  # the app's own exception, as if it had been called directly
                return
            why = stop.result() if stop.done() else REASON_REQUEST_TIMEOUT
            await _cancelled(app)
        except asyncio.CancelledError:
            await _cancelled(app)
            raise
        finally:
            unwatch()
            watcher.cancel()
        if why == _GONE:
            logger.info("%s %s: the client hung up; its work is cancelled", scope["method"], scope["path"])
        elif not answered:
            await self._stopped(why).response()(scope, receive, send)

    def _stopped(self, why: str) -> ServiceError:
        if why == REASON_REQUEST_TIMEOUT:
            logger.warning("request ran past --request-timeout (%g s); answered 503", self.request_timeout_s)
            return ServiceError(
                503,
                REASON_REQUEST_TIMEOUT,
                f"the request was not answered within {self.request_timeout_s:g} s (--request-timeout); "
                "retry later",
            )
        return shutting_down()

    def _too_large(self, size: int) -> ServiceError:
        return ServiceError(
            413,
            REASON_BODY_TOO_LARGE,
            f"request body has at least {size} bytes; this server accepts at most {self.max_body_bytes} "
            "(--max-body-bytes)",
            headers={"Connection": "close"},
        )

    async def _token_matches(self, scope: dict[str, Any]) -> bool:
        """`Authorization: Bearer <token>`, read by FastAPI's `HTTPBearer`, compared in constant time."""
        from starlette.requests import HTTPConnection

        credentials = await self._bearer(HTTPConnection(scope))
        return credentials is not None and hmac.compare_digest(
            credentials.credentials.encode(), self.api_token.encode() if self.api_token else b""
        )


async def _cancelled(task: asyncio.Task[Any]) -> None:
    """Cancel `task` and wait until it has ended, whatever it ends with."""
    task.cancel()
    await asyncio.wait({task})
    if not task.cancelled() and task.exception() is not None:
        logger.debug("a cancelled request ended with %r", task.exception())
