"""What a dataset row means to the Ray stage: a raw JSONL line, or an episode's columns.

Kept apart from `ray_stage` (which needs Ray at import) so that the row contract is the same code
in every installation, and is tested with the other input paths without the `ray` extra.
"""

from __future__ import annotations

from typing import Any, Final

from edgewise.domain.episode import Episode
from edgewise.runtime.jsonl import InputLine, parse_episode_line, parse_episode_object

# Input columns the stage reads besides the episode's own fields.
RAW_COLUMN: Final = "raw"  # one JSONL line (bytes or text), parsed as `edgewise extract` parses a line
LINE_COLUMN: Final = "line"  # the row's line number in its file (kept in the record as "line")
SOURCE_COLUMN: Final = "source"  # the file the row came from (kept in the record as "source")
DEFAULT_SOURCE: Final = "<dataset>"


def input_line(row: dict[str, Any], *, model: type[Episode] = Episode) -> InputLine:
    """A dataset row as the input line `edgewise extract` would read: a raw JSONL line, or the episode's columns.

    A null column is an absent field (a Parquet table has a value or a null in every column). `model`
    is the program's input contract (`TextEpisode` for a program with an entity step).
    """
    line = row.get(LINE_COLUMN)
    source = row.get(SOURCE_COLUMN) or DEFAULT_SOURCE
    if RAW_COLUMN in row:
        raw = row[RAW_COLUMN]
        encoded = raw.encode("utf-8") if isinstance(raw, str) else raw or b""
        return parse_episode_line(encoded, line, source, model=model)
    fields = {
        key: value
        for key, value in row.items()
        if key not in (LINE_COLUMN, SOURCE_COLUMN) and value is not None
    }
    return parse_episode_object(fields, line, source, model=model)
