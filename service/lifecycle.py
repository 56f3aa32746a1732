"""Stopping the service: once SIGTERM (or Ctrl-C) arrives, no new work starts, waiting work is answered
at once, and running work has `--shutdown-timeout` seconds to finish before it is answered too.

uvicorn stops accepting connections and waits for the open ones, but it does not tell the app that it
is stopping, and when its own graceful timeout passes it cancels the request tasks, which answer a
plain-text 500 and log a `CancelledError` traceback each. `Lifecycle` is the app's side of the stop:
the HTTP protocol begins the drain when uvicorn begins its stop (`connections.py`), the runner then
refuses what waits in its queue, and the guard answers each request that is still running with the
JSON 503 `shutting_down` when the grace period ends, so every task has finished before uvicorn's own
timeout would cancel it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Final

from edgewise.domain.errors import REASON_SHUTTING_DOWN, UsageError

DEFAULT_SHUTDOWN_TIMEOUT_S: Final = 10.0

logger = logging.getLogger("edgewise.service")


class Lifecycle:
    """Whether the service is stopping, and the requests to answer when the grace period ends.

    Used on the event loop's thread only (the server's `shutdown` and the request handlers).
    """

    def __init__(self, shutdown_timeout_s: float = DEFAULT_SHUTDOWN_TIMEOUT_S) -> None:
        if not shutdown_timeout_s > 0:
            raise UsageError(f"shutdown timeout must be > 0 seconds, got {shutdown_timeout_s}")
        self.shutdown_timeout_s = shutdown_timeout_s
        self._drain_deadline: float | None = None
        self._expired = False
        self._on_drain: list[Callable[[], None]] = []
        self._running: set[asyncio.Future[str]] = set()

    @property
    def draining(self) -> bool:
        return self._drain_deadline is not None

    def on_drain(self, callback: Callable[[], None]) -> None:
        """Call `callback` once, when the drain begins (the runner empties its queue there)."""
        self._on_drain.append(callback)

    def begin_drain(self) -> None:
        """Stop taking work; in `shutdown_timeout_s` seconds, answer whatever still runs."""
        if self._drain_deadline is not None:
            return
        self._drain_deadline = time.monotonic() + self.shutdown_timeout_s
        logger.info(
            "stopping: new requests get 503 shutting_down, running ones have %g s to finish",
            self.shutdown_timeout_s,
        )
        for callback in self._on_drain:
            callback()
        asyncio.get_running_loop().call_later(self.shutdown_timeout_s, self._expire)

    def watch(self, stop: asyncio.Future[str]) -> Callable[[], None]:
        """Resolve `stop` with `shutting_down` when the grace period ends; returns the undo."""
        if self._expired:
            _resolve(stop, REASON_SHUTTING_DOWN)
            return lambda: None
        self._running.add(stop)
        return lambda: self._running.discard(stop)

    def _expire(self) -> None:
        self._expired = True
        for stop in list(self._running):
            _resolve(stop, REASON_SHUTTING_DOWN)
        self._running.clear()


def _resolve(future: asyncio.Future[str], reason: str) -> None:
    if not future.done():
        future.set_result(reason)
