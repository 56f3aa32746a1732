"""Attribute grounding replayed on benched replies, with no model call: attribute accuracy before and after.

Grounding (`modules/attribute_grounding.py`, option `attribute_grounding`) is the last step of a program
and changes only attribute values, so applying it to a bench's post-processed edges (predictions.jsonl)
is what the program would have returned with the option on. Each benched program is scored as it was
(checked first: the edge and attribute counts must equal the bench's) and with grounding applied.
Scoring is the project's own (`eval/scoring.py`); Δ is the paired bootstrap difference of attribute
accuracy on the matched edges (`eval/paired.py`, 2000 resamples, seed 0). Each dropped value is
listed with what it did to its slot: "fixed" (now right: a wrong value dropped where the gold is null,
or the edge's own end taken out of it), "broke" (a right value made wrong), "still wrong", or
"unjudged" (the edge was not matched, or its gold does not label the attribute).

    python benchmarks/attribute_grounding_replay.py benchmarks/results/test-conversational-attributes-1.5b/chunk-* \\
        --episodes runs/results/test-conversational.jsonl \\
        --out benchmarks/results/test-conversational-attributes-1.5b/grounding_replay.md
"""

from __future__ import annotations

import sys
from collections import Counter

from replay import Replayed, replay_main

from edgewise.domain.gold import LabeledEpisode
from edgewise.domain.types import Edge
from edgewise.eval.attributes import value_key
from edgewise.eval.intervals import DEFAULT_RESAMPLES, stat_value
from edgewise.eval.matching import episode_views, match_edges
from edgewise.eval.paired import paired_difference
from edgewise.eval.records import EpisodeScore
from edgewise.eval.scoring import score_episode
from edgewise.modules.attribute_grounding import ground_attributes
from edgewise.modules.call_context import CallContext


def _gold_attributes(episode: LabeledEpisode, edges: list[Edge]) -> dict[int, dict]:
    """Each matched prediction's gold attributes, by the prediction's index."""
    matched = match_edges(episode_views(episode, edges), episode.edges, edges)[0]
    return {p: episode.edges[g].attributes for p, g in matched.items()}


def _outcome(before: object, after: object, gold: dict, name: str) -> str:
    """What grounding did to a slot: its value `before`, and `after` (None: dropped)."""
    if name not in gold:
        return "unjudged"
    was_right = value_key(before) == value_key(gold[name])
    is_right = value_key(after) == value_key(gold[name])
    if is_right != was_right:
        return "fixed" if is_right else "broke"
    return "still right" if is_right else "still wrong"


def _summary(scores: list[EpisodeScore]) -> str:
    right = sum(s.attribute_right for s in scores)
    total = sum(s.attribute_total for s in scores)
    values = sum(s.attribute_values for s in scores)
    supported = sum(s.attribute_supported for s in scores)
    accuracy = f"{right / total:.3f} ({right}/{total})" if total else "-"
    precision = f"{supported / values:.3f} ({supported}/{values})" if values else "-"
    return f"{accuracy} | {precision}"


def _intro(episodes: list[LabeledEpisode]) -> str:
    """The paragraph under the command: what was replayed and how the figures read."""
    return (
        f"{len(episodes)} episodes. No model call: each program's benched edges scored as benched "
        "and with `attribute_grounding` applied (see the script's docstring). Attribute accuracy is right "
        "slots over the matched edges' labeled slots; precision is supported values over values written; "
        f"Δ is the paired bootstrap difference of attribute accuracy ({DEFAULT_RESAMPLES} resamples, seed 0)."
    )


def _replay_run(program: str, replayed: list[Replayed]) -> tuple[str, list[str]]:
    """One run scored as benched and grounded, and each value grounding changed."""
    before: list[EpisodeScore] = []
    after: list[EpisodeScore] = []
    outcomes: Counter[str] = Counter()
    listed: list[str] = []
    for episode, _, edges, score in replayed:
        context = CallContext()
        grounded = ground_attributes(edges, episode, context)
        gold = _gold_attributes(episode, edges)
        for index, (old, new) in enumerate(zip(edges, grounded, strict=True)):
            for name, value in old.attributes.items():
                if new.attributes.get(name) == value:
                    continue
                now = new.attributes.get(name)
                outcome = _outcome(value, now, gold.get(index, {}), name)
                outcomes[outcome] += 1
                listed.append(
                    f"| {program} | {episode.id} | {name} | {value!r} | {now!r} "
                    f"| {gold.get(index, {}).get(name, '-')!r} | {outcome} |"
                )
        before.append(score)
        after.append(score_episode(episode, grounded))
    judged = sum(s.attribute_total for s in before)
    delta = (
        paired_difference(
            before, after, stat="attribute_accuracy", n_resamples=DEFAULT_RESAMPLES, seed=0
        ).text()
        if judged
        else "-"
    )
    counts = " / ".join(
        str(outcomes[o]) for o in ("fixed", "broke", "still wrong", "still right", "unjudged")
    )
    assert stat_value(after, "edge_f1_micro") == stat_value(before, "edge_f1_micro")
    return f"{_summary(before)} | {_summary(after)} | {delta} | {counts}", listed


def main(argv: list[str] | None = None) -> int:
    return replay_main(
        __doc__,
        __file__,
        argv,
        title="Attribute grounding replayed on benched replies",
        intro=_intro,
        table=[
            (
                "| model | program | as benched: accuracy | precision | grounded: accuracy | precision "
                "| Δ accuracy [paired 95% CI] | changed values: fixed / broke / still wrong / still right / unjudged |"
            ),
            "|---|---|---:|---:|---:|---:|---:|---:|",
        ],
        changes="Each changed value (None: dropped):",
        changes_table=[
            "| program | episode | attribute | value | grounded | gold | outcome |",
            "|---|---|---|---|---|---|---|",
        ],
        replay_run=_replay_run,
    )


if __name__ == "__main__":
    sys.exit(main())
