"""Paired comparison: is program B better than program A on the same episodes, beyond noise?

Two programs scored on the same episodes share each episode's difficulty, so their difference has a
much narrower interval than two independent intervals suggest. The interval here resamples whole
episodes (both programs' scores of an episode together) and recomputes the statistic of each
program on the resample; its difference is what is reported. A difference whose 95% interval
contains 0 is no difference.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, NamedTuple

import numpy as np

from edgewise.eval.intervals import Stat, stat_columns
from edgewise.eval.records import EpisodeScore

DEFAULT_RESAMPLES: Final = 2000
_CI_LEVEL: Final = 0.95


class PairedDifference(NamedTuple):
    """`candidate - baseline` of one statistic on the same episodes, with its paired 95% interval."""

    difference: float
    low: float
    high: float
    episodes: int

    @property
    def significant(self) -> bool:
        """True when the whole interval lies on one side of 0."""
        return self.low > 0 or self.high < 0

    @property
    def better(self) -> bool:
        """True when the candidate is better beyond noise (the interval is above 0)."""
        return self.low > 0

    def text(self) -> str:
        """`+0.081 [+0.011, +0.150]`."""
        return f"{self.difference:+.3f} [{self.low:+.3f}, {self.high:+.3f}]"


def _episode_id(item: Any) -> str:
    return str(getattr(item, "episode_id", None) or item.id)


def paired_difference(
    baseline: Sequence[EpisodeScore],
    candidate: Sequence[EpisodeScore],
    *,
    stat: Stat = "edge_f1_micro",
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> PairedDifference:
    """`stat(candidate) - stat(baseline)` and its percentile 95% interval over paired episode resamples.

    The two lists must score the same episodes in the same order (checked by id); an item is an
    `EpisodeScore` or anything with its counts and an `id` (a bench's `EpisodeRun`). numpy draws the
    resampled indices for all resamples at once; each resample's statistic is built from column
    sums exactly as `bootstrap_ci` builds one program's. Resamples where the statistic is undefined
    for either program (no matched edge for a date accuracy) are skipped.
    """
    if len(baseline) != len(candidate):
        raise ValueError(
            f"paired_difference: {len(baseline)} baseline scores but {len(candidate)} candidate scores"
        )
    if not baseline:
        raise ValueError("paired_difference: no episode scores to compare")
    pairs = enumerate(zip(baseline, candidate, strict=True))
    mismatched = [i for i, (a, b) in pairs if _episode_id(a) != _episode_id(b)]
    if mismatched:
        i = mismatched[0]
        raise ValueError(
            f"paired_difference: position {i} scores {_episode_id(baseline[i])!r} and {_episode_id(candidate[i])!r}"
        )
    rows_a = np.asarray(stat_columns(baseline, stat)[0], dtype=float)
    rows_b = np.asarray(stat_columns(candidate, stat)[0], dtype=float)
    n = len(baseline)
    _, build = stat_columns([], stat)
    observed = build(tuple(rows_b.sum(axis=0)), n) - build(tuple(rows_a.sum(axis=0)), n)
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, n, size=(n_resamples, n))
    sums_a = rows_a[picks].sum(axis=1)
    sums_b = rows_b[picks].sum(axis=1)
    values = np.array([build(tuple(b), n) - build(tuple(a), n) for a, b in zip(sums_a, sums_b, strict=True)])
    values = values[~np.isnan(values)]
    if values.size == 0:
        raise ValueError(f"paired_difference: {stat} is undefined on these episodes (nothing to judge)")
    tail = (1.0 - _CI_LEVEL) / 2
    low, high = np.quantile(values, [tail, 1.0 - tail])
    return PairedDifference(float(observed), float(low), float(high), n)


def paired_on_shared(
    baseline: Sequence[Any], candidate: Sequence[Any], **options: Any
) -> PairedDifference | None:
    """`paired_difference` on the episodes both lists scored (in the baseline's order); None if none.

    A bench stopped early may have finished different episodes for two programs; only the ones both
    finished can be paired.
    """
    by_id = {_episode_id(item): item for item in candidate}
    shared = [item for item in baseline if _episode_id(item) in by_id]
    if not shared:
        return None
    return paired_difference(shared, [by_id[_episode_id(item)] for item in shared], **options)
