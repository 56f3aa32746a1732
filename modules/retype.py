"""Re-typing by question: the edges whose type cannot connect their ends, asked about in one call.

`type_signatures.check_signatures(retype="ask")` hands over each such edge with the vocabulary types
that can connect its ends; the extractor puts one multiple-choice question per edge to the model
(`signatures.choose_types`, all of an episode's questions in one call), and `apply_answers` re-types
the edges by the answers. An answer of NONE, or a reply of the wrong length, drops the edge as the
signatures would have, with a warning that says so.
"""

from __future__ import annotations

from collections.abc import Sequence

from edgewise.domain.types import Edge, ExtractionWarning
from edgewise.modules.call_context import CallContext
from edgewise.modules.type_signatures import Conflict, retyped
from edgewise.signatures.choose_types import NONE_OF_THEM


def questions(conflicts: Sequence[Conflict]) -> list[str]:
    """One numbered question per edge: its two ends as written, its fact, its options."""
    return [
        f"{number}. {c.edge.source_entity_name} -> {c.edge.target_entity_name}: {c.edge.fact} | options: "
        + ", ".join([name for name, _ in c.options] + [NONE_OF_THEM])
        for number, c in enumerate(conflicts, 1)
    ]


def options_of(conflicts: Sequence[Conflict]) -> list[list[str]]:
    """Each question's answer options (NONE comes with the reply schema)."""
    return [[name for name, _ in conflict.options] for conflict in conflicts]


def _dropped(conflict: Conflict, why: str) -> ExtractionWarning:
    edge = conflict.edge
    return ExtractionWarning(
        code="type_signature",
        message=f"dropped: {edge.relationship_type} cannot connect its ends, and {why}",
        edge=edge.to_json_dict(),
    )


def apply_answers(conflicts: Sequence[Conflict], answers: Sequence[str], context: CallContext) -> list[Edge]:
    """The conflicting edges re-typed by the model's answers; the others are dropped with a warning."""
    answers = [str(answer).strip() for answer in answers]
    if len(answers) != len(conflicts):
        context.warn_all(
            _dropped(c, f"the re-typing reply had {len(answers)} answers for {len(conflicts)} questions")
            for c in conflicts
        )
        return []
    edges: list[Edge] = []
    for conflict, answer in zip(conflicts, answers, strict=True):
        flips = dict(conflict.options)
        if answer in flips:
            edges.append(retyped(conflict.edge, answer, flips[answer], "the model chose", context))
        else:
            context.warn(_dropped(conflict, f"the model answered {answer or 'nothing'}"))
    return edges
