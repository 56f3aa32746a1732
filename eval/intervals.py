"""Confidence intervals of a split statistic: a percentile bootstrap over whole episodes.

Episodes, not edges, are resampled because edges of one episode share a text and fail together. Each
statistic is built from per-episode columns (`stat_columns`), so a resample costs one sum per column;
`edgewise.eval.paired` resamples the same columns for two programs at once.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import Any, Final, Literal

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
]

_CI_LEVEL: Final[float] = 0.95


def stat_columns(scores: Sequence[EpisodeScore], stat: Stat) -> tuple[list[tuple[float, ...]], Any]:
    """Per-episode numbers a statistic is built from, and how to build it from their sums.

    A date accuracy divides by `tp`: every matched edge has both its dates judged.
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
    raise ValueError(f"bootstrap_ci: unknown stat {stat!r}; choose one of {', '.join(Stat.__args__)}")


def stat_value(scores: Sequence[EpisodeScore], stat: Stat) -> float:
    """The statistic on these episodes (nan where it is undefined, e.g. a date accuracy with no match)."""
    rows, build = stat_columns(scores, stat)
    return float(build(tuple(sum(column) for column in zip(*rows, strict=True)), len(rows)))


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

    Written here rather than with `scipy.stats.bootstrap`, which is faster (7.8 against 95.8 ms CPU
    for 306 episodes and 1,000 resamples of edge-F1, medians of 5) but draws its resamples from
    numpy's generator: every interval a bench has reported would move within Monte Carlo noise
    (0.6546-0.6920 became 0.6516-0.6923 on the same scores), and a resample where the statistic is
    undefined makes its whole interval NaN instead of being left out.
    """
    if not scores:
        raise ValueError("bootstrap_ci: no episode scores to resample")
    if n_resamples < 1:
        raise ValueError(f"bootstrap_ci: n_resamples must be at least 1, got {n_resamples}")
    rows, build = stat_columns(scores, stat)
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
