# Over 400 lines: the metric's matching rules depend on each other and are read together.
"""Edge-F1: how many of an episode's gold edges a prediction found, one-to-one, and why it missed the rest.

A predicted edge matches a gold edge when both ends name the same entities in the same direction (either
direction when the gold type is symmetric) and its type is the gold type or one of the gold's aliases;
each gold edge and each predicted edge is used at most once, and the matching is a maximum one
(`edgewise.eval.matching`). `score_episode` scores one episode into an `EpisodeScore` with its error
records; `aggregate` sums a split into a `SplitScore`.

Rules that a reader of a score needs to know:

- Names compare after casefolding, removing diacritics and collapsing whitespace; types compare after
  trimming and upper-casing. A type is symmetric when the episode's `edge_types` says so for the gold
  edge's type.
- pair-F1 is computed the same way with the type ignored (its own maximum matching); direction still
  counts unless the gold type is symmetric.
- validAt / invalidAt accuracy is measured over the edges matched for edge-F1, at the gold date's
  granularity (year, month, day, or the second for `instant`); a null gold date is right only when the
  prediction is null too. A gold date without a granularity is compared to the second.
- Attribute accuracy, precision and recall are measured over the attributes the matched gold edges
  label, by `edgewise.eval.attributes` (a null gold value is right only for a null prediction).
- Among maximum matchings, the one that agrees on the most dates is taken, then the one that uses
  earlier predictions, so a repeated prediction is the copy left over (a false positive).
- In an episode with `exhaustive: false`, an unmatched prediction counts as a false positive only when
  it shares its source entity and its type (or an alias) with some gold edge (either end for a
  symmetric gold type); otherwise it is listed in `ignored` and not counted. For pair-F1 the source
  entity alone decides.
- An episode with no gold edges and no predictions has F1 1.0 (nothing to find, nothing invented).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from itertools import starmap
from typing import Any, Final, NamedTuple

from edgewise.domain.gold import GoldEdge, LabeledEpisode
from edgewise.domain.types import Edge
from edgewise.eval import records
from edgewise.eval.attributes import judge_attributes
from edgewise.eval.dates import same_date
from edgewise.eval.matching import EpisodeViews, episode_views, match_edges
from edgewise.eval.records import Counts, EpisodeScore, SplitScore, TypeCounts, f1_of


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


class _Judged(NamedTuple):
    """What the matches' dates and attributes came to: right counts, attribute counts, and the records."""

    valid_right: int
    invalid_right: int
    attributes: tuple[int, int, int, int, int]
    wrong_dates: tuple[records.WrongDate, ...]
    wrong_attributes: tuple[records.WrongAttribute, ...]


def _judge_matches(
    matched: dict[int, int],
    golds: Sequence[GoldEdge],
    predicted: Sequence[Edge],
    g_kind: list[str],
    per_type: dict[str, list[int]],
) -> _Judged:
    """Count each match as a TP of its gold type and judge its dates and attributes, in one pass.

    Attributes are judged only on a gold edge that labels some (`edgewise.eval.attributes`), so an
    episode without labeled attributes pays one empty-dict test per match.
    """
    wrong: list[records.WrongDate] = []
    wrong_attributes: list[records.WrongAttribute] = []
    valid_right = invalid_right = 0
    a_right = a_total = a_values = a_supported = a_gold = 0
    for p, g in matched.items():
        _count(per_type, g_kind[g], 0)
        pe, ge = predicted[p], golds[g]
        gold_at, pred_at = ge.valid_at, pe.valid_at  # null-null is the common case: no call for it
        if (pred_at is None) if gold_at is None else same_date(gold_at, ge.valid_at_granularity, pred_at):
            valid_right += 1
        else:
            wrong.append(
                records.WrongDate(predicted=pe, gold=ge, field="validAt", granularity=ge.valid_at_granularity)
            )
        gold_at, pred_at = ge.invalid_at, pe.invalid_at
        if (pred_at is None) if gold_at is None else same_date(gold_at, ge.invalid_at_granularity, pred_at):
            invalid_right += 1
        else:
            wrong.append(
                records.WrongDate(
                    predicted=pe, gold=ge, field="invalidAt", granularity=ge.invalid_at_granularity
                )
            )
        if ge.attributes:
            judged = judge_attributes(pe, ge)
            a_right += judged.right
            a_total += judged.total
            a_values += judged.values
            a_supported += judged.supported
            a_gold += judged.gold_values
            wrong_attributes.extend(
                records.WrongAttribute(predicted=pe, gold=ge, name=name) for name in judged.wrong
            )
    return _Judged(
        valid_right,
        invalid_right,
        (a_right, a_total, a_values, a_supported, a_gold),
        tuple(wrong),
        tuple(wrong_attributes),
    )


