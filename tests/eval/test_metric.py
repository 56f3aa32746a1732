"""Edge-F1: hand-computed cases for every matching rule, plus properties that must hold for any input."""

from __future__ import annotations

from datetime import UTC, datetime

import dspy
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edgewise.domain.gold import GoldEdge, LabeledEpisode
from edgewise.domain.types import Edge, EdgeType, Entity
from edgewise.eval import (
    EpisodeScore,
    SplitScore,
    aggregate,
    bootstrap_ci,
    edge_metric,
    feedback_text,
    score_episode,
)

REF = datetime(2025, 1, 1, tzinfo=UTC)


def dt(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def gold(
    src: str,
    kind: str,
    tgt: str,
    fact: str = "",
    aliases: tuple[str, ...] = (),
    valid: datetime | None = None,
    valid_g: str | None = None,
    invalid: datetime | None = None,
    invalid_g: str | None = None,
) -> GoldEdge:
    return GoldEdge(
        relationship_type=kind,
        source_entity_name=src,
        target_entity_name=tgt,
        fact=fact,
        aliases=list(aliases),
        valid_at=valid,
        valid_at_granularity=valid_g,
        invalid_at=invalid,
        invalid_at_granularity=invalid_g,
    )


def pred(
    src: str,
    kind: str,
    tgt: str,
    fact: str = "",
    valid: datetime | None = None,
    invalid: datetime | None = None,
) -> Edge:
    return Edge(
        relationship_type=kind,
        source_entity_name=src,
        target_entity_name=tgt,
        fact=fact,
        valid_at=valid,
        invalid_at=invalid,
    )


def episode(
    edges: list[GoldEdge],
    symmetric: tuple[str, ...] = (),
    exhaustive: bool = True,
    source: str = "news",
    episode_id: str = "e1",
) -> LabeledEpisode:
    names = sorted({e.source_entity_name for e in edges} | {e.target_entity_name for e in edges})
    names = names or ["Alice"]  # an episode has entities even where no edge joins them
    return LabeledEpisode(
        id=episode_id,
        source=source,
        license="CC-BY-4.0",
        exhaustive=exhaustive,
        episode_content="text",
        reference_time=REF,
        entities=[Entity(name=n) for n in names],
        edge_types=[EdgeType(name=t, symmetric=True) for t in symmetric],
        edges=edges,
    )


def as_prediction(g: GoldEdge) -> Edge:
    return Edge.model_validate(g.model_dump(include=set(Edge.model_fields)))


# ------------------------------------------------------------------------------------------ matching


def test_exact_edge_is_a_true_positive() -> None:
    s = score_episode(episode([gold("Alice", "WORKS_AT", "Acme")]), [pred("Alice", "WORKS_AT", "Acme")])
    assert (s.tp, s.fp, s.fn) == (1, 0, 0)
    assert (s.pair_tp, s.pair_fp, s.pair_fn) == (1, 0, 0)
    assert s.f1 == 1.0 and s.pair_f1 == 1.0


def test_reversed_edge_is_a_false_positive_and_a_miss_and_is_classified() -> None:
    s = score_episode(episode([gold("Alice", "WORKS_AT", "Acme")]), [pred("Acme", "WORKS_AT", "Alice")])
    assert (s.tp, s.fp, s.fn) == (0, 1, 1)
    assert (s.pair_tp, s.pair_fp, s.pair_fn) == (0, 1, 1)  # direction counts for pairs too
    assert len(s.reversed) == 1 and s.reversed[0].predicted.source_entity_name == "Acme"
    assert s.missed == () and s.spurious == ()


def test_symmetric_type_matches_either_direction() -> None:
    ep = episode([gold("Alice", "SIBLING_OF", "Bob")], symmetric=("SIBLING_OF",))
    s = score_episode(ep, [pred("Bob", "SIBLING_OF", "Alice")])
    assert (s.tp, s.fp, s.fn) == (1, 0, 0)
    assert s.pair_tp == 1 and s.reversed == ()


def test_symmetry_is_read_from_the_episode_edge_types() -> None:
    ep = episode([gold("Alice", "SIBLING_OF", "Bob")], symmetric=())
    s = score_episode(ep, [pred("Bob", "SIBLING_OF", "Alice")])
    assert (s.tp, s.fp, s.fn) == (0, 1, 1) and len(s.reversed) == 1


def test_alias_type_matches_and_types_ignore_case_and_spaces() -> None:
    ep = episode([gold("Alice", "WORKS_AT", "Acme", aliases=("EMPLOYED_BY",))])
    assert score_episode(ep, [pred("Alice", "EMPLOYED_BY", "Acme")]).tp == 1
    assert score_episode(ep, [pred("Alice", " works_at ", "Acme")]).tp == 1


def test_names_compare_without_case_accents_or_extra_spaces() -> None:
    ep = episode([gold("José  Álvarez", "WORKS_AT", "Acme Corp")])
    s = score_episode(ep, [pred("jose alvarez", "WORKS_AT", " ACME   corp ")])
    assert s.tp == 1


def test_mistyped_edge_costs_both_types_and_keeps_the_pair() -> None:
    ep = episode([gold("Alice", "WORKS_AT", "Acme")])
    s = score_episode(ep, [pred("Alice", "FOUNDED", "Acme")])
    assert (s.tp, s.fp, s.fn) == (0, 1, 1)
    assert (s.pair_tp, s.pair_fp, s.pair_fn) == (1, 0, 0)
    assert len(s.mistyped) == 1 and s.mistyped[0].gold.relationship_type == "WORKS_AT"
    assert s.per_type["WORKS_AT"].fn == 1 and s.per_type["FOUNDED"].fp == 1


def test_duplicate_prediction_second_copy_is_a_false_positive() -> None:
    ep = episode([gold("Alice", "WORKS_AT", "Acme")])
    s = score_episode(
        ep, [pred("Alice", "WORKS_AT", "Acme", "first"), pred("Alice", "WORKS_AT", "Acme", "second")]
    )
    assert (s.tp, s.fp, s.fn) == (1, 1, 0)
    assert (s.pair_tp, s.pair_fp) == (1, 1)
    assert len(s.spurious) == 1
    assert s.spurious[0].duplicate and s.spurious[0].predicted.fact == "second"


def test_symmetric_duplicate_written_both_ways_is_a_duplicate() -> None:
    ep = episode([gold("Alice", "SIBLING_OF", "Bob")], symmetric=("SIBLING_OF",))
    s = score_episode(ep, [pred("Alice", "SIBLING_OF", "Bob"), pred("Bob", "SIBLING_OF", "Alice")])
    assert (s.tp, s.fp) == (1, 1) and s.spurious[0].duplicate


def test_two_gold_copies_need_two_predictions() -> None:
    ep = episode([gold("Alice", "WORKS_AT", "Acme"), gold("Alice", "WORKS_AT", "Acme")])
    s = score_episode(ep, [pred("Alice", "WORKS_AT", "Acme"), pred("Alice", "WORKS_AT", "Acme")])
    assert (s.tp, s.fp, s.fn) == (2, 0, 0)


def test_maximum_matching_beats_greedy() -> None:
    # Greedy in order would give the first prediction (EMPLOYED_BY) to the first gold edge through its
    # alias and leave the second prediction (WORKS_AT) with nothing: 1 match. The maximum is 2.
    ep = episode(
        [
            gold("Alice", "WORKS_AT", "Acme", aliases=("EMPLOYED_BY",)),
            gold("Alice", "EMPLOYED_BY", "Acme"),
        ]
    )
    s = score_episode(ep, [pred("Alice", "EMPLOYED_BY", "Acme"), pred("Alice", "WORKS_AT", "Acme")])
    assert (s.tp, s.fp, s.fn) == (2, 0, 0)


def test_matching_prefers_the_assignment_that_agrees_on_dates() -> None:
    ep = episode(
        [
            gold("Alice", "WORKS_AT", "Acme", valid=dt(2010, 1, 1), valid_g="year"),
            gold("Alice", "WORKS_AT", "Acme", valid=dt(2020, 1, 1), valid_g="year"),
        ]
    )
    s = score_episode(
        ep,
        [
            pred("Alice", "WORKS_AT", "Acme", valid=dt(2020, 6, 1)),
            pred("Alice", "WORKS_AT", "Acme", valid=dt(2010, 3, 1)),
        ],
    )
    assert s.tp == 2 and (s.valid_at_right, s.valid_at_total) == (2, 2) and s.wrong_dates == ()


def test_one_gold_edge_goes_to_the_later_copy_whose_date_agrees() -> None:
    ep = episode([gold("Alice", "WORKS_AT", "Acme", valid=dt(2020, 1, 1), valid_g="year")])
    s = score_episode(
        ep,
        [
            pred("Alice", "WORKS_AT", "Acme", valid=dt(2019, 12, 31)),
            pred("Alice", "WORKS_AT", "Acme", valid=dt(2020, 8, 1)),
        ],
    )
    assert (s.tp, s.fp, s.valid_at_right) == (1, 1, 1) and s.wrong_dates == ()
    assert len(s.spurious) == 1 and s.spurious[0].duplicate
    assert s.spurious[0].predicted.valid_at == dt(2019, 12, 31)


def test_contested_gold_edge_goes_to_the_taker_whose_date_agrees() -> None:
    # Two gold edges between the same entities; both predictions can take only the WORKS_AT one.
    ep = episode(
        [
            gold("Alice", "WORKS_AT", "Acme", valid=dt(2010, 1, 1), valid_g="year"),
            gold("Alice", "OWNS", "Acme"),
        ]
    )
    s = score_episode(
        ep,
        [
            pred("Alice", "WORKS_AT", "Acme", valid=dt(2009, 1, 1)),
            pred("Alice", "WORKS_AT", "Acme", valid=dt(2010, 5, 1)),
        ],
    )
    assert (s.tp, s.fp, s.fn) == (1, 1, 1) and s.valid_at_right == 1 and s.wrong_dates == ()
    assert s.pair_tp == 2  # type ignored, each prediction takes one of the two gold edges
    # the leftover prediction is labelled as a mistyped OWNS edge
    assert [(m.gold.relationship_type, m.predicted.valid_at) for m in s.mistyped] == [
        ("OWNS", dt(2009, 1, 1))
    ]


def test_a_score_equals_the_validated_score_of_the_same_values() -> None:
    ep = episode([gold("Alice", "WORKS_AT", "Acme"), gold("Bob", "KNOWS", "Alice")], exhaustive=False)
    for preds in ([], [pred("Alice", "WORKS_AT", "Acme"), pred("Bob", "KNOWS", "Alice")]):
        s = score_episode(ep, preds)
        validated = EpisodeScore(**dict(s))
        assert validated == s and validated.model_dump() == s.model_dump()
        assert all(type(c).__name__ == "TypeCounts" for c in s.per_type.values())


def test_unknown_entities_are_spurious() -> None:
    s = score_episode(episode([gold("Alice", "WORKS_AT", "Acme")]), [pred("Zed", "WORKS_AT", "Acme")])
    assert (s.tp, s.fp, s.fn) == (0, 1, 1) and len(s.missed) == 1 and len(s.spurious) == 1


# -------------------------------------------------------------------------------------------- dates


@pytest.mark.parametrize(
    ("granularity", "gold_date", "right", "wrong"),
    [
        ("year", dt(2020, 1, 1), dt(2020, 11, 5, 13), dt(2021, 1, 1)),
        ("month", dt(2020, 5, 1), dt(2020, 5, 30), dt(2020, 6, 1)),
        ("day", dt(2020, 5, 1), dt(2020, 5, 1, 23, 59), dt(2020, 5, 2)),
        (
            "instant",
            dt(2020, 5, 1, 12),
            datetime(2020, 5, 1, 12, 0, 0, 400000, tzinfo=UTC),
            dt(2020, 5, 1, 12, 0, 1),
        ),
        (None, dt(2020, 5, 1, 12), dt(2020, 5, 1, 12), dt(2020, 5, 1, 13)),
    ],
)
def test_dates_compare_at_the_gold_granularity(
    granularity: str | None, gold_date: datetime, right: datetime, wrong: datetime
) -> None:
    ep = episode(
        [gold("A", "T", "B", valid=gold_date, valid_g=granularity, invalid=gold_date, invalid_g=granularity)]
    )
    ok = score_episode(ep, [pred("A", "T", "B", valid=right, invalid=right)])
    assert (ok.valid_at_right, ok.valid_at_total, ok.invalid_at_right, ok.invalid_at_total) == (1, 1, 1, 1)
    bad = score_episode(ep, [pred("A", "T", "B", valid=wrong, invalid=wrong)])
    assert (bad.valid_at_right, bad.invalid_at_right) == (0, 0)
    assert [w.field for w in bad.wrong_dates] == ["validAt", "invalidAt"]
    assert bad.tp == 1  # a wrong date never costs the match


@pytest.mark.parametrize(
    ("gold_date", "pred_date", "right"),
    [(None, None, 1), (None, dt(2020, 1, 1), 0), (dt(2020, 1, 1), None, 0)],
)
def test_null_dates(gold_date: datetime | None, pred_date: datetime | None, right: int) -> None:
    ep = episode([gold("A", "T", "B", valid=gold_date, valid_g="year" if gold_date else None)])
    s = score_episode(ep, [pred("A", "T", "B", valid=pred_date)])
    assert (s.valid_at_right, s.valid_at_total) == (right, 1)
    assert (s.invalid_at_right, s.invalid_at_total) == (1, 1)  # both invalidAt null


def test_dates_are_judged_only_on_matched_edges() -> None:
    s = score_episode(episode([gold("A", "T", "B", valid=dt(2020, 1, 1), valid_g="year")]), [])
    assert (s.valid_at_total, s.invalid_at_total) == (0, 0)
    assert aggregate([s]).valid_at_accuracy is None


# ---------------------------------------------------------------------------------- non-exhaustive


def test_non_exhaustive_counts_only_predictions_sharing_source_and_type() -> None:
    edges = [gold("Alice", "WORKS_AT", "Acme", aliases=("EMPLOYED_BY",))]
    preds = [
        pred("Alice", "WORKS_AT", "Acme"),  # match
        pred("Alice", "WORKS_AT", "Globex"),  # same source and type: counted
        pred("Alice", "EMPLOYED_BY", "Initech"),  # same source, alias type: counted
        pred("Alice", "LIVES_IN", "Paris"),  # same source, other type: forgiven
        pred("Bob", "WORKS_AT", "Acme"),  # other source: forgiven
    ]
    s = score_episode(episode(edges, exhaustive=False), preds)
    assert (s.tp, s.fp, s.fn) == (1, 2, 0)
    assert [e.target_entity_name for e in s.ignored] == ["Paris", "Acme"]
    assert [x.predicted.target_entity_name for x in s.spurious] == ["Globex", "Initech"]
    assert (s.pair_tp, s.pair_fp) == (1, 3)  # pairs: the source alone decides; Bob's edge forgiven
    exhaustive = score_episode(episode(edges, exhaustive=True), preds)
    assert (exhaustive.tp, exhaustive.fp, exhaustive.pair_fp) == (1, 4, 4) and exhaustive.ignored == ()


def test_non_exhaustive_keeps_duplicates_and_reversed_labels() -> None:
    edges = [gold("Alice", "WORKS_AT", "Acme")]
    preds = [
        pred("Alice", "WORKS_AT", "Acme"),
        pred("Alice", "WORKS_AT", "Acme"),
        pred("Acme", "WORKS_AT", "Bob"),
    ]
    s = score_episode(episode(edges, exhaustive=False), preds)
    assert (s.tp, s.fp) == (1, 1) and s.spurious[0].duplicate and len(s.ignored) == 1

    reversed_only = score_episode(episode(edges, exhaustive=False), [pred("Acme", "WORKS_AT", "Alice")])
    assert (reversed_only.fp, reversed_only.fn) == (0, 1)
    assert len(reversed_only.reversed) == 1 and not reversed_only.reversed[0].counted


# ----------------------------------------------------------------------------------------- empties


def test_empty_gold_and_empty_prediction_is_perfect() -> None:
    s = score_episode(episode([]), [])
    assert (s.tp, s.fp, s.fn) == (0, 0, 0)
    assert s.f1 == 1.0 and s.pair_f1 == 1.0 and s.precision == 1.0 and s.recall == 1.0
    assert "you wrote none" in feedback_text(s)


def test_empty_gold_with_predictions_scores_zero() -> None:
    s = score_episode(episode([]), [pred("A", "T", "B")])
    assert (s.tp, s.fp, s.fn, s.f1) == (0, 1, 0, 0.0)


def test_empty_prediction_with_gold_scores_zero() -> None:
    s = score_episode(episode([gold("A", "T", "B")]), [])
    assert (s.tp, s.fp, s.fn, s.f1) == (0, 0, 1, 0.0) and len(s.missed) == 1


# ---------------------------------------------------------------------------------------- feedback


def test_feedback_names_every_kind_of_mistake() -> None:
    ep = episode(
        [
            gold(
                "Alice", "WORKS_AT", "Acme", "Alice joined Acme in 2020", valid=dt(2020, 1, 1), valid_g="year"
            ),
            gold("Bob", "MANAGES", "Carol", "Bob manages Carol"),
            gold("Dan", "FOUNDED", "Globex", "Dan founded Globex"),
            gold("Eve", "LIVES_IN", "Paris", "Eve lives in Paris"),
        ]
    )
    preds = [
        pred("Alice", "WORKS_AT", "Acme", valid=dt(2021, 3, 1)),
        pred("Carol", "MANAGES", "Bob"),
        pred("Dan", "OWNS", "Globex"),
        pred("Eve", "KNOWS", "Dan", "Eve knows Dan"),
    ]
    text = feedback_text(score_episode(ep, preds))
    assert "Edge-F1 0.25: 1 of 4 gold edges found, 3 wrong edges counted." in text
    assert 'Missed: Eve -LIVES_IN-> Paris ("Eve lives in Paris").' in text
    assert "Reversed: you wrote Carol -MANAGES-> Bob, but the text says Bob -MANAGES-> Carol" in text
    assert "Mistyped: you wrote Dan -OWNS-> Globex, but the type should be FOUNDED" in text
    assert 'Spurious: Eve -KNOWS-> Dan ("Eve knows Dan")' in text
    assert (
        "Wrong validAt: Alice -WORKS_AT-> Acme should have 2020 (known to the year); you wrote 2021-03-01T00:00:00Z."
        in text
    )


def test_feedback_for_a_perfect_answer_says_so_and_lists_no_mistakes() -> None:
    ep = episode([gold("A", "T", "B", "A t B")])
    text = feedback_text(score_episode(ep, [pred("A", "T", "B")]))
    assert "All 1 gold edges found" in text
    assert not any(word in text for word in ("Missed", "Spurious", "Reversed", "Mistyped", "Wrong"))


def test_feedback_mentions_aliases_duplicates_and_null_gold_dates() -> None:
    ep = episode([gold("A", "T", "B", aliases=("U",)), gold("C", "V", "D")])
    preds = [
        pred("A", "X", "B"),
        pred("C", "V", "D", valid=dt(2020, 1, 1)),
        pred("C", "V", "D", valid=dt(2020, 1, 1)),
    ]
    text = feedback_text(score_episode(ep, preds))
    assert "the type should be T (or U)" in text
    assert "Duplicate: C -V-> D was written more than once" in text
    assert (
        "Wrong validAt: C -V-> D should have null (the text gives no such date); you wrote 2020-01-01T00:00:00Z."
        in text
    )


# ------------------------------------------------------------------------------------- aggregation


def _two_episode_scores() -> list[EpisodeScore]:
    first = score_episode(
        episode(
            [gold("A", "WORKS_AT", "B"), gold("C", "WORKS_AT", "D"), gold("E", "LIVES_IN", "F")],
            source="news",
            episode_id="1",
        ),
        [pred("A", "WORKS_AT", "B"), pred("C", "WORKS_AT", "D"), pred("E", "LIVES_IN", "F")],
    )  # tp 3
    second = score_episode(
        episode([gold("A", "WORKS_AT", "B")], source="wiki", episode_id="2"),
        [pred("A", "OWNS", "B")],
    )  # tp 0, fp 1 (OWNS), fn 1 (WORKS_AT)
    return [first, second]


def test_aggregate_micro_macro_and_breakdowns() -> None:
    split = aggregate(_two_episode_scores())
    assert (split.episodes, split.tp, split.fp, split.fn) == (2, 3, 1, 1)
    assert split.edge_f1 == pytest.approx(6 / 8)
    assert split.edge_f1_macro == pytest.approx(0.5)
    assert split.precision == pytest.approx(0.75) and split.recall == pytest.approx(0.75)
    assert (split.pair_tp, split.pair_fp, split.pair_fn, split.pair_f1) == (4, 0, 0, 1.0)
    assert split.valid_at_accuracy == 1.0 and split.valid_at_total == 3
    assert set(split.per_source) == {"news", "wiki"}
    assert split.per_source["news"].edge_f1 == 1.0 and split.per_source["wiki"].edge_f1 == 0.0
    assert split.per_source["wiki"].per_source == {}
    types = {name: (c.tp, c.fp, c.fn) for name, c in split.per_type.items()}
    assert types == {"LIVES_IN": (1, 0, 0), "OWNS": (0, 1, 0), "WORKS_AT": (2, 0, 1)}
    assert split.per_type["WORKS_AT"].f1 == pytest.approx(0.8)
    assert split.model_dump()["per_type"]["OWNS"]["precision"] == 0.0


SUMMED_COUNTS = tuple(
    name for name in SplitScore.model_fields if name in EpisodeScore.model_fields and name != "per_type"
)
"""The counts an episode and a split both name: a split's is the sum of its episodes'."""


def test_aggregate_sums_every_count_per_source_and_over_the_split() -> None:
    """Every count lands in the split under its own name: each count has its own value, so a count
    dropped, or read from another's slot, shows."""

    def counted(source: str, scale: int) -> EpisodeScore:
        counts = {name: scale * (position + 1) for position, name in enumerate(SUMMED_COUNTS)}
        return EpisodeScore(episode_id=f"{source}-{scale}", source=source, n_gold=0, n_predicted=0, **counts)

    split = aggregate([counted("news", 1), counted("wiki", 10), counted("news", 100)])
    for position, name in enumerate(SUMMED_COUNTS):
        assert getattr(split, name) == 111 * (position + 1), name
        assert getattr(split.per_source["news"], name) == 101 * (position + 1), name
        assert getattr(split.per_source["wiki"], name) == 10 * (position + 1), name
    assert (split.episodes, split.per_source["news"].episodes) == (3, 2)


def test_aggregate_of_nothing_is_vacuous() -> None:
    split = aggregate([])
    assert split.episodes == 0 and split.edge_f1 == 1.0 and split.valid_at_accuracy is None


def test_bootstrap_interval_contains_the_point_estimate_and_is_reproducible() -> None:
    scores = []
    for i in range(30):
        edges = [gold("A", "T", "B"), gold("C", "T", "D"), gold("E", "T", "F")]
        preds = [pred("A", "T", "B")] + ([pred("C", "T", "D")] if i % 2 else [pred("X", "T", "Y")])
        scores.append(score_episode(episode(edges, episode_id=str(i)), preds))
    point = aggregate(scores).edge_f1
    low, high = bootstrap_ci(scores, n_resamples=300, seed=1)
    assert 0.0 <= low < point < high <= 1.0
    assert bootstrap_ci(scores, n_resamples=300, seed=1) == (low, high)
    macro_low, macro_high = bootstrap_ci(scores, n_resamples=300, stat="edge_f1_macro")
    assert macro_low <= aggregate(scores).edge_f1_macro <= macro_high


def test_bootstrap_rejects_bad_input() -> None:
    with pytest.raises(ValueError, match="no episode scores"):
        bootstrap_ci([])
    with pytest.raises(ValueError, match="unknown stat"):
        bootstrap_ci(_two_episode_scores(), stat="accuracy")  # type: ignore[arg-type]
    empty = [score_episode(episode([]), [])]
    with pytest.raises(ValueError, match="undefined"):
        bootstrap_ci(empty, n_resamples=10, stat="valid_at_accuracy")


# ---------------------------------------------------------------------------------- optimizer metric


def test_edge_metric_returns_score_and_feedback() -> None:
    ep = episode([gold("Alice", "WORKS_AT", "Acme", "Alice joined Acme"), gold("Bob", "T", "Carol")])
    example = dspy.Example(episode=ep.episode(), labeled=ep).with_inputs("episode")
    result = edge_metric(example, dspy.Prediction(edges=[pred("Alice", "WORKS_AT", "Acme")]))
    assert isinstance(result, dspy.Prediction)
    assert result.score == pytest.approx(2 / 3)
    assert "Missed: Bob -T-> Carol." in result.feedback
    assert float(result) == pytest.approx(2 / 3)
    assert sum([result, result]) == pytest.approx(4 / 3)  # how dspy.Evaluate totals scores
    assert result >= 0.5  # how BootstrapFewShot applies metric_threshold
    dict_edges = dspy.Prediction(edges=[pred("Alice", "WORKS_AT", "Acme").to_json_dict()])
    assert edge_metric(example, dict_edges).score == pytest.approx(2 / 3)


@pytest.mark.parametrize("prediction", [None, dspy.Prediction(answer="x"), dspy.Prediction(edges=None)])
def test_edge_metric_scores_a_failed_program_zero(prediction: object) -> None:
    ep = episode([gold("A", "T", "B")])
    result = edge_metric(dspy.Example(labeled=ep), prediction)
    assert result.score == 0.0 and "program failed" in result.feedback


def test_edge_metric_names_a_missing_label() -> None:
    with pytest.raises(ValueError, match="'labeled'"):
        edge_metric(dspy.Example(question="q"), dspy.Prediction(edges=[]))


def test_dspy_evaluate_averages_the_metric_scores() -> None:
    class Echo(dspy.Module):
        """Returns the first gold edge of each episode as its prediction: no LM needed."""

        def forward(self, labeled: LabeledEpisode) -> dspy.Prediction:
            return dspy.Prediction(edges=[as_prediction(labeled.edges[0])])

    one = episode([gold("A", "T", "B")], episode_id="1")  # F1 1.0
    two = episode([gold("A", "T", "B"), gold("C", "T", "D"), gold("E", "T", "F")], episode_id="2")  # F1 0.5
    devset = [dspy.Example(labeled=e).with_inputs("labeled") for e in (one, two)]
    result = dspy.Evaluate(devset=devset, metric=edge_metric, num_threads=1, display_progress=False)(Echo())
    assert result.score == pytest.approx(75.0)


# ------------------------------------------------------------------------------------- properties

NAMES = ["Alice", "Bob", "Acme", "Paris"]
TYPES = ["WORKS_AT", "KNOWS", "LIVES_IN"]
DATES = [None, dt(2020, 1, 1), dt(2020, 6, 15, 8, 30)]

gold_edges = st.builds(
    gold,
    src=st.sampled_from(NAMES),
    kind=st.sampled_from(TYPES),
    tgt=st.sampled_from(NAMES),
    aliases=st.lists(st.sampled_from(TYPES), max_size=1).map(tuple),
    valid=st.sampled_from(DATES),
    valid_g=st.sampled_from(["year", "month", "day", "instant", None]),
    invalid=st.sampled_from(DATES),
)
pred_edges = st.builds(
    pred,
    src=st.sampled_from(NAMES),
    kind=st.sampled_from(TYPES),
    tgt=st.sampled_from(NAMES),
    valid=st.sampled_from(DATES),
)
episodes = st.builds(
    episode,
    edges=st.lists(gold_edges, max_size=6),
    symmetric=st.lists(st.sampled_from(TYPES), max_size=2).map(tuple),
    exhaustive=st.booleans(),
)


def _brute_force_matches(ep: LabeledEpisode, preds: list[Edge], typed: bool = True) -> int:
    """The largest one-to-one matching by trying every assignment (tiny inputs only).

    With `typed=False` the type is ignored, as pair-F1 ignores it.
    """
    symmetric = {t.name for t in ep.edge_types if t.symmetric}

    def ok(p: Edge, g: GoldEdge) -> bool:
        if typed and p.relationship_type not in {g.relationship_type, *g.aliases}:
            return False
        forward = (p.source_entity_name, p.target_entity_name) == (g.source_entity_name, g.target_entity_name)
        backward = (p.source_entity_name, p.target_entity_name) == (
            g.target_entity_name,
            g.source_entity_name,
        )
        return forward or (g.relationship_type in symmetric and backward)

    candidates = [[g for g, ge in enumerate(ep.edges) if ok(p, ge)] for p in preds]

    def best(i: int, used: frozenset[int]) -> int:
        if i == len(preds):
            return 0
        skip = best(i + 1, used)
        take = [1 + best(i + 1, used | {g}) for g in candidates[i] if g not in used]
        return max([skip, *take])

    return best(0, frozenset())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ep=episodes, data=st.data())
