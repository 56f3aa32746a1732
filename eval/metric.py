"""Edge-F1: how many of an episode's gold edges a prediction found, one-to-one, and why it missed the rest.

A predicted edge matches a gold edge when both ends name the same entities in the same direction (either
direction when the gold type is symmetric) and its type is the gold type or one of the gold's aliases;
each gold edge and each predicted edge is used at most once, and the matching is a maximum one. The
same numbers serve three readers: the optimizer (`edge_metric`, a score with plain-words feedback),
the benchmark (`aggregate`, `bootstrap_ci`) and whoever reads the errors (`EpisodeScore` records).

Rules that a reader of a score needs to know:

- Names compare after casefolding, removing diacritics and collapsing whitespace; types compare after
  trimming and upper-casing. A type is symmetric when the episode's `edge_types` says so for the gold
  edge's type.
- pair-F1 is computed the same way with the type ignored (its own maximum matching); direction still
  counts unless the gold type is symmetric.
- validAt / invalidAt accuracy is measured over the edges matched for edge-F1, at the gold date's
  granularity (year, month, day, or the second for `instant`); a null gold date is right only when the
  prediction is null too. A gold date without a granularity is compared to the second.
- Among maximum matchings, the one that agrees on the most dates is taken, then the one that uses
  earlier predictions, so a repeated prediction is the copy left over (a false positive).
- In an episode with `exhaustive: false`, an unmatched prediction counts as a false positive only when
  it shares its source entity and its type (or an alias) with some gold edge (either end for a
  symmetric gold type); otherwise it is listed in `ignored` and not counted. For pair-F1 the source
  entity alone decides.
- An episode with no gold edges and no predictions has F1 1.0 (nothing to find, nothing invented).
"""

from __future__ import annotations

import math
import random
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from functools import lru_cache, partial
from itertools import starmap
from typing import Any, Final, Literal, NamedTuple

import dspy
from pydantic import BaseModel, ConfigDict, Field, computed_field

from edgewise.signatures.types import Edge, GoldEdge, Granularity, LabeledEpisode, format_utc

DateField = Literal["validAt", "invalidAt"]
Stat = Literal[
    "edge_f1_micro",
    "edge_f1_macro",
    "pair_f1_micro",
    "pair_f1_macro",
    "precision",
    "recall",
    "valid_at_accuracy",
    "invalid_at_accuracy",
]

_UNSTATED_GRANULARITY: Final[Granularity] = "instant"
"""How a gold date without a stated granularity is compared: exactly, to the second."""

_FEEDBACK_MAX_ITEMS: Final[int] = 12
"""Items listed per kind of mistake in feedback; long lists drown the lesson in a reflection prompt."""

_CI_LEVEL: Final[float] = 0.95


# --------------------------------------------------------------------------------------------------
# Records and scores
# --------------------------------------------------------------------------------------------------


class _Record(BaseModel):
    """An error record: frozen, and serialized with the edges in the seed's camelCase."""

    model_config = ConfigDict(frozen=True)


class MissedEdge(_Record):
    """A gold edge no prediction matched, and no reversed or mistyped prediction explains."""

    gold: GoldEdge


class SpuriousEdge(_Record):
    """A counted false positive; `duplicate` when an earlier identical prediction already matched."""

    predicted: Edge
    duplicate: bool = False


class ReversedEdge(_Record):
    """A prediction that would match `gold` with source and target swapped (non-symmetric type)."""

    predicted: Edge
    gold: GoldEdge
    counted: bool = True


class MistypedEdge(_Record):
    """A prediction between the gold's entities, in the gold's direction, with a type it does not accept."""

    predicted: Edge
    gold: GoldEdge
    counted: bool = True


class WrongDate(_Record):
    """A matched edge whose validAt or invalidAt disagrees with the gold at the gold's granularity."""

    predicted: Edge
    gold: GoldEdge
    field: DateField
    granularity: Granularity | None


class TypeCounts(NamedTuple):
    """One relationship type's counts in one episode (TP, FN by gold type; FP by predicted type).

    A tuple, not a model: an episode carries one per type, and building models here would be most of
    the metric's cost.
    """

    tp: int
    fp: int
    fn: int


class Counts(BaseModel):
    """True positives, false positives and false negatives, with the ratios built from them."""

    tp: int = 0
    fp: int = 0
    fn: int = 0

    @computed_field
    @property
    def precision(self) -> float:
        return _ratio(self.tp, self.tp + self.fp)

    @computed_field
    @property
    def recall(self) -> float:
        return _ratio(self.tp, self.tp + self.fn)

    @computed_field
    @property
    def f1(self) -> float:
        return _f1(self.tp, self.fp, self.fn)


class EpisodeScore(BaseModel):
    """Everything the metric found in one episode: counts for the numbers, records for the reader.

    Invariants: `fp == len(spurious) + counted reversed + counted mistyped` and
    `fn == len(missed) + len(reversed) + len(mistyped)`. Records are tuples: a split holds thousands of
    scores, and empty tuples cost nothing to keep.
    """

    episode_id: str
    source: str
    exhaustive: bool = True
    n_gold: int = 0
    n_predicted: int = 0
    tp: int = 0
    fp: int = 0
    fn: int = 0
    pair_tp: int = 0
    pair_fp: int = 0
    pair_fn: int = 0
    valid_at_right: int = 0
    valid_at_total: int = 0
    invalid_at_right: int = 0
    invalid_at_total: int = 0
    per_type: dict[str, TypeCounts] = Field(default_factory=dict)
    missed: tuple[MissedEdge, ...] = ()
    spurious: tuple[SpuriousEdge, ...] = ()
    reversed: tuple[ReversedEdge, ...] = ()
    mistyped: tuple[MistypedEdge, ...] = ()
    wrong_dates: tuple[WrongDate, ...] = ()
    ignored: tuple[Edge, ...] = ()

    @computed_field
    @property
    def precision(self) -> float:
        return _ratio(self.tp, self.tp + self.fp)

    @computed_field
    @property
    def recall(self) -> float:
        return _ratio(self.tp, self.tp + self.fn)

    @computed_field
    @property
    def f1(self) -> float:
        return _f1(self.tp, self.fp, self.fn)

    @computed_field
    @property
    def pair_f1(self) -> float:
        return _f1(self.pair_tp, self.pair_fp, self.pair_fn)


