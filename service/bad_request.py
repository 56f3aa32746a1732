"""The JSON error shape for a request that uvicorn's HTTP parser refuses before the app sees it."""

from __future__ import annotations

import asyncio
import json

from edgewise.service.errors import ErrorBody, ErrorResponse
from edgewise.signatures.errors import REASON_BAD_REQUEST


def json_bad_request_protocol() -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol, answering a request its HTTP parser rejects with the JSON error shape.

    A request line or header that h11 (or httptools) cannot parse, such as `Content-Length: abc`,
    never reaches the app or `_GuardMiddleware`: uvicorn answers it with a plain-text 400 of its own.
    This subclass of the protocol uvicorn would pick sends that 400 as an `ErrorResponse` instead
    (reason `bad_request`), so every failure a client sees has one shape. It overrides uvicorn's
    `send_400_response`, which both of its parsers call for exactly this case.
    """
    # No public hook exists: uvicorn answers a request its parser rejects itself, and takes only a
    # protocol class (`Config(http=...)`), so this subclasses the one it would pick.
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
