"""Attribute accuracy on matched edges: normalization, null answers, precision and recall, by hand."""

from __future__ import annotations

from datetime import UTC, datetime

import dspy
import pytest

from edgewise.domain.gold import GoldEdge, LabeledEpisode
from edgewise.domain.types import AttributeValue, Edge, EdgeType, Entity
from edgewise.eval import aggregate, edge_metric, feedback_text, score_episode
from edgewise.eval.attributes import same_value, value_key
from edgewise.eval.feedback import edge_and_attribute_metric
from edgewise.eval.intervals import stat_value
from edgewise.eval.paired import paired_difference

REF = datetime(2025, 1, 1, tzinfo=UTC)


def gold(src: str, kind: str, tgt: str, **attributes: AttributeValue) -> GoldEdge:
    return GoldEdge(
        relationship_type=kind,
        source_entity_name=src,
        target_entity_name=tgt,
        fact="",
        attributes=attributes,
    )


def pred(src: str, kind: str, tgt: str, **attributes: AttributeValue) -> Edge:
    return Edge(
        relationship_type=kind, source_entity_name=src, target_entity_name=tgt, fact="", attributes=attributes
    )


def episode(edges: list[GoldEdge], episode_id: str = "e1") -> LabeledEpisode:
    names = sorted({e.source_entity_name for e in edges} | {e.target_entity_name for e in edges})
    return LabeledEpisode(
        id=episode_id,
        source="conversational",
        license="CC-BY-4.0",
        episode_content="text",
        reference_time=REF,
        entities=[Entity(name=n) for n in names],
        edge_types=[EdgeType(name="SIBLING_OF", symmetric=True)],
        edges=edges,
    )


@pytest.mark.parametrize(
    ("gold_value", "predicted", "same"),
    [
        ("data analyst", "The Data  Analyst.", True),  # case, article, punctuation, spaces
        ("Marco and Giulia", "giulia, Marco", True),  # items as a set
        ("Marco and Giulia", "Marco & Giulia", True),
        ("Marco and Giulia", "Marco", False),
        ("Tomás", "tomas", True),  # diacritics
        ("PhD in chemistry", "PhD in Chemistry!", True),
        ("nurse", "nurses", False),  # no stemming
        ("GP", "general practitioner", False),  # no synonyms
        (3, "3.0", True),  # numbers as numbers
        (2.5, 2.50, True),
        (True, "true", True),
        (True, 1, False),  # a boolean is not a number
        (None, None, True),
        (None, "", True),  # text with nothing left is null
        (None, "the", True),
        (None, "unknown", False),  # a word for "not stated" is a value the text does not support
        ("vet", None, False),
    ],
)
def test_values_compare_after_normalization(
    gold_value: AttributeValue, predicted: AttributeValue, same: bool
) -> None:
    assert same_value(gold_value, predicted) is same
    assert same_value(predicted, gold_value) is same  # symmetric


def test_value_keys_are_numbers_item_sets_or_null() -> None:
    assert value_key(" 17 ") == 17.0 and value_key("nan") == frozenset({"nan"})
    assert value_key("a cat; the dog") == frozenset({"cat", "dog"})
    assert value_key(None) is None and value_key("  ") is None


def test_accuracy_precision_and_recall_on_matched_edges_by_hand() -> None:
    ep = episode(
        [
            gold("Maya", "WORKS_AT", "Acme", role="data analyst"),
            gold("Maya", "LIVES_IN", "York", with_whom=None),
            gold("Ana", "OWNS_PET", "Luna", species="dog", breed="greyhound"),
            gold("Bo", "OWNS_PET", "Rex", species="dog", breed=None),
        ]
    )
    s = score_episode(
        ep,
        [
            pred("Maya", "WORKS_AT", "Acme", role="a Data Analyst"),  # right
            pred("Maya", "LIVES_IN", "York", with_whom="Ines"),  # a value where the text says none
            pred("Ana", "OWNS_PET", "Luna", species="dog"),  # breed left out: null, wrong
            pred("Bo", "OWNS_PET", "Rex", species="cat", colour="brown"),  # wrong; colour not labeled
        ],
    )
    # 6 slots: role right, with_whom wrong, species right, breed wrong, species wrong, breed null right
    assert (s.attribute_right, s.attribute_total) == (3, 6)
    assert (s.attribute_values, s.attribute_supported, s.attribute_gold_values) == (4, 2, 4)
    assert [(w.gold.target_entity_name, w.name) for w in s.wrong_attributes] == [
        ("York", "with_whom"),
        ("Luna", "breed"),
        ("Rex", "species"),
    ]
    split = aggregate([s])
    assert split.attribute_accuracy == 0.5  # 3 of 6 slots
    assert split.attribute_precision == 0.5  # 2 of the 4 values written are the gold's
    assert split.attribute_recall == 0.5  # 2 of the 4 gold values found
    dumped = split.model_dump()
    assert list(dumped).index("attribute_accuracy") == list(dumped).index("invalid_at_accuracy") + 3


