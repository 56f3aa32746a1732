"""What every path says about an input's unread fields: JSONL lines, Ray rows and HTTP requests.

An unknown field is reported with an `ignored_field` warning in the result, never dropped without a
word (`Episode.ignored_fields` lists them).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from edgewise.domain.episode import Episode
from edgewise.domain.types import ExtractionWarning

IGNORED_FIELD: Final = "ignored_field"


def ignored_field_warning(where: str, names: Iterable[str]) -> ExtractionWarning:
    """`{"code": "ignored_field", "message": "<where>: ignored unknown fields a, nodes[0].uuid" (sorted)}`."""
    return ExtractionWarning(
        code=IGNORED_FIELD, message=f"{where}: ignored unknown fields {', '.join(sorted(names))}"
    )


def input_warnings(where: str, episode: Episode) -> tuple[ExtractionWarning, ...]:
    """The warnings an input's result carries: the fields of it that were not read, if any."""
    return (ignored_field_warning(where, episode.ignored_fields),) if episode.ignored_fields else ()
