"""Entity-F1: how well an entity step finds an episode's entities, and the edges scored through it.

With the entities withheld, a program names the entities itself, and its names need not be the
gold's spellings ("Dr. Hoffmann" for "Hoffmann", "Alice Smith" for "Alice"). Names are therefore
matched one to one, in two rounds:

1. names that normalize alike (`domain.names.normalize_name`, the rule edge-F1 applies);
2. then names one of whose words are a whole run of the other's words ("Hoffmann" in "Dr. Hoffmann"),
   the pair with the fewest extra words first.

A matched pair is a true positive; its type is right when it equals the gold type, case aside
(judged where the gold entity has a type). End to end, each predicted edge's ends are renamed to the
gold names they matched, and the edges are scored by the alias-aware edge-F1
(`eval.open_vocabulary.alias_aware_score`), so that an edge between two found entities counts as the
gold edge it is.

Which gold entities count: the listed entities that the episode names (a name's words are a run of
the episode's words) or that a gold edge joins. A listed entity that is neither (the user of an
assistant chat named three turns ago, a city of a previous episode) is context the caller knew: not
finding it is no miss, and finding it is no error. Only episodes whose entity list holds every entity they name are scored
(`exhaustiveEntities`, data/README.md: the conversational and Re-DocRED episodes); on the others
(DialogRE lists the speakers and the relation arguments, TempReason and TimeQA the question's two) an
entity the list lacks could not be told from a wrong one, and `score_entities` gives None.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from pydantic import BaseModel

from edgewise.domain.gold import LabeledEpisode
from edgewise.domain.names import normalize_name
from edgewise.domain.types import Edge, Entity, summed
from edgewise.eval.intervals import bootstrap
from edgewise.eval.open_vocabulary import alias_aware_score
from edgewise.eval.records import EpisodeScore, _accuracy, _f1, _rate, f1_of
from edgewise.eval.scoring import score_episode

_WORD: Final = re.compile(r"\w+")


class EntityScore(BaseModel):
    """One episode's (or a split's) entity counts; the ratios are computed from them when read."""

    tp: int = 0
    fp: int = 0
    fn: int = 0
    type_right: int = 0
    type_judged: int = 0

    precision = _rate("tp", "fp")
    recall = _rate("tp", "fn")
    f1 = _f1("tp", "fp", "fn")
    type_accuracy = _accuracy("type_right", "type_judged")

    def __add__(self, other: EntityScore) -> EntityScore:
        return summed(self, other)


def entity_f1_ci95(
    scores: Sequence[EntityScore], *, n_resamples: int, seed: int
) -> tuple[float, float] | None:
    """The percentile 95% interval of the pooled entity-F1, resampling whole episodes (`eval.intervals`)."""
    rows = [(score.tp, score.fp, score.fn) for score in scores]
    return bootstrap(
        [rows], lambda sums: f1_of(*(int(value) for value in sums[0])), n_resamples=n_resamples, seed=seed
    )


def _words(name: str) -> tuple[str, ...]:
    return tuple(_WORD.findall(normalize_name(name)))


def _run_in(short: tuple[str, ...], long: tuple[str, ...]) -> bool:
    """Whether `short` is a whole run of `long`'s words."""
    width = len(short)
    return 0 < width <= len(long) and any(long[i : i + width] == short for i in range(len(long) - width + 1))


def match_entities(gold: Sequence[Entity], predicted: Sequence[Entity]) -> dict[int, int]:
    """Predicted index -> gold index, one to one (see the module docstring's two rounds)."""
    matched: dict[int, int] = {}
    used: set[int] = set()
    gold_keys = [normalize_name(entity.name) for entity in gold]
    for p, entity in enumerate(predicted):
        key = normalize_name(entity.name)
        g = next((g for g, gold_key in enumerate(gold_keys) if gold_key == key and g not in used), None)
        if g is not None:
            matched[p] = g
            used.add(g)
    gold_words = [_words(entity.name) for entity in gold]
    candidates = []
    for p, entity in enumerate(predicted):
        if p in matched:
            continue
        words = _words(entity.name)
        for g, other in enumerate(gold_words):
            if g not in used and (_run_in(other, words) or _run_in(words, other)):
                candidates.append((abs(len(words) - len(other)), p, g))
    for _, p, g in sorted(candidates):
        if p not in matched and g not in used:
            matched[p] = g
            used.add(g)
    return matched


def counted(gold: LabeledEpisode) -> list[bool]:
    """For each listed entity: whether it counts (the episode names it, or a gold edge joins it)."""
    text = _words(gold.episode_content)
    ends = {
        normalize_name(name)
        for edge in gold.edges
        for name in (edge.source_entity_name, edge.target_entity_name)
    }
    return [
        normalize_name(entity.name) in ends or _run_in(_words(entity.name), text) for entity in gold.entities
    ]


def score_entities(gold: LabeledEpisode, predicted: Sequence[Entity]) -> EntityScore | None:
    """The episode's entity counts, or None where its entity list is not marked exhaustive."""
    if not gold.exhaustive_entities:
        return None
    matched = match_entities(gold.entities, predicted)
    counts = counted(gold)
    found = {g for g in matched.values() if counts[g]}
    excused = {p for p, g in matched.items() if not counts[g]}
    score = EntityScore(
        tp=len(found),
        fp=len(predicted) - len(found) - len(excused),
        fn=sum(counts) - len(found),
    )
    for p, g in matched.items():
        expected = gold.entities[g].type
        if counts[g] and expected:
            score.type_judged += 1
            score.type_right += (predicted[p].type or "").casefold() == expected.casefold()
    return score


def on_gold_names(gold: LabeledEpisode, predicted: Sequence[Entity], edges: Sequence[Edge]) -> list[Edge]:
    """`edges` with each end that names a found entity renamed to the gold entity it matched."""
    matched = match_entities(gold.entities, predicted)
    names = {normalize_name(predicted[p].name): gold.entities[g].name for p, g in matched.items()}

    def renamed(name: str) -> str:
        return names.get(normalize_name(name), name)

    return [
        edge.model_copy(
            update={
                "source_entity_name": renamed(edge.source_entity_name),
                "target_entity_name": renamed(edge.target_entity_name),
            }
        )
        for edge in edges
    ]


def end_to_end_score(
    gold: LabeledEpisode, predicted: Sequence[Entity], edges: Sequence[Edge]
) -> EpisodeScore:
    """The alias-aware edge score of `edges` found through the program's own entities."""
    return alias_aware_score(gold, on_gold_names(gold, predicted, edges))


def run_score(
    gold: LabeledEpisode, edges: Sequence[Edge], entities: Sequence[Entity] | None, *, entities_withheld: bool
) -> EpisodeScore:
    """An episode's score as the program was sent it: by the gold names (`score_episode`), or, sent as
    text alone, through the entities the program found (`end_to_end_score`; none found, no edge right)."""
    if not entities_withheld:
        return score_episode(gold, edges)
    return end_to_end_score(gold, entities or [], edges)
