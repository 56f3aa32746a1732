"""One input line to one output record: the step every batch engine runs for each line.

`edgewise extract` (threads in one process) and the Ray Data stage (actors on a cluster) both turn
an `InputLine` into its output record here, so a line means the same on either engine: an input
error is an error record without a model call, an episode runs under its deadline with the retry
layer's retries, and a failed episode is an error record with a reason and no secrets.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import dspy

from edgewise.jsonl import InputLine, error_record, result_record
from edgewise.modules.batch import iter_concurrently
from edgewise.modules.faults import episode_scope, failure_reason
from edgewise.modules.lm import LMConfig, redact
from edgewise.signatures.types import ExtractionResult


class EpisodeOutcome(NamedTuple):
    """What one input line came to: a result, or the error that ended it, and its model requests."""

    result: ExtractionResult | None
    error: Exception | None
    requests: int
    retries: Counter[str]


class LineRecord(NamedTuple):
    """An input line's output record, and the model requests it took (retried ones by reason)."""

    item: InputLine
    record: dict[str, Any]
    requests: int
    retries: Counter[str]


def extract_episode(program: dspy.Module, item: InputLine, timeout_s: float | None) -> EpisodeOutcome:
    """Run `program` on one line's episode under its deadline; never raises for a failed episode."""
    if item.episode is None:
        return EpisodeOutcome(None, None, 0, Counter())
    with episode_scope(timeout_s) as stats:
        try:
            result = program(item.episode).result
            stats.check()  # a result that arrives after the deadline is not used
        except Exception as error:  # noqa: BLE001 - a failed episode is an output line, not the end of the run
            return EpisodeOutcome(None, error, stats.requests, stats.retry_reasons)
    return EpisodeOutcome(result, None, stats.requests, stats.retry_reasons)


def outcome_record(item: InputLine, outcome: EpisodeOutcome | Exception, config: LMConfig) -> dict[str, Any]:
    """The output line for one input line: its result, or an error with a reason and no secrets."""
    if item.error is not None:
        return error_record(item, "input", {"reason": "invalid_input", **item.error.record()})
    if isinstance(outcome, EpisodeOutcome) and outcome.result is not None:
        return result_record(item, outcome.result)
    error = outcome if isinstance(outcome, Exception) else outcome.error
    error = error or RuntimeError("the program returned no result")
    message = redact(f"{type(error).__name__}: {error}", config)
    return error_record(
        item, "lm", {"reason": failure_reason(error), "line": item.line, "field": None, "message": message}
    )


def extract_records(
    program: dspy.Module,
    items: Iterable[InputLine],
    *,
    config: LMConfig,
    timeout_s: float | None,
    workers: int,
) -> Iterator[LineRecord]:
    """Each line's record, in input order, `workers` episodes at a time (the LM is the caller's context)."""
    outcomes = iter_concurrently(
        lambda item: extract_episode(program, item, timeout_s), items, workers=workers
    )
    for item, outcome in outcomes:
        requests, retries = (
            (outcome.requests, outcome.retries) if isinstance(outcome, EpisodeOutcome) else (0, Counter())
        )
        yield LineRecord(item, outcome_record(item, outcome, config), requests, retries)
