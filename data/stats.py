"""Counts that describe a labeled-episode set, per split and source, and how much a test score can be trusted.

The table is what the data card shows (it is pasted from `edgewise data stats`); the interval hint says
how wide a 95% interval on edge-F1 is at the size of the set, before any model has been run on it. The
hand-written conversational episodes get a section of their own: what they were written to cover
(genres, languages, edges per episode, the cases they test) is in their files' `kind` tags, not in
the episode lines.
"""

from __future__ import annotations

import math
from collections import Counter
from statistics import mean
from typing import TYPE_CHECKING, Final, NamedTuple

from edgewise.domain.gold import LabeledEpisode

if TYPE_CHECKING:
    from edgewise.data.converters.conversational import HandwrittenEpisode

_GRANULARITIES: Final[tuple[str, ...]] = ("year", "month", "day", "instant")
_Z95: Final[float] = 1.96
#: The `kind` tags of the hand-written episodes that name a case the set must cover.
TEST_TAGS: Final[tuple[str, ...]] = (
    "negation",
    "cancelled_plan",
    "ended_relation",
    "relative_date",
    "correction",
    "quoted_text",
)
#: The tag of a hand-written episode that is not in English.
NON_ENGLISH: Final[str] = "non_english"
#: Gold edges per episode are counted one by one up to this many, then together.
_EDGE_BUCKETS: Final[int] = 8


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


class Spread(NamedTuple):
    """How the hand-written episodes of one split (or "all") spread over what they were written to cover."""

    split: str
    episodes: int
    conversations: int
    edges: int
    genres: Counter[str]
    """Episodes per genre: the first `kind` tag."""
    non_english: int
    edges_per_episode: Counter[str]
    """Episodes per number of gold edges ("0" ... "8", then "9+")."""
    tags: Counter[str]
    """Episodes per test tag of `TEST_TAGS`, and per "invalidAt": episodes with a gold edge that ends."""


def _spread(split: str, items: list[tuple[HandwrittenEpisode, LabeledEpisode]]) -> Spread:
    tags: Counter[str] = Counter()
    for item, episode in items:
        tags.update(tag for tag in TEST_TAGS if tag in item.kind)
        tags["invalidAt"] += any(edge.invalid_at is not None for edge in episode.edges)
    return Spread(
        split=split,
        episodes=len(items),
        conversations=len({episode.id.rsplit("-", 1)[0] for _, episode in items}),
        edges=sum(len(episode.edges) for _, episode in items),
        genres=Counter(item.kind[0] for item, _ in items if item.kind),
        non_english=sum(NON_ENGLISH in item.kind for item, _ in items),
        edges_per_episode=Counter(
            str(n) if (n := len(episode.edges)) <= _EDGE_BUCKETS else f"{_EDGE_BUCKETS + 1}+"
            for _, episode in items
        ),
        tags=tags,
    )


def handwritten_spread(
    handwritten: list[HandwrittenEpisode], sets: dict[str, list[LabeledEpisode]]
) -> list[Spread]:
    """One `Spread` per set that holds hand-written episodes of its declared split, then "all".

    An episode counts where its id is in the set named by its file's split, and its gold edges are
    counted from that set's line, so the section describes the files as built; empty when no set does.
    """
    ids = {name: {episode.id: episode for episode in episodes} for name, episodes in sets.items()}
    by_split: dict[str, list[tuple[HandwrittenEpisode, LabeledEpisode]]] = {}
    for item in handwritten:
        episode = ids.get(item.split, {}).get(item.episode["id"])
        if episode is not None:
            by_split.setdefault(item.split, []).append((item, episode))
    if not by_split:
        return []
    rows = [_spread(name, by_split[name]) for name in sets if name in by_split]
    return [*rows, _spread("all", [pair for name in sets for pair in by_split.get(name, [])])]


def format_spread(rows: list[Spread], genres: tuple[str, ...]) -> str:
    """A Markdown table with one column per split: counts, and each one's share of the split's episodes."""

    def line(label: str, counts: list[int], share: bool = True) -> str:
        cells = [
            _share(count, row.episodes) if share else str(count)
            for count, row in zip(counts, rows, strict=True)
        ]
        return f"| {label} | " + " | ".join(cells) + " |"

    buckets = [str(n) for n in range(_EDGE_BUCKETS + 1)] + [f"{_EDGE_BUCKETS + 1}+"]
    lines = [
        "| hand-written | " + " | ".join(row.split for row in rows) + " |",
        "|---|" + "---:|" * len(rows),
        line("episodes", [row.episodes for row in rows], share=False),
        line("conversations", [row.conversations for row in rows], share=False),
        line("gold edges", [row.edges for row in rows], share=False),
        *(line(f"genre: {genre}", [row.genres[genre] for row in rows]) for genre in genres),
        line("language: English", [row.episodes - row.non_english for row in rows]),
        line("language: not English", [row.non_english for row in rows]),
        *(
            line(f"gold edges: {bucket}", [row.edges_per_episode[bucket] for row in rows])
            for bucket in buckets
            if any(row.edges_per_episode[bucket] for row in rows)
        ),
        *(line(f"tag: {tag}", [row.tags[tag] for row in rows]) for tag in TEST_TAGS),
        line("an edge with invalidAt", [row.tags["invalidAt"] for row in rows]),
    ]
    return "\n".join(lines)
