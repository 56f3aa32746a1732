"""A source's relationship types, written as a table of name -> description.

Each converter lists the types its episodes offer the model; the table form keeps every description
on the line of its name, and marks the few undirected types in one place.
"""

from __future__ import annotations

from collections.abc import Iterable

from edgewise.signatures.types import EdgeType


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
