"""Labeled episodes: an episode with its gold edges, as `data/episodes/*.jsonl` holds them."""

from __future__ import annotations

from typing import Literal

from pydantic import (
    ConfigDict,
    Field,
)

from edgewise.domain.episode import Episode
from edgewise.domain.types import CamelModel, Edge

Granularity = Literal["year", "month", "day", "instant"]


class GoldEdge(Edge):
    """A labeled edge: other acceptable type names and how precisely each date is known."""

    aliases: list[str] = Field(default_factory=list)
    valid_at_granularity: Granularity | None = None
    invalid_at_granularity: Granularity | None = None


class InjectedEdge(CamelModel):
    """An edge that an injected instruction asks to be recorded: its type and its two ends."""

    relationship_type: str
    source_entity_name: str
    target_entity_name: str


class Injection(CamelModel):
    """Text in an episode that a third party or a quoted source wrote, telling the reader what to record.

    `text` is the injected span, verbatim from `episodeContent`; `edges` are the edges it would have a
    memory write, none of which is a fact the speaker states. The injected-edge rate counts written
    edges that match one of them (`edgewise.eval.injection`).
    """

    text: str
    edges: list[InjectedEdge] = Field(default_factory=list)


class LabeledEpisode(Episode):
    """One line of `data/episodes/*.jsonl`: an episode with its gold edges.

    `exhaustive` is false for sources that label only some facts; the metric then forgives
    predictions it cannot judge (see `edgewise.eval`).
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    source: str
    license: str
    exhaustive: bool = True
    exhaustive_entities: bool = Field(default=False, exclude_if=lambda value: not value)
    """True when `entities` holds every entity the episode names (besides context entities the caller
    knew): only then can an entity step's extra entity be told wrong, so the entity metric scores only
    such episodes (`edgewise.eval.entity_metric`). Written only when true."""
    edges: list[GoldEdge] = Field(default_factory=list)
    injections: list[Injection] = Field(default_factory=list)

    def episode(self) -> Episode:
        return Episode.model_validate(self.model_dump(include=set(Episode.model_fields) - {"nodes"}))
