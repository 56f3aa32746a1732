"""Concurrent extraction that keeps input order and never loses an input: `EdgeExtractor.extract_many`
and the episode runner both run on it.

Each item runs in a worker thread with a copy of the caller's context (DSPy settings live in
context variables), and its outcome, a result or the exception it raised, comes back in input order
as soon as every earlier item is done, so a caller can stream ordered output.
"""

from __future__ import annotations

import contextvars
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from edgewise.domain.errors import UsageError

T = TypeVar("T")
R = TypeVar("R")


def _capture(fn: Callable[[T], R], item: T) -> R | Exception:
    try:
        return fn(item)
    except Exception as error:  # noqa: BLE001  (a failed item is an outcome, not the end of the batch)
        return error


def iter_concurrently(
    fn: Callable[[T], R], items: Iterable[T], *, workers: int = 4
) -> Iterator[tuple[T, R | Exception]]:
    """Yield `(item, fn(item))` (or the exception it raised) for each item, in input order.

    At most `2 * workers` items are in flight, so a long input stream is never read ahead far.
    """
    if workers < 1:
        raise UsageError("workers must be >= 1")
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="edgewise")
    pending: deque[tuple[T, Future[R | Exception]]] = deque()
    try:
        for item in items:
            pending.append((item, pool.submit(contextvars.copy_context().run, _capture, fn, item)))
            while pending and (len(pending) >= 2 * workers or pending[0][1].done()):
                done_item, future = pending.popleft()
                yield done_item, future.result()
        while pending:
            done_item, future = pending.popleft()
            yield done_item, future.result()
    finally:
        pool.shutdown(wait=not pending, cancel_futures=True)


def run_concurrently(fn: Callable[[T], R], items: Iterable[T], *, workers: int = 4) -> list[R | Exception]:
    return [outcome for _, outcome in iter_concurrently(fn, items, workers=workers)]
