"""JSONL in and out for batches: every input line yields exactly one output line, in order.

Input lines are read as bytes so that invalid UTF-8 becomes an error line for that line, not a crash
of the run. Output lines are written whole with one `write` and flushed, so after a kill the file is
valid JSONL up to a possibly cut last line, which `resume_point` drops before a run continues. Output
line n always answers input line n (its "line" field says so, and it carries that line's "id"), which
is what makes resuming exact: no input is lost, none is answered twice, and a results file written
for another input is refused instead of continued. A resumed run also runs the kept error lines
whose failure may pass (`retryable`) again, and puts their new lines in place in one rename
(`ClaimedOutput.replace_lines`). A results file is claimed (`claim_output`) before it is changed:
never the input itself, never while another run writes it, never emptied before the run has started.
"""

from __future__ import annotations

import fcntl
import io
import json
import os
import stat
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Final, NamedTuple

from pydantic import ValidationError

from edgewise.domain.episode import Episode
from edgewise.domain.errors import REASON_INVALID_INPUT, EdgewiseError, status_of
from edgewise.domain.names import field_path
from edgewise.domain.types import ExtractionResult, ExtractionWarning
from edgewise.files.atomic import atomic_write
from edgewise.runtime.episode_fields import input_warnings


class InputError(EdgewiseError, ValueError):
    """One input line that cannot become an episode; says which line and field."""

    reason = REASON_INVALID_INPUT

    def __init__(self, source: str, line: int | None, field: str | None, message: str) -> None:
        self.source, self.line, self.field, self.message = source, line, field, message
        where = (
            source + (f" line {line}" if line is not None else "") + (f", field {field!r}" if field else "")
        )
        super().__init__(f"{where}: {message}")

    def record(self) -> dict[str, Any]:
        return {"line": self.line, "field": self.field, "message": self.message}


class InputLine(NamedTuple):
    """An input line: its number, the id it carries (if any), its episode or why it has none, and
    the warnings its result carries (unknown fields that were ignored)."""

    line: int | None
    id: str | None
    episode: Episode | None
    error: InputError | None
    warnings: tuple[ExtractionWarning, ...] = ()


def validation_error(source: str, line: int | None, error: ValidationError) -> InputError:
    first = error.errors()[0]
    return InputError(source, line, field_path(tuple(first["loc"])) or None, first["msg"])


def parse_episode_line(
    raw: bytes, line: int | None, source: str, *, model: type[Episode] = Episode
) -> InputLine:
    """Decode, parse and validate one line (by `model`: `TextEpisode` for a program with an entity
    step); never raises."""
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
    return parse_episode_object(data, line, source, model=model)


def parse_episode_object(
    data: Any, line: int | None, source: str, *, model: type[Episode] = Episode
) -> InputLine:
    """Validate one decoded line (or a table row as a dict) into an episode or an input error; never raises.

    `line` is None for a row that has no position in a file (a Ray dataset row without a line column).
    The episode's fields are `Episode`'s, the one input contract of every path; `id` is the line's.
    """
    if not isinstance(data, dict):
        return InputLine(line, None, None, InputError(source, line, None, "expected a JSON object"))
    raw_id = data.get("id")
    if not _valid_id(raw_id):
        return InputLine(line, None, None, InputError(source, line, "id", "expected a string or a number"))
    line_id = None if raw_id is None else str(raw_id)
    try:
        episode = model.model_validate({key: value for key, value in data.items() if key != "id"})
    except ValidationError as error:
        return InputLine(line, line_id, None, validation_error(source, line, error))
    except RecursionError:
        return InputLine(line, line_id, None, InputError(source, line, None, "nesting too deep"))
    where = f"line {line}" if line is not None else "this row"
    return InputLine(line, line_id, episode, None, input_warnings(where, episode))


def _valid_id(raw_id: Any) -> bool:
    """An episode's id is a string or a number (not a boolean), or absent."""
    return raw_id is None or (not isinstance(raw_id, bool) and isinstance(raw_id, str | int | float))


def input_line_id(raw: bytes) -> str | None:
    """The `id` a run writes for this raw input line: the one `parse_episode_line` gives it.

    Only the id is read (the episode is not validated): enough to tell whether an output line
    answers this input line, at a fraction of the cost of parsing the episode.
    """
    try:
        data = json.loads(raw.rstrip(b"\r\n").decode("utf-8"))
    except (ValueError, RecursionError):
        return None
    raw_id = data.get("id") if isinstance(data, dict) else None
    return None if raw_id is None or not _valid_id(raw_id) else str(raw_id)