def _judged_ends(v: EpisodeViews) -> tuple[set[tuple[str, str]], set[str]]:
    """Under `exhaustive: false`, the (source, type) pairs and the sources whose predictions count."""
    edge_counts: set[tuple[str, str]] = set()
    pair_counts: set[str] = set()
    for g, (s, t) in enumerate(zip(v.g_src, v.g_tgt, strict=True)):
        for end in (s, t) if v.g_sym[g] else (s,):
            pair_counts.add(end)
            for kind in v.g_types[g]:
                edge_counts.add((end, kind))
    return edge_counts, pair_counts


def _explain(
    v: EpisodeViews, matched: dict[int, int], matched_golds: set[int]
) -> dict[int, tuple[bool, int]]:
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
    missed: tuple[records.MissedEdge, ...]
    spurious: tuple[records.SpuriousEdge, ...]
    reversed: tuple[records.ReversedEdge, ...]
    mistyped: tuple[records.MistypedEdge, ...]
    ignored: tuple[Edge, ...]


_NO_MISTAKES: Final[_Mistakes] = _Mistakes(0, (), (), (), (), ())


def _mistakes(
    v: EpisodeViews,
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

    spurious: list[records.SpuriousEdge] = []
    reversed_: list[records.ReversedEdge] = []
    mistyped: list[records.MistypedEdge] = []
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
                reversed_.append(records.ReversedEdge(predicted=pe, gold=golds[g], counted=counted))
            else:
                mistyped.append(records.MistypedEdge(predicted=pe, gold=golds[g], counted=counted))
        elif counted:
            if seen_keys is None:
                seen_keys = {pred_key(q) for q in matched}
            key = pred_key(p)
            spurious.append(records.SpuriousEdge(predicted=pe, duplicate=key in seen_keys))
            seen_keys.add(key)
        else:
            ignored.append(pe)

    missed: list[records.MissedEdge] = []
    g_kind = v.g_kind
    for g, ge in enumerate(golds):
        if g in matched_golds:
            continue
        _count(per_type, g_kind[g], 2)
        if g not in explained_golds:
            missed.append(records.MissedEdge(gold=ge))
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

    A few index-based passes over `EpisodeViews`, with records built only for what went wrong: it runs once
    per example in every optimizer step, and benchmarks/metric_speed.py holds it (with `aggregate`) to
    100,000 predicted edges per CPU second.
    """
    golds = gold.edges
    n_gold = len(golds)
    n_pred = len(predicted)
    v = episode_views(gold, predicted)
    matched, pair_used = match_edges(v, golds, predicted)
    tp = len(matched)
    pair_tp = len(pair_used)
    per_type: dict[str, list[int]] = {}
    judged = _judge_matches(matched, golds, predicted, v.g_kind, per_type)
    a_right, a_total, a_values, a_supported, a_gold = judged.attributes

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
            "valid_at_right": judged.valid_right,
            "invalid_at_right": judged.invalid_right,
            "attribute_right": a_right,
            "attribute_total": a_total,
            "attribute_values": a_values,
            "attribute_supported": a_supported,
            "attribute_gold_values": a_gold,
            "per_type": _type_counts(per_type),
            "missed": m.missed,
            "spurious": m.spurious,
            "reversed": m.reversed,
            "mistyped": m.mistyped,
            "wrong_dates": judged.wrong_dates,
            "wrong_attributes": judged.wrong_attributes,
            "ignored": m.ignored,
        },
        _PERFECT_FIELDS if perfect else _ALL_FIELDS,
    )


# --------------------------------------------------------------------------------------------------
# Aggregation
# --------------------------------------------------------------------------------------------------


_SUMMED: Final = (
    "tp",
    "fp",
    "fn",
    "pair_tp",
    "pair_fp",
    "pair_fn",
    "valid_at_right",
    "invalid_at_right",
    "attribute_right",
    "attribute_total",
    "attribute_values",
    "attribute_supported",
    "attribute_gold_values",
)
"""The counts `_Totals` sums, under the names `EpisodeScore` and `SplitScore` give them."""


class _Totals:
    """Running sums for one source, or for the split once the sources are merged.

    Counts live in slots updated in place: `aggregate` adds every episode once, so the per-episode
    cost is a handful of integer additions (written out in `add`, not looped over `_SUMMED`). The
    slots carry `EpisodeScore`'s names, so that a source's totals add into the split's the way an
    episode's counts add into a source's.
    """

    __slots__ = ("f1_sum", "n", "pair_f1_sum", "per_type", *_SUMMED)

    def __init__(self) -> None:
        self.n = self.tp = self.fp = self.fn = self.pair_tp = self.pair_fp = self.pair_fn = 0
        self.valid_at_right = self.invalid_at_right = 0
        self.attribute_right = self.attribute_total = self.attribute_values = 0
        self.attribute_supported = self.attribute_gold_values = 0
        self.f1_sum = self.pair_f1_sum = 0.0
        self.per_type: dict[str, list[int]] = {}

    def add(self, counts: EpisodeScore | _Totals, episodes: int = 1) -> None:
        """Add the counts of one episode, or of `episodes` episodes summed; F1 sums are the caller's."""
        self.n += episodes
        self.tp += counts.tp
        self.fp += counts.fp
        self.fn += counts.fn
        self.pair_tp += counts.pair_tp
        self.pair_fp += counts.pair_fp
        self.pair_fn += counts.pair_fn
        self.valid_at_right += counts.valid_at_right
        self.invalid_at_right += counts.invalid_at_right
        self.attribute_right += counts.attribute_right
        self.attribute_total += counts.attribute_total
        self.attribute_values += counts.attribute_values
        self.attribute_supported += counts.attribute_supported
        self.attribute_gold_values += counts.attribute_gold_values
        _merge_type_counts(self.per_type, counts.per_type)

    def split(self, per_source: dict[str, SplitScore]) -> SplitScore:
        n = self.n
        return SplitScore(
            episodes=n,
            **{name: getattr(self, name) for name in _SUMMED},
            edge_f1_macro=self.f1_sum / n if n else 1.0,
            pair_f1_macro=self.pair_f1_sum / n if n else 1.0,
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
        f1 = f1_of(s.tp, s.fp, s.fn)
        pair_f1 = f1_of(s.pair_tp, s.pair_fp, s.pair_fn)
        f1_sum += f1
        pair_f1_sum += pair_f1
        source = by_source.get(s.source)
        if source is None:
            source = by_source[s.source] = _Totals()
        source.add(s)
        source.f1_sum += f1
        source.pair_f1_sum += pair_f1
    total = _Totals()
    for source in by_source.values():
        total.add(source, episodes=source.n)
    total.f1_sum, total.pair_f1_sum = f1_sum, pair_f1_sum
    return total.split({name: t.split({}) for name, t in sorted(by_source.items())})
