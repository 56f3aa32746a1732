"""What the metric reports: per-episode scores with their error records, split scores, and the F1 of counts.

The records say why an edge missed (missed, spurious, reversed, mistyped, wrong date, wrong attribute);
the scores hold only counts, and every ratio is computed from them (`ratio`, `f1_of`) when read, so no
stored number can disagree with the counts it comes from.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal, NamedTuple

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    computed_field,
    model_serializer,
)

from edgewise.domain.gold import GoldEdge, Granularity
from edgewise.domain.types import Edge

DateField = Literal["validAt", "invalidAt"]
Count = Annotated[int, Field(default=0)]
"""A count field of a record: a whole number, 0 unless given (a record written before the count existed
reads as 0)."""


def ratio(num: int, den: int) -> float:
    """Precision or recall; with nothing to divide by it is vacuously perfect."""
    return num / den if den else 1.0


def f1_of(tp: int, fp: int, fn: int) -> float:
    """2TP / (2TP + FP + FN): the harmonic mean of precision and recall, 1.0 when all three are zero."""
    den = 2 * tp + fp + fn
    return 2 * tp / den if den else 1.0


def accuracy(right: int, total: int) -> float | None:
    """A date accuracy; None when there was nothing to judge."""
    return right / total if total else None


def _rate(hits: str, misses: str) -> Any:
    """A computed field `hits / (hits + misses)` over two count fields: a precision or a recall."""

    def value(self: BaseModel) -> float:
        found = getattr(self, hits)
        return ratio(found, found + getattr(self, misses))

    return computed_field(property(value), return_type=float)


def _f1(tp: str, fp: str, fn: str) -> Any:
    """A computed field: the F1 of three count fields."""

    def value(self: BaseModel) -> float:
        return f1_of(getattr(self, tp), getattr(self, fp), getattr(self, fn))

    return computed_field(property(value), return_type=float)


def _matched() -> Any:
    """A computed date total: every matched edge (`tp`) has both its dates judged."""

    def value(self: Any) -> int:
        return self.tp

    return computed_field(property(value), return_type=int)


def _accuracy(right: str, total: str = "tp") -> Any:
    """A computed accuracy: the count field `right` over `total` (a date's: the matched edges, `tp`)."""

    def value(self: Any) -> float | None:
        return accuracy(getattr(self, right), getattr(self, total))

    return computed_field(property(value), return_type=float | None)


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


class WrongAttribute(_Record):
    """A matched edge whose attribute `name` is not the gold value (`edgewise.eval.attributes`' rules)."""

    predicted: Edge
    gold: GoldEdge
    name: str


class TypeCounts(NamedTuple):
    """One relationship type's counts in one episode (TP, FN by gold type; FP by predicted type).

    A tuple, not a model: an episode carries one per type, and building models here would be most of
    the metric's cost.
    """

    tp: int
    fp: int
    fn: int


class _Rates(BaseModel):
    """Precision, recall and F1 of the `tp`, `fp` and `fn` counts a subclass declares, where it declares them."""

    precision = _rate("tp", "fp")
    recall = _rate("tp", "fn")
    f1 = _f1("tp", "fp", "fn")


class Counts(_Rates):
    """True positives, false positives and false negatives, with the ratios built from them."""

    tp: Count
    fp: Count
    fn: Count


class EpisodeScore(_Rates):
    """Everything the metric found in one episode: counts for the numbers, records for the reader.

    Invariants: `fp == len(spurious) + counted reversed + counted mistyped` and
    `fn == len(missed) + len(reversed) + len(mistyped)`. Every matched edge has both its dates judged,
    so `valid_at_total` and `invalid_at_total` are `tp`; the attribute counts are over the matched
    edges' labeled attribute slots (`edgewise.eval.attributes`), and
    `attribute_total == attribute_right + len(wrong_attributes)`. Records are tuples: a split holds thousands of
    scores, and empty tuples cost nothing to keep.
    """

    episode_id: str
    source: str
    exhaustive: bool = True
    n_gold: Count
    n_predicted: Count
    tp: Count
    fp: Count
    fn: Count
    pair_tp: Count
    pair_fp: Count
    pair_fn: Count
    valid_at_right: Count
    invalid_at_right: Count
    attribute_right: Count
    attribute_total: Count
    attribute_values: Count
    attribute_supported: Count
    attribute_gold_values: Count
    per_type: dict[str, TypeCounts] = Field(default_factory=dict)
    missed: tuple[MissedEdge, ...] = ()
    spurious: tuple[SpuriousEdge, ...] = ()
    reversed: tuple[ReversedEdge, ...] = ()
    mistyped: tuple[MistypedEdge, ...] = ()
    wrong_dates: tuple[WrongDate, ...] = ()
    wrong_attributes: tuple[WrongAttribute, ...] = ()
    ignored: tuple[Edge, ...] = ()

    pair_f1 = _f1("pair_tp", "pair_fp", "pair_fn")
    valid_at_total = _matched()
    invalid_at_total = _matched()


_SPLIT_JSON_ORDER: Final[tuple[str, ...]] = (
    "episodes",
    "tp",
    "fp",
    "fn",
    "precision",
    "recall",
    "edge_f1",
    "edge_f1_macro",
    "pair_tp",
    "pair_fp",
    "pair_fn",
    "pair_precision",
    "pair_recall",
    "pair_f1",
    "pair_f1_macro",
    "valid_at_right",
    "valid_at_total",
    "valid_at_accuracy",
    "invalid_at_right",
    "invalid_at_total",
    "invalid_at_accuracy",
    "attribute_right",
    "attribute_total",
    "attribute_accuracy",
    "attribute_values",
    "attribute_supported",
    "attribute_precision",
    "attribute_gold_values",
    "attribute_recall",
    "per_source",
    "per_type",
)
"""The keys of a split score in results.json, in their order there: each ratio beside its counts."""


class SplitScore(BaseModel):
    """Scores of a set of episodes: micro (summed counts) and macro (mean of episode F1) averages.

    Only counts and the macro means are stored; precision, recall, F1 and the date accuracies are
    computed from the counts, and written to JSON beside them in the order results.json has always
    had. Date accuracies are None when no matched edge was there to judge, attribute accuracy when no
    matched edge labels an attribute, attribute precision when the program wrote no value there, and
    attribute recall when no gold value was to be found (the rules: `edgewise.eval.attributes`).
    """

    episodes: int
    tp: int
    fp: int
    fn: int
    edge_f1_macro: float
    pair_tp: int
    pair_fp: int
    pair_fn: int
    pair_f1_macro: float
    valid_at_right: int
    invalid_at_right: int
    attribute_right: Count
    attribute_total: Count
    attribute_values: Count
    attribute_supported: Count
    attribute_gold_values: Count
    per_source: dict[str, SplitScore] = Field(default_factory=dict)
    per_type: dict[str, Counts] = Field(default_factory=dict)

    precision = _rate("tp", "fp")
    recall = _rate("tp", "fn")
    edge_f1 = _f1("tp", "fp", "fn")
    pair_precision = _rate("pair_tp", "pair_fp")
    pair_recall = _rate("pair_tp", "pair_fn")
    pair_f1 = _f1("pair_tp", "pair_fp", "pair_fn")
    valid_at_total = _matched()
    valid_at_accuracy = _accuracy("valid_at_right")
    invalid_at_total = _matched()
    invalid_at_accuracy = _accuracy("invalid_at_right")
    attribute_accuracy = _accuracy("attribute_right", "attribute_total")
    attribute_precision = _accuracy("attribute_supported", "attribute_values")
    attribute_recall = _accuracy("attribute_supported", "attribute_gold_values")

    @model_serializer(mode="wrap")
    def _in_results_order(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = without_unjudged_attributes(handler(self))
        ordered = {key: data[key] for key in _SPLIT_JSON_ORDER if key in data}
        ordered.update(data)  # a key not listed keeps its place after the listed ones
        return ordered


ATTRIBUTE_KEY_PREFIX: Final = "attribute_"


def without_unjudged_attributes(data: dict[str, Any]) -> dict[str, Any]:
    """A record's JSON without its attribute counts where no attribute was judged or written.

    A run on episodes that label no attribute writes results.json as it did before attributes were
    scored; reading it back gives the counts their default, 0.
    """
    if data.get("attribute_total") or data.get("attribute_values") or data.get("attribute_gold_values"):
        return data
    return {key: value for key, value in data.items() if not key.startswith(ATTRIBUTE_KEY_PREFIX)}
