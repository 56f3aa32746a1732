"""One input line to one output record: the step every batch engine runs for each line.

`edgewise extract` (threads in one process) and the Ray Data stage (actors on a cluster) both turn
an `InputLine` into its output record here, so a line means the same on either engine: an input
error is an error record without a model call, an episode runs through the episode runner
(`edgewise.runtime.runner`: its deadline, the retry layer's retries, the one failure vocabulary),
and a failed episode is an error record with its reason and no secrets (a reply that could not be
parsed on its retry either fails the episode: reason `parse_failure`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

import dspy

from edgewise.runtime.faults import failure_reason
from edgewise.runtime.jsonl import InputLine, error_record, result_record
from edgewise.runtime.lm import LMConfig, redact
from edgewise.runtime.runner import Outcome, run_episodes


class LineRecord(NamedTuple):
    """An input line's output record, and the model requests it took (retried ones by reason)."""

    item: InputLine
    record: dict[str, Any]
    requests: int
    retries: Counter[str]


def outcome_record(item: InputLine, outcome: Outcome | None, config: LMConfig) -> dict[str, Any]:
    """The output line for one input line: its result, or an error with a reason and no secrets."""
    if item.error is not None:
        return error_record(item, "input", {"reason": item.error.reason, **item.error.record()})
    if outcome is not None and outcome.result is not None:
        return result_record(item, outcome.result)
    error = (outcome.error if outcome is not None else None) or RuntimeError("the program returned no result")
    reason = (outcome.reason if outcome is not None else None) or failure_reason(error)
    message = redact(f"{type(error).__name__}: {error}", config)
    return error_record(item, "lm", {"reason": reason, "line": item.line, "field": None, "message": message})


def extract_records(
    program: dspy.Module,
    items: Iterable[InputLine],
    *,
    config: LMConfig,
    timeout_s: float | None,
    workers: int,
) -> Iterator[LineRecord]:
    """Each line's record, in input order, `workers` episodes at a time (the LM is the caller's context)."""
    outcomes = run_episodes(
        program, items, episode_of=lambda item: item.episode, workers=workers, timeout_s=timeout_s
    )
    for item, outcome in outcomes:
        requests, retries = (outcome.requests, outcome.retries) if outcome is not None else (0, Counter())
        yield LineRecord(item, outcome_record(item, outcome, config), requests, retries)
