"""`--optimizer program`: choose what the model is asked to do, one lever at a time, by paired dev effect.

Instructions and demos tuned for a small model did not move its quality beyond noise; its errors are
edges it never writes, wrong types and directions, dates, and edges the episode does not state. The
levers here change the task itself (`ProgramOptions`) or add gold demos. The search is greedy and
keeps a lever only when its paired bootstrap 95% interval of dev edge-F1 against the program so far
lies above 0, so a model gets the precision step only if the precision step helps that model.

Levers are tried in a fixed order, cheapest to judge first where it does not matter: the input order
(every later lever is judged on top of it), the formulation, type signatures and dates from facts
(post-processing only: with DSPy's cache on, their dev pass repeats cached requests), the precision
step (one short call per episode), then gold demos. A lever whose dev pass the remaining `--budget`
cannot pay for is skipped and recorded as such, so the search ends by itself.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Final, NamedTuple

from edgewise.eval.intervals import Stat, stat_value
from edgewise.eval.paired import paired_difference
from edgewise.modules.extractor import EdgeExtractor
from edgewise.modules.options import ProgramOptions
from edgewise.modules.type_signatures import TypeSignatures
from edgewise.signatures.types import LabeledEpisode

LEVERS: Final[tuple[str, ...]] = (
    "input_order",
    "formulation",
    "type_signatures",
    "fact_dates",
    "precision",
    "gold_demos",
)
"""The levers in the order the search tries them."""

_ALTERNATIVE: Final[dict[str, dict[str, Any]]] = {
    "input_order": {"input_order": "seed"},
    "formulation": {"formulation": "pairs"},
    "type_signatures": {"type_signatures": True},
    "fact_dates": {"fact_dates": True},
    "precision": {"precision": True},
}


JUDGED_BY: Final[dict[str, Stat]] = {"fact_dates": "valid_at_accuracy"}
"""The statistic a lever is judged by when it is not edge-F1: dates from facts change no edge, only
validAt, so they are judged by validAt accuracy on the matched edges (paired, the same rule)."""


class LeverResult(NamedTuple):
    """One lever as the search judged it (what the manifest's `levers` and docs/results.md's table list).

    `difference` [`low`, `high`] is the paired difference of `stat` against the program so far;
    `dev_*` are the candidate's own figures on the dev episodes.
    """

    lever: str
    value: Any
    stat: str
    difference: float | None
    low: float | None
    high: float | None
    kept: bool
    calls: int
    dev_edge_f1: float | None = None
    dev_precision: float | None = None
    dev_recall: float | None = None
    dev_valid_at_accuracy: float | None = None
    note: str = ""

    def record(self) -> dict[str, Any]:
        row = self._asdict()
        return {key: _rounded(value) for key, value in row.items()}


Scorer = Callable[[EdgeExtractor, str], Any]
"""Scores a program on the dev sample (label for progress) and returns its `DevScore`."""


def build_program(
    base: EdgeExtractor, options: ProgramOptions, signatures: TypeSignatures | None
) -> EdgeExtractor:
    """A program with `options`, `base`'s demos and settings, and the learned signatures."""
    program = EdgeExtractor(
        max_reflexion_rounds=base.max_reflexion_rounds,
        closed_types=base.closed_types,
        output_shape=base.output_shape,
        options=options,
        type_signatures=signatures,
    )
    program.extract.demos = list(base.extract.demos)
    return program


def lever_cost(lever: str, options: ProgramOptions, dev_size: int) -> int:
    """LM calls (DSPy's cached replies count too) one dev pass of the lever's candidate makes at most."""
    per_episode = 1 + int(options.precision or lever == "precision")
    return per_episode * dev_size


def search_program(
    *,
    student: EdgeExtractor,
    before: Any,
    score: Scorer,
    signatures: TypeSignatures,
    dev: Sequence[LabeledEpisode],
    gold_demos: Callable[[], list[Any]] | None,
    budget: int | None,
    calls_spent: Callable[[], int],
    say: Callable[[str], None] = lambda message: None,
    levers: Sequence[str] = LEVERS,
) -> tuple[EdgeExtractor, Any, list[LeverResult]]:
    """Greedy search over `levers`; returns the chosen program, its dev score and every lever's result.

    `before` is the `DevScore` of `student` (the uncompiled program); `score` scores a candidate on
    the same dev episodes; `gold_demos` gives the demos of the `gold_demos` lever (None: not tried).
    """
    current, current_score = student, before
    options = student.options
    results: list[LeverResult] = []
    for lever in levers:
        if lever == "gold_demos" and gold_demos is None:
            continue
        if lever == "gold_demos":
            candidate = build_program(current, options, signatures)
            candidate.extract.demos = gold_demos()
            value: Any = len(candidate.extract.demos)
            if options.formulation == "pairs":
                results.append(_skipped(lever, value, "demos are edge lists; the pairwise program has none"))
                continue
        else:
            change = _ALTERNATIVE[lever]
            candidate_options = options.model_copy(update=change)
            value = next(iter(change.values()))
            if lever == "formulation" and (student.max_reflexion_rounds or student.output_shape != "seed"):
                results.append(_skipped(lever, value, "pairs need the seed shape and no reflexion rounds"))
                continue
            candidate = build_program(current, candidate_options, signatures)
        cost = lever_cost(lever, candidate.options, len(dev))
        spent = calls_spent()
        if budget is not None and spent + cost > budget:
            results.append(
                _skipped(lever, value, f"the budget has {budget - spent} calls left, it needs {cost}")
            )
            say(f"{lever}={value}: skipped ({results[-1].note})")
            continue
        say(f"{lever}={value}: scoring on {len(dev)} dev episodes")
        scored = score(candidate, f"dev {lever}")
        stat = JUDGED_BY.get(lever, "edge_f1_micro")
        try:
            paired = paired_difference(current_score.episode_scores, scored.episode_scores, stat=stat)
        except ValueError as undefined:  # no matched edge: a date accuracy cannot be judged
            results.append(_skipped(lever, value, str(undefined)))
            say(f"{lever}={value}: not judged ({undefined})")
            continue
        kept = paired.better
        results.append(
            LeverResult(
                lever,
                value,
                stat,
                paired.difference,
                paired.low,
                paired.high,
                kept,
                calls_spent() - spent,
                dev_edge_f1=scored.edge_f1,
                dev_precision=stat_value(scored.episode_scores, "precision"),
                dev_recall=stat_value(scored.episode_scores, "recall"),
                dev_valid_at_accuracy=stat_value(scored.episode_scores, "valid_at_accuracy"),
            )
        )
        say(
            f"{lever}={value}: dev edge-F1 {scored.edge_f1:.3f}, {stat} paired {paired.text()}: "
            + ("kept" if kept else "not kept"),
        )
        if kept:
            current, current_score = candidate, scored
            options = candidate.options
    return current, current_score, results


def _rounded(value: Any) -> Any:
    """Four decimals; nan (a date accuracy with no matched edge) as null, which JSON can hold."""
    if not isinstance(value, float):
        return value
    return None if math.isnan(value) else round(value, 4)


def _skipped(lever: str, value: Any, note: str) -> LeverResult:
    return LeverResult(
        lever, value, JUDGED_BY.get(lever, "edge_f1_micro"), None, None, None, False, 0, note=note
    )
