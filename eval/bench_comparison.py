"""Each run against the bench's `--baseline` program: paired edge-F1 differences, overall and per source
(and of the injected-edge rate, where episodes label injections).

Paired over the episodes both runs finished, with the bench's seed and resample count, so that a
difference is read with the same bootstrap as every other interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NamedTuple

from edgewise.eval.bench_records import BenchReport, Comparison, EpisodeRun, PairedResult
from edgewise.eval.injection import paired_injection_rate
from edgewise.eval.paired import paired_on_shared


def compare_to_baseline(report: BenchReport) -> None:
    """Give every run of a model its paired difference from the baseline program's run on that model.

    Paired over the episodes both runs finished, overall and within each source, with the bench's
    seed and resample count; the baseline's own run has none.
    """
    if report.baseline is None:
        return
    baselines = {run.model: run for run in report.runs if run.program == report.baseline and run.episodes}
    for run in report.runs:
        base = baselines.get(run.model)
        if base is None or run is base or not run.episodes:
            run.comparison = None
            continue
        options = {"n_resamples": report.bootstrap_resamples, "seed": report.seed}
        overall = paired_on_shared(base.episodes, run.episodes, **options)
        if overall is None:
            continue
        per_source = {}
        for source in sorted({episode.source for episode in base.episodes}):
            mine = [episode for episode in run.episodes if episode.source == source]
            theirs = [episode for episode in base.episodes if episode.source == source]
            paired = paired_on_shared(theirs, mine, **options)
            if paired is not None:
                per_source[source] = PairedResult.of(paired)
        run.comparison = Comparison(
            baseline=report.baseline,
            overall=PairedResult.of(overall),
            per_source=per_source,
            attribute_accuracy=paired_attributes(base.episodes, run.episodes, options),
        )
        run.alias_aware_comparison = paired_counts(base.episodes, run.episodes, "alias_aware", options)
        run.entity_comparison = paired_counts(base.episodes, run.episodes, "entities", options)
        if run.injection is not None:
            injected = paired_injection_rate(base.episodes, run.episodes, **options)
            run.injection.comparison = PairedResult.of(injected) if injected is not None else None


class _EpisodeCounts(NamedTuple):
    """One kind of an episode's counts under its id, as `paired_on_shared` reads a score."""

    id: str
    tp: int
    fp: int
    fn: int


def paired_counts(
    baseline: Sequence[EpisodeRun],
    candidate: Sequence[EpisodeRun],
    field: Literal["alias_aware", "entities"],
    options: dict[str, int],
) -> PairedResult | None:
    """The paired F1 difference of an episode's `field` counts (the alias-aware edge counts, or the
    entity counts), over the episodes where both runs have them; None where they share none."""

    def counts(episodes: Sequence[EpisodeRun]) -> list[_EpisodeCounts]:
        return [
            _EpisodeCounts(episode.id, found.tp, found.fp, found.fn)
            for episode in episodes
            if (found := getattr(episode, field)) is not None
        ]

    mine, theirs = counts(candidate), counts(baseline)
    paired = paired_on_shared(theirs, mine, **options) if mine and theirs else None
    return PairedResult.of(paired) if paired is not None else None


def paired_attributes(
    baseline: Sequence[EpisodeRun], candidate: Sequence[EpisodeRun], options: dict[str, int]
) -> PairedResult | None:
    """The paired attribute-accuracy difference, or None where either run judged no attribute."""
    if not any(e.attribute_total for e in baseline) or not any(e.attribute_total for e in candidate):
        return None
    try:
        paired = paired_on_shared(baseline, candidate, stat="attribute_accuracy", **options)
    except ValueError:  # no shared episode judged an attribute in both runs
        return None
    return None if paired is None else PairedResult.of(paired)
