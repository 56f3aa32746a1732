"""The JSON error shape for an answer the HTTP protocol writes itself, before any app sees the request:
a request its parser refuses (400), or a connection the service has no room for (503)."""

from __future__ import annotations

import json
from http import HTTPStatus

from edgewise.service.errors import ErrorBody, ErrorResponse


def raw_error_response(
    status: int, reason: str, message: str, default_headers: list[tuple[bytes, bytes]]
) -> bytes:
    """A whole HTTP/1.1 response with the `ErrorResponse` body, closing the connection.

    uvicorn's HTTP protocol answers a request its parser rejects itself (plain text), and takes only a
    protocol class (`Config(http=...)`); the service's protocol (`connections.py`) writes this instead,
    so that every failure a client sees has one shape.
    """
    body = json.dumps(
        ErrorResponse(error=ErrorBody(status=status, reason=reason, message=message)).model_dump(mode="json")
    ).encode()
    head = [f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n".encode("ascii")]
    head += [name + b": " + value + b"\r\n" for name, value in default_headers]
    head += [
        b"content-type: application/json\r\n",
        b"content-length: " + str(len(body)).encode("ascii") + b"\r\n",
        b"connection: close\r\n\r\n",
    ]
    return b"".join(head) + body
