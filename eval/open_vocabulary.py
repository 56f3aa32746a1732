"""The open-vocabulary case: episodes without `edgeTypes`, scored by what the type means, not its spelling.

Graphiti's default, and any memory system without a schema, gives the model no relationship types:
it names each fact's type itself. edge-F1 then counts WORKS_FOR against a gold WORKS_AT as wrong,
though a reader takes it as the same relation, while pair-F1 ignores the type entirely. Between the
two, the alias-aware edge-F1 here accepts a predicted type when it is the gold type or one of the
gold edge's aliases (as edge-F1 does) or when the two *normalize alike* (`canonical_type`):

1. the same SCREAMING_SNAKE_CASE form (`worksAt`, `works at` -> `WORKS_AT`);
2. without a leading copula: `IS_`, `ARE_`, `WAS_`, `WERE_` (`IS_MARRIED_TO` -> `MARRIED_TO`);
3. without one trailing linking preposition: `_OF`, `_AT`, `_IN`, `_ON`, `_TO`, `_WITH`, `_FOR`
   (`WORKS_FOR`, `WORKS_AT` -> `WORKS`; `SIBLING_OF` -> `SIBLING`).

Why these and no more: a relation's name is a verb or noun plus, often, a preposition and a copula
whose choice is style (works at / works for, is married to / married to). What carries meaning is
kept: the verb or noun itself, its tense and number, `_BY` (the passive: `EMPLOYED_BY` runs the other
way from `EMPLOYS`), `_FROM` (the opposite of `_TO`), and `HAS_` (`HAS_CHILD` is `CHILD_OF` reversed).
Synonyms beyond that (RESIDES_IN for LIVES_IN) count only where the gold lists them as aliases: no
thesaurus decides what is right. A predicted edge is renamed to the gold type only inside its own
entity pair, then scored by the one metric (`edgewise.eval.scoring.score_episode`), so direction,
dates and one-to-one matching are judged exactly as for edge-F1.

`type_shares` measures the other failure of an open vocabulary: one type written for most edges (a
small model copying the schema's example type). It gives, per type, the share of the predicted edges
and the gold's share of the same type, so "no type is written for more than half of the edges unless
the gold uses it that often" can be read off a bench (`RunSummary.type_shares`) or an earlier results
folder (`python benchmarks/type_shares.py RESULTS_DIR`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Final

from pydantic import BaseModel

from edgewise.domain.episode import Episode
from edgewise.domain.gold import GoldEdge, LabeledEpisode
from edgewise.domain.names import normalize_name, to_screaming_snake
from edgewise.domain.types import Edge
from edgewise.eval.records import EpisodeScore
from edgewise.eval.scoring import score_episode

COPULAS: Final = ("IS", "ARE", "WAS", "WERE")
LINKING_PREPOSITIONS: Final = ("OF", "AT", "IN", "ON", "TO", "WITH", "FOR")
_COPULA: Final = re.compile(rf"^(?:{'|'.join(COPULAS)})_(?=.)")
_PREPOSITION: Final = re.compile(rf"(?<=.)_(?:{'|'.join(LINKING_PREPOSITIONS)})$")


@lru_cache(maxsize=4096)
def canonical_type(name: str) -> str:
    """The form two type names share when they normalize alike (see the module docstring)."""
    snake = to_screaming_snake(name)
    return _PREPOSITION.sub("", _COPULA.sub("", snake))


def without_vocabulary(episode: Episode) -> Episode:
    """The episode as a schema-less memory system sends it: no relationship types."""
    return episode.model_copy(update={"edge_types": []})


def named_like_gold(gold: LabeledEpisode, predicted: Sequence[Edge]) -> list[Edge]:
    """`predicted`, each edge renamed to the type of a gold edge of its entity pair it normalizes alike with.

    An edge that normalizes like no gold edge of its pair keeps its own type (and scores as edge-F1
    scores it). The first such gold edge in gold order is taken.
    """
    by_pair: dict[frozenset[str], list[GoldEdge]] = {}
    for edge in gold.edges:
        key = frozenset((normalize_name(edge.source_entity_name), normalize_name(edge.target_entity_name)))
        by_pair.setdefault(key, []).append(edge)
    renamed: list[Edge] = []
    for edge in predicted:
        key = frozenset((normalize_name(edge.source_entity_name), normalize_name(edge.target_entity_name)))
        form = canonical_type(edge.relationship_type)
        target = next(
            (
                candidate.relationship_type
                for candidate in by_pair.get(key, ())
                if form
                in {canonical_type(name) for name in (candidate.relationship_type, *candidate.aliases)}
            ),
            None,
        )
        renamed.append(edge if target is None else edge.model_copy(update={"relationship_type": target}))
    return renamed


def alias_aware_score(gold: LabeledEpisode, predicted: Sequence[Edge]) -> EpisodeScore:
    """The episode's score with predicted types that normalize like their pair's gold type counted right."""
    return score_episode(gold, named_like_gold(gold, predicted))


class TypeShare(BaseModel):
    """One relationship type: how many predicted edges have it and their share, beside the gold's."""

    type: str
    edges: int
    share: float
    gold_edges: int
    gold_share: float


def type_shares(predicted: Iterable[Edge], gold: Iterable[GoldEdge]) -> list[TypeShare]:
    """Every type written, most written first (then by name), with the gold's use of the same type.

    Types are compared in SCREAMING_SNAKE_CASE as written (WORKS_FOR and WORKS_AT are two types here:
    the question is whether one spelling is written for everything).
    """
    written = Counter(to_screaming_snake(edge.relationship_type) for edge in predicted)
    labeled = Counter(to_screaming_snake(edge.relationship_type) for edge in gold)
    total, gold_total = sum(written.values()), sum(labeled.values())
    return [
        TypeShare(
            type=name,
            edges=count,
            share=count / total,
            gold_edges=labeled[name],
            gold_share=labeled[name] / gold_total if gold_total else 0.0,
        )
        for name, count in sorted(written.items(), key=lambda item: (-item[1], item[0]))
    ]


def dominant_type(shares: Sequence[TypeShare]) -> TypeShare | None:
    """The most written type, when it is over half of the edges and over the gold's share of it."""
    top = shares[0] if shares else None
    return top if top is not None and top.share > 0.5 and top.share > top.gold_share else None
