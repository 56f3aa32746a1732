"""A source's relationship types, written as a table of name -> description, and their aliases.

Each converter lists the types its episodes offer the model; the table form keeps every description
on the line of its name, and marks the few undirected types in one place. The aliases of each gold
type (the other names a prediction may give it) are data: one table per converter, in
`type_aliases.json` beside this module.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Final

from pydantic import TypeAdapter, ValidationError

from edgewise.domain.errors import FileContentError
from edgewise.domain.types import EdgeType

#: The alias tables, shipped as package data: converter -> gold type (a Re-DocRED gold type is its
#: Wikidata P-id) -> the other type names a prediction may use for it.
ALIASES_FILE: Final[Path] = Path(__file__).with_name("type_aliases.json")
_ALIAS_TABLES: Final = TypeAdapter(dict[str, dict[str, list[str]]])


def edge_types(descriptions: dict[str, str], *, symmetric: Iterable[str] = ()) -> tuple[EdgeType, ...]:
    """A source's relationship types in order, from name -> description; `symmetric` names the types
    without a direction. A symmetric name that is not a type is a mistake in the table: ValueError."""
    undirected = frozenset(symmetric)
    if unknown := undirected - descriptions.keys():
        raise ValueError(f"symmetric names that are not types: {', '.join(sorted(unknown))}")
    return tuple(
        EdgeType(name=name, description=description, symmetric=name in undirected)
        for name, description in descriptions.items()
    )


def type_aliases(converter: str, path: Path = ALIASES_FILE) -> dict[str, list[str]]:
    """One converter's alias table from `path`: gold type -> the other names a prediction may use."""
    try:
        tables = _ALIAS_TABLES.validate_json(path.read_bytes())
    except ValidationError as error:
        raise FileContentError(f"{path}: {error}") from error
    if converter not in tables:
        raise FileContentError(f"{path}: no alias table for {converter!r} (tables: {', '.join(tables)})")
    return tables[converter]