def read_episode_lines(
    stream: IO[bytes], source: str, *, first_line: int = 1, model: type[Episode] = Episode
) -> Iterator[InputLine]:
    """Parse each line of `stream`, numbered from `first_line`: a resumed run has already read the
    lines before it from the stream (`resume_point`), so that stdin is read once. `model` is the
    program's input contract (`domain.episode.episode_model`)."""
    for number, raw in enumerate(stream, start=first_line):
        yield parse_episode_line(raw.rstrip(b"\r\n"), number, source, model=model)


def result_record(item: InputLine, result: ExtractionResult) -> dict[str, Any]:
    if item.warnings:
        result = result.model_copy(update={"warnings": [*item.warnings, *result.warnings]})
    return {"id": item.id, "line": item.line, **result.to_json_dict()}


def error_record(item: InputLine, kind: str, error: dict[str, Any]) -> dict[str, Any]:
    return {"id": item.id, "line": item.line, "error": {"kind": kind, **error}}


# Characters that some line splitters (Python's str.splitlines, editors) take as line ends, which
# json.dumps leaves raw inside strings: written as JSON escapes, one record stays one line for all.
_LINE_BREAKS: Final = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def encode_record(record: dict[str, Any]) -> bytes:
    """One output line as UTF-8 bytes, newline included.

    A lone surrogate in a model's reply (a `\\ud800` escape it produced) is written back as that
    same JSON escape, so the line stays valid JSON and valid UTF-8 instead of failing the run. Other
    characters that some readers treat as a line end (U+0085, U+2028, U+2029) are escaped as well.
    """
    text = json.dumps(record, ensure_ascii=False).translate(_LINE_BREAKS)
    return (text + "\n").encode("utf-8", "backslashreplace")


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


class ResumeError(EdgewiseError, ValueError):
    """The output file cannot be continued: it was not written by one `edgewise extract` run of this input."""


class ResumePoint(NamedTuple):
    """Where a resumed run continues: the complete lines already written, the error lines among them
    that stay as they are (by reason), and the input lines of those to run again (`retryable`)."""

    lines: int
    failed: Counter[str]
    retry: tuple[InputLine, ...] = ()


def retryable(reason: str) -> bool:
    """Whether a failed line may succeed when run again: its reason's HTTP status is 5xx.

    A 5xx reason is the model provider's failure or edgewise's own (a timeout, a rate limit, a 5xx, a
    dropped connection, a reply that could not be parsed): another try may pass. A 4xx reason is the
    input's fault (`invalid_input`, `context_window`): the same line would fail the same way again.
    """
    return status_of(reason) >= 500


_SHOWN_ID_CHARS: Final = 60


def _shown_id(value: Any) -> str:
    """An id as a message shows it: `id 'ep-7'`, cut to a readable length, or `no id`."""
    if value is None:
        return "no id"
    text = value if isinstance(value, str) else json.dumps(value)
    return "id " + repr(text if len(text) <= _SHOWN_ID_CHARS else text[:_SHOWN_ID_CHARS] + "...")


def resume_point(
    path: Path,
    answered: IO[bytes] | None = None,
    source: str = "the input",
    *,
    model: type[Episode] = Episode,
) -> ResumePoint:
    """How many output lines are complete; a cut last line is removed so appending stays valid JSONL.

    Only the last line can be cut by a kill. A broken line before it, or a line whose "line" field is
    not its own position, means the file was edited or written by two runs at once: that is a
    `ResumeError`, never a silent truncation that would lose the lines after it.

    With `answered` (the input, at its start), the output must answer this input: output line k
    carries the id of input line k, and the input has at least as many lines. Those input lines are
    read from `answered` as each output line is checked, so a stream (stdin) is read once and the run
    goes on from the next line. Otherwise a `ResumeError` names the first line that differs: resuming
    another input would append its lines after answers to different episodes. The kept error lines
    whose reason is `retryable` come back in `retry`, as their input lines (only with `answered`).

    Nothing in the file changes unless every check passed.
    """
    failed: Counter[str] = Counter()
    retry: list[InputLine] = []
    if not path.exists():
        return ResumePoint(0, failed)
    keep, count = 0, 0
    with open(path, "rb") as handle:
        for raw in handle:
            if not raw.endswith(b"\n"):
                break  # the cut last line
            count += 1
            record = _resumable_record(path, raw, count)
            raw_input = answered.readline() if answered is not None else None
            if raw_input is not None:
                _check_answers(path, record, raw_input, count, source)
            if isinstance(record.get("error"), dict):
                reason = str(record["error"].get("reason"))
                if raw_input is not None and retryable(reason):
                    retry.append(parse_episode_line(raw_input.rstrip(b"\r\n"), count, source, model=model))
                else:
                    failed[reason] += 1
            keep += len(raw)
    if keep != path.stat().st_size:
        with open(path, "r+b") as handle:
            handle.truncate(keep)
            os.fsync(handle.fileno())
    return ResumePoint(count, failed, tuple(retry))


