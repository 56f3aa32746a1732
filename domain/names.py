"""Names: when two spellings name the same entity, and how a field of an input is named in an error.

The entity rule is the one post-processing and the metric both apply.
Post-processing resolves a model's spelling of a name to one of the episode's entities with it, and
the metric matches predicted edges to gold edges with it, so an edge post-processing accepted is
never counted as naming a different entity.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Final

FORMS_OF_ADDRESS: Final[frozenset[str]] = frozenset(
    {
        "sir",
        "ma'am",
        "madam",
        "mom",
        "mommy",
        "dad",
        "daddy",
        "honey",
        "sweetie",
        "man",
        "dude",
        "buddy",
        "baby",
    }
)
"""Words a speaker calls someone by that are not their name ("Sir?", "honey"), in lower case: DialogRE
labels some of them as alternate names, and a transcript's speakers are not named by them."""


@lru_cache(maxsize=1 << 16)
def normalize_name(name: str) -> str:
    """Case-, whitespace- and diacritic-insensitive form of a name ("  José  Díaz" -> "jose diaz").

    Compatibility forms are decomposed before case is folded, so a superscript or full-width capital
    folds like its plain letter. Cached, with a shortcut for ASCII (which has nothing to decompose):
    the metric normalizes every name of every edge it scores.
    """
    if name.isascii():
        return " ".join(name.casefold().split())
    decomposed = unicodedata.normalize("NFKD", name)
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(stripped.casefold().split())


def field_path(location: tuple[int | str, ...]) -> str:
    """("entities", 0, "name") -> "entities[0].name"."""
    path = ""
    for part in location:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


@lru_cache(maxsize=4096)
def to_screaming_snake(name: str) -> str:
    """A relationship type's one spelling: worksAt, works at, Works-At, WORKS_AT -> WORKS_AT."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name.strip())
    return "_".join(part for part in re.split(r"[^A-Za-z0-9]+", spaced) if part).upper()
