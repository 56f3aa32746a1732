# Over 400 lines: what is retried, when and for how long is one policy, kept in one place.
"""Provider faults: which failed model requests are worth another attempt, when, and when to give up.

A fault is a request that failed for a reason outside the episode: a rate limit, a 5xx, a timeout, a
dropped connection, or a 200 whose body is not JSON. `call_with_retries` sends one request at a time
under a `RetryPolicy` (exponential backoff with jitter; the provider's `Retry-After` honoured), an
optional shared `TokenBucket` (`--max-rps`) and the episode's deadline (`episode_scope`), and counts
each retry, so that a batch reports what the provider cost it instead of guessing.

DSPy classifies the errors (`is_retryable_lm_error`) and parses `Retry-After`; tenacity runs the loop,
configured once (`_retry_settings`) for the threaded and the asyncio path. DSPy's and LiteLLM's own
retries stay off: their waits have no jitter, cannot be counted, and would sleep past an episode's
deadline.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Final, NamedTuple, NoReturn, TypeVar, cast

from dspy.utils.exceptions import (
    AdapterParseError,
    ContextWindowExceededError,
    LMAuthError,
    LMBillingError,
    LMError,
    LMInvalidRequestError,
    LMProviderError,
    LMRateLimitError,
    LMServerError,
    LMTimeoutError,
    LMTransportError,
    is_retryable_lm_error,
)
from tenacity import AsyncRetrying, RetryCallState, Retrying, retry_if_exception

from edgewise.domain.errors import (
    REASON_AUTH,
    REASON_CONNECTION,
    REASON_CONTEXT_WINDOW,
    REASON_DEADLINE,
    REASON_INTERNAL,
    REASON_INVALID_RESPONSE,
    REASON_PARSE,
    REASON_PROVIDER_ERROR,
    REASON_PROVIDER_REJECTED,
    REASON_RATE_LIMITED,
    REASON_SERVER_ERROR,
    REASON_TIMEOUT,
    EdgewiseError,
    UsageError,
)

T = TypeVar("T")

logger = logging.getLogger("edgewise.faults")

# Jitter added on top of a Retry-After hint, as a share of the hint, so that the clients a provider
# throttled together do not all come back in the same instant.
_RETRY_AFTER_JITTER: Final = 0.1
_MAX_CAUSE_DEPTH: Final = 16


class DeadlineExceeded(EdgewiseError, TimeoutError):
    """The episode ran past its deadline (`--episode-timeout`); its partial work is discarded."""

    reason = REASON_DEADLINE

    def __init__(self, timeout_s: float, requests: int, retries: int) -> None:
        self.timeout_s, self.requests, self.retries = timeout_s, requests, retries
        super().__init__(
            f"episode deadline of {timeout_s:g} s passed after {requests} model requests ({retries} retries); "
            "raise --episode-timeout or lower --timeout"
        )


def is_invalid_success_body(error: BaseException) -> bool:
    """A 2xx reply whose body is not JSON: a proxy or gateway cut it, not an answer from the model.

    DSPy does not retry it (`LMProviderError` is its catch-all). edgewise does: the request is the
    same at temperature 0, the provider answered 2xx so it is up, and a cut body says nothing about
    the episode, so a second attempt is the likely fix. Only the exact catch-all class with a 2xx
    status qualifies; auth, billing and invalid-request errors are subclasses and never retried.
    """
    status = getattr(error, "status", None)
    return type(error) is LMProviderError and isinstance(status, int) and 200 <= status < 300


def is_retryable(error: BaseException) -> bool:
    """Rate limits, 5xx, timeouts, transport failures (DSPy's list) and a 2xx body that is not JSON."""
    return isinstance(error, Exception) and (is_retryable_lm_error(error) or is_invalid_success_body(error))


def _is_timeout(error: BaseException) -> bool:
    seen: BaseException | None = error
    for _ in range(_MAX_CAUSE_DEPTH):  # a cause chain can loop
        if seen is None:
            return False
        if isinstance(seen, TimeoutError | LMTimeoutError) or "Timeout" in type(seen).__name__:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


# The reason of each failure class, most specific first: a ContextWindowExceededError is also an
# LMInvalidRequestError, and every LM failure an LMError. Transport failures and 2xx bodies that are
# not JSON are told apart by `failure_reason` itself.
_REASON_OF_CLASS: Final[tuple[tuple[type[BaseException] | tuple[type[BaseException], ...], str], ...]] = (
    (DeadlineExceeded, REASON_DEADLINE),
    (LMRateLimitError, REASON_RATE_LIMITED),
    (LMTimeoutError, REASON_TIMEOUT),
    (LMServerError, REASON_SERVER_ERROR),
    (AdapterParseError, REASON_PARSE),
    ((LMAuthError, LMBillingError), REASON_AUTH),
    (ContextWindowExceededError, REASON_CONTEXT_WINDOW),
    (LMInvalidRequestError, REASON_PROVIDER_REJECTED),
    (LMError, REASON_PROVIDER_ERROR),
    # Raised by a client below DSPy's error classes (a custom LM, a socket): the same words.
    (TimeoutError, REASON_TIMEOUT),
    (ConnectionError, REASON_CONNECTION),
)


def failure_reason(error: BaseException) -> str:
    """The reason word for an exception from running an episode (the vocabulary: domain/errors.py)."""
    if isinstance(error, LMTransportError):
        return REASON_TIMEOUT if _is_timeout(error) else REASON_CONNECTION
    if is_invalid_success_body(error):
        return REASON_INVALID_RESPONSE
    return next((reason for kind, reason in _REASON_OF_CLASS if isinstance(error, kind)), REASON_INTERNAL)


def retry_after_seconds(error: BaseException) -> float | None:
    """The provider's `Retry-After` hint in seconds, when it gave a usable one."""
    hint = getattr(error, "retry_after", None)
    if isinstance(hint, bool) or not isinstance(hint, int | float) or not math.isfinite(hint) or hint < 0:
        return None
    return float(hint)


class RetryPolicy(NamedTuple):
    """How often and how patiently to retry a failed request.

    Without a hint the n-th retry (n = 0, 1, ...) waits between half and all of
    `min(cap_s, base_s * 2**n)` ("equal jitter": never immediate, never in lockstep). With a
    `Retry-After` hint it waits the hint plus up to 10% more; a hint over `max_retry_after_s` ends
    the retries at once rather than hold a worker that long.
    """

    max_retries: int = 3
    base_s: float = 1.0
    cap_s: float = 30.0
    max_retry_after_s: float = 60.0
    """A provider asking for a longer pause than this (seconds) ends the retries: waiting that long is
    the caller's call."""

    def backoff(self, retry: int, rng: random.Random | None = None) -> float:
        ceiling = min(self.cap_s, self.base_s * 2 ** min(retry, 30))
        return ceiling / 2 + (rng or random).uniform(0, ceiling / 2)

    def gives_up(self, error: BaseException, retry: int) -> bool:
        """Whether `error` ends the retries before retry number `retry`, whatever the deadline."""
        if retry >= self.max_retries or not is_retryable(error):
            return True
        hint = retry_after_seconds(error)
        return hint is not None and hint > self.max_retry_after_s

    def wait(self, error: BaseException, retry: int, rng: random.Random | None = None) -> float:
        """Seconds to wait before retry number `retry` after `error`: the hint (plus jitter) or the backoff."""
        hint = retry_after_seconds(error)
        if hint is None:
            return self.backoff(retry, rng)
        return hint + (rng or random).uniform(0, _RETRY_AFTER_JITTER * max(hint, self.base_s))

    def delay(self, error: BaseException, retry: int, rng: random.Random | None = None) -> float | None:
        """Seconds to wait before retry number `retry` after `error`, or None: do not retry."""
        return None if self.gives_up(error, retry) else self.wait(error, retry, rng)


DEFAULT_RETRY_POLICY: Final = RetryPolicy()
"""The retries a request gets unless told otherwise; `LMConfig` and the CLI flags take their defaults here."""


class TokenBucket:
    """A limit of `rate` requests a second (bursts of `burst`), shared by every thread that holds it.

    `reserve` takes a token at once and says how long its holder must wait before sending, so
    waiting callers are served in arrival order and the average rate never exceeds `rate`.

    Written here rather than taken from a rate-limit library because the caller needs the wait before
    it starts: a wait that would end past the episode's deadline fails at once (`_before_request`),
    and the same reservation is slept with `time.sleep` on a worker thread or `asyncio.sleep` in a
    task. The libraries do not give the wait back: pyrate-limiter waits inside its own `try_acquire`
    (or fails fast), `limits` answers whether a request fits now (the caller would poll), and
    aiolimiter serves asyncio tasks only, not the worker threads of a batch.
    """

    def __init__(self, rate: float, burst: int = 1, *, clock: Callable[[], float] = time.monotonic) -> None:
        if not rate > 0 or not math.isfinite(rate):
            raise UsageError(f"TokenBucket rate must be a positive number of requests a second, got {rate}")
        if burst < 1:
            raise UsageError(f"TokenBucket burst must be >= 1, got {burst}")
        self.rate, self.burst, self._clock = float(rate), burst, clock
        self._tokens = float(burst)
        self._updated = clock()
        self._lock = threading.Lock()

    def reserve(self) -> float:
        """Take one token; return the seconds to wait until it is valid (0 when one was available)."""
        with self._lock:
            now = self._clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._updated) * self.rate)
            self._updated = now
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.rate