def test_a_null_is_right_only_where_the_gold_is_null() -> None:
    ep = episode(
        [gold("Ana", "PARENT_OF", "Bea", parent=None), gold("Cy", "PARENT_OF", "Dee", parent="father")]
    )
    silent = score_episode(ep, [pred("Ana", "PARENT_OF", "Bea"), pred("Cy", "PARENT_OF", "Dee")])
    assert (silent.attribute_right, silent.attribute_total, silent.attribute_values) == (1, 2, 0)
    assert aggregate([silent]).attribute_precision is None  # nothing written, nothing to be wrong about
    guessing = score_episode(
        ep,
        [pred("Ana", "PARENT_OF", "Bea", parent="mother"), pred("Cy", "PARENT_OF", "Dee", parent="father")],
    )
    assert (guessing.attribute_right, guessing.attribute_values, guessing.attribute_supported) == (1, 2, 1)


def test_only_matched_edges_that_label_attributes_are_judged() -> None:
    ep = episode(
        [
            gold("Maya", "WORKS_AT", "Acme", role="nurse"),  # missed: its slot is not judged
            gold("Maya", "FRIEND_OF", "Jo"),  # labels no attribute
            gold("Bo", "SIBLING_OF", "Cy", relation="brother"),  # matched in the other direction
        ]
    )
    s = score_episode(
        ep,
        [
            pred("Maya", "FRIEND_OF", "Jo", closeness="best"),
            pred("Cy", "SIBLING_OF", "Bo", relation="Brother"),
            pred("Maya", "WORKS_AT", "Globex", role="nurse"),  # spurious: not judged
        ],
    )
    assert (s.tp, s.attribute_right, s.attribute_total, s.attribute_values) == (2, 1, 1, 1)
    nothing = aggregate([score_episode(episode([gold("Maya", "FRIEND_OF", "Jo")]), [])])
    assert (nothing.attribute_accuracy, nothing.attribute_precision, nothing.attribute_recall) == (
        None,
        None,
        None,
    )


def test_attribute_accuracy_is_a_bootstrap_and_paired_statistic() -> None:
    episodes = [episode([gold("A", "WORKS_AT", "B", role=f"r{i}")], f"e{i}") for i in range(6)]
    right = [
        score_episode(e, [pred("A", "WORKS_AT", "B", role=e.edges[0].attributes["role"])]) for e in episodes
    ]
    half = [
        score_episode(e, [pred("A", "WORKS_AT", "B", role="r0" if i % 2 else None)])
        for i, e in enumerate(episodes)
    ]
    assert stat_value(right, "attribute_accuracy") == 1.0 and stat_value(half, "attribute_accuracy") == 0.0
    assert stat_value(half, "attribute_precision") == pytest.approx(0.0)  # 3 values written, none right
    paired = paired_difference(half, right, stat="attribute_accuracy", n_resamples=200)
    assert paired.difference == 1.0 and paired.better


def test_feedback_names_each_wrong_attribute_with_the_value_expected() -> None:
    ep = episode([gold("Maya", "WORKS_AT", "Acme", role="data analyst", team=None)])
    s = score_episode(ep, [pred("Maya", "WORKS_AT", "Acme", role="analyst", team="data")])
    text = feedback_text(s)
    assert (
        'Wrong attribute: Maya -WORKS_AT-> Acme should have role "data analyst"; you wrote "analyst".' in text
    )
    assert 'should have team null (the text does not say); you wrote "data".' in text
    perfect = feedback_text(score_episode(ep, [pred("Maya", "WORKS_AT", "Acme", role="data analyst")]))
    assert perfect.endswith("All 1 gold edges found with correct dates and attributes.")


def test_the_attribute_aware_metric_averages_edge_f1_and_attribute_accuracy() -> None:
    ep = episode([gold("Maya", "WORKS_AT", "Acme", role="nurse", team=None), gold("Maya", "KNOWS", "Jo")])
    example = dspy.Example(labeled=ep).with_inputs()
    prediction = dspy.Prediction(edges=[pred("Maya", "WORKS_AT", "Acme", role="nurse", team="ER")])
    f1 = 2 / 3  # one of two gold edges, nothing spurious
    assert edge_metric(example, prediction).score == pytest.approx(f1)
    assert edge_and_attribute_metric(example, prediction).score == pytest.approx((f1 + 0.5) / 2)
    unlabeled = dspy.Example(labeled=episode([gold("Maya", "KNOWS", "Jo")])).with_inputs()
    plain = dspy.Prediction(edges=[pred("Maya", "KNOWS", "Jo")])
    assert edge_and_attribute_metric(unlabeled, plain).score == edge_metric(unlabeled, plain).score == 1.0
