"""Counts that describe a labeled-episode set, per split and source, and how much a test score can be trusted.

The table is what the data card shows (it is pasted from `edgewise data stats`); the interval hint says
how wide a 95% interval on edge-F1 is at the size of the set, before any model has been run on it.
"""

from __future__ import annotations

import math
from collections import Counter
from statistics import mean
from typing import Final, NamedTuple

from edgewise.signatures.gold import LabeledEpisode

_GRANULARITIES: Final[tuple[str, ...]] = ("year", "month", "day", "instant")
_Z95: Final[float] = 1.96


class SetStats(NamedTuple):
    """The numbers of one row of the table: one source in one split (source "all" sums the split)."""

    split: str
    source: str
    episodes: int
    edges: int
    edge_types: int
    entities_per_episode: float
    words_per_episode: float
    edges_valid_at: int
    edges_invalid_at: int
    granularity: dict[str, int]
    exhaustive_episodes: int
    attribute_values: int
    """Labeled attribute values on the gold edges that are not null."""
    attribute_nulls: int
    """Labeled attributes whose right answer is null: the text does not say."""


def set_stats(split: str, source: str, episodes: list[LabeledEpisode]) -> SetStats:
    edges = [edge for episode in episodes for edge in episode.edges]
    granularity: Counter[str] = Counter()
    for edge in edges:
        for value in (edge.valid_at_granularity, edge.invalid_at_granularity):
            if value:
                granularity[value] += 1
    return SetStats(
        split=split,
        source=source,
        episodes=len(episodes),
        edges=len(edges),
        edge_types=len({edge.relationship_type for edge in edges}),
        entities_per_episode=mean(len(e.entities) for e in episodes) if episodes else 0.0,
        words_per_episode=mean(len(e.episode_content.split()) for e in episodes) if episodes else 0.0,
        edges_valid_at=sum(1 for edge in edges if edge.valid_at is not None),
        edges_invalid_at=sum(1 for edge in edges if edge.invalid_at is not None),
        granularity={name: granularity[name] for name in _GRANULARITIES},
        exhaustive_episodes=sum(1 for e in episodes if e.exhaustive),
        attribute_values=sum(value is not None for edge in edges for value in edge.attributes.values()),
        attribute_nulls=sum(value is None for edge in edges for value in edge.attributes.values()),
    )


def compute_stats(sets: dict[str, list[LabeledEpisode]]) -> list[SetStats]:
    """One row per source of each named set, then one "all" row for the set."""
    rows = []
    for name, episodes in sets.items():
        for source in sorted({e.source for e in episodes}):
            rows.append(set_stats(name, source, [e for e in episodes if e.source == source]))
        rows.append(set_stats(name, "all", episodes))
    return rows


def _share(count: int, total: int) -> str:
    return f"{count} ({100 * count / total:.0f}%)" if total else "0"


def format_table(rows: list[SetStats]) -> str:
    """A Markdown table of `rows`."""
    header = (
        "| split | source | episodes | gold edges | edge types | entities/ep | words/ep | validAt | invalidAt "
        "| date granularity y/m/d | exhaustive | attributes: values / null |"
    )
    lines = [header, "|" + "---|" * 12]
    for row in rows:
        gran = row.granularity
        lines.append(
            f"| {row.split} | {row.source} | {row.episodes} | {row.edges} | {row.edge_types} "
            f"| {row.entities_per_episode:.1f} | {row.words_per_episode:.0f} "
            f"| {_share(row.edges_valid_at, row.edges)} | {_share(row.edges_invalid_at, row.edges)} "
            f"| {gran['year']}/{gran['month']}/{gran['day']} | {row.exhaustive_episodes}/{row.episodes} "
            f"| {row.attribute_values} / {row.attribute_nulls} |"
        )
    return "\n".join(lines)


def f1_half_width(gold_edges: int, f1: float = 0.5) -> float:
    """95% half-width of a proportion measured on `gold_edges` independent edges (normal approximation).

    Edge-F1 behaves roughly like such a proportion; p = 0.5 gives the widest interval.
    """
    if gold_edges <= 0:
        return float("nan")
    return _Z95 * math.sqrt(f1 * (1 - f1) / gold_edges)


def interval_hint(name: str, episodes: list[LabeledEpisode]) -> str:
    """How precise an edge-F1 on this set is, stated with its assumptions."""
    edges = sum(len(e.edges) for e in episodes)
    one = 100 * f1_half_width(edges)
    two = one * math.sqrt(2)
    return (
        f"{name}: {len(episodes)} episodes, {edges} gold edges. Binomial approximation at edge-F1 = 0.5 "
        f"(the widest case), edges independent: 95% interval about ±{one:.1f} points for one system; "
        f"about ±{two:.1f} points for the difference of two systems scored independently (a paired "
        "comparison on the same episodes is tighter). Edges of one episode are correlated, so a "
        "bootstrap over episodes of real predictions (what `edgewise bench` reports) is wider than this."
    )
