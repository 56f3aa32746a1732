"""Paired comparison: is program B better than program A on the same episodes, beyond noise?

Two programs scored on the same episodes share each episode's difficulty, so their difference has a
much narrower interval than two independent intervals suggest. The interval here resamples whole
episodes (both programs' scores of an episode together) and recomputes the statistic of each
program on the resample; its difference is what is reported. A difference whose 95% interval
contains 0 is no difference.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from edgewise.domain.errors import UsageError
from edgewise.eval.intervals import DEFAULT_RESAMPLES, Stat, UndefinedStatistic, bootstrap, stat_columns
from edgewise.eval.records import EpisodeScore


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
    `EpisodeScore` or anything with its counts and an `id` (a bench's `EpisodeRun`). The resampling is
    `edgewise.eval.intervals.bootstrap`, the one `bootstrap_ci` uses, with both programs' columns
    resampled together. Resamples where the statistic is undefined for either program (no matched
    edge for a date accuracy) are skipped.
    """
    if len(baseline) != len(candidate):
        raise UsageError(
            f"paired_difference: {len(baseline)} baseline scores but {len(candidate)} candidate scores"
        )
    if not baseline:
        raise UsageError("paired_difference: no episode scores to compare")
    pairs = enumerate(zip(baseline, candidate, strict=True))
    mismatched = [i for i, (a, b) in pairs if _episode_id(a) != _episode_id(b)]
    if mismatched:
        i = mismatched[0]
        raise UsageError(
            f"paired_difference: position {i} scores {_episode_id(baseline[i])!r} and {_episode_id(candidate[i])!r}"
        )
    rows_a, build = stat_columns(baseline, stat)
    rows_b, _ = stat_columns(candidate, stat)
    n = len(baseline)
    # Summed by numpy like each resample, so that a macro average is the same float in both.
    totals = [tuple(np.asarray(rows, dtype=float).sum(axis=0)) for rows in (rows_a, rows_b)]
    observed = build(totals[1], n) - build(totals[0], n)
    interval = bootstrap(
        [rows_a, rows_b],
        lambda sums: build(sums[1], n) - build(sums[0], n),
        n_resamples=n_resamples,
        seed=seed,
    )
    if interval is None:
        raise UndefinedStatistic(
            f"paired_difference: {stat} is undefined on these episodes (nothing to judge)"
        )
    return PairedDifference(float(observed), *interval, n)


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
