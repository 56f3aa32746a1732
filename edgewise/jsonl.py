"""JSONL in and out for batches: every input line yields exactly one output line, in order.

Input lines are read as bytes so that invalid UTF-8 becomes an error line for that line, not a crash
of the run. Output lines are written whole with one `write` and flushed, so after a kill the file is
valid JSONL up to a possibly cut last line, which `resume_point` drops before a run continues. Output
line n always answers input line n (its "line" field says so), which is what makes resuming exact:
no input is lost and none is answered twice.
"""

from __future__ import annotations

import io
import json
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NamedTuple

from pydantic import ValidationError

from edgewise.signatures.types import Episode, ExtractionResult


class InputError(ValueError):
    """One input line that cannot become an episode; says which line and field."""

    def __init__(self, source: str, line: int, field: str | None, message: str) -> None:
        self.source, self.line, self.field, self.message = source, line, field, message
        where = f"{source} line {line}" + (f", field {field!r}" if field else "")
        super().__init__(f"{where}: {message}")

    def record(self) -> dict[str, Any]:
        return {"line": self.line, "field": self.field, "message": self.message}


class InputLine(NamedTuple):
    """An input line: its number, the id it carries (if any), and its episode or why it has none."""

    line: int
    id: str | None
    episode: Episode | None
    error: InputError | None


def field_path(location: tuple[int | str, ...]) -> str:
    """("entities", 0, "name") -> "entities[0].name"."""
    path = ""
    for part in location:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def validation_error(source: str, line: int, error: ValidationError) -> InputError:
    first = error.errors()[0]
    return InputError(source, line, field_path(tuple(first["loc"])) or None, first["msg"])


