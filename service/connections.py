"""The service's HTTP/1.1 protocol: uvicorn's h11 protocol with a deadline for a request's headers and
a cap on open connections, so that clients that connect and never finish a request cannot fill the
server's file descriptors or its connection table.

uvicorn has neither. Its `timeout_keep_alive` runs only between requests and is cancelled by the
first byte of the next one, so a connection that sends half a request line and waits holds a file
descriptor for as long as the client likes; its `limit_concurrency` counts those connections too and
answers every new request, `/healthz` included, with a plain-text 503 once they fill it. uvicorn takes
the protocol as a class (`Config(http=...)`), so this subclass of its h11 protocol adds:

- a header deadline: a connection that has not sent a whole request head `read_timeout_s` seconds
  after it opened, or after its previous answer, is closed;
- a connection cap: when a new connection would exceed `max_connections`, the connection that has
  waited longest without sending its headers is closed to make room; a new connection is refused
  (JSON 503 `overloaded`) only when every other one is in the middle of a request;
- the JSON error shape for a request its parser refuses (400), instead of uvicorn's plain text;
- the start of the app's drain when uvicorn begins to stop (`lifecycle.py`).

h11's own limit bounds the size of a request head (`h11_max_incomplete_event_size`); the body's
size and read time and the request's deadline are the guard's (`guard.py`).
"""

from __future__ import annotations

import asyncio
import logging
import resource
from collections import OrderedDict
from typing import Any, Final, NamedTuple

from edgewise.domain.errors import REASON_BAD_REQUEST, REASON_OVERLOADED, UsageError
from edgewise.service.bad_request import raw_error_response
from edgewise.service.lifecycle import Lifecycle

DEFAULT_MAX_CONNECTIONS: Final = 1024
DEFAULT_BACKLOG: Final = 2048
"""uvicorn's own listen backlog, kept where the open-file limit leaves room for it."""
MIN_BACKLOG: Final = 16
RESERVED_FILES: Final = 64
"""File descriptors kept out of the connection cap: logs, the cache, imports, the listening socket."""
MAX_HEADER_BYTES: Final = 16 * 1024
"""The most h11 buffers of a request head that has not ended yet (`h11_max_incomplete_event_size`):
past it the request is answered 400, so a connection that waits holds no more than this."""

logger = logging.getLogger("edgewise.service")


class ConnectionLimits(NamedTuple):
    """How many client connections the service holds, and how many it accepts in one go."""

    max_connections: int
    backlog: int


DEFAULT_LIMITS: Final = ConnectionLimits(DEFAULT_MAX_CONNECTIONS, DEFAULT_BACKLOG)


def open_file_limit() -> int | None:
    """The process's soft limit on open files (`ulimit -n`), or None when it has none."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def connection_limits(requested: int, model_connections: int, limit: int | None) -> ConnectionLimits:
    """`requested` connections and uvicorn's backlog, lowered to fit the open-file `limit` beside the
    model's connections (one per thread) and `RESERVED_FILES`.

    Past the open-file limit `accept` fails with "Too many open files", and asyncio logs it and stops
    accepting for a second at a time: no client, `/healthz` included, gets in meanwhile. The cap alone
    does not prevent it: asyncio accepts up to `backlog` connections in one go, and the cap closes the
    oldest waiting ones only once the new ones are set up, a loop iteration or two later, so about
    three backlogs of new connections can be open beyond the cap. The backlog is kept that small.
    """
    if limit is None:
        return ConnectionLimits(requested, DEFAULT_BACKLOG)
    room = limit - RESERVED_FILES - model_connections - 3 * MIN_BACKLOG
    if room < 1:
        raise UsageError(
            f"the open-file limit (ulimit -n) is {limit}: too low for the connections of {model_connections} "
            f"model threads and {RESERVED_FILES + 3 * MIN_BACKLOG} others; raise it or lower --workers"
        )
    cap = min(requested, room)
    backlog = min(DEFAULT_BACKLOG, MIN_BACKLOG + (room - cap) // 3)
    return ConnectionLimits(cap, backlog)


def guarded_protocol(
    *, read_timeout_s: float, max_connections: int, lifecycle: Lifecycle | None = None
) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol with the header deadline, the connection cap and the JSON 400 (above).

    One class per server: the class holds the server's connections that wait for a request head,
    oldest first, which the cap closes first. uvicorn begins its graceful stop by calling `shutdown`
    on every connection; that is where `lifecycle`'s drain begins (uvicorn tells the app nothing
    before it has waited for the connections).
    """
    if not read_timeout_s > 0:
        raise UsageError(f"read timeout must be > 0 seconds, got {read_timeout_s}")
    if max_connections < 1:
        raise UsageError(f"max_connections must be at least 1, got {max_connections}")
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    waiting: OrderedDict[Any, None] = OrderedDict()
    closing: set[Any] = set()

    class GuardedProtocol(H11Protocol):  # type: ignore[misc, valid-type]
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: Any) -> None:
            super().connection_made(transport)
            self._await_head()
            self._make_room()

        def connection_lost(self, exc: Exception | None) -> None:
            self._head_arrived()
            closing.discard(self)
            super().connection_lost(exc)

        def handle_events(self) -> None:
            super().handle_events()
            if self.conn.their_state is not h11.IDLE:
                self._head_arrived()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
                self._await_head()  # a kept-alive connection: the next request has the same deadline

        def shutdown(self) -> None:
            if lifecycle is not None:
                lifecycle.begin_drain()
            super().shutdown()

        def send_400_response(self, msg: str) -> None:
            message = (
                f"{msg.rstrip('.')}: the request is not valid HTTP/1.1 (for example a Content-Length that is "
                f"not a number, a malformed request line or header, or a request head still unfinished past "
                f"{MAX_HEADER_BYTES} bytes)"
            )
            self._answer_and_close(400, REASON_BAD_REQUEST, message)

        def _await_head(self) -> None:
            self._head_arrived()
            self._header_timer = self.loop.call_later(read_timeout_s, self._head_too_slow)
            waiting[self] = None

        def _head_arrived(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None
            waiting.pop(self, None)

        def _head_too_slow(self) -> None:
            self._header_timer = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                logger.debug("closed a connection that sent no whole request head in %g s", read_timeout_s)
                self._close()

        def _close(self) -> None:
            waiting.pop(self, None)
            closing.add(self)
            self.transport.close()

        def _make_room(self) -> None:
            while len(self.connections) - len(closing) > max_connections:
                oldest = next((connection for connection in waiting if connection is not self), None)
                if oldest is None:
                    logger.warning(
                        "refused a connection: all %d connections are in a request", max_connections
                    )
                    self._answer_and_close(
                        503,
                        REASON_OVERLOADED,
                        f"the server holds {max_connections} connections, each in a request (--max-connections); "
                        "retry later",
                    )
                    return
                oldest._head_arrived()
                oldest._close()

        def _answer_and_close(self, status: int, reason: str, message: str) -> None:
            self.transport.write(
                raw_error_response(status, reason, message, self.server_state.default_headers)
            )
            self._close()

    return GuardedProtocol