def _resumable_record(path: Path, raw: bytes, number: int) -> dict[str, Any]:
    """Output line `number` as a record, if it is one that an extract run wrote in that position."""
    try:
        record = json.loads(raw)
    except ValueError as error:
        raise ResumeError(
            f"{path} line {number}: not valid JSON ({error}); only a cut last line can be repaired, "
            "so this file cannot be resumed (move it aside and run without --resume)"
        ) from None
    position = record.get("line") if isinstance(record, dict) else None
    if position != number:
        raise ResumeError(
            f"{path} line {number}: answers input line {position!r}, not {number}; the file was not "
            "written by one edgewise extract run, so it cannot be resumed"
        )
    return record


def _check_answers(path: Path, record: dict[str, Any], raw_input: bytes, number: int, source: str) -> None:
    """Raise `ResumeError` unless output line `number` answers `raw_input`, input line `number`."""
    advice = "it was written for another input; resume with that input, or write to another --output"
    if not raw_input:
        raise ResumeError(
            f"{path} has more lines than {source}: its line {number} answers an input line that {source} "
            f"does not have ({number - 1} lines); {advice}"
        )
    output_id, input_id = record.get("id"), input_line_id(raw_input)
    if output_id != input_id:
        raise ResumeError(
            f"{path} line {number} answers the episode with {_shown_id(output_id)}, but line {number} of "
            f"{source} has {_shown_id(input_id)}; {advice}"
        )


class OutputClaimError(EdgewiseError, ValueError):
    """The results file may not be written: it is the input, or another run is writing it."""


def file_identity(target: Path | int) -> tuple[int, int] | None:
    """(device, inode) of the regular file at a path or behind an open descriptor; None for anything else.

    Pipes, terminals and /dev/null are not files that hold results, so only regular files compare.
    """
    try:
        info = os.stat(target)
    except OSError:
        return None
    return (info.st_dev, info.st_ino) if stat.S_ISREG(info.st_mode) else None


def refuse_same_file(source: Path | int | None, target: Path | int | None, what: str) -> None:
    """Raise `OutputClaimError` when the results would go into the very file the episodes are read from.

    Compared by device and inode, so a second name, a symlink or a hard link of the input is caught,
    and so are shell redirections (`< in.jsonl >> in.jsonl`) given as descriptors. Writing there
    would truncate the input before it is read, or read back the results as new input forever.
    """
    if source is None or target is None:
        return
    identity = file_identity(source)
    if identity is not None and identity == file_identity(target):
        raise OutputClaimError(f"{what}: the output is the input file; write the results to another file")


