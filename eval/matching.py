"""One-to-one matching of predicted edges to gold edges, and of the entity pairs for pair-F1.

Edges match only inside their unordered entity pair, so the edges of an episode are grouped by pair
once (`episode_views`) and each group is matched on its own (`match_edges`). Most groups hold one
gold edge and one prediction and are settled inline; a group with one gold edge needs no matrix;
only a group where gold edges are contested and dates can break the tie goes to the assignment
solver (`_max_weight_assignment`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache, partial
from typing import NamedTuple

from edgewise.domain.gold import GoldEdge, LabeledEpisode
from edgewise.domain.names import normalize_name
from edgewise.domain.types import Edge
from edgewise.eval.dates import same_date


@lru_cache(maxsize=4096)
def normalize_type(name: str) -> str:
    """Relationship types are SCREAMING_SNAKE_CASE; a stray space or lower case is not a new type."""
    return name.strip().upper()


def _max_weight_assignment(weights: list[list[int]]) -> list[int]:
    """Rows to columns maximizing total weight (0 = not allowed); returns the column per row or -1.

    The Hungarian method (shortest augmenting paths with potentials) on a dense matrix: the groups it
    sees hold the edges between one pair of entities, so a few rows and columns at most.

    Written here rather than taken from `scipy.optimize.linear_sum_assignment`: scipy is faster per
    matrix, but the metric meets few such matrices, so the time it would save is a small share of a
    run, and scipy breaks ties between equally good matchings otherwise, which changes some episodes'
    scores. The weights leave the choice among equal gold edges open, so the choice this solver makes
    is the metric's. The comparison's figures are in docs/results.md ("The metric and the bench
    themselves").
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
    return same_date(ge.valid_at, ge.valid_at_granularity, pe.valid_at) + same_date(
        ge.invalid_at, ge.invalid_at_granularity, pe.invalid_at
    )


@lru_cache(maxsize=4096)
def _accepted_types(kind: str, aliases: tuple[str, ...]) -> frozenset[str]:
    return frozenset([kind, *map(normalize_type, aliases)])


class EpisodeViews(NamedTuple):
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


def episode_views(gold: LabeledEpisode, predicted: Sequence[Edge]) -> EpisodeViews:
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
    return EpisodeViews(g_src, g_tgt, g_kind, g_types, g_sym, p_src, p_tgt, p_kind, groups, symmetric)


def match_edges(
    v: EpisodeViews, golds: Sequence[GoldEdge], predicted: Sequence[Edge]
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
    v: EpisodeViews, preds: list[int], g: int, golds: Sequence[GoldEdge], predicted: Sequence[Edge]
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
