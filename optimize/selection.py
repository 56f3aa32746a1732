"""Which program a run keeps: the search's pick, the best one seen on dev, or the uncompiled program.

An optimizer's pick is scored on dev (or its own full dev score is reused); when it scores below the
best candidate the checkpoints saw, that one is kept instead. Then the paired rule: the compiled
program replaces the uncompiled one only when the paired 95% interval of its dev edge-F1 minus the
uncompiled one's lies above 0 (or, for a change the program search judged by another statistic,
that statistic's with edge-F1 no worse), so a gain inside the noise of a small dev split changes
nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import dspy

from edgewise.eval.intervals import Stat
from edgewise.eval.paired import paired_difference
from edgewise.modules.extractor import EdgeExtractor
from edgewise.optimize.checkpoints import BestTracker
from edgewise.optimize.dev_scoring import DevScore
from edgewise.optimize.dispatch import Scorer, SearchResult
from edgewise.optimize.manifest import paired_record
from edgewise.optimize.metering import NO_USAGE, PhaseUsage, metered


class Scored(NamedTuple):
    """A program with its dev score, and the LM usage it took to get that score."""

    program: dspy.Module
    dev_score: DevScore
    usage: PhaseUsage


def score_pick(
    found: SearchResult | None, best: BestTracker, score: Scorer, say: Callable[[str], None]
) -> Scored:
    """The search's pick (None: it stopped early, so the best seen) and its dev score.

    The score is the search's own when it measured this very program; otherwise the program is scored
    on dev now, and replaced by the best program seen when it scores below it.
    """
    program = found.program if found is not None else best.best
    if isinstance(program, EdgeExtractor):
        program.tuned_only(None)
    searched = found.dev_score if found is not None else None
    after = searched if searched is not None else best.best_dev_score(program)
    if after is not None:
        say(f"search done ({best.candidates} candidates scored on dev); the result is the best one scored")
        return Scored(program, after, NO_USAGE)
    say(f"search done ({best.candidates} candidates scored on dev); scoring the result on dev")
    with metered() as meter:
        after = score(program, "dev after")
        if after.mean_f1 < best.best_score and best.best is not program:
            say(
                f"the optimizer's pick scores {after.mean_f1:.3f} < {best.best_score:.3f}; keeping the "
                "best program seen on dev"
            )
            program = best.best
            after = best.best_dev_score(program) or score(program, "dev after")
    return Scored(program, after, meter.usage())


def keep_if_better(
    pick: Scored,
    student: dspy.Module,
    before: DevScore,
    say: Callable[[str], None],
    judged_by: Sequence[Stat] = (),
) -> tuple[dspy.Module, DevScore, dict[str, Any]]:
    """The kept program, its dev score, and the manifest's notes on the paired selection.

    `judged_by` are the statistics other than edge-F1 that the search kept a change by (validAt
    accuracy for dates from facts, attribute accuracy for an attribute formulation): a pick whose
    edge-F1 is no worse (the interval's upper end at least 0) is also kept when one of them is
    better beyond noise, since such a change may leave every edge as it was.
    """
    paired = paired_difference(before.episode_scores, pick.dev_score.episode_scores)
    notes: dict[str, Any] = {"paired_dev_difference": paired_record(paired)}
    if not paired.better and paired.high >= 0:
        for stat in judged_by:
            try:
                other = paired_difference(before.episode_scores, pick.dev_score.episode_scores, stat=stat)
            except ValueError:  # nothing to judge it on
                continue
            if other.better:
                notes["paired_dev_difference_by"] = paired_record(other, stat)
                notes["selected"] = "compiled"
                say(
                    f"dev {stat} difference {other.text()}, edge-F1 {paired.text()}: the compiled program is kept"
                )
                return pick.program, pick.dev_score, notes
    if not paired.better:
        if pick.program is not student:
            say(
                f"dev edge-F1 difference {paired.text()} is not above 0 beyond noise: keeping the uncompiled program"
            )
        notes["selected"] = "uncompiled"
        return student, before, notes
    notes["selected"] = "compiled"
    say(f"dev edge-F1 difference {paired.text()}: the compiled program is kept")
    return pick.program, pick.dev_score, notes
