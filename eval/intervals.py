"""Confidence intervals: the one percentile bootstrap over whole episodes, and a split statistic's interval.

Episodes, not edges, are resampled because edges of one episode share a text and fail together. Each
statistic is built from per-episode columns (`stat_columns`), so a resample costs one sum per column.
`bootstrap` is the only resampling routine: `bootstrap_ci` gives one program's interval with it, and
`edgewise.eval.paired` resamples two programs' columns together with it (the bench's comparisons and
the optimizer's dev selection), all with `DEFAULT_RESAMPLES` unless told otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, Literal

import numpy as np

from edgewise.domain.errors import EdgewiseError, UsageError
from edgewise.eval.records import EpisodeScore, f1_of, ratio

Stat = Literal[
    "edge_f1_micro",
    "edge_f1_macro",
    "pair_f1_micro",
    "pair_f1_macro",
    "precision",
    "recall",
    "valid_at_accuracy",
    "invalid_at_accuracy",
    "attribute_accuracy",
    "attribute_precision",
]

CI_LEVEL: Final[float] = 0.95
"""The coverage of every interval edgewise reports (and of the manifest's paired selection record)."""


class UndefinedStatistic(EdgewiseError, ValueError):
    """The statistic has no value on these episodes: nothing to judge it on (no matched edge for a date
    accuracy, no attribute for an attribute accuracy). A `ValueError` too, which the callers that leave
    such a statistic out (dev selection, the bench's comparisons) catch."""


DEFAULT_RESAMPLES: Final[int] = 2000
"""Resamples behind every interval unless a caller asks for another count: the bench's split
intervals and paired differences, and the optimizer's paired dev selection. A selection is a yes/no on
the interval's lower end, a 2.5% quantile, which takes more resamples to settle than its width does."""


def stat_columns(scores: Sequence[EpisodeScore], stat: Stat) -> tuple[list[tuple[float, ...]], Any]:
    """Per-episode numbers a statistic is built from, and how to build it from their sums.

    A date accuracy divides by `tp`: every matched edge has both its dates judged; an attribute
    accuracy by the matched edges' labeled attributes, an attribute precision by the values written
    there (`edgewise.eval.attributes`). Undefined (no such slot) is nan.
    """
    if stat == "edge_f1_micro":
        return [(s.tp, s.fp, s.fn) for s in scores], lambda a, n: f1_of(int(a[0]), int(a[1]), int(a[2]))
    if stat == "pair_f1_micro":
        rows = [(s.pair_tp, s.pair_fp, s.pair_fn) for s in scores]
        return rows, lambda a, n: f1_of(int(a[0]), int(a[1]), int(a[2]))
    if stat == "edge_f1_macro":
        return [(s.f1,) for s in scores], lambda a, n: a[0] / n
    if stat == "pair_f1_macro":
        return [(s.pair_f1,) for s in scores], lambda a, n: a[0] / n
    if stat == "precision":
        return [(s.tp, s.fp) for s in scores], lambda a, n: ratio(int(a[0]), int(a[0] + a[1]))
    if stat == "recall":
        return [(s.tp, s.fn) for s in scores], lambda a, n: ratio(int(a[0]), int(a[0] + a[1]))
    if stat == "valid_at_accuracy":
        return [(s.valid_at_right, s.tp) for s in scores], lambda a, n: a[0] / a[1] if a[1] else float("nan")
    if stat == "invalid_at_accuracy":
        return [
            (s.invalid_at_right, s.tp) for s in scores
        ], lambda a, n: a[0] / a[1] if a[1] else float("nan")
    if stat == "attribute_accuracy":
        rows = [(s.attribute_right, s.attribute_total) for s in scores]
        return rows, lambda a, n: a[0] / a[1] if a[1] else float("nan")
    if stat == "attribute_precision":
        rows = [(s.attribute_supported, s.attribute_values) for s in scores]
        return rows, lambda a, n: a[0] / a[1] if a[1] else float("nan")
    raise UsageError(f"bootstrap_ci: unknown stat {stat!r}; choose one of {', '.join(Stat.__args__)}")


def stat_value(scores: Sequence[EpisodeScore], stat: Stat) -> float:
    """The statistic on these episodes (nan where it is undefined, e.g. a date accuracy with no match)."""
    rows, build = stat_columns(scores, stat)
    return float(build(tuple(sum(column) for column in zip(*rows, strict=True)), len(rows)))


def bootstrap(
    tables: Sequence[Sequence[tuple[float, ...]]],
    statistic: Callable[[list[tuple[float, ...]]], float],
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> tuple[float, float] | None:
    """The percentile 95% interval of `statistic` over resamples of whole episodes; None if never defined.

    The one resampling routine of edgewise: a split's interval (`bootstrap_ci`), the paired difference
    of two programs (`edgewise.eval.paired`) and through it the optimizer's selection all draw here, so
    that one seed gives every caller the same resamples. `tables` holds one program's per-episode
    columns each (`stat_columns`), all of the same episodes in the same order; a resample picks
    episode positions once and sums every table's columns over them, so two programs are always
    resampled together. `statistic` turns those column sums (one tuple per table) into the resample's
    value; a NaN (no matched edge for a date accuracy) is left out rather than spoiling the interval.
    numpy draws all resamples' positions at once, so the Python work per resample is one call of
    `statistic`.
    """
    if n_resamples < 1:
        raise UsageError(f"bootstrap: n_resamples must be at least 1, got {n_resamples}")
    arrays = [np.asarray(table, dtype=float) for table in tables]
    n = len(arrays[0])
    picks = np.random.default_rng(seed).integers(0, n, size=(n_resamples, n))
    sums = [array[picks].sum(axis=1) for array in arrays]
    values = np.array([statistic([tuple(table[i]) for table in sums]) for i in range(n_resamples)])
    values = values[~np.isnan(values)]
    if values.size == 0:
        return None
    tail = (1.0 - CI_LEVEL) / 2
    low, high = np.quantile(values, [tail, 1.0 - tail])
    return float(low), float(high)


def bootstrap_ci(
    scores: Sequence[EpisodeScore],
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    stat: Stat = "edge_f1_micro",
) -> tuple[float, float]:
    """Percentile 95% interval of a split statistic, resampling whole episodes with replacement.

    Episodes, not edges, are resampled because edges of one episode share a text and fail together.
    Resamples where the statistic is undefined (no matched edge for a date accuracy) are skipped.
    Written on `bootstrap` rather than `scipy.stats.bootstrap`, where one resample with an undefined
    statistic makes the whole interval NaN instead of being left out.
    """
    if not scores:
        raise UsageError("bootstrap_ci: no episode scores to resample")
    if n_resamples < 1:
        raise UsageError(f"bootstrap_ci: n_resamples must be at least 1, got {n_resamples}")
    rows, build = stat_columns(scores, stat)
    n = len(rows)
    interval = bootstrap([rows], lambda sums: build(sums[0], n), n_resamples=n_resamples, seed=seed)
    if interval is None:
        raise UndefinedStatistic(f"bootstrap_ci: {stat} is undefined on these episodes (nothing to judge)")
    return interval
