"""The warnings a step notes through its `CallContext`, and the reply-count check steps share."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import dspy

from edgewise.domain.types import Edge, ExtractionWarning
from edgewise.modules.call_context import CallContext
from edgewise.modules.calls import OneEach, answers_each


def _edge() -> Edge:
    return Edge(
        relationship_type="WORKS_AT",
        source_entity_name="Ann",
        target_entity_name="Acme",
        fact="Ann works at Acme.",
        valid_at=datetime(2024, 1, 1, tzinfo=UTC),
    )


def test_a_noted_warning_is_the_one_built_by_hand_with_or_without_its_edge() -> None:
    context = CallContext()
    edge = _edge()
    context.note("duplicate", "dropped: a copy", edge)
    context.note("pairs_capped", "cut")
    about, plain = context.warnings
    assert about == ExtractionWarning(code="duplicate", message="dropped: a copy", edge=edge.to_json_dict())
    assert plain == ExtractionWarning(code="pairs_capped", message="cut")
    assert "edge" not in plain.model_fields_set  # unset, as a warning built by hand without one


def test_capped_keeps_the_first_items_and_warns_only_when_it_cut() -> None:
    context = CallContext()
    assert context.capped([1, 2, 3], 3, "capped", "3 of 3") == [1, 2, 3]
    assert context.warnings == []
    assert context.capped([1, 2, 3], 2, "capped", "3 items, 2 kept") == [1, 2]
    assert [(w.code, w.message) for w in context.warnings] == [("capped", "3 items, 2 kept")]


def test_a_reply_with_another_count_of_answers_is_refused_with_a_warning_that_counts_both() -> None:
    context = CallContext()
    each = OneEach("stated", "verify_mismatch", "the precision step", "edges", "every edge kept")

    def replying(*verdicts: bool) -> Callable[[dict[str, Any]], dspy.Prediction]:
        return lambda settings: dspy.Prediction(stated=list(verdicts))

    assert answers_each("verify", context, replying(True, False), {}, 2, each) == [True, False]
    assert context.warnings == []
    assert answers_each("verify", context, replying(True), {}, 3, each) is None
    (warning,) = context.warnings
    assert warning.code == "verify_mismatch"
    assert warning.message == "the precision step answered 1 times for 3 edges: every edge kept"
