"""The episode runner: a program run over episodes, one `Outcome` per episode, in input order.

Every caller that runs a program on episodes (`edgewise extract`, the bench, an optimizer's dev
scoring, the HTTP service, the Ray stage) goes through `run_episode` / `run_episodes`, so an
episode's result or error, its failure reason, its usage, its model requests and retries, and its
latency are measured and named the same way everywhere.

DSPy's `Evaluate` and `Parallel` run a program over examples too, but they return when the whole
set is done, keep no per-example usage, latency or retry counts, and turn a failure into a score;
a batch that streams ordered JSONL, a bench that reports latency percentiles and a service that
answers one request need each episode's outcome as it finishes, so the runner is edgewise's own,
built on `iter_concurrently` (ordered, bounded look-ahead) and `dspy.track_usage`.

A reply a program step could not parse, or that stopped at the token limit, is retried once by the
step (`edgewise.modules.calls`); one that fails again leaves a `parse_failure` warning in the result.
The runner decides what that means, not the step: for `edgewise extract`, the service and the Ray
stage the episode fails with reason `parse_failure` (`ParseFailure`), so an unread reply is never a
result with edges missing; the bench and an optimizer's dev scoring pass `keep_unparsed=True` and
score the result as it is, counting its parse failures.
"""

from __future__ import annotations

import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple, TypeVar

import dspy

from edgewise.domain.episode import Episode
from edgewise.domain.errors import REASON_INTERNAL, REASON_PARSE_FAILURE, EdgewiseError, debug_enabled
from edgewise.domain.types import ExtractionResult, StepUsage
from edgewise.modules.concurrency import iter_concurrently
from edgewise.modules.usage import tracked_usage
from edgewise.runtime.faults import episode_scope, failure_reason
from edgewise.runtime.redaction import redact

T = TypeVar("T")


class ParseFailure(EdgewiseError):
    """A reply of the episode could not be parsed, or stopped at the token limit, on its retry too.

    The message names the steps, never the reply (it may quote the episode, or a key it echoed).
    """

    reason = REASON_PARSE_FAILURE

    def __init__(self, result: ExtractionResult) -> None:
        self.result = result
        failed = [warning.message for warning in result.warnings if warning.code == REASON_PARSE_FAILURE]
        super().__init__("; ".join(failed) or "a reply of the model could not be parsed")


def unparsed(result: Any) -> bool:
    """Whether `result` is an extraction with a reply that failed on its retry too."""
    return isinstance(result, ExtractionResult) and result.parse_failures > 0


class Outcome(NamedTuple):
    """What one episode came to: its result, or the error that ended it, and what it cost.

    `reason` names the failure in the one vocabulary of `edgewise.runtime.faults.failure_reason`
    (`rate_limited`, `deadline`, `connection`, ...); None for a result.
    """

    result: ExtractionResult | None
    error: BaseException | None
    reason: str | None
    usage: StepUsage
    requests: int
    retries: Counter[str]
    latency_s: float

    @property
    def ok(self) -> bool:
        return self.result is not None


def run_episode(
    program: Callable[..., Any],
    episode: Episode,
    *,
    timeout_s: float | None = None,
    keep_unparsed: bool = False,
) -> Outcome:
    """Run `program` on one episode under its deadline; never raises for a failed episode.

    A result that arrives after the deadline is not used (the episode fails with reason
    `deadline`), so "over the deadline" always means "failed". A result with a parse failure
    fails the episode with reason `parse_failure`, unless `keep_unparsed` (the bench's way).
    """
    started = time.perf_counter()
    with episode_scope(timeout_s) as stats, dspy.track_usage() as tracker:
        try:
            result = program(episode).result
            stats.check()
        except Exception as error:  # noqa: BLE001 - a failed episode is an outcome, not the end of a run
            return _failed(error, tracker, stats, started)
    latency = time.perf_counter() - started
    spent = tracked_usage(tracker)
    if unparsed(result) and not keep_unparsed:
        return Outcome(
            None,
            ParseFailure(result),
            REASON_PARSE_FAILURE,
            spent,
            stats.requests,
            stats.retry_reasons,
            latency,
        )
    return Outcome(result, None, None, spent, stats.requests, stats.retry_reasons, latency)


def _failed(error: BaseException, tracker: Any, stats: Any, started: float) -> Outcome:
    latency = time.perf_counter() - started
    reason = failure_reason(error)
    if reason == REASON_INTERNAL and debug_enabled():
        print_bug_trace(error)
    return Outcome(
        None,
        error,
        reason,
        tracked_usage(tracker),
        stats.requests,
        stats.retry_reasons,
        latency,
    )


def print_bug_trace(error: BaseException) -> None:
    """The traceback of an episode's `internal_error` on stderr, keys masked, for `EDGEWISE_DEBUG=1`.

    The episode's record says only the exception's type and message; the line that raised it is
    what fixing the bug needs, and it exists only here, where the exception was caught.
    """
    trace = "".join(traceback.format_exception(error))
    sys.stderr.write(
        f"edgewise: internal error in an episode (a bug in edgewise):\n{redact(trace, max_chars=None)}"
    )


def run_episodes(
    program: Callable[..., Any],
    items: Iterable[T],
    *,
    episode_of: Callable[[T], Episode | None] = lambda item: item,  # type: ignore[assignment,return-value]
    workers: int = 1,
    timeout_s: float | None = None,
    keep_unparsed: bool = False,
) -> Iterator[tuple[T, Outcome | None]]:
    """`(item, outcome)` for each item, in input order, each as soon as it and every earlier one is done.

    `episode_of(item)` is the episode to run (an input line's parsed episode, a labeled episode's
    inputs); None means the item has no episode (an input error) and yields `(item, None)` without
    a model call. At most `2 * workers` items are in flight. `keep_unparsed` as in `run_episode`.
    """

    def run(item: T) -> Outcome | None:
        episode = episode_of(item)
        if episode is None:
            return None
        return run_episode(program, episode, timeout_s=timeout_s, keep_unparsed=keep_unparsed)

    for item, outcome in iter_concurrently(run, items, workers=workers):
        if isinstance(outcome, Exception):  # only a bug in `episode_of` gets here: keep the item anyway
            outcome = Outcome(None, outcome, failure_reason(outcome), StepUsage(), 0, Counter(), 0.0)
        yield item, outcome
