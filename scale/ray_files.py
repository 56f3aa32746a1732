# Over 400 lines: the input index and the ordered results file share one line numbering.
"""Files of `edgewise extract --engine ray`: numbered input lines from JSONL and Parquet, and the results file.

Input. The driver indexes the input once (a JSONL file is scanned for line ends, a Parquet file's
footer gives its row groups' sizes) into chunks of a few hundred lines; Ray's tasks read the
chunks themselves, so the episodes never pass through the driver. Every row keeps its line number
(a Parquet row's number in its file, from 1) and, in a folder, its file's path relative to the
folder: the same position `edgewise extract` gives a line, so records and resuming mean the same.

Output. Ray finishes rows in any order, so the run appends each record as it arrives to a journal
next to the results file (`OUT.partial`, JSONL, one write per batch) and keeps, per input line, where
its record sits in it: a line answered twice is kept once, and a line without a record is noticed
before anything is written. At the end the records are written in input order to a temporary file
that replaces the results file in one rename, and the journal is removed. The results file is never
emptied or cut: a run that stops (kill, Ctrl-C, a lost cluster) leaves the earlier results file as it
was and its own progress in the journal, which `--resume` continues.

Resuming follows the local engine's rules (`edgewise.runtime.jsonl`), with its own functions: each
kept record must carry the id of the input line it answers (`input_line_id`), and a kept error
line whose reason may pass on another try (`retryable`) runs again. Its new record is appended to
the journal after the old one, and in a journal the later record of a line is the one that counts.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time
from decimal import Decimal
from pathlib import Path
from typing import IO, Any, Final, Literal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from edgewise.domain.errors import EdgewiseError, FileContentError, UsageError
from edgewise.files.atomic import atomic_write
from edgewise.runtime.jsonl import InputLine, ResumeError, ResumePoint, input_line_id, retryable
from edgewise.scale.rows import input_line

PARQUET_SUFFIX: Final = ".parquet"
JSONL_SUFFIX: Final = ".jsonl"
JOURNAL_SUFFIX: Final = ".partial"
LINES_PER_CHUNK: Final = 512
_PARQUET_ROWS_PER_GROUP: Final = 10_000
_READ_BLOCK_BYTES: Final = 1 << 20

FileKind = Literal["jsonl", "parquet"]


class RayRunError(EdgewiseError, RuntimeError):
    """A Ray run that stopped before every line had its record; the message says where its records are."""


# The rows Ray's read tasks produce: where a line came from, and its bytes as `edgewise extract` reads them.
LINE_SCHEMA: Final = pa.schema([("source", pa.string()), ("line", pa.int64()), ("raw", pa.binary())])
# The columns of a Parquet results file: the record's position and id, its error reason, and the record.
RESULTS_SCHEMA: Final = pa.schema(
    [
        ("id", pa.string()),
        ("source", pa.string()),
        ("line", pa.int64()),
        ("error", pa.string()),
        ("record", pa.string()),
    ]
)


def file_kind(path: Path) -> FileKind:
    """Parquet by its extension; anything else is read as JSONL, as `edgewise extract` reads it."""
    return "parquet" if path.suffix.lower() == PARQUET_SUFFIX else "jsonl"


@dataclass(frozen=True)
class InputFile:
    """One input file: its path, the name its records carry (None for a lone file), its kind and line count."""

    path: Path
    source: str | None
    kind: FileKind
    lines: int


@dataclass
class InputIndex:
    """The input's files and their chunks (what each read task reads)."""

    files: list[InputFile]
    chunks: list[dict[str, Any]] = field(default_factory=list)
    _numbers: dict[str | None, int] = field(default_factory=dict, repr=False)

    @property
    def lines(self) -> int:
        return sum(item.lines for item in self.files)

    def add_file(self, item: InputFile) -> int:
        self._numbers[item.source] = len(self.files)
        self.files.append(item)
        return len(self.files) - 1

    def file_number(self, source: str | None) -> int | None:
        """The index of the file a record's "source" names (None: the lone input file)."""
        return self._numbers.get(source)