class EpisodeStats:
    """The model requests of one episode: how many, how many were retries and why, and its deadline.

    Set for the running episode by `episode_scope`; the LM adds to it from whichever thread sends.
    The deadline runs from the start of the episode's first model request (`start_clock`), not from
    the start of the episode: what comes before it is edgewise's own warm-up (the first episodes of a
    run import and build LiteLLM's client and DSPy's adapter, which takes seconds), which says
    nothing about the provider and would fail the first episodes of a run "after 0 model requests".
    Every request, retry and wait of the episode counts from then on.
    """

    def __init__(
        self, timeout_s: float | None = None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if timeout_s is not None and not timeout_s > 0:
            raise UsageError(f"episode timeout must be > 0 seconds, got {timeout_s}")
        self.timeout_s = timeout_s
        self._clock = clock
        self.started: float | None = None
        self.deadline: float | None = None
        self.requests = 0
        self.retry_reasons: Counter[str] = Counter()
        self._lock = threading.Lock()

    def start_clock(self) -> None:
        """Start the deadline, once: called as the episode's first model request begins."""
        with self._lock:
            if self.started is None:
                self.started = self._clock()
                self.deadline = None if self.timeout_s is None else self.started + self.timeout_s

    @property
    def retries(self) -> int:
        return sum(self.retry_reasons.values())

    def add_request(self) -> None:
        with self._lock:
            self.requests += 1

    def add_retry(self, reason: str) -> None:
        with self._lock:
            self.retry_reasons[reason] += 1

    def passed(self, extra_s: float = 0.0) -> bool:
        """Whether the deadline has passed, or will have after waiting `extra_s` more seconds."""
        return self.deadline is not None and self._clock() + extra_s > self.deadline

    def expired(self) -> DeadlineExceeded:
        return DeadlineExceeded(self.timeout_s or 0.0, self.requests, self.retries)

    def check(self) -> None:
        """Raise `DeadlineExceeded` when the deadline has passed."""
        if self.passed():
            raise self.expired()


_CURRENT: ContextVar[EpisodeStats | None] = ContextVar("edgewise_episode_stats", default=None)


def current_stats() -> EpisodeStats | None:
    return _CURRENT.get()


@contextmanager
def episode_scope(
    timeout_s: float | None = None, *, clock: Callable[[], float] = time.monotonic
) -> Iterator[EpisodeStats]:
    """Count the requests made inside this block, and hold them to a deadline of `timeout_s` seconds
    from the start of the first request (see `EpisodeStats` for why not from now).

    The deadline is checked before each request, before each backoff wait (a wait that would end
    past it fails at once) and, by the caller, once the episode is done: a result that arrives late
    is not used, so "over the deadline" always means "failed with reason deadline".
    """
    stats = EpisodeStats(timeout_s, clock=clock)
    token = _CURRENT.set(stats)
    try:
        yield stats
    finally:
        _CURRENT.reset(token)


def _before_request(stats: EpisodeStats | None, limiter: TokenBucket | None) -> float:
    """Deadline check and rate-limit reservation; returns the seconds to wait before sending."""
    if stats is not None:
        stats.start_clock()  # the first request starts the deadline; a rate-limit wait counts against it
        stats.check()
    wait = limiter.reserve() if limiter is not None else 0.0
    if stats is not None:
        if wait and stats.passed(wait):
            raise stats.expired()
        stats.add_request()
    return wait


def _retry_settings(
    policy: RetryPolicy, stats: EpisodeStats | None, rng: random.Random | None
) -> dict[str, Any]:
    """The one retry configuration, for `tenacity.Retrying` and `tenacity.AsyncRetrying` alike.

    After a failed attempt tenacity asks `retry` (is the failure retryable?), then `wait` (how long
    before the next attempt), then `stop` (give up now?): the policy gives up when retries run out or
    a Retry-After is too long, and the episode gives up when the wait would end past its deadline, so
    a retry that could only finish late is never attempted. Giving up raises the failure itself, or
    `DeadlineExceeded` caused by it; `before_sleep` counts and logs each retry that goes ahead.
    """

    def failure(state: RetryCallState) -> BaseException:
        """The last attempt's exception: tenacity consults these settings only after a failure."""
        return cast("Future[Any]", state.outcome).exception()

    def retries_so_far(state: RetryCallState) -> int:
        return state.attempt_number - 1

    def wait(state: RetryCallState) -> float:
        return policy.wait(failure(state), retries_so_far(state), rng)

    def stop(state: RetryCallState) -> bool:
        if policy.gives_up(failure(state), retries_so_far(state)):
            return True
        return stats is not None and stats.passed(state.upcoming_sleep)

    def give_up(state: RetryCallState) -> NoReturn:
        error = failure(state)
        if stats is None or policy.gives_up(error, retries_so_far(state)):
            raise error
        raise stats.expired() from error

    def count_retry(state: RetryCallState) -> None:
        reason = failure_reason(failure(state))
        if stats is not None:
            stats.add_retry(reason)
        logger.info(
            "model request failed (%s); retry %d of %d in %.2f s",
            reason,
            state.attempt_number,
            policy.max_retries,
            state.upcoming_sleep,
        )

    return {
        "retry": retry_if_exception(is_retryable),
        "wait": wait,
        "stop": stop,
        "retry_error_callback": give_up,
        "before_sleep": count_retry,
    }


def call_with_retries(
    send: Callable[[], T],
    policy: RetryPolicy,
    limiter: TokenBucket | None = None,
    *,
    sleep: Callable[[float], None] = time.sleep,
    rng: random.Random | None = None,
) -> T:
    """`send()` until it succeeds, a failure is not worth retrying, retries run out, or the deadline."""
    stats = current_stats()

    def attempt() -> T:
        pause = _before_request(stats, limiter)
        if pause:
            sleep(pause)
        return send()

    return Retrying(sleep=sleep, **_retry_settings(policy, stats, rng))(attempt)


async def acall_with_retries(
    send: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    limiter: TokenBucket | None = None,
    *,
    rng: random.Random | None = None,
) -> T:
    """The async form of `call_with_retries`: waits with `asyncio.sleep`, never blocking the loop."""
    stats = current_stats()

    async def attempt() -> T:
        pause = _before_request(stats, limiter)
        if pause:
            await asyncio.sleep(pause)
        return await send()

    return await AsyncRetrying(sleep=asyncio.sleep, **_retry_settings(policy, stats, rng))(attempt)