class ClaimedOutput:
    """A results file held for one run with an exclusive `fcntl.flock` on the file itself.

    The lock sits on the results file, not on a sidecar lock file: nothing is left behind after a
    kill (the kernel drops the lock with the process) and a renamed file keeps its lock. Claiming
    changes nothing in the file; `begin` empties it (or, when resuming, drops only a cut last line)
    once the run has started, and a file the claim created is removed again if the run never started.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.created = not path.exists()
        self.started = False
        self._replaced: list[IO[bytes]] = []
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
        # Unbuffered binary appends: each record reaches the file in one write, at once.
        self.stream: IO[bytes] = os.fdopen(descriptor, "ab", buffering=0)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.stream.close()
            raise OutputClaimError(
                f"{path} is being written by another edgewise extract run (it holds the file's lock); "
                "wait for that run to end, or write to another --output"
            ) from None

    def begin(
        self,
        *,
        resume: bool,
        answered: IO[bytes] | None = None,
        source: str = "the input",
        model: type[Episode] = Episode,
    ) -> ResumePoint:
        """The run has started: keep the complete lines (`resume`) or empty the file.

        When resuming with `answered` (the input, at its start), the kept lines must answer its first
        lines, which are read from it (see `resume_point`); the run reads on from the next line.
        `model` reads the lines run again (the program's input contract).
        """
        if resume:
            point = resume_point(self.path, answered, source, model=model)
        else:
            os.ftruncate(self.stream.fileno(), 0)
            point = ResumePoint(0, Counter())
        self.started = True
        return point

    def replace_lines(self, records: Mapping[int, dict[str, Any]]) -> None:
        """Put `records` (by line number) in place of those kept lines, all at once or not at all.

        The file is written anew beside the results file and renamed over it (`atomic_write`), so a
        kill before the rename leaves the file as it was and a `--resume` after it runs those lines
        again. The new file is locked before the rename and becomes `stream`; the old one stays open,
        and so locked, until `close`: a run that opened the old file cannot claim it in between.
        """
        if not records:
            return
        target = Path(os.path.realpath(self.path))  # a symlinked results file stays a symlink
        mode = stat.S_IMODE(os.fstat(self.stream.fileno()).st_mode)
        locked: int | None = None
        try:
            with atomic_write(target, durable=True, mode=mode) as fresh, open(target, "rb") as kept:
                locked = os.dup(fresh.fileno())  # shares the open file, so the lock outlives `fresh`
                fcntl.flock(locked, fcntl.LOCK_EX | fcntl.LOCK_NB)
                for number, raw in enumerate(kept, start=1):
                    fresh.write(encode_record(records[number]) if number in records else raw)
        except BaseException:
            if locked is not None:
                os.close(locked)
            raise
        fcntl.fcntl(locked, fcntl.F_SETFL, fcntl.fcntl(locked, fcntl.F_GETFL) | os.O_APPEND)
        self._replaced.append(self.stream)
        self.stream = os.fdopen(locked, "ab", buffering=0)

    def close(self, *, failed: bool) -> None:
        """Release the lock; a file this claim created for a run that never started is removed."""
        if failed and self.created and not self.started and os.fstat(self.stream.fileno()).st_size == 0:
            self.path.unlink(missing_ok=True)
        for stream in (*self._replaced, self.stream):
            stream.close()


@contextmanager
def claim_output(path: Path) -> Iterator[ClaimedOutput]:
    """Hold `path` as this run's results file (see `ClaimedOutput`) until the block ends."""
    claimed = ClaimedOutput(path)
    try:
        yield claimed
    except BaseException:
        claimed.close(failed=True)
        raise
    claimed.close(failed=False)


@dataclass
class BatchSummary:
    """What a batch did: results, failures by reason, model-request retries, and how long it took.

    `done` counts result lines; `parse_failures` how many of those had a reply the adapter could not
    parse even after its repair (their edges are empty for that step). `failed` counts error lines
    by reason; `retries` counts model requests sent again after a fault, by fault reason. A resumed
    run counts only its own lines, the kept error lines it ran again (`rerun`) among them;
    `resumed_after` is where it went on, `resumed_failed` the kept error lines it left as they were.
    """

    lines: int = 0
    done: int = 0
    parse_failures: int = 0
    failed: Counter[str] = field(default_factory=Counter)
    retries: Counter[str] = field(default_factory=Counter)
    retried_episodes: int = 0
    requests: int = 0
    resumed_after: int = 0
    resumed_failed: Counter[str] = field(default_factory=Counter)
    rerun: int = 0
    wall_s: float = 0.0

    @property
    def all_done(self) -> bool:
        """Whether every line of the output, kept ones included, is a result (no error line)."""
        return not sum(self.failed.values()) and not sum(self.resumed_failed.values())

    def add_retries(self, requests: int, retries: Counter[str]) -> None:
        self.requests += requests
        self.retries.update(retries)
        self.retried_episodes += bool(sum(retries.values()))

    def count(self, record: dict[str, Any], requests: int, retries: Counter[str]) -> None:
        """Count one output record of this run, and the model requests it took."""
        self.lines += 1
        if "error" in record:
            self.failed[record["error"]["reason"]] += 1
        else:
            self.done += 1
            self.parse_failures += bool(record.get("parseFailures"))
        self.add_retries(requests, retries)

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
        kept_failed = sum(self.resumed_failed.values())
        notes = [f"{self.rerun} error lines of them run again"] if self.rerun else []
        notes += [f"{kept_failed} of them failed: {_counts(self.resumed_failed)}"] if kept_failed else []
        if notes:
            resumed += f" ({'; '.join(notes)})"
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
            "resumedFailed": dict(sorted(self.resumed_failed.items())),
            "rerun": self.rerun,
            "wallSeconds": round(self.wall_s, 3),
        }


def _counts(counter: Counter[str]) -> str:
    return ", ".join(f"{name} {count}" for name, count in sorted(counter.items()))