def parse_episode_line(raw: bytes, line: int, source: str) -> InputLine:
    """Decode, parse and validate one line; never raises."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        return InputLine(
            line, None, None, InputError(source, line, None, f"invalid UTF-8 at byte {error.start}")
        )
    if not text.strip():
        return InputLine(line, None, None, InputError(source, line, None, "empty line"))
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as error:
        return InputLine(line, None, None, InputError(source, line, None, f"not valid JSON: {error}"))
    if not isinstance(data, dict):
        return InputLine(line, None, None, InputError(source, line, None, "expected a JSON object"))
    raw_id = data.get("id")
    if raw_id is not None and (isinstance(raw_id, bool) or not isinstance(raw_id, str | int | float)):
        return InputLine(line, None, None, InputError(source, line, "id", "expected a string or a number"))
    line_id = None if raw_id is None else str(raw_id)
    fields = {key: value for key, value in data.items() if key in _EPISODE_KEYS}
    try:
        return InputLine(line, line_id, Episode.model_validate(fields), None)
    except ValidationError as error:
        return InputLine(line, line_id, None, validation_error(source, line, error))
    except RecursionError:
        return InputLine(line, line_id, None, InputError(source, line, None, "nesting too deep"))


_EPISODE_KEYS = frozenset(
    alias for name, field in Episode.model_fields.items() for alias in (name, field.alias) if alias
)


def read_episode_lines(stream: IO[bytes], source: str, *, skip: int = 0) -> Iterator[InputLine]:
    """Parse each line of `stream`; the first `skip` lines (already done by a resumed run) are passed over."""
    for number, raw in enumerate(stream, start=1):
        if number > skip:
            yield parse_episode_line(raw.rstrip(b"\r\n"), number, source)


def result_record(item: InputLine, result: ExtractionResult) -> dict[str, Any]:
    return {"id": item.id, "line": item.line, **result.to_json_dict()}


def error_record(item: InputLine, kind: str, error: dict[str, Any]) -> dict[str, Any]:
    return {"id": item.id, "line": item.line, "error": {"kind": kind, **error}}


def encode_record(record: dict[str, Any]) -> bytes:
    """One output line as UTF-8 bytes, newline included.

    A lone surrogate in a model's reply (a `\\ud800` escape it produced) is written back as that
    same JSON escape, so the line stays valid JSON and valid UTF-8 instead of failing the run.
    """
    return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8", "backslashreplace")


def write_record(stream: IO[str] | IO[bytes], record: dict[str, Any]) -> None:
    """Write one record as one line and flush it, so that a kill can cut at most this line."""
    data = encode_record(record)
    if isinstance(stream, io.TextIOBase):
        stream.write(data.decode("utf-8"))
    else:
        view = memoryview(data)
        while view:  # an unbuffered file may take a large line in more than one write
            written = stream.write(view)
            view = view[written or 0 :]
    stream.flush()


class ResumeError(ValueError):
    """The output file cannot be continued: it was not written by one `edgewise extract` run."""


def resume_point(path: Path) -> int:
    """How many output lines are complete; a cut last line is removed so appending stays valid JSONL.

    Only the last line can be cut by a kill. A broken line before it, or a line whose "line" field is
    not its own position, means the file was edited or written by two runs at once: that is a
    `ResumeError`, never a silent truncation that would lose the lines after it.
    """
    if not path.exists():
        return 0
    keep, count = 0, 0
    with open(path, "rb") as handle:
        for raw in handle:
            if not raw.endswith(b"\n"):
                break  # the cut last line
            try:
                record = json.loads(raw)
            except ValueError as error:
                raise ResumeError(
                    f"{path} line {count + 1}: not valid JSON ({error}); only a cut last line can be repaired, "
                    "so this file cannot be resumed (move it aside and run without --resume)"
                ) from None
            position = record.get("line") if isinstance(record, dict) else None
            if position != count + 1:
                raise ResumeError(
                    f"{path} line {count + 1}: answers input line {position!r}, not {count + 1}; the file was not "
                    "written by one edgewise extract run, so it cannot be resumed"
                )
            keep += len(raw)
            count += 1
    if keep != path.stat().st_size:
        with open(path, "r+b") as handle:
            handle.truncate(keep)
            os.fsync(handle.fileno())
    return count


@dataclass
class BatchSummary:
    """What a batch did: results, failures by reason, model-request retries, and how long it took.

    `done` counts result lines; `parse_failures` how many of those had a reply the adapter could not
    parse even after its repair (their edges are empty for that step). `failed` counts error lines
    by reason; `retries` counts model requests sent again after a fault, by fault reason.
    """

    lines: int = 0
    done: int = 0
    parse_failures: int = 0
    failed: Counter[str] = field(default_factory=Counter)
    retries: Counter[str] = field(default_factory=Counter)
    retried_episodes: int = 0
    requests: int = 0
    resumed_after: int = 0
    wall_s: float = 0.0

    def add_retries(self, requests: int, retries: Counter[str]) -> None:
        self.requests += requests
        self.retries.update(retries)
        self.retried_episodes += bool(sum(retries.values()))

    def text(self) -> str:
        """One line for stderr: `1000 lines in 41.2 s: done 975 ..., failed 25 (...); retried ...`."""
        failed = sum(self.failed.values())
        retried = sum(self.retries.values())
        parts = [
            f"done {self.done}"
            + (f" ({self.parse_failures} with parse failures)" if self.parse_failures else "")
        ]
        parts.append(f"failed {failed}" + (f" ({_counts(self.failed)})" if failed else ""))
        retry = f"retried {retried} model requests in {self.retried_episodes} episodes"
        if retried:
            retry += f" ({_counts(self.retries)})"
        resumed = f", resumed after {self.resumed_after} lines" if self.resumed_after else ""
        return f"{self.lines} lines in {self.wall_s:.1f} s{resumed}: {', '.join(parts)}; {retry}"

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "lines": self.lines,
            "done": self.done,
            "parseFailures": self.parse_failures,
            "failed": dict(sorted(self.failed.items())),
            "failedTotal": sum(self.failed.values()),
            "retries": dict(sorted(self.retries.items())),
            "retriesTotal": sum(self.retries.values()),
            "retriedEpisodes": self.retried_episodes,
            "requests": self.requests,
            "resumedAfter": self.resumed_after,
            "wallSeconds": round(self.wall_s, 3),
        }


def _counts(counter: Counter[str]) -> str:
    return ", ".join(f"{name} {count}" for name, count in sorted(counter.items()))