class SplitScore(BaseModel):
    """Scores of a set of episodes: micro (summed counts) and macro (mean of episode F1) averages.

    Date accuracies are None when no matched edge was there to judge.
    """

    episodes: int
    tp: int
    fp: int
    fn: int
    precision: float
    recall: float
    edge_f1: float
    edge_f1_macro: float
    pair_tp: int
    pair_fp: int
    pair_fn: int
    pair_precision: float
    pair_recall: float
    pair_f1: float
    pair_f1_macro: float
    valid_at_right: int
    valid_at_total: int
    valid_at_accuracy: float | None
    invalid_at_right: int
    invalid_at_total: int
    invalid_at_accuracy: float | None
    per_source: dict[str, SplitScore] = Field(default_factory=dict)
    per_type: dict[str, Counts] = Field(default_factory=dict)


def _ratio(num: int, den: int) -> float:
    """Precision or recall; with nothing to divide by it is vacuously perfect."""
    return num / den if den else 1.0


def _f1(tp: int, fp: int, fn: int) -> float:
    """2TP / (2TP + FP + FN): the harmonic mean of precision and recall, 1.0 when all three are zero."""
    den = 2 * tp + fp + fn
    return 2 * tp / den if den else 1.0


# --------------------------------------------------------------------------------------------------
# Normalization and dates
# --------------------------------------------------------------------------------------------------


@lru_cache(maxsize=1 << 16)
def normalize_name(name: str) -> str:
    """Entity names compare by what a reader sees: case, accents and spacing do not matter."""
    if name.isascii():
        return " ".join(name.casefold().split())
    decomposed = unicodedata.normalize("NFKD", name.casefold())
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(stripped.split())


@lru_cache(maxsize=4096)
def normalize_type(name: str) -> str:
    """Relationship types are SCREAMING_SNAKE_CASE; a stray space or lower case is not a new type."""
    return name.strip().upper()


def _same_date(gold: datetime | None, granularity: Granularity | None, predicted: datetime | None) -> bool:
    if gold is None:
        return predicted is None
    if predicted is None:
        return False
    if gold.tzinfo is predicted.tzinfo and gold == predicted:
        return True  # equal fields in one time zone (always UTC once validated) agree at every granularity
    level = granularity or _UNSTATED_GRANULARITY
    if level == "year":
        return gold.year == predicted.year
    if level == "month":
        return gold.year == predicted.year and gold.month == predicted.month
    if level == "day":
        return gold.date() == predicted.date()
    return gold.replace(microsecond=0) == predicted.replace(microsecond=0)


def format_date(value: datetime | None, granularity: Granularity | None) -> str:
    """A date as precisely as the gold knows it: "2020", "2020-05", "2020-05-01" or the full instant."""
    if value is None:
        return "null"
    level = granularity or _UNSTATED_GRANULARITY
    if level == "year":
        return f"{value.year:04d}"
    if level == "month":
        return f"{value.year:04d}-{value.month:02d}"
    if level == "day":
        return value.date().isoformat()
    return format_utc(value)


# --------------------------------------------------------------------------------------------------
# Matching
# --------------------------------------------------------------------------------------------------


