"""What both front doors say about an episode's fields: JSONL lines (`edgewise extract`) and HTTP requests.

An unknown field is reported with an `ignored_field` warning in the result, never dropped without a
word, and an episode without entities is refused: edges join two of the episode's entities, so such
an episode could only ever "succeed" with no edges, which hides a misspelled or misnamed list.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Final

from edgewise.signatures.types import ExtractionWarning

IGNORED_FIELD: Final = "ignored_field"
NO_ENTITIES: Final = "no entities: edges need at least two entities to connect"
# Names a user may have meant for the entity list: the service's own two and their misspellings.
_ENTITY_LIST_NAMES: Final = ("entities", "nodes")
_CLOSE_MATCH_CUTOFF: Final = 0.7


def ignored_field_warning(where: str, names: Iterable[str]) -> ExtractionWarning:
    """`{"code": "ignored_field", "message": "<where>: ignored unknown fields a, b"}`."""
    return ExtractionWarning(
        code=IGNORED_FIELD, message=f"{where}: ignored unknown fields {', '.join(sorted(names))}"
    )


def no_entities_message(field: str, unknown: Iterable[str] = ()) -> str:
    """Why an episode without entities is refused, and the unknown field that was probably meant.

    `field` is the name the caller's format uses for the list (`entities` in a JSONL line, `nodes`
    in an HTTP request); a given key close to either name ("entites", "node") is pointed out.
    """
    meant = [
        key
        for key in sorted(unknown)
        if difflib.get_close_matches(key.casefold(), _ENTITY_LIST_NAMES, n=1, cutoff=_CLOSE_MATCH_CUTOFF)
    ]
    hint = (
        f' (this episode has {", ".join(repr(key) for key in meant)}; the list is named "{field}")'
        if meant
        else ""
    )
    return f'{NO_ENTITIES}; give them as "{field}": [{{"name": ...}}, ...]{hint}'
