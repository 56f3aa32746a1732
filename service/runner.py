"""The program behind the service: at most `workers` extractions at once, a bounded queue before them,
each run on a thread of its own under the service's LM, each failure turned into the `ServiceError` a
client sees and logged without secrets.

A DSPy program is synchronous and a thread cannot be stopped from outside, so a request that is
abandoned (its client hung up, its deadline passed, the service is stopping) gives its worker slot
back at once and tells its thread to stop: the episode's deadline is set to now, so the thread ends
before its next model request or retry (`edgewise.runtime.faults.EpisodeStats`). The request in
flight ends by the model's own timeout. Such threads are daemons, so they never hold up the process
at exit, and there are at most `thread_limit(workers)` of them: past that, new work waits for one.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import traceback
from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Final

import dspy

from edgewise.domain.episode import Episode
from edgewise.domain.errors import REASON_INTERNAL, REASON_OVERLOADED, REASON_SHUTTING_DOWN
from edgewise.domain.types import ExtractionResult
from edgewise.runtime.faults import EpisodeStats, current_stats
from edgewise.runtime.redaction import redact
from edgewise.runtime.runner import run_episode
from edgewise.service.errors import ServiceError, provider_failure
from edgewise.service.lifecycle import Lifecycle

logger = logging.getLogger("edgewise.service")

ABANDONED_THREADS_PER_WORKER: Final = 4
"""Threads still finishing abandoned work that each worker may have beside its own."""
_LATENCY_WEIGHT: Final = 0.2  # of the newest episode in the running mean behind Retry-After


def shutting_down() -> ServiceError:
    """The answer to work that arrives, or still waits, once the service is stopping."""
    return ServiceError(
        503,
        REASON_SHUTTING_DOWN,
        "the service is stopping and takes no new work; retry on another instance or later",
        headers={"Connection": "close"},
    )


def thread_limit(workers: int) -> int:
    """The most threads the runner holds: one per worker and the abandoned ones still finishing."""
    return workers * (1 + ABANDONED_THREADS_PER_WORKER)


class _Gate:
    """`capacity` holders at once, at most `max_waiting` waiting in arrival order (None: no bound).

    asyncio's Semaphore can neither refuse a waiter when too many wait nor fail the ones that wait
    when the service stops; this can. Used on the event loop's thread only.
    """

    def __init__(self, capacity: int, max_waiting: int | None = None) -> None:
        self.free = capacity
        self.max_waiting = max_waiting
        self.waiting: deque[asyncio.Future[None]] = deque()
        self.closed: Callable[[], Exception] | None = None

    async def acquire(self, when_full: Callable[[], Exception]) -> None:
        if self.closed is not None:
            raise self.closed()
        if self.free > 0 and not self.waiting:
            self.free -= 1
            return
        if self.max_waiting is not None and len(self.waiting) >= self.max_waiting:
            raise when_full()
        waiter = asyncio.get_running_loop().create_future()
        self.waiting.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                self.release()  # handed a place just as this waiter was cancelled: pass it on
            elif waiter in self.waiting:
                self.waiting.remove(waiter)
            raise

    def release(self) -> None:
        while self.waiting:
            waiter = self.waiting.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self.free += 1

    def close(self, error: Callable[[], Exception]) -> None:
        """Fail every waiter, and every later `acquire`, with an `error()` of its own."""
        self.closed = error
        while self.waiting:
            waiter = self.waiting.popleft()
            if not waiter.done():
                waiter.set_exception(error())


class _Job:
    """One extraction on its thread; `cancel` stops it before its next model request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cancelled = False
        self._stats: EpisodeStats | None = None

    def attach(self) -> None:
        """On the job's thread, inside the episode's scope: take its stats (or stop at once)."""
        with self._lock:
            self._stats = current_stats()
            cancelled = self._cancelled
        if cancelled:
            self._expire()

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
        self._expire()

    def _expire(self) -> None:
        stats = self._stats
        if stats is not None:
            stats.start_clock()  # the deadline is set once the clock runs: set it to now after that
            stats.deadline = -math.inf