def _max_weight_assignment(weights: list[list[int]]) -> list[int]:
    """Rows to columns maximizing total weight (0 = not allowed); returns the column per row or -1.

    The Hungarian method (shortest augmenting paths with potentials) on a dense matrix: the groups it
    sees hold the edges between one pair of entities, so a few rows and columns at most.
    """
    n_rows = len(weights)
    n_cols = len(weights[0])
    transposed = n_rows > n_cols
    if transposed:
        weights = [list(col) for col in zip(*weights, strict=True)]
        n_rows, n_cols = n_cols, n_rows
    top = max(max(row) for row in weights)
    cost = [[top - w for w in row] for row in weights]
    inf = float("inf")
    u = [0.0] * (n_rows + 1)
    v = [0.0] * (n_cols + 1)
    owner = [0] * (n_cols + 1)  # owner[j] = row (1-based) assigned to column j (1-based); 0 = free
    way = [0] * (n_cols + 1)
    for i in range(1, n_rows + 1):
        owner[0] = i
        j0 = 0
        minv = [inf] * (n_cols + 1)
        used = [False] * (n_cols + 1)
        while True:
            used[j0] = True
            i0 = owner[j0]
            delta = inf
            j1 = 0
            for j in range(1, n_cols + 1):
                if not used[j]:
                    cur = cost[i0 - 1][j - 1] - u[i0] - v[j]
                    if cur < minv[j]:
                        minv[j] = cur
                        way[j] = j0
                    if minv[j] < delta:
                        delta = minv[j]
                        j1 = j
            for j in range(n_cols + 1):
                if used[j]:
                    u[owner[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            j0 = j1
            if owner[j0] == 0:
                break
        while j0:
            j1 = way[j0]
            owner[j0] = owner[j1]
            j0 = j1
    row_to_col = [-1] * n_rows
    for j in range(1, n_cols + 1):
        if owner[j] and weights[owner[j] - 1][j - 1] > 0:
            row_to_col[owner[j] - 1] = j - 1
    if not transposed:
        return row_to_col
    col_to_row = [-1] * n_cols
    for r, c in enumerate(row_to_col):
        if c >= 0:
            col_to_row[c] = r
    return col_to_row


def _augmenting_match(options_of: list[list[int]], n_cols: int) -> list[int]:
    """Maximum bipartite matching by augmenting paths (Kuhn), rows in order; the column per row or -1.

    A row once matched stays matched while later rows augment, so earlier rows win every tie.
    """
    owner = [-1] * n_cols

    def augment(row: int, seen: list[bool]) -> bool:
        for col in options_of[row]:
            if not seen[col]:
                seen[col] = True
                if owner[col] < 0 or augment(owner[col], seen):
                    owner[col] = row
                    return True
        return False

    for row in range(len(options_of)):
        augment(row, [False] * n_cols)
    row_to_col = [-1] * len(options_of)
    for col, row in enumerate(owner):
        if row >= 0:
            row_to_col[row] = col
    return row_to_col


def _match_group(
    preds: list[int], golds: list[int], options: list[list[int]], bonus: Callable[[int, int], int]
) -> dict[int, int]:
    """Maximum matching inside one entity-pair group: prediction -> gold, ordered as found.

    `options[row]` lists, in order, the columns (gold edges) prediction `row` may take, and
    `bonus(row, col)` is how many of their dates agree. Priority: the number of matches, then the total
    bonus, then earlier predictions. Comparing dates is the costly part, so a bonus is computed only
    where it can change the result: when a prediction has a choice or a gold edge has several takers.
    """
    n_p = len(preds)
    n_g = len(golds)
    wanted_by = [0] * n_g  # how many predictions may take each gold edge
    for cols in options:
        for col in cols:
            wanted_by[col] += 1
    if max(wanted_by) == 0:
        return {}
    if max(wanted_by) == 1:  # no gold edge is contested: every prediction takes its best option
        found: dict[int, int] = {}
        for row, cols in enumerate(options):
            if len(cols) == 1:
                found[preds[row]] = golds[cols[0]]
            elif cols:
                best_col, best_bonus = -1, -1
                for col in cols:
                    b = bonus(row, col)
                    if b > best_bonus:
                        best_col, best_bonus = col, b
                found[preds[row]] = golds[best_col]
        return found
    if all(len(cols) <= 1 for cols in options):
        # every prediction has at most one option: each gold edge takes its best, earliest taker
        taken: dict[int, tuple[int, int]] = {}
        for row, cols in enumerate(options):
            if cols:
                col = cols[0]
                b = bonus(row, col) if wanted_by[col] > 1 else 0
                if col not in taken or b > taken[col][0]:
                    taken[col] = (b, row)
        return {preds[row]: golds[col] for col, (_, row) in taken.items()}
    bonuses = [{col: bonus(row, col) for col in cols} for row, cols in enumerate(options)]
    allowed = [b for row in bonuses for b in row.values()]
    max_bonus = max(allowed)
    if min(allowed) == max_bonus:  # bonuses cannot break ties: plain augmenting paths, earlier rows first
        return {preds[row]: golds[col] for row, col in enumerate(_augmenting_match(options, n_g)) if col >= 0}
    pairs = min(n_p, n_g)
    order_span = n_p * pairs + 1  # total order preference can never outweigh one bonus step
    bonus_span = (max_bonus * order_span + n_p) * pairs + 1  # nor can bonuses outweigh one more match
    weights = [
        [
            bonus_span + row_bonuses[col] * order_span + (n_p - row) if col in row_bonuses else 0
            for col in range(n_g)
        ]
        for row, row_bonuses in enumerate(bonuses)
    ]
    assignment = _max_weight_assignment(weights)
    return {preds[row]: golds[col] for row, col in enumerate(assignment) if col >= 0}


def _group_bonus(pred_edges: list[Edge], gold_edges: list[GoldEdge], row: int, col: int) -> int:
    """`_date_bonus` by position inside one group, for `_match_group`."""
    return _date_bonus(pred_edges[row], gold_edges[col])


def _date_bonus(pe: Edge, ge: GoldEdge) -> int:
    return _same_date(ge.valid_at, ge.valid_at_granularity, pe.valid_at) + _same_date(
        ge.invalid_at, ge.invalid_at_granularity, pe.invalid_at
    )


@lru_cache(maxsize=4096)
def _accepted_types(kind: str, aliases: tuple[str, ...]) -> frozenset[str]:
    return frozenset([kind, *map(normalize_type, aliases)])


# --------------------------------------------------------------------------------------------------
# Scoring one episode
# --------------------------------------------------------------------------------------------------


class _Views(NamedTuple):
    """One episode's edges normalized once and read by index: `g_*` per gold edge, `p_*` per prediction.

    `groups` holds, per unordered entity pair that some prediction names, the predictions and the gold
    edges between that pair: nothing matches across groups, and inside a group a prediction runs in the
    gold's direction exactly when their sources agree. Every later rule compares these plain strings,
    so each pydantic field is read and normalized once per score.
    """

    g_src: list[str]
    g_tgt: list[str]
    g_kind: list[str]
    g_types: list[frozenset[str] | tuple[str]]
    g_sym: list[bool]
    p_src: list[str]
    p_tgt: list[str]
    p_kind: list[str]
    groups: list[tuple[list[int], list[int]]]
    symmetric: set[str]


def _views(gold: LabeledEpisode, predicted: Sequence[Edge]) -> _Views:
    """Normalize every name and type of the episode once and group the edges by entity pair.

    One pass per edge list, reading each edge's fields together: the edges of a large split do not
    stay in the CPU caches, so a second pass over them costs more than the work done in the first.
    """
    symmetric = {normalize_type(t.name) for t in gold.edge_types if t.symmetric}
    g_src: list[str] = []
    g_tgt: list[str] = []
    g_kind: list[str] = []
    g_types: list[frozenset[str] | tuple[str]] = []
    g_sym: list[bool] = []
    by_pair: dict[tuple[str, str], tuple[list[int], list[int]]] = {}
    for g, ge in enumerate(gold.edges):
        s = normalize_name(ge.source_entity_name)
        t = normalize_name(ge.target_entity_name)
        kind = normalize_type(ge.relationship_type)
        g_src.append(s)
        g_tgt.append(t)
        g_kind.append(kind)
        g_types.append(_accepted_types(kind, tuple(ge.aliases)) if ge.aliases else (kind,))
        g_sym.append(kind in symmetric)
        key = (s, t) if s <= t else (t, s)
        entry = by_pair.get(key)
        if entry is None:
            by_pair[key] = ([], [g])
        else:
            entry[1].append(g)
    p_src: list[str] = []
    p_tgt: list[str] = []
    p_kind: list[str] = []
    for p, pe in enumerate(predicted):
        s = normalize_name(pe.source_entity_name)
        t = normalize_name(pe.target_entity_name)
        p_src.append(s)
        p_tgt.append(t)
        p_kind.append(normalize_type(pe.relationship_type))
        entry = by_pair.get((s, t) if s <= t else (t, s))
        if entry is not None:
            entry[0].append(p)
    groups = [entry for entry in by_pair.values() if entry[0]]
    return _Views(g_src, g_tgt, g_kind, g_types, g_sym, p_src, p_tgt, p_kind, groups, symmetric)


def _match(
    v: _Views, golds: Sequence[GoldEdge], predicted: Sequence[Edge]
) -> tuple[dict[int, int], set[int]]:
    """The edge-F1 matching (prediction -> gold, in group order) and the predictions pair-F1 matched.

    A group of one gold edge and one prediction, by far the most common, is settled inline; other
    groups of one gold edge need no matrix either.
    """
    g_src, g_types, g_sym = v.g_src, v.g_types, v.g_sym
    p_src, p_kind = v.p_src, v.p_kind
    matched: dict[int, int] = {}
    pair_used: set[int] = set()
    for preds, gs in v.groups:
        if len(gs) == 1 and len(preds) == 1:
            p, g = preds[0], gs[0]
            if g_sym[g] or p_src[p] == g_src[g]:
                pair_used.add(p)
                if p_kind[p] in g_types[g]:
                    matched[p] = g
            continue
        if len(gs) == 1:
            edge_pick, pair_pick = _match_one_gold(v, preds, gs[0], golds, predicted)
            if pair_pick >= 0:
                pair_used.add(pair_pick)
            if edge_pick >= 0:
                matched[edge_pick] = gs[0]
            continue
        options = [
            [
                col
                for col, g in enumerate(gs)
                if p_kind[p] in g_types[g] and (p_src[p] == g_src[g] or g_sym[g])
            ]
            for p in preds
        ]
        bonus = partial(_group_bonus, [predicted[p] for p in preds], [golds[g] for g in gs])
        matched.update(_match_group(preds, gs, options, bonus))
        pair_used.update(_pair_match(preds, gs, p_src, g_src, g_sym))
    return matched, pair_used


def _match_one_gold(
    v: _Views, preds: list[int], g: int, golds: Sequence[GoldEdge], predicted: Sequence[Edge]
) -> tuple[int, int]:
    """The predictions that edge-F1 and pair-F1 match to a group's only gold edge (-1: none).

    Pair-F1 takes the earliest prediction in the gold's direction; edge-F1 the earliest of those with
    an accepted type whose dates agree best. Dates are compared only once a second candidate appears.
    """
    g_src, g_types, g_sym = v.g_src, v.g_types, v.g_sym
    p_src, p_kind = v.p_src, v.p_kind
    edge_pick = pair_pick = -1
    pick_bonus = None
    for p in preds:
        if g_sym[g] or p_src[p] == g_src[g]:
            if pair_pick < 0:
                pair_pick = p
            if p_kind[p] in g_types[g]:
                if edge_pick < 0:
                    edge_pick = p
                    continue
                if pick_bonus is None:
                    pick_bonus = _date_bonus(predicted[edge_pick], golds[g])
                if pick_bonus < 2:
                    bonus = _date_bonus(predicted[p], golds[g])
                    if bonus > pick_bonus:
                        edge_pick, pick_bonus = p, bonus
    return edge_pick, pair_pick


def _pair_match(
    preds: list[int], gs: list[int], p_src: list[str], g_src: list[str], g_sym: list[bool]
) -> list[int]:
    """The predictions pair-F1 matches in one entity-pair group: a maximum matching, earlier rows first.

    With the type ignored, a prediction may take any gold edge of its own source, or any symmetric
    one, so Hall's condition reduces to counts: taking predictions in order while, for each source,
    they fit in its gold edges plus the symmetric ones, and in total they fit in all gold edges, gives
    the same predictions as running augmenting paths row by row.
    """
    n_sym = 0
    own: dict[str, int] = {}  # non-symmetric gold edges per source entity
    for g in gs:
        if g_sym[g]:
            n_sym += 1
        else:
            own[g_src[g]] = own.get(g_src[g], 0) + 1
    taken: dict[str, int] = {}
    picked: list[int] = []
    for p in preds:
        if len(picked) == len(gs):
            break
        s = p_src[p]
        if taken.get(s, 0) < own.get(s, 0) + n_sym:
            taken[s] = taken.get(s, 0) + 1
            picked.append(p)
    return picked


def _count(per_type: dict[str, list[int]], kind: str, slot: int) -> None:
    """Add one to `kind`'s TP (0), FP (1) or FN (2) count, creating its counts on first sight."""
    counts = per_type.get(kind)
    if counts is None:
        per_type[kind] = counts = [0, 0, 0]
    counts[slot] += 1


@lru_cache(maxsize=1024)
def _shared_type_counts(tp: int, fp: int, fn: int) -> TypeCounts:
    """One `TypeCounts` per distinct count: most are small, and a tuple is immutable, so scores share them.

    A split holds one per type per episode; shared, they are neither allocated again nor walked by the
    garbage collector, which otherwise revisits every live score while a split is being scored.
    """
    return TypeCounts(tp, fp, fn)


def _type_counts(per_type: dict[str, list[int]]) -> dict[str, TypeCounts]:
    """The per-type counts an `EpisodeScore` holds, in first-seen order."""
    return dict(zip(per_type, starmap(_shared_type_counts, per_type.values()), strict=True))


def _judge_matches(
    matched: dict[int, int],
    golds: Sequence[GoldEdge],
    predicted: Sequence[Edge],
    g_kind: list[str],
    per_type: dict[str, list[int]],
) -> tuple[int, int, list[WrongDate]]:
    """Count each match as a TP of its gold type and judge its dates, in one pass over the matches.

    Returns the right validAt and invalidAt counts and a record per wrong date.
    """
    wrong: list[WrongDate] = []
    valid_right = invalid_right = 0
    for p, g in matched.items():
        _count(per_type, g_kind[g], 0)
        pe, ge = predicted[p], golds[g]
        gold_at, pred_at = ge.valid_at, pe.valid_at  # null-null is the common case: no call for it
        if (pred_at is None) if gold_at is None else _same_date(gold_at, ge.valid_at_granularity, pred_at):
            valid_right += 1
        else:
            wrong.append(
                WrongDate(predicted=pe, gold=ge, field="validAt", granularity=ge.valid_at_granularity)
            )
        gold_at, pred_at = ge.invalid_at, pe.invalid_at
        if (pred_at is None) if gold_at is None else _same_date(gold_at, ge.invalid_at_granularity, pred_at):
            invalid_right += 1
        else:
            wrong.append(
                WrongDate(predicted=pe, gold=ge, field="invalidAt", granularity=ge.invalid_at_granularity)
            )
    return valid_right, invalid_right, wrong


def _judged_ends(v: _Views) -> tuple[set[tuple[str, str]], set[str]]:
    """Under `exhaustive: false`, the (source, type) pairs and the sources whose predictions count."""
    edge_counts: set[tuple[str, str]] = set()
    pair_counts: set[str] = set()
    for g, (s, t) in enumerate(zip(v.g_src, v.g_tgt, strict=True)):
        for end in (s, t) if v.g_sym[g] else (s,):
            pair_counts.add(end)
            for kind in v.g_types[g]:
                edge_counts.add((end, kind))
    return edge_counts, pair_counts


def _explain(v: _Views, matched: dict[int, int], matched_golds: set[int]) -> dict[int, tuple[bool, int]]:
    """Unmatched predictions that a missed gold edge explains: prediction -> (is reversed, gold).

    Inside each group, reversed edges are paired first, then mistyped ones. These are labels for the
    reader; the counts do not depend on them.
    """
    g_src, g_tgt, g_types, g_sym = v.g_src, v.g_tgt, v.g_types, v.g_sym
    p_src, p_kind = v.p_src, v.p_kind
    explained: dict[int, tuple[bool, int]] = {}
    for preds, gs in v.groups:
        if len(preds) == 1 and preds[0] in matched:
            continue
        free_golds = [g for g in gs if g not in matched_golds]
        if not free_golds:
            continue
        free_preds = [p for p in preds if p not in matched]
        for want_reversed in (True, False):
            for p in free_preds:
                if p in explained:
                    continue
                for g in free_golds:
                    if want_reversed:
                        hit = not g_sym[g] and p_kind[p] in g_types[g] and p_src[p] == g_tgt[g]
                    else:
                        hit = p_kind[p] not in g_types[g] and (g_sym[g] or p_src[p] == g_src[g])
                    if hit:
                        explained[p] = (want_reversed, g)
                        free_golds.remove(g)
                        break
    return explained


class _Mistakes(NamedTuple):
    """How an episode's unmatched edges went wrong, for the reader, and the false positives they count."""

    fp: int
    missed: tuple[MissedEdge, ...]
    spurious: tuple[SpuriousEdge, ...]
    reversed: tuple[ReversedEdge, ...]
    mistyped: tuple[MistypedEdge, ...]
    ignored: tuple[Edge, ...]


_NO_MISTAKES: Final[_Mistakes] = _Mistakes(0, (), (), (), (), ())


def _mistakes(
    v: _Views,
    golds: Sequence[GoldEdge],
    predicted: Sequence[Edge],
    matched: dict[int, int],
    edge_counts: set[tuple[str, str]] | None,
    per_type: dict[str, list[int]],
) -> _Mistakes:
    """Classify every unmatched prediction and gold edge, adding their FP and FN to `per_type`.

    `edge_counts` is None when every unmatched prediction counts (an exhaustive episode); otherwise a
    prediction counts only when its (source, type) is in it.
    """
    matched_golds = set(matched.values())
    explained = _explain(v, matched, matched_golds)
    p_src, p_tgt, p_kind, symmetric = v.p_src, v.p_tgt, v.p_kind, v.symmetric

    def pred_key(p: int) -> tuple[str, str, str]:
        """What makes two predictions the same edge: type and ends (unordered for a symmetric type)."""
        s, t, kind = p_src[p], p_tgt[p], p_kind[p]
        return (kind, t, s) if kind in symmetric and t < s else (kind, s, t)

    spurious: list[SpuriousEdge] = []
    reversed_: list[ReversedEdge] = []
    mistyped: list[MistypedEdge] = []
    ignored: list[Edge] = []
    explained_golds: set[int] = set()
    fp = 0
    seen_keys: set[tuple[str, str, str]] | None = None  # built on the first spurious prediction
    for p, pe in enumerate(predicted):
        if p in matched:
            continue
        counted = edge_counts is None or (p_src[p], p_kind[p]) in edge_counts
        if counted:
            fp += 1
            _count(per_type, p_kind[p], 1)
        how = explained.get(p)
        if how is not None:
            is_reversed, g = how
            explained_golds.add(g)
            if is_reversed:
                reversed_.append(ReversedEdge(predicted=pe, gold=golds[g], counted=counted))
            else:
                mistyped.append(MistypedEdge(predicted=pe, gold=golds[g], counted=counted))
        elif counted:
            if seen_keys is None:
                seen_keys = {pred_key(q) for q in matched}
            key = pred_key(p)
            spurious.append(SpuriousEdge(predicted=pe, duplicate=key in seen_keys))
            seen_keys.add(key)
        else:
            ignored.append(pe)

    missed: list[MissedEdge] = []
    g_kind = v.g_kind
    for g, ge in enumerate(golds):
        if g in matched_golds:
            continue
        _count(per_type, g_kind[g], 2)
        if g not in explained_golds:
            missed.append(MissedEdge(gold=ge))
    return _Mistakes(fp, tuple(missed), tuple(spurious), tuple(reversed_), tuple(mistyped), tuple(ignored))


_ALL_FIELDS: Final[frozenset[str]] = frozenset(EpisodeScore.model_fields)

_PERFECT_FIELDS: Final[frozenset[str]] = _ALL_FIELDS - set(_Mistakes._fields) - {"fn"}
"""The fields a perfect episode's score names, as it always has; the others hold their zero defaults."""

_set_attribute: Final = object.__setattr__


def _trusted_score(values: dict[str, Any], fields_set: frozenset[str]) -> EpisodeScore:
    """An EpisodeScore from values the metric computed itself, as `EpisodeScore.model_construct` makes it.

    Validating twenty counts, a per-type dict and six tuples of records would cost a third of scoring
    the episode, for values whose types hold by construction. `model_construct` itself walks every
    field's aliases; `values` here names every field, in declaration order, so that walk is skipped.
    """
    score = EpisodeScore.__new__(EpisodeScore)
    _set_attribute(score, "__dict__", values)
    _set_attribute(score, "__pydantic_fields_set__", set(fields_set))
    _set_attribute(score, "__pydantic_extra__", None)
    _set_attribute(score, "__pydantic_private__", None)
    return score


def score_episode(gold: LabeledEpisode, predicted: Sequence[Edge]) -> EpisodeScore:
    """Score one episode's predicted edges against its gold edges (see the module docstring's rules).

    A few index-based passes over `_Views`, with records built only for what went wrong: it runs once
    per example in every optimizer step, and benchmarks/metric_speed.py holds it (with `aggregate`) to
    100,000 predicted edges per CPU second.
    """
    golds = gold.edges
    n_gold = len(golds)
    n_pred = len(predicted)
    v = _views(gold, predicted)
    matched, pair_used = _match(v, golds, predicted)
    tp = len(matched)
    pair_tp = len(pair_used)
    per_type: dict[str, list[int]] = {}
    valid_right, invalid_right, wrong_dates = _judge_matches(matched, golds, predicted, v.g_kind, per_type)

    # Which unmatched predictions count, under the exhaustive: false rule (None: all of them).
    edge_counts, pair_counts = (None, None) if gold.exhaustive else _judged_ends(v)
    if pair_counts is None:
        pair_fp = n_pred - pair_tp
    else:
        p_src = v.p_src
        pair_fp = sum(1 for p in range(n_pred) if p not in pair_used and p_src[p] in pair_counts)

    perfect = tp == n_pred == n_gold  # the common case with nothing left to explain
    m = _NO_MISTAKES if perfect else _mistakes(v, golds, predicted, matched, edge_counts, per_type)
    return _trusted_score(
        {
            "episode_id": gold.id,
            "source": gold.source,
            "exhaustive": gold.exhaustive,
            "n_gold": n_gold,
            "n_predicted": n_pred,
            "tp": tp,
            "fp": m.fp,
            "fn": n_gold - tp,
            "pair_tp": pair_tp,
            "pair_fp": pair_fp,
            "pair_fn": n_gold - pair_tp,
            "valid_at_right": valid_right,
            "valid_at_total": tp,
            "invalid_at_right": invalid_right,
            "invalid_at_total": tp,
            "per_type": _type_counts(per_type),
            "missed": m.missed,
            "spurious": m.spurious,
            "reversed": m.reversed,
            "mistyped": m.mistyped,
            "wrong_dates": tuple(wrong_dates),
            "ignored": m.ignored,
        },
        _PERFECT_FIELDS if perfect else _ALL_FIELDS,
    )


# --------------------------------------------------------------------------------------------------
# Aggregation and confidence intervals
# --------------------------------------------------------------------------------------------------


def _accuracy(right: int, total: int) -> float | None:
    return right / total if total else None


class _Totals:
    """Running sums for one source, or for the split once the sources are merged.

    Counts live in slots updated in place: `aggregate` adds every episode once, so the per-episode
    cost is a handful of integer additions.
    """

    __slots__ = (
        "f1_sum",
        "fn",
        "fp",
        "invalid_right",
        "invalid_total",
        "n",
        "pair_f1_sum",
        "pair_fn",
        "pair_fp",
        "pair_tp",
        "per_type",
        "tp",
        "valid_right",
        "valid_total",
    )

    def __init__(self) -> None:
        self.n = self.tp = self.fp = self.fn = self.pair_tp = self.pair_fp = self.pair_fn = 0
        self.valid_right = self.valid_total = self.invalid_right = self.invalid_total = 0
        self.f1_sum = self.pair_f1_sum = 0.0
        self.per_type: dict[str, list[int]] = {}

    def add(self, s: EpisodeScore, f1: float, pair_f1: float) -> None:
        """Count one episode whose edge-F1 and pair-F1 the caller has already computed."""
        self.n += 1
        self.tp += s.tp
        self.fp += s.fp
        self.fn += s.fn
        self.pair_tp += s.pair_tp
        self.pair_fp += s.pair_fp
        self.pair_fn += s.pair_fn
        self.valid_right += s.valid_at_right
        self.valid_total += s.valid_at_total
        self.invalid_right += s.invalid_at_right
        self.invalid_total += s.invalid_at_total
        self.f1_sum += f1
        self.pair_f1_sum += pair_f1
        _merge_type_counts(self.per_type, s.per_type)

    def absorb(self, other: _Totals) -> None:
        """Add another source's counts; the F1 sums are left to the caller, who adds them in episode order."""
        self.n += other.n
        self.tp += other.tp
        self.fp += other.fp
        self.fn += other.fn
        self.pair_tp += other.pair_tp
        self.pair_fp += other.pair_fp
        self.pair_fn += other.pair_fn
        self.valid_right += other.valid_right
        self.valid_total += other.valid_total
        self.invalid_right += other.invalid_right
        self.invalid_total += other.invalid_total
        _merge_type_counts(self.per_type, other.per_type)

    def split(self, per_source: dict[str, SplitScore]) -> SplitScore:
        tp, fp, fn, n = self.tp, self.fp, self.fn, self.n
        ptp, pfp, pfn = self.pair_tp, self.pair_fp, self.pair_fn
        return SplitScore(
            episodes=n,
            tp=tp,
            fp=fp,
            fn=fn,
            precision=_ratio(tp, tp + fp),
            recall=_ratio(tp, tp + fn),
            edge_f1=_f1(tp, fp, fn),
            edge_f1_macro=self.f1_sum / n if n else 1.0,
            pair_tp=ptp,
            pair_fp=pfp,
            pair_fn=pfn,
            pair_precision=_ratio(ptp, ptp + pfp),
            pair_recall=_ratio(ptp, ptp + pfn),
            pair_f1=_f1(ptp, pfp, pfn),
            pair_f1_macro=self.pair_f1_sum / n if n else 1.0,
            valid_at_right=self.valid_right,
            valid_at_total=self.valid_total,
            valid_at_accuracy=_accuracy(self.valid_right, self.valid_total),
            invalid_at_right=self.invalid_right,
            invalid_at_total=self.invalid_total,
            invalid_at_accuracy=_accuracy(self.invalid_right, self.invalid_total),
            per_source=per_source,
            per_type={name: Counts(tp=c[0], fp=c[1], fn=c[2]) for name, c in sorted(self.per_type.items())},
        )


def _merge_type_counts(into: dict[str, list[int]], counts: dict[str, Sequence[int]]) -> None:
    for name, c in counts.items():
        slot = into.get(name)
        if slot is None:
            into[name] = [c[0], c[1], c[2]]
        else:
            slot[0] += c[0]
            slot[1] += c[1]
            slot[2] += c[2]


def aggregate(scores: Iterable[EpisodeScore]) -> SplitScore:
    """Micro and macro scores over a split, with per-source and per-relation-type breakdowns.

    Per type, true positives and false negatives are attributed to the gold edge's type and false
    positives to the predicted type, so a mistyped edge costs both types.

    One pass adds each episode to its source's totals; the split's counts are the sources' sums, and
    its F1 sums are added in episode order so that macro averages do not depend on the grouping.
    """
    by_source: dict[str, _Totals] = {}
    f1_sum = pair_f1_sum = 0.0
    for s in scores:
        tp, fp, fn = s.tp, s.fp, s.fn
        den = 2 * tp + fp + fn
        f1 = 2 * tp / den if den else 1.0
        tp, fp, fn = s.pair_tp, s.pair_fp, s.pair_fn
        den = 2 * tp + fp + fn
        pair_f1 = 2 * tp / den if den else 1.0
        f1_sum += f1
        pair_f1_sum += pair_f1
        source = by_source.get(s.source)
        if source is None:
            source = by_source[s.source] = _Totals()
        source.add(s, f1, pair_f1)
    total = _Totals()
    for source in by_source.values():
        total.absorb(source)
    total.f1_sum, total.pair_f1_sum = f1_sum, pair_f1_sum
    return total.split({name: t.split({}) for name, t in sorted(by_source.items())})


def _stat_columns(scores: Sequence[EpisodeScore], stat: Stat) -> tuple[list[tuple[float, ...]], Any]:
    """Per-episode numbers a statistic is built from, and how to build it from their sums."""
    if stat == "edge_f1_micro":
        return [(s.tp, s.fp, s.fn) for s in scores], lambda a, n: _f1(int(a[0]), int(a[1]), int(a[2]))
    if stat == "pair_f1_micro":
        rows = [(s.pair_tp, s.pair_fp, s.pair_fn) for s in scores]
        return rows, lambda a, n: _f1(int(a[0]), int(a[1]), int(a[2]))
    if stat == "edge_f1_macro":
        return [(s.f1,) for s in scores], lambda a, n: a[0] / n
    if stat == "pair_f1_macro":
        return [(s.pair_f1,) for s in scores], lambda a, n: a[0] / n
    if stat == "precision":
        return [(s.tp, s.fp) for s in scores], lambda a, n: _ratio(int(a[0]), int(a[0] + a[1]))
    if stat == "recall":
        return [(s.tp, s.fn) for s in scores], lambda a, n: _ratio(int(a[0]), int(a[0] + a[1]))
    if stat == "valid_at_accuracy":
        return [
            (s.valid_at_right, s.valid_at_total) for s in scores
        ], lambda a, n: a[0] / a[1] if a[1] else float("nan")
    if stat == "invalid_at_accuracy":
        return [
            (s.invalid_at_right, s.invalid_at_total) for s in scores
        ], lambda a, n: a[0] / a[1] if a[1] else float("nan")
    raise ValueError(f"bootstrap_ci: unknown stat {stat!r}; choose one of {', '.join(Stat.__args__)}")


def _percentile(sorted_values: list[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), q in [0, 1]."""
    pos = q * (len(sorted_values) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo)


def bootstrap_ci(
    scores: Sequence[EpisodeScore],
    n_resamples: int = 1000,
    seed: int = 0,
    stat: Stat = "edge_f1_micro",
) -> tuple[float, float]:
    """Percentile 95% interval of a split statistic, resampling whole episodes with replacement.

    Episodes, not edges, are resampled because edges of one episode share a text and fail together.
    Resamples where the statistic is undefined (no matched edge for a date accuracy) are skipped.
    """
    if not scores:
        raise ValueError("bootstrap_ci: no episode scores to resample")
    if n_resamples < 1:
        raise ValueError(f"bootstrap_ci: n_resamples must be at least 1, got {n_resamples}")
    rows, build = _stat_columns(scores, stat)
    n = len(rows)
    width = len(rows[0])
    rng = random.Random(seed)
    values: list[float] = []
    for _ in range(n_resamples):
        sums = [0.0] * width
        for i in rng.choices(range(n), k=n):
            row = rows[i]
            for k in range(width):
                sums[k] += row[k]
        value = build(sums, n)
        if not math.isnan(value):
            values.append(value)
    if not values:
        raise ValueError(f"bootstrap_ci: {stat} is undefined on these episodes (nothing to judge)")
    values.sort()
    tail = (1.0 - _CI_LEVEL) / 2
    return _percentile(values, tail), _percentile(values, 1.0 - tail)


# --------------------------------------------------------------------------------------------------
# Feedback and the optimizer metric
# --------------------------------------------------------------------------------------------------


def format_edge(edge: Edge) -> str:
    """`Alice -WORKS_AT-> Acme`: the notation the feedback uses for an edge."""
    return f"{edge.source_entity_name} -{edge.relationship_type}-> {edge.target_entity_name}"


def _fact(edge: Edge) -> str:
    return f' ("{edge.fact}")' if edge.fact else ""


def _limited(lines: list[str]) -> list[str]:
    if len(lines) <= _FEEDBACK_MAX_ITEMS:
        return lines
    return [*lines[:_FEEDBACK_MAX_ITEMS], f"... and {len(lines) - _FEEDBACK_MAX_ITEMS} more like these."]


def _wrong_date_line(w: WrongDate) -> str:
    gold_value = w.gold.valid_at if w.field == "validAt" else w.gold.invalid_at
    pred_value = w.predicted.valid_at if w.field == "validAt" else w.predicted.invalid_at
    if gold_value is None:
        expected = "null (the text gives no such date)"
    else:
        level = w.granularity or _UNSTATED_GRANULARITY
        expected = f"{format_date(gold_value, w.granularity)} (known to the {_LEVEL_WORD[level]})"
    got = "null" if pred_value is None else format_utc(pred_value)
    return f"Wrong {w.field}: {format_edge(w.predicted)} should have {expected}; you wrote {got}."


_LEVEL_WORD: Final[dict[str, str]] = {"year": "year", "month": "month", "day": "day", "instant": "second"}


def feedback_text(score: EpisodeScore) -> str:
    """Plain words on what an extraction got wrong, one line per mistake, for a reflecting optimizer."""
    lines = [
        (
            f"Edge-F1 {score.f1:.2f}: {score.tp} of {score.n_gold} gold edges found, "
            f"{score.fp} wrong edges counted."
        )
    ]
    if score.n_gold == 0 and score.n_predicted == 0:
        lines.append("Correct: the text states no relationship between the entities and you wrote none.")
    lines += _limited([f"Missed: {format_edge(m.gold)}{_fact(m.gold)}." for m in score.missed])
    lines += _limited(
        [
            f"Reversed: you wrote {format_edge(r.predicted)}, but the text says "
            f"{format_edge(r.gold)}{_fact(r.gold)}; source and target are swapped."
            for r in score.reversed
        ]
    )
    lines += _limited(
        [
            f"Mistyped: you wrote {format_edge(m.predicted)}, but the type should be "
            f"{_accepted(m.gold)}{_fact(m.gold)}."
            for m in score.mistyped
        ]
    )
    lines += _limited(
        [
            f"Duplicate: {format_edge(s.predicted)} was written more than once; only one copy counts."
            if s.duplicate
            else f"Spurious: {format_edge(s.predicted)}{_fact(s.predicted)} is not stated in the text "
            "as a relationship of that type."
            for s in score.spurious
        ]
    )
    lines += _limited([_wrong_date_line(w) for w in score.wrong_dates])
    if score.ignored:
        lines.append(
            f"Not judged: {len(score.ignored)} edge(s) outside what this example labels "
            "(it lists only some facts)."
        )
    if score.tp == score.n_gold and score.fp == 0 and not score.wrong_dates and score.n_gold:
        lines.append(f"All {score.n_gold} gold edges found with correct dates.")
    return "\n".join(lines)


def _accepted(gold: GoldEdge) -> str:
    if not gold.aliases:
        return gold.relationship_type
    return f"{gold.relationship_type} (or {', '.join(gold.aliases)})"


def _as_edges(raw: Any) -> list[Edge]:
    if isinstance(raw, list) and all(isinstance(e, Edge) for e in raw):
        return raw
    return [e if isinstance(e, Edge) else Edge.model_validate(e) for e in raw]


def edge_metric(
    example: Any,
    prediction: Any,
    trace: Any = None,
    pred_name: str | None = None,
    pred_trace: Any = None,
) -> dspy.Prediction:
    """DSPy metric: `Prediction(score=edge-F1 of the episode, feedback=plain-words mistakes)`.

    `example.labeled` holds the `LabeledEpisode`; `prediction.edges` the predicted edges. The score is
    plain edge-F1, the same for every `pred_name` (GEPA expects module-level scores). A prediction
    without edges scores 0 with feedback saying the program failed.

    `dspy.Evaluate` sums these Predictions as floats and GEPA reads `.score` and `.feedback`. A
    Prediction is always truthy, so `BootstrapFewShot` needs `metric_threshold` (e.g. 1.0) to reject
    imperfect traces.
    """
    labeled = example.get("labeled") if hasattr(example, "get") else getattr(example, "labeled", None)
    if labeled is None:
        raise ValueError("edge_metric: the example has no field 'labeled' holding the LabeledEpisode")
    if not isinstance(labeled, LabeledEpisode):
        labeled = LabeledEpisode.model_validate(labeled)
    raw_edges = None if prediction is None else getattr(prediction, "edges", None)
    if raw_edges is None:
        return dspy.Prediction(
            score=0.0,
            feedback=(
                "The program failed: it returned no edges list (an error or an unparseable reply). "
                f"The text has {len(labeled.edges)} gold edges."
            ),
        )
    try:
        edges = _as_edges(raw_edges)
    except (TypeError, ValueError) as err:
        return dspy.Prediction(
            score=0.0, feedback=f"The program failed: its edges do not have the Edge shape ({err})."
        )
    score = score_episode(labeled, edges)
    return dspy.Prediction(score=score.f1, feedback=feedback_text(score))