def input_files(path: Path) -> list[tuple[Path, str | None]]:
    """A file as itself; a folder as its `*.jsonl` and `*.parquet` files (recursively, sorted, no hidden ones)."""
    if not path.is_dir():
        if not path.is_file():
            raise FileNotFoundError(f"{path}: no such file or folder")
        return [(path, None)]
    found = sorted(
        candidate
        for candidate in path.rglob("*")
        if candidate.is_file()
        and candidate.suffix.lower() in (JSONL_SUFFIX, PARQUET_SUFFIX)
        and not any(part.startswith(".") for part in candidate.relative_to(path).parts)
    )
    if not found:
        raise UsageError(f"{path}: the folder holds no {JSONL_SUFFIX} or {PARQUET_SUFFIX} files")
    return [(candidate, candidate.relative_to(path).as_posix()) for candidate in found]


def _jsonl_chunks(path: Path, lines_per_chunk: int) -> Iterator[tuple[int, int, int, int]]:
    """(start byte, end byte, first line, lines) of each chunk; a last line without a newline counts."""
    start = offset = 0
    first, count = 1, 0
    with open(path, "rb") as handle:
        for raw in handle:
            offset += len(raw)
            count += 1
            if count == lines_per_chunk:
                yield start, offset, first, count
                start, first, count = offset, first + count, 0
    if count:
        yield start, offset, first, count


def index_input(path: Path, *, lines_per_chunk: int = LINES_PER_CHUNK) -> InputIndex:
    """Index `path` (a file or a folder) into chunks; an unreadable file is an error naming it."""
    index = InputIndex(files=[])
    for file_path, source in input_files(path):
        kind = file_kind(file_path)
        chunks: list[tuple[int, int, int, int]] = []
        if kind == "jsonl":
            chunks = list(_jsonl_chunks(file_path, lines_per_chunk))
        else:
            try:
                metadata = pq.ParquetFile(file_path).metadata
            except (pa.ArrowException, OSError) as error:
                raise FileContentError(f"{file_path}: not a readable Parquet file ({error})") from None
            first = 1
            for group in range(metadata.num_row_groups):
                rows = metadata.row_group(group).num_rows
                if rows:
                    chunks.append((group, group + 1, first, rows))
                first += rows
        number = index.add_file(InputFile(file_path, source, kind, sum(chunk[3] for chunk in chunks)))
        for start, end, first_line, count in chunks:
            index.chunks.append(
                {
                    "file": number,
                    "path": str(file_path.resolve()),
                    "source": source,
                    "kind": kind,
                    "start": start,
                    "end": end,
                    "first_line": first_line,
                    "lines": count,
                    "skip": b"",
                }
            )
    return index


def _json_value(value: Any) -> Any:
    """A Parquet value JSON cannot hold as it is: times as ISO 8601 text, decimals as numbers."""
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    raise TypeError(f"cannot write a {type(value).__name__} as JSON")


def parquet_row_line(row: dict[str, Any]) -> bytes:
    """A Parquet row as the JSONL line it stands for; a null column is an absent field."""
    present = {key: value for key, value in row.items() if value is not None}
    return json.dumps(present, ensure_ascii=False, default=_json_value).encode("utf-8", "backslashreplace")


def _chunk_lines(chunk: dict[str, Any]) -> list[bytes]:
    if chunk["kind"] == "parquet":
        table = pq.ParquetFile(chunk["path"]).read_row_group(chunk["start"])
        return [parquet_row_line(row) for row in table.to_pylist()]
    with open(chunk["path"], "rb") as handle:
        handle.seek(chunk["start"])
        data = handle.read(chunk["end"] - chunk["start"])
    pieces = data.split(b"\n")
    if data.endswith(b"\n"):
        pieces.pop()
    return [piece.rstrip(b"\r\n") for piece in pieces]  # as `for raw in handle: raw.rstrip(b"\r\n")`


