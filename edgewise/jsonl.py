"""JSONL in and out for batches: every input line yields exactly one output line, in order.

Input lines are read as bytes so that invalid UTF-8 becomes an error line for that line, not a crash
of the run. Output lines are written whole with one `write` and flushed, so after a kill the file is
valid JSONL up to a possibly cut last line, which `resume_point` drops before a run continues.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
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
        return InputLine(line, None, None, InputError(source, line, None, f"invalid UTF-8 at byte {error.start}"))
    if not text.strip():
        return InputLine(line, None, None, InputError(source, line, None, "empty line"))
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as error:
        return InputLine(line, None, None, InputError(source, line, None, f"not valid JSON: {error}"))
    if not isinstance(data, dict):
        return InputLine(line, None, None, InputError(source, line, None, "expected a JSON object"))
    raw_id = data.get("id")
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


def write_record(stream: IO[str], record: dict[str, Any]) -> None:
    stream.write(json.dumps(record, ensure_ascii=False) + "\n")
    stream.flush()


def resume_point(path: Path) -> int:
    """How many output lines are complete; a cut last line is removed so appending stays valid JSONL."""
    if not path.exists():
        return 0
    data = path.read_bytes()
    keep, count = 0, 0
    for raw in data.splitlines(keepends=True):
        if not raw.endswith(b"\n"):
            break
        try:
            json.loads(raw)
        except ValueError:
            break
        keep += len(raw)
        count += 1
    if keep != len(data):
        with open(path, "r+b") as handle:
            handle.truncate(keep)
            os.fsync(handle.fileno())
    return count
