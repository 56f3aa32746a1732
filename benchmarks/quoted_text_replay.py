"""The quoted-text check replayed on benched replies, with no model call: edge-F1 and the injected-edge rate,
as benched and with the check.

The check (`modules/quoted_text.py`, option `quoted_text_check`) drops edges right after post-processing
and reads only each edge's entities and fact and the episode's text. The steps after it change dates
(dates from facts, the date guards), fill attributes, or add the speaker names' alias edges, none of
which it reads, so applying it to a bench's final edges (predictions.jsonl) is what the program would
have returned with the option on. Two exceptions: the alias edges a `speaker_named` warning says were
added are left alone (the program adds them after the check), and a program with the precision step
would have shown that step fewer edges (its answers are the model's and are not replayed). A program
benched with the check on already shows `quoted_fact` warnings; its edges are checked again all the same.

Each run is scored again first, which must give the bench's own counts (`bench_folders.rescored`), and
then with the check. Scoring is the project's (`eval/scoring.py`); Δ edge-F1 is the paired bootstrap
difference against the run as benched (`eval/paired.py`, 2000 resamples, seed 0). Where the episodes
label injections, the injected-edge rate is given too, with its paired difference
(`eval/injection.py`; lower is better). Each dropped edge is listed with its verdict as benched
(`matched` is an edge-F1 true positive lost) and whether it was injected.

    python benchmarks/quoted_text_replay.py runs/injection-bench --out runs/injection-bench/quoted_replay.md
"""

from __future__ import annotations

import sys
from collections import Counter

from replay import Replayed, replay_main

from edgewise.domain.gold import LabeledEpisode
from edgewise.domain.types import Edge, ExtractionWarning
from edgewise.eval.episode_log import EpisodePrediction
from edgewise.eval.injection import (
    EpisodeInjections,
    count_injections,
    injected_positions,
    injection_rate,
    paired_injection_rate,
)
from edgewise.eval.intervals import DEFAULT_RESAMPLES, stat_value
from edgewise.eval.paired import paired_difference
from edgewise.eval.records import EpisodeScore
from edgewise.eval.scoring import score_episode
from edgewise.modules.call_context import CallContext
from edgewise.modules.quoted_text import drop_quoted_facts

_ADDED_LATER = "speaker_named"


def _alias_keys(prediction: EpisodePrediction) -> set[tuple[str, str, str, str]]:
    """The alias edges the speaker names added after the check, as (type, source, target, fact)."""
    return {
        (
            w.edge.get("relationshipType", ""),
            w.edge.get("sourceEntityName", ""),
            w.edge.get("targetEntityName", ""),
            w.edge.get("fact", ""),
        )
        for w in prediction.warnings
        if w.code == _ADDED_LATER and w.edge
    }


def checked(
    edges: list[Edge], episode: LabeledEpisode, prediction: EpisodePrediction
) -> tuple[list[Edge], list[tuple[int, ExtractionWarning]]]:
    """The edges the program would have returned with the check on, and each dropped edge's position
    with its warning."""
    added = _alias_keys(prediction)
    kept: list[Edge] = []
    dropped: list[tuple[int, ExtractionWarning]] = []
    for index, edge in enumerate(edges):
        key = (edge.relationship_type, edge.source_entity_name, edge.target_entity_name, edge.fact)
        context = CallContext()
        warnings = context.warnings
        if key in added or drop_quoted_facts([edge], episode, context):
            kept.append(edge)
        else:
            dropped.append((index, warnings[0]))
    return kept, dropped


def _rate_text(counts: list[EpisodeInjections]) -> str:
    rate = injection_rate(counts, n_resamples=DEFAULT_RESAMPLES, seed=0)
    if rate is None:
        return "-"
    return rate.text()


def _intro(episodes: list[LabeledEpisode]) -> str:
    """The paragraph under the command: what was replayed and how the figures read."""
    injections = sum(len(episode.injections) for episode in episodes)
    return (
        f"{len(episodes)} episodes, {injections} labeled injections. No model call: each "
        "program's benched edges scored as benched and with `quoted_text_check` applied (see the "
        "script's docstring). Δ is the paired bootstrap difference against the run as benched "
        f"({DEFAULT_RESAMPLES} resamples, seed 0); the injected-edge rate is injected edges written per "
        "injection (lower is better)."
    )


def _replay_run(program: str, replayed: list[Replayed]) -> tuple[str, list[str]]:
    """One run scored as benched and with the check, and each edge the check dropped."""
    before: list[EpisodeScore] = []
    after: list[EpisodeScore] = []
    injected_before: list[EpisodeInjections] = []
    injected_after: list[EpisodeInjections] = []
    outcomes: Counter[str] = Counter()
    listed: list[str] = []
    for episode, prediction, edges, score in replayed:
        kept, dropped = checked(edges, episode, prediction)
        injected = set(injected_positions(episode, edges))
        for index, warning in dropped:
            verdict = prediction.edges[index].verdict
            outcomes["dropped"] += 1
            outcomes[verdict] += 1
            outcomes["injected"] += index in injected
            edge = edges[index]
            listed.append(
                f"| {program} | {episode.id} | {edge.source_entity_name} -{edge.relationship_type}-> "
                f"{edge.target_entity_name} | {verdict} | {'yes' if index in injected else 'no'} "
                f"| {warning.message.removeprefix('dropped: ')} |"
            )
        before.append(score)
        after.append(score_episode(episode, kept))
        injected_before.append(count_injections(episode, edges))
        injected_after.append(count_injections(episode, kept))
    delta = paired_difference(before, after, n_resamples=DEFAULT_RESAMPLES, seed=0)
    rate_delta = paired_injection_rate(injected_before, injected_after, n_resamples=DEFAULT_RESAMPLES)
    matched = outcomes["matched"] + outcomes["wrongDate"]
    cells = (
        f"{stat_value(before, 'edge_f1_micro'):.3f} "
        f"| {stat_value(after, 'edge_f1_micro'):.3f} | {delta.text()} "
        f"| {outcomes['dropped']} ({matched} / {outcomes['injected']}) "
        f"| {_rate_text(injected_before)} | {_rate_text(injected_after)} "
        f"| {rate_delta.text() if rate_delta is not None else '-'}"
    )
    return cells, listed


def main(argv: list[str] | None = None) -> int:
    return replay_main(
        __doc__,
        __file__,
        argv,
        title="The quoted-text check replayed on benched replies",
        intro=_intro,
        table=[
            (
                "| model | program | edge-F1 as benched | with the check | Δ edge-F1 [paired 95% CI] "
                "| edges dropped (matched / injected) | injected-edge rate as benched | with the check "
                "| Δ rate [paired 95% CI] |"
            ),
            "|---|---|---:|---:|---:|---:|---:|---:|---:|",
        ],
        changes="Each dropped edge, with its verdict as benched:",
        changes_table=[
            "| program | episode | edge | verdict | injected | why |",
            "|---|---|---|---|---|---|",
        ],
        replay_run=_replay_run,
    )


if __name__ == "__main__":
    sys.exit(main())
