"""Plain-words feedback on an episode's score, and the DSPy metric the optimizers call.

`feedback_text` turns an `EpisodeScore`'s records into one line per mistake for a reflecting
optimizer (GEPA); `edge_metric` is the `dspy` metric: the episode's edge-F1 with that feedback, and
`edge_and_attribute_metric` the same with attribute accuracy in the score, for a search that tunes the
attribute step.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

import dspy

from edgewise.domain.errors import UsageError
from edgewise.domain.gold import GoldEdge, LabeledEpisode
from edgewise.domain.types import Edge, format_utc
from edgewise.eval.dates import UNSTATED_GRANULARITY, format_date
from edgewise.eval.entity_metric import run_score
from edgewise.eval.records import EpisodeScore, WrongAttribute, WrongDate

_FEEDBACK_MAX_ITEMS: Final[int] = 12
"""Items listed per kind of mistake in feedback; long lists drown the lesson in a reflection prompt."""


def format_edge(edge: Edge) -> str:
    """`Alice -WORKS_AT-> Acme`: the notation the feedback uses for an edge."""
    return f"{edge.source_entity_name} -{edge.relationship_type}-> {edge.target_entity_name}"


def _fact(edge: Edge) -> str:
    return f' ("{edge.fact}")' if edge.fact else ""


def _limited(lines: list[str]) -> list[str]:
    if len(lines) <= _FEEDBACK_MAX_ITEMS:
        return lines
    return [*lines[:_FEEDBACK_MAX_ITEMS], f"... and {len(lines) - _FEEDBACK_MAX_ITEMS} more like these."]


def _wrong_date_line(w: WrongDate) -> str:
    gold_value = w.gold.valid_at if w.field == "validAt" else w.gold.invalid_at
    pred_value = w.predicted.valid_at if w.field == "validAt" else w.predicted.invalid_at
    if gold_value is None:
        expected = "null (the text gives no such date)"
    else:
        level = w.granularity or UNSTATED_GRANULARITY
        expected = f"{format_date(gold_value, w.granularity)} (known to the {_LEVEL_WORD[level]})"
    got = "null" if pred_value is None else format_utc(pred_value)
    return f"Wrong {w.field}: {format_edge(w.predicted)} should have {expected}; you wrote {got}."


def _wrong_attribute_line(w: WrongAttribute) -> str:
    gold_value = w.gold.attributes.get(w.name)
    expected = "null (the text does not say)" if gold_value is None else json.dumps(gold_value)
    written = w.predicted.attributes.get(w.name)
    got = "null" if written is None else json.dumps(written, ensure_ascii=False)
    return f"Wrong attribute: {format_edge(w.predicted)} should have {w.name} {expected}; you wrote {got}."


_LEVEL_WORD: Final[dict[str, str]] = {"year": "year", "month": "month", "day": "day", "instant": "second"}


def feedback_text(score: EpisodeScore) -> str:
    """Plain words on what an extraction got wrong, one line per mistake, for a reflecting optimizer."""
    lines = [
        (
            f"Edge-F1 {score.f1:.2f}: {score.tp} of {score.n_gold} gold edges found, "
            f"{score.fp} wrong edges counted."
        )
    ]
    if score.n_gold == 0 and score.n_predicted == 0:
        lines.append("Correct: the text states no relationship between the entities and you wrote none.")
    lines += _limited([f"Missed: {format_edge(m.gold)}{_fact(m.gold)}." for m in score.missed])
    lines += _limited(
        [
            f"Reversed: you wrote {format_edge(r.predicted)}, but the text says "
            f"{format_edge(r.gold)}{_fact(r.gold)}; source and target are swapped."
            for r in score.reversed
        ]
    )
    lines += _limited(
        [
            f"Mistyped: you wrote {format_edge(m.predicted)}, but the type should be "
            f"{_accepted(m.gold)}{_fact(m.gold)}."
            for m in score.mistyped
        ]
    )
    lines += _limited(
        [
            f"Duplicate: {format_edge(s.predicted)} was written more than once; only one copy counts."
            if s.duplicate
            else f"Spurious: {format_edge(s.predicted)}{_fact(s.predicted)} is not stated in the text "
            "as a relationship of that type."
            for s in score.spurious
        ]
    )
    lines += _limited([_wrong_date_line(w) for w in score.wrong_dates])
    lines += _limited([_wrong_attribute_line(w) for w in score.wrong_attributes])
    if score.ignored:
        lines.append(
            f"Not judged: {len(score.ignored)} edge(s) outside what this example labels "
            "(it lists only some facts)."
        )
    found_all = score.tp == score.n_gold and score.fp == 0 and score.n_gold
    if found_all and not score.wrong_dates and not score.wrong_attributes:
        attributes = " and attributes" if score.attribute_total else ""
        lines.append(f"All {score.n_gold} gold edges found with correct dates{attributes}.")
    return "\n".join(lines)


def _accepted(gold: GoldEdge) -> str:
    if not gold.aliases:
        return gold.relationship_type
    return f"{gold.relationship_type} (or {', '.join(gold.aliases)})"


def _as_edges(raw: Any) -> list[Edge]:
    if isinstance(raw, list) and all(isinstance(e, Edge) for e in raw):
        return raw
    return [e if isinstance(e, Edge) else Edge.model_validate(e) for e in raw]


Metric = Callable[..., dspy.Prediction]
"""A DSPy metric: `(example, prediction, trace=None, pred_name=None, pred_trace=None)` to a Prediction."""


def _metric(name: str, value: Callable[[EpisodeScore], float], doc: str) -> Metric:
    """The DSPy metric named `name` that scores an episode by `value` of its `EpisodeScore`.

    DSPy's signature (GEPA binds all five parameters) is written here once; each metric is its `value`.
    The name is what `dspy.Evaluate` shows for a metric function.
    """

    def metric(
        example: Any,
        prediction: Any,
        trace: Any = None,
        pred_name: str | None = None,
        pred_trace: Any = None,
    ) -> dspy.Prediction:
        return _scored(example, prediction, value)

    metric.__name__ = metric.__qualname__ = name
    metric.__doc__ = doc
    return metric


def _edge_and_attribute_score(score: EpisodeScore) -> float:
    if not score.attribute_total:
        return score.f1
    return (score.f1 + score.attribute_right / score.attribute_total) / 2


def _scored(example: Any, prediction: Any, value: Callable[[EpisodeScore], float]) -> dspy.Prediction:
    """The metrics' one body: the example's episode scored, `value` of its score, and the feedback."""
    labeled = example.get("labeled") if hasattr(example, "get") else getattr(example, "labeled", None)
    if labeled is None:
        raise UsageError("edge_metric: the example has no field 'labeled' holding the LabeledEpisode")
    if not isinstance(labeled, LabeledEpisode):
        labeled = LabeledEpisode.model_validate(labeled)
    raw_edges = None if prediction is None else getattr(prediction, "edges", None)
    if raw_edges is None:
        return dspy.Prediction(
            score=0.0,
            feedback=(
                "The program failed: it returned no edges list (an error or an unparseable reply). "
                f"The text has {len(labeled.edges)} gold edges."
            ),
        )
    try:
        edges = _as_edges(raw_edges)
    except (TypeError, ValueError) as err:
        return dspy.Prediction(
            score=0.0, feedback=f"The program failed: its edges do not have the Edge shape ({err})."
        )
    withheld = bool(example.get("entities_withheld")) if hasattr(example, "get") else False
    result = getattr(prediction, "result", None)
    score = run_score(labeled, edges, getattr(result, "entities", None), entities_withheld=withheld)
    return dspy.Prediction(score=value(score), feedback=feedback_text(score))


edge_metric: Final = _metric(
    "edge_metric",
    lambda score: score.f1,
    """DSPy metric: `Prediction(score=edge-F1 of the episode, feedback=plain-words mistakes)`.

    `example.labeled` holds the `LabeledEpisode`; `prediction.edges` the predicted edges. The score is
    plain edge-F1, the same for every `pred_name` (GEPA expects module-level scores); for an example
    sent as text alone (`entities_withheld`), the edge-F1 through the entities the program found
    (`edgewise.eval.entity_metric.run_score`), which is how an entity step is tuned. A prediction
    without edges scores 0 with feedback saying the program failed.

    `dspy.Evaluate` sums these Predictions as floats and GEPA reads `.score` and `.feedback`. A
    Prediction is always truthy, so `BootstrapFewShot` needs `metric_threshold` (e.g. 1.0) to reject
    imperfect traces.
    """,
)
edge_and_attribute_metric: Final = _metric(
    "edge_and_attribute_metric",
    _edge_and_attribute_score,
    """`edge_metric` whose score also counts attributes: what an instruction search tuning `attributes` uses.

    On an episode where the matched edges label attributes, the score is the mean of edge-F1 and
    attribute accuracy; elsewhere it is edge-F1, as `edge_metric`'s. Without the attribute half, no
    change to the attribute step's instructions could move the score a search keeps candidates by.
    """,
)
