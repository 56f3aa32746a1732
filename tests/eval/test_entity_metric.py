"""Entity-F1 with entities withheld: names matched one to one (alike, then by a run of words), context
entities excused, sources without exhaustive entity lists skipped, and edges scored through the match."""

from __future__ import annotations

from edgewise.domain.gold import LabeledEpisode
from edgewise.domain.types import Edge, Entity
from edgewise.eval.entity_metric import end_to_end_score, match_entities, score_entities

GOLD = LabeledEpisode.model_validate(
    {
        "id": "conv-1-2",
        "source": "conversational",
        "exhaustiveEntities": True,
        "license": "CC-BY-4.0",
        "episodeContent": "I start at Northwind Labs on May 6. Dr. Hoffmann says my knee is fine.",
        "referenceTime": "2025-04-01T00:00:00Z",
        "entities": [
            {"name": "Maya", "type": "Person"},
            {"name": "Northwind Labs", "type": "Organization"},
            {"name": "Hoffmann", "type": "Person"},
            {"name": "Leeds", "type": "Location"},
        ],
        "edges": [
            {
                "relationshipType": "WORKS_AT",
                "sourceEntityName": "Maya",
                "targetEntityName": "Northwind Labs",
                "fact": "Maya starts at Northwind Labs.",
            },
        ],
    }
)


def entities(*pairs: tuple[str, str | None]) -> list[Entity]:
    return [Entity(name=name, type=kind) for name, kind in pairs]


def test_names_match_alike_then_by_a_run_of_words_one_to_one():
    predicted = entities(("northwind labs", None), ("Dr. Hoffmann", None), ("Hoffmann clinic", None))
    assert match_entities(GOLD.entities, predicted) == {0: 1, 1: 2}


def test_found_missed_spurious_and_context_entities():
    predicted = entities(
        ("Northwind Labs", "organization"),
        ("Dr. Hoffmann", "Place"),
        ("knee", "Object"),
        ("Leeds", "Location"),
    )
    score = score_entities(GOLD, predicted)
    # Maya (joined by a gold edge) is missed; Leeds (neither named nor joined) is context: excused.
    assert (score.tp, score.fp, score.fn) == (2, 1, 1)
    assert (score.type_right, score.type_judged) == (1, 2)
    assert round(score.f1, 3) == round(2 * 2 / (2 * 2 + 1 + 1), 3)


def test_an_episode_without_an_exhaustive_entity_list_is_not_scored():
    other = GOLD.model_copy(update={"exhaustive_entities": False})
    assert score_entities(other, entities(("Maya", None))) is None


def test_edges_are_scored_through_the_matched_names():
    predicted = entities(("Maya", "Person"), ("Northwind", "Organization"))
    edge = Edge(
        relationship_type="WORKS_AT", source_entity_name="maya", target_entity_name="Northwind", fact="x"
    )
    assert end_to_end_score(GOLD, predicted, [edge]).tp == 1
    unmatched = edge.model_copy(update={"target_entity_name": "Acme"})
    assert end_to_end_score(GOLD, predicted, [unmatched]).tp == 0
