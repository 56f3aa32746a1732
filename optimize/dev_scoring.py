"""Scoring a program on the dev split: what every optimizer is selected by and the manifest reports.

Micro edge-F1 is the headline; the per-episode mean F1 is what DSPy's optimizers maximize (they
average the metric over examples); the per-episode scores, in dev order, are what the paired
comparison of two programs resamples.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import NamedTuple, TextIO

import dspy
from tqdm import tqdm

from edgewise.domain.episode import withheld
from edgewise.domain.gold import LabeledEpisode
from edgewise.domain.types import ExtractionResult
from edgewise.eval.entity_metric import run_score
from edgewise.eval.records import EpisodeScore, f1_of
from edgewise.runtime.runner import run_episodes


class DevScore(NamedTuple):
    """A program's score on the dev split: micro edge-F1 (the headline) and the per-episode mean F1.

    The mean is what the optimizers maximize (DSPy averages the metric over examples).
    """

    edge_f1: float
    mean_f1: float
    episodes: int
    parse_failures: int
    errors: int
    episode_scores: tuple[EpisodeScore, ...] = ()
    """Each dev episode's score, in dev order: what the paired comparison of two programs resamples."""
    latencies_s: tuple[float, ...] = ()
    """Each dev episode's wall time, in dev order (a reply from DSPy's cache takes next to none)."""

    @property
    def median_latency_s(self) -> float | None:
        return float(statistics.median(self.latencies_s)) if self.latencies_s else None


def evaluate_program(
    program: dspy.Module,
    episodes: Sequence[LabeledEpisode],
    *,
    workers: int = 1,
    progress: TextIO | None = None,
    label: str = "dev",
    entities_withheld: bool = False,
) -> DevScore:
    """Score `program` on labeled episodes; an episode whose extraction raised scores as no edges.

    With `entities_withheld` each episode is sent as text alone and scored through the entities the
    program's entity step found (`edgewise.eval.entity_metric.run_score`).

    When every episode raised, the first error is raised instead: the model was never reached (a
    wrong model name, a server down), and a score of 0 would hide that.
    """
    results: list[ExtractionResult | None] = []
    latencies: list[float] = []
    failures = []
    outcomes = run_episodes(
        program,
        episodes,
        episode_of=lambda labeled: withheld(labeled.episode()) if entities_withheld else labeled.episode(),
        workers=workers,
        keep_unparsed=True,
    )
    bar = tqdm(outcomes, total=len(episodes), desc=label, unit="ep", file=progress, disable=progress is None)
    for _, outcome in bar:
        assert outcome is not None  # every labeled episode has an episode
        if outcome.result is None:
            failures.append(outcome.error)
        results.append(outcome.result)
        latencies.append(outcome.latency_s)
    if failures and len(failures) == len(episodes):
        raise failures[0]
    return dev_score(episodes, results, entities_withheld=entities_withheld)._replace(
        latencies_s=tuple(latencies)
    )


def dev_score(
    episodes: Sequence[LabeledEpisode],
    results: Sequence[ExtractionResult | None],
    *,
    entities_withheld: bool = False,
) -> DevScore:
    """Score each episode's result (None: the extraction failed, scored as no edges), in episode order;
    with `entities_withheld`, through the entities each result found."""
    scores = tuple(
        run_score(
            labeled,
            result.edges if result else [],
            result.entities if result else None,
            entities_withheld=entities_withheld,
        )
        for labeled, result in zip(episodes, results)
    )
    tp, fp, fn = (sum(getattr(s, name) for s in scores) for name in ("tp", "fp", "fn"))
    mean = sum(s.f1 for s in scores) / len(scores) if scores else 1.0
    parse_failures = sum(result.parse_failures for result in results if result)
    errors = sum(result is None for result in results)
    return DevScore(f1_of(tp, fp, fn), mean, len(scores), parse_failures, errors, scores)