class ProgramRunner:
    """Runs the program for the service, `workers` episodes at once and `max_queue` waiting; one per app."""

    def __init__(
        self,
        program: dspy.Module,
        lm: dspy.BaseLM | None,
        workers: int,
        secrets: set[str],
        *,
        max_queue: int,
        request_timeout_s: float,
        lifecycle: Lifecycle,
    ) -> None:
        self.program = program
        self.lm = lm
        self.workers = workers
        self.secrets = secrets
        self.request_timeout_s = request_timeout_s
        self._slots = _Gate(workers, max_waiting=max_queue)
        self._threads = _Gate(thread_limit(workers))
        self._mean_latency_s = 1.0
        lifecycle.on_drain(self._refuse_waiting)

    @property
    def queued(self) -> int:
        """Episodes waiting for a worker now."""
        return len(self._slots.waiting)

    def _refuse_waiting(self) -> None:
        self._slots.close(shutting_down)

    def _overloaded(self) -> ServiceError:
        """503 with a Retry-After of about the time the queue ahead takes to empty."""
        ahead = self.queued + 1
        wait = math.ceil(self._mean_latency_s * ahead / self.workers)
        retry_after = max(1, min(wait, math.ceil(self.request_timeout_s)))
        return ServiceError(
            503,
            REASON_OVERLOADED,
            f"all {self.workers} workers are busy and {self.queued} episodes wait (--max-queue); "
            f"retry in {retry_after} s",
            headers={"Retry-After": str(retry_after)},
        )

    def _lm_scope(self) -> AbstractContextManager[Any]:
        """The service's LM, or `dspy.configure`'s; either way DSPy keeps no record of the calls
        beyond what the LM's `keep_history` says (a service runs for weeks)."""
        from edgewise.runtime.lm import history_settings, lm_context

        if self.lm is None:
            return dspy.context(**history_settings())
        return lm_context(self.lm)

    def _extract_sync(self, episode: Episode, job: _Job) -> ExtractionResult:
        def program(given: Episode) -> Any:
            job.attach()
            return self.program(given)

        with self._lm_scope():
            outcome = run_episode(program, episode, timeout_s=self.request_timeout_s)
        if outcome.error is not None:
            raise outcome.error
        if not isinstance(outcome.result, ExtractionResult):
            raise TypeError(
                f"the program returned {type(outcome.result).__name__} as .result, not an ExtractionResult"
            )
        return outcome.result

    async def _on_thread(self, episode: Episode, job: _Job) -> ExtractionResult:
        """`_extract_sync` on a daemon thread of its own, its answer brought back to this loop."""
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[ExtractionResult] = loop.create_future()

        def settle(result: ExtractionResult | None, error: BaseException | None) -> None:
            if not answer.done():
                if error is not None:
                    answer.set_exception(error)
                else:
                    answer.set_result(result)  # type: ignore[arg-type]

        def run() -> None:
            result, error = None, None
            try:
                result = self._extract_sync(episode, job)
            except Exception as failure:  # noqa: BLE001 - handed to the request, which maps it
                error = failure
            finally:
                try:
                    loop.call_soon_threadsafe(settle, result, error)
                    loop.call_soon_threadsafe(self._threads.release)
                except RuntimeError:  # the loop has closed: the service has stopped
                    pass

        await self._threads.acquire(self._overloaded)
        try:
            threading.Thread(target=run, name="edgewise-serve", daemon=True).start()
        except BaseException:
            self._threads.release()
            raise
        return await answer

    async def extract(self, episode: Episode) -> ExtractionResult:
        """The program's result, or a `ServiceError` saying why not (secrets removed, failure logged).

        Cancelled (the client hung up, the request's deadline passed), it frees its worker at once
        and stops its thread before the thread's next model request.
        """
        await self._slots.acquire(self._overloaded)
        job = _Job()
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            result = await self._on_thread(episode, job)
        except asyncio.CancelledError:
            job.cancel()
            raise
        except Exception as error:  # noqa: BLE001 - every failure becomes a status and a reason
            raise self._failure(error) from None
        finally:
            self._slots.release()
        latency = loop.time() - started
        self._mean_latency_s += _LATENCY_WEIGHT * (latency - self._mean_latency_s)
        return result

    def _failure(self, error: Exception) -> ServiceError:
        failure = provider_failure(error, self.secrets)
        if failure.body.reason == REASON_INTERNAL:
            trace = "".join(traceback.format_exception(error))
            logger.error("extraction failed: %s", redact(trace, self.secrets).replace("\n", " | "))
        else:
            logger.warning("extraction failed: %s: %s", failure.body.reason, failure.body.message)
        return failure
