"""What a `--budget` of LM calls buys: the dev sample, MIPROv2's trials, GEPA's metric calls.

The cap itself is `edgewise.optimize.metering.CallMeter`; the sizes here plan each search to end by
itself within it, instead of being cut off before its first full dev score.
"""

from __future__ import annotations

from typing import Final

from edgewise.optimize.settings import OptimizeSettings

PLANNING_SHARE: Final = 0.9
"""Share of `--budget` a search plans for; the rest absorbs calls its plan cannot count exactly."""

GEPA_METRIC_SHARE: Final = 0.6
"""Share of `--budget` GEPA may spend on metric calls (task-model extractions); its reflection calls
took the rest with room to spare in the tests' runs (3 components, minibatches of 3)."""

MIPRO_FIXED_CALLS: Final = 32
"""LM calls a MIPROv2 run spends before its trials: bootstrapping traces for the proposer and
proposing instructions, for all 3 predictors with 3 candidates each (an upper bound: only the
predictors a program calls are tuned)."""

MIN_SELECTION_DEV: Final = 40
"""The fewest dev episodes a budgeted run selects on by default: fewer make the paired interval of
the selection so wide that no candidate can clear it."""

DEV_SHARE_OF_BUDGET: Final = 0.2
"""A budgeted run's dev sample is at most this share of `--budget` episodes, so one full dev score
costs at most a fifth of the search and MIPROv2's two of them leave more than half to its trials."""


def mipro_size(settings: OptimizeSettings, dev_size: int) -> tuple[int | None, int | None]:
    """(instruction candidates, trials) for MIPROv2: given, derived from `--budget`, or its `auto`.

    A budget pays for the fixed calls, one full dev score at the end and minibatch trials with the
    rest, so that the run ends by itself instead of being cut by the budget before any full score.
    """
    if settings.candidates is not None:
        return settings.candidates, settings.trials
    if settings.budget is None:
        return None, None
    minibatch = min(settings.minibatch_size, dev_size)
    # MIPROv2 scores the starting program and the best trial on all of dev: two full scores.
    spare = int(settings.budget * PLANNING_SHARE) - MIPRO_FIXED_CALLS - 2 * dev_size
    return 3, max(1, spare // minibatch)


def gepa_metric_calls(settings: OptimizeSettings) -> int | None:
    """GEPA's `max_metric_calls`: its share of `--budget` (None without a budget: its `auto` decides)."""
    if settings.budget is None:
        return None
    return max(1, int(settings.budget * GEPA_METRIC_SHARE))


def selection_dev_size(settings: OptimizeSettings, dev_size: int) -> int:
    """How many dev episodes the run scores and selects on: `--dev-size`, else all of dev, or with a
    `--budget` what it affords (`DEV_SHARE_OF_BUDGET`), never below `MIN_SELECTION_DEV`."""
    if settings.dev_size is not None:
        return min(settings.dev_size, dev_size)
    if settings.budget is None:
        return dev_size
    return min(dev_size, max(MIN_SELECTION_DEV, int(settings.budget * DEV_SHARE_OF_BUDGET)))