def _checked_chunk_lines(chunk: dict[str, Any]) -> list[bytes]:
    """A chunk's lines, as many as the index counted; fewer or more means the input changed since."""
    lines = _chunk_lines(chunk)
    if len(lines) != chunk["lines"]:
        raise RayRunError(
            f"{chunk['path']}: expected {chunk['lines']} lines from line {chunk['first_line']}, read "
            f"{len(lines)}; the input changed during the run"
        )
    return lines


def read_chunks(batch: pa.Table) -> pa.Table:
    """The read tasks' step: each chunk's lines with their numbers, less those a resumed run already has."""
    columns: dict[str, list[Any]] = {"source": [], "line": [], "raw": []}
    for chunk in batch.to_pylist():
        lines = _checked_chunk_lines(chunk)
        skip = (
            np.unpackbits(np.frombuffer(chunk["skip"], dtype=np.uint8), count=len(lines))
            if chunk["skip"]
            else None
        )
        for offset, raw in enumerate(lines):
            if skip is not None and skip[offset]:
                continue
            columns["source"].append(chunk["source"])
            columns["line"].append(chunk["first_line"] + offset)
            columns["raw"].append(raw)
    return pa.table(columns, schema=LINE_SCHEMA)


def pending_chunks(index: InputIndex, done: Sequence[np.ndarray]) -> list[dict[str, Any]]:
    """The chunks with lines still to extract, each with a bitmap of the lines to skip."""
    pending = []
    for chunk in index.chunks:
        first, count = chunk["first_line"], chunk["lines"]
        have = done[chunk["file"]][first : first + count]
        if have.all():
            continue
        pending.append({**chunk, "skip": np.packbits(have).tobytes() if have.any() else b""})
    return pending


def journal_path(output: Path) -> Path:
    return output.with_name(output.name + JOURNAL_SUFFIX)


