"""`errors.jsonl`: every missed, spurious, reversed and mistyped edge, wrong date and wrong attribute
of each episode, for the one improving a program. It grows while the bench runs (flushed after each
model x program), where the other reports are written whole at the end.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from edgewise.domain.types import ExtractionResult
from edgewise.eval.bench_records import EpisodeRun
from edgewise.eval.records import EpisodeScore

ERRORS_JSONL: Final = "errors.jsonl"


def _dump(record: Any) -> dict[str, Any]:
    return record.model_dump(mode="json", by_alias=True)


def error_record(
    model: str, program: str, run: EpisodeRun, score: EpisodeScore, result: ExtractionResult | None
) -> dict[str, Any] | None:
    """Everything wrong with one episode's extraction, or None when there is nothing to look at.

    An episode is listed when it failed, had a parse failure, or has any missed, spurious, reversed or
    mistyped edge, wrong date or wrong attribute. Edges use the wire format (camelCase); `ignored` lists predictions
    a non-exhaustive episode could not judge.
    """
    mistakes = (
        score.missed
        or score.spurious
        or score.reversed
        or score.mistyped
        or score.wrong_dates
        or score.wrong_attributes
    )
    if run.status == "ok" and not run.parse_failures and not mistakes:
        return None
    return {
        "model": model,
        "program": program,
        "id": run.id,
        "source": run.source,
        "status": run.status,
        "error": run.error,
        "f1": score.f1,
        "tp": score.tp,
        "fp": score.fp,
        "fn": score.fn,
        "parseFailures": run.parse_failures,
        "missed": [_dump(missed.gold) for missed in score.missed],
        "spurious": [
            {"predicted": _dump(spurious.predicted), "duplicate": spurious.duplicate}
            for spurious in score.spurious
        ],
        "reversed": [
            {"predicted": _dump(item.predicted), "gold": _dump(item.gold), "counted": item.counted}
            for item in score.reversed
        ],
        "mistyped": [
            {"predicted": _dump(item.predicted), "gold": _dump(item.gold), "counted": item.counted}
            for item in score.mistyped
        ],
        "wrongDates": [
            {
                "field": item.field,
                "granularity": item.granularity,
                "predicted": _dump(item.predicted),
                "gold": _dump(item.gold),
            }
            for item in score.wrong_dates
        ],
        "wrongAttributes": [
            {
                "attribute": item.name,
                "predictedValue": item.predicted.attributes.get(item.name),
                "goldValue": item.gold.attributes.get(item.name),
                "predicted": _dump(item.predicted),
                "gold": _dump(item.gold),
            }
            for item in score.wrong_attributes
        ],
        "ignored": [_dump(edge) for edge in score.ignored],
        "warnings": [_dump(warning) for warning in result.warnings] if result is not None else [],
    }


def error_line(
    model: str, program: str, run: EpisodeRun, score: EpisodeScore, result: ExtractionResult | None
) -> str | None:
    """`error_record` as one JSONL line (newline included), or None."""
    record = error_record(model, program, run, score, result)
    return None if record is None else json.dumps(record, ensure_ascii=False) + "\n"


def read_errors(path: Path) -> list[dict[str, Any]]:
    """The records of an `errors.jsonl`, for notebooks and tests."""
    with open(path, encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]
