"""The misspelt-type check of a whole file: signature types that no entity of the file has.

A memory system keeps one edge-type schema for its whole graph (Graphiti's `edge_type_map`, a CORE
space), so one episode routinely gets signatures that name entity types it has no entity of
(LIVES_IN with `targetTypes: ["Location"]` in an episode that mentions no place). Such a signature
simply never applies there, and `Episode` accepts it. Over a whole file the two cases part: a type
that some entity of the file has is a real type, absent from some episodes; a type that no entity
of the file has is almost always a misspelling ("Persn"), which would make its relationship type
impossible wherever it is declared. `edgewise data validate` and `edgewise extract` report each
such type once per file, on stderr, and their exit status does not change.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from edgewise.domain.episode import Episode

SIGNATURE_FIELDS = (("sourceTypes", "source_types"), ("targetTypes", "target_types"))


class AbsentType(NamedTuple):
    """A signature type no entity of the file has, and where it was first named."""

    name: str
    line: int | None
    field: str

    def message(self, source: str, entity_types: list[str]) -> str:
        """`in.jsonl: signature type 'Persn' (line 3, edgeTypes[0].targetTypes) is the type of no entity...`."""
        where = f"line {self.line}, {self.field}" if self.line is not None else self.field
        return (
            f"{source}: signature type {self.name!r} ({where}) is the type of no entity in this file, "
            f"so it never applies; a misspelling? (entity types here: {', '.join(entity_types)})"
        )


@dataclass
class FileEntityTypes:
    """The entity types a file's episodes have, and the types their signatures name (first place each)."""

    entity_types: set[str] = field(default_factory=set)
    named: dict[str, tuple[int | None, str]] = field(default_factory=dict)

    def add(self, episode: Episode, line: int | None) -> None:
        """Count one episode of the file (`line`: its line number, for the report)."""
        self.entity_types.update(entity.type for entity in episode.entities if entity.type)
        for index, edge_type in enumerate(episode.edge_types):
            for wire, attribute in SIGNATURE_FIELDS:
                for name in getattr(edge_type, attribute) or []:
                    self.named.setdefault(name, (line, f"edgeTypes[{index}].{wire}"))

    def absent(self) -> list[AbsentType]:
        """The signature types no entity of the file has, in the order first named.

        Empty when no entity of the file has a type: signatures then apply nowhere, and that is the
        file's choice (untyped entities), not a misspelling.
        """
        if not self.entity_types:
            return []
        return [
            AbsentType(name, line, where)
            for name, (line, where) in self.named.items()
            if name not in self.entity_types
        ]

    def report(self, source: str) -> list[str]:
        """One line per absent type, naming the file (what the commands print on stderr)."""
        known = sorted(self.entity_types)
        return [absent.message(source, known) for absent in self.absent()]