class ResultsFile:
    """The results of one `--engine ray` run: a journal while it runs, the results file in input order at the end.

    Per input file two arrays say where each line's record sits in the journal (byte offset and
    length, -1 while it has none): 16 bytes a line, so the driver holds no record in memory.
    """

    def __init__(self, output: Path, index: InputIndex) -> None:
        self.output = output
        self.journal = journal_path(output)
        self.index = index
        self.offsets = [np.full(item.lines + 1, -1, dtype=np.int64) for item in index.files]
        self.lengths = [np.zeros(item.lines + 1, dtype=np.int64) for item in index.files]
        self.duplicates = 0
        self._stream: IO[bytes] | None = None
        self._size = 0

    # -- the run ---------------------------------------------------------------------------------------
    def begin(self, *, resume: bool) -> ResumePoint:
        """Start the journal: empty, or (`resume`) with the records a stopped run or the results file holds.

        A resumed run keeps a record only if it answers its input line (the same id; otherwise a
        `ResumeError`, and nothing changes); the kept error lines that may pass on another try come
        back in the `ResumePoint`'s `retry` and are left to run again (`done` says they have no record).
        """
        if resume and self.journal.exists():
            self._stream = open(self.journal, "r+b")  # noqa: SIM115 - held for the run, closed by close()
            try:
                keep = 0
                for start, raw in _complete_lines(self._stream):
                    self._keep(raw, start, self.journal)
                    keep = start + len(raw)
                point = self._check_kept(self.journal)
            except BaseException:
                self.close()
                raise
            self._stream.truncate(keep)  # a cut last line (a kill mid-write) goes
            self._stream.seek(keep)
            self._size = keep
            return point
        self._stream = open(self.journal, "w+b")  # noqa: SIM115 - held for the run, closed by close()
        try:
            if resume and self.output.exists() and self.output.stat().st_size:
                for raw in _result_lines(self.output):
                    self._keep(raw, self._size, self.output)
                    self._write(raw)
                self._stream.flush()
                return self._check_kept(self.output)
        except BaseException:
            self.close()
            self.journal.unlink(missing_ok=True)
            raise
        return ResumePoint(0, Counter())

    def done(self) -> list[np.ndarray]:
        """Per input file, which lines (by number; index 0 unused) have a record."""
        return [offsets >= 0 for offsets in self.offsets]

    def add(self, record_lines: Sequence[str]) -> list[tuple[int, dict[str, Any]]]:
        """Journal one batch's records in one write; returns the new ones with their positions in the batch.

        A line answered twice (a batch Ray delivered again) is kept once.
        """
        fresh: list[tuple[int, dict[str, Any]]] = []
        data = bytearray()
        for position, text in enumerate(record_lines):
            record = json.loads(text)
            number, line = self._position(record)
            if self.offsets[number][line] >= 0:
                self.duplicates += 1
                continue
            encoded = text.encode("utf-8") + b"\n"
            self.offsets[number][line] = self._size + len(data)
            self.lengths[number][line] = len(encoded)
            data += encoded
            fresh.append((position, record))
        if data:
            self._write(bytes(data))
            assert self._stream is not None
            self._stream.flush()
        return fresh

    def missing(self) -> tuple[int, str | None]:
        """How many input lines have no record, and where the first of them is."""
        count, first = 0, None
        for item, offsets in zip(self.index.files, self.offsets, strict=True):
            lacking = np.flatnonzero(offsets[1:] < 0)
            if len(lacking) and first is None:
                first = f"{item.path} line {int(lacking[0]) + 1}"
            count += len(lacking)
        return count, first

    def finish(self, before_replace: Any = None) -> None:
        """Write every record in input order to a temporary file, put it in place in one rename, drop the journal."""
        assert self._stream is not None
        self._stream.flush()
        folder = self.output.parent
        with atomic_write(self.output, durable=True, mode=0o644, before_replace=before_replace) as handle:
            if file_kind(self.output) == "parquet":
                self._write_parquet(handle)
            else:
                for raw in self._ordered():
                    handle.write(raw)
        _fsync_folder(folder)
        self.close()
        self.journal.unlink(missing_ok=True)

    def close(self) -> None:
        if self._stream is not None:
            self._stream.close()
            self._stream = None

    # -- inside ------------------------------------------------------------------------------------------
    def _write(self, data: bytes) -> None:
        assert self._stream is not None
        view = memoryview(data)
        while view:
            written = self._stream.write(view)
            view = view[written or 0 :]
        self._size += len(data)

    def _position(self, record: Any, where: str = "the run") -> tuple[int, int]:
        source = record.get("source") if isinstance(record, dict) else None
        line = record.get("line") if isinstance(record, dict) else None
        number = self.index.file_number(source)
        if number is None or not isinstance(line, int) or not 1 <= line <= self.index.files[number].lines:
            named = f"{source} line {line!r}" if source is not None else f"line {line!r}"
            raise ResumeError(
                f"{where}: a record answers {named}, which the input does not have; the results were "
                "written from another input, so they cannot be continued (move them aside and run without --resume)"
            )
        return number, line

    def _keep(self, raw: bytes, start: int, path: Path) -> None:
        """Index one kept record at `start` in the journal; a later record of the same line replaces it.

        A journal holds a line twice only when a resumed run ran its error line again (a line Ray
        delivers twice is journaled once, see `add`), so the later record is the newer answer.
        """
        try:
            record = json.loads(raw)
        except ValueError as error:
            raise ResumeError(
                f"{path}: a record is not valid JSON ({error}); only a cut last line can be repaired, so "
                "this file cannot be resumed (move it aside and run without --resume)"
            ) from None
        number, line = self._position(record, str(path))
        self.offsets[number][line] = start
        self.lengths[number][line] = len(raw)

    def _check_kept(self, path: Path) -> ResumePoint:
        """Check every kept record against its input line, and take back the error lines to run again.

        The input lines are read as the read tasks read them (only the chunks that hold a kept line),
        and each record must carry its line's id, as the local engine's resume requires. An error
        record whose reason is `retryable` loses its place (its line runs again); the others are
        counted by reason.
        """
        assert self._stream is not None
        descriptor = self._stream.fileno()
        failed: Counter[str] = Counter()
        retry: list[InputLine] = []
        kept = 0
        for chunk in self.index.chunks:
            number, first = chunk["file"], chunk["first_line"]
            offsets = self.offsets[number]
            if not (offsets[first : first + chunk["lines"]] >= 0).any():
                continue
            for line, raw_input in enumerate(_checked_chunk_lines(chunk), start=first):
                if offsets[line] < 0:
                    continue
                kept += 1
                record = json.loads(os.pread(descriptor, int(self.lengths[number][line]), int(offsets[line])))
                input_id = input_line_id(raw_input)
                if record.get("id") != input_id:
                    named = (
                        f"{chunk['source']} line {line}" if chunk["source"] is not None else f"line {line}"
                    )
                    raise ResumeError(
                        f"{path}: the record of {named} answers the episode with id {record.get('id')!r}, but "
                        f"that input line has id {input_id!r}; it was written for another input; resume "
                        "with that input, or write to another --output"
                    )
                error = record.get("error")
                if not isinstance(error, dict):
                    continue
                reason = str(error.get("reason"))
                if retryable(reason):
                    retry.append(input_line({"raw": raw_input, "line": line, "source": chunk["source"]}))
                    offsets[line] = -1
                else:
                    failed[reason] += 1
        return ResumePoint(kept, failed, tuple(retry))

    def _ordered(self) -> Iterator[bytes]:
        assert self._stream is not None
        descriptor = self._stream.fileno()
        for offsets, lengths in zip(self.offsets, self.lengths, strict=True):
            for offset, length in zip(offsets[1:].tolist(), lengths[1:].tolist(), strict=True):
                yield os.pread(descriptor, length, offset)

    def _write_parquet(self, handle: IO[bytes]) -> None:
        with pq.ParquetWriter(handle, RESULTS_SCHEMA) as writer:
            rows: list[dict[str, Any]] = []
            for raw in self._ordered():
                record = json.loads(raw)
                error = record.get("error")
                rows.append(
                    {
                        "id": record.get("id"),
                        "source": record.get("source"),
                        "line": record.get("line"),
                        "error": error.get("reason") if isinstance(error, dict) else None,
                        "record": raw.decode("utf-8").rstrip("\n"),
                    }
                )
                if len(rows) == _PARQUET_ROWS_PER_GROUP:
                    writer.write_table(pa.Table.from_pylist(rows, schema=RESULTS_SCHEMA))
                    rows = []
            if rows:
                writer.write_table(pa.Table.from_pylist(rows, schema=RESULTS_SCHEMA))


def _complete_lines(stream: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """(offset, line) for each line that ends with a newline; a cut last line is left out."""
    stream.seek(0)
    offset = 0
    for raw in stream:
        if not raw.endswith(b"\n"):
            return
        yield offset, raw
        offset += len(raw)


def _result_lines(path: Path) -> Iterator[bytes]:
    """The complete records of a results file (JSONL or Parquet), each as one line with its newline."""
    if file_kind(path) == "parquet":
        try:
            table = pq.read_table(path, columns=["record"])
        except (pa.ArrowException, OSError) as error:
            raise ResumeError(f"{path}: not a Parquet results file of edgewise extract ({error})") from None
        for text in table.column("record").to_pylist():
            yield str(text).encode("utf-8") + b"\n"
        return
    with open(path, "rb") as handle:
        for _, raw in _complete_lines(handle):
            yield raw


def _fsync_folder(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