def test_perfect_prediction_scores_one(ep: LabeledEpisode, data: st.DataObject) -> None:
    preds = data.draw(st.permutations([as_prediction(g) for g in ep.edges]))
    s = score_episode(ep, preds)
    assert s.f1 == 1.0 and s.pair_f1 == 1.0
    assert s.valid_at_right == s.valid_at_total == len(ep.edges)
    assert s.invalid_at_right == s.invalid_at_total == len(ep.edges)
    assert edge_metric(dspy.Example(labeled=ep), dspy.Prediction(edges=preds)).score == 1.0


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ep=episodes, preds=st.lists(pred_edges, max_size=5))
def test_scores_stay_in_range_and_counts_add_up(ep: LabeledEpisode, preds: list[Edge]) -> None:
    s = score_episode(ep, preds)
    for value in (s.f1, s.pair_f1, s.precision, s.recall):
        assert 0.0 <= value <= 1.0
    assert s.tp + s.fn == s.n_gold and s.pair_tp + s.pair_fn == s.n_gold
    assert s.tp <= s.pair_tp  # an edge match is also a pair match
    assert s.tp + s.fp + len(s.ignored) + sum(not x.counted for x in [*s.reversed, *s.mistyped]) == len(preds)
    assert s.fp == len(s.spurious) + sum(x.counted for x in [*s.reversed, *s.mistyped])
    assert s.fn == len(s.missed) + len(s.reversed) + len(s.mistyped)
    assert s.tp == _brute_force_matches(ep, preds)
    split = aggregate([s])
    assert 0.0 <= split.edge_f1 <= 1.0 and 0.0 <= split.pair_f1 <= 1.0
    for acc in (split.valid_at_accuracy, split.invalid_at_accuracy):
        assert acc is None or 0.0 <= acc <= 1.0


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ep=episodes, preds=st.lists(pred_edges, max_size=5))
def test_pair_matches_are_a_maximum_and_scores_validate(ep: LabeledEpisode, preds: list[Edge]) -> None:
    s = score_episode(ep, preds)
    assert s.pair_tp == _brute_force_matches(ep, preds, typed=False)
    assert EpisodeScore(**dict(s)) == s


def test_each_metric_takes_dspy_s_five_parameters_under_its_own_name() -> None:
    """GEPA binds five arguments to a metric; `dspy.Evaluate` names a metric function by `__name__`."""
    import inspect

    from edgewise.eval.feedback import edge_and_attribute_metric

    for metric, name in (
        (edge_metric, "edge_metric"),
        (edge_and_attribute_metric, "edge_and_attribute_metric"),
    ):
        inspect.signature(metric).bind(None, None, None, None, None)
        assert metric.__name__ == name and metric.__doc__
