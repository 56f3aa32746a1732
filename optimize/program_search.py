# Over 400 lines: the levers and the loop that keeps one at a time read as one procedure.
"""`--optimizer program`: choose what the model is asked to do, one lever at a time, by paired dev effect.

Instructions and demos tuned for a small model did not move its quality beyond noise; its errors are
edges it never writes, wrong types and directions, dates, and edges the episode does not state. The
levers here change the task itself (`ProgramOptions`) or add gold demos. The search is greedy and
keeps a lever only when its paired bootstrap 95% interval of dev edge-F1 against the program so far
lies above 0, so a model gets the precision step only if the precision step helps that model.

Levers are tried in a fixed order: the input order and the formulation first (every later lever is
judged on top of them), then type signatures, the typed grammar that asks each entity pair only for
the types its entity types allow, and what becomes of the edges they rule out, the levers
that ask the model for more (gleaning, samples), the fact as a span, dates from facts
(post-processing only: with DSPy's cache on, their dev pass repeats cached requests), the precision
step (one short call per episode), then gold demos. A lever with several alternatives (the
formulation: pairs or entities) scores each against the same program so far and keeps the best of
those whose interval lies above 0. A lever whose dev pass the remaining `--budget` cannot pay for is
skipped and recorded as such, so the search ends by itself.

The fact as a span is a cost lever: it is kept when edge-F1 is no worse (the upper bound of its
paired interval above 0) and the median episode takes at most `SPAN_MAX_TIME_RATIO` of the time, both
programs timed on dev without DSPy's cache.

The attribute formulation comes last, judged by attribute accuracy on the matched edges, and may
also win on LM calls (`CALL_COST_LEVERS`): one call per episode, or none, against one per edge.
Attribute grounding (drop a text value whose words the episode lacks) follows it, judged the same way.

The two defences against text that tells a memory what to record, `quoted_text_check` (drop an edge
whose only evidence is quoted or forwarded text) and `speaker_marks` (the model marks who states each
edge), come after the speaker names and are judged by dev edge-F1 like the others, since dev episodes
label no injection: one is kept only where dropping edges raises dev edge-F1. What a defence does to
the injected-edge rate is measured by `edgewise bench` on episodes that label injections
(`edgewise.eval.injection`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Final, NamedTuple

from edgewise.domain.errors import UsageError
from edgewise.domain.gold import LabeledEpisode
from edgewise.eval.intervals import Stat, stat_value
from edgewise.eval.paired import paired_difference
from edgewise.modules.extractor import EdgeExtractor
from edgewise.modules.options import ProgramOptions
from edgewise.modules.type_signatures import TypeSignatures

LEVERS: Final[tuple[str, ...]] = (
    "input_order",
    "formulation",
    "type_signatures",
    "typed_grammar",
    "retype",
    "gleaning",
    "samples",
    "fact_span",
    "fact_dates",
    "date_guards",
    "speaker_names",
    "quoted_text_check",
    "speaker_marks",
    "precision",
    "gold_demos",
    "attributes",
    "attribute_grounding",
)
"""The levers in the order the search tries them."""

ALTERNATIVES: Final[dict[str, tuple[dict[str, Any], ...]]] = {
    "input_order": ({"input_order": "seed"},),
    "formulation": ({"formulation": "pairs"}, {"formulation": "entities"}),
    # Learned signatures know only the train split's entity types: a type it never used is no
    # evidence against an edge (declared signatures stay strict).
    "type_signatures": ({"type_signatures": True, "unseen_types_open": True},),
    "typed_grammar": ({"typed_grammar": True},),
    "retype": ({"retype": "unique"}, {"retype": "ask"}),
    "gleaning": ({"gleaning": 1}, {"gleaning": 1, "glean_forced": True}),
    "samples": ({"samples": 3, "votes": 2}, {"samples": 2, "votes": 1}),
    "fact_span": ({"fact_span": True},),
    "fact_dates": ({"fact_dates": True},),
    "date_guards": ({"date_guards": True},),
    "speaker_names": ({"speaker_names": True},),
    "quoted_text_check": ({"quoted_text_check": True},),
    "speaker_marks": ({"speaker_marks": True},),
    "precision": ({"precision": True},),
    "attributes": ({"attributes": "per-episode"}, {"attributes": "in-extraction"}),
    "attribute_grounding": ({"attribute_grounding": True},),
}
"""Each lever's candidate changes to the program so far, tried in this order."""

JUDGED_BY: Final[dict[str, Stat]] = {
    "fact_dates": "valid_at_accuracy",
    "date_guards": "valid_at_accuracy",
    "attributes": "attribute_accuracy",
    "attribute_grounding": "attribute_accuracy",
}
"""The statistic a lever is judged by when it is not edge-F1: dates from facts and the date guards
change no edge, only validAt, so they are judged by validAt accuracy on the matched edges, and the
attribute formulations by attribute accuracy there (paired, the same rule). Every lever's result also
lists its statistic per source (`by_source`), since a date rule that helps on conversations may hurt
on TempReason."""

CALL_COST_LEVERS: Final = frozenset({"attributes"})
"""Levers whose alternatives may also win on LM calls: one is kept when its statistic is better
beyond noise, or no worse (the upper bound of its paired interval at least 0) with fewer LM calls
per dev episode than the program so far, which is scored again for its count (DSPy's cache answers
it); edge-F1 may not be worse either. Of several kept, one better beyond noise wins by its
difference, else the one with the fewest calls."""

COST_LEVERS: Final = frozenset({"fact_span"})
"""Levers kept for what they save, not what they gain (see the module docstring)."""
SPAN_MAX_TIME_RATIO: Final = 0.8


class LeverResult(NamedTuple):
    """One lever as the search judged it (what the manifest's `levers` and docs/results.md's table list).

    `difference` [`low`, `high`] is the paired difference of `stat` against the program so far;
    `dev_*` are the candidate's own figures on the dev episodes.
    """

    lever: str
    value: Any
    stat: str
    difference: float | None
    low: float | None
    high: float | None
    kept: bool
    calls: int
    time_ratio: float | None = None
    by_source: dict[str, tuple[float | None, float | None]] | None = None
    """The judged statistic per source: (the program so far, the candidate)."""
    dev_edge_f1: float | None = None
    dev_precision: float | None = None
    dev_recall: float | None = None
    dev_valid_at_accuracy: float | None = None
    note: str = ""
    dev_attribute_accuracy: float | None = None
    calls_per_episode: float | None = None
    """LM calls per dev episode of the candidate's pass (replies from DSPy's cache included), for a
    lever in `CALL_COST_LEVERS`."""

    def record(self) -> dict[str, Any]:
        row = self._asdict()
        if self.by_source is not None:
            row["by_source"] = {
                source: [_rounded(before), _rounded(after)]
                for source, (before, after) in self.by_source.items()
            }
        return {key: _rounded(value) for key, value in row.items()}


def parse_lever(spec: str) -> tuple[str, tuple[dict[str, Any], ...]]:
    """`name` (every alternative of the lever) or `name=value` (the alternative listed as that value,
    e.g. `formulation=entities`, `gleaning=1 forced`): the lever and the alternatives to try."""
    name, _, value = spec.partition("=")
    name = name.strip()
    if name not in LEVERS:
        raise UsageError(f"unknown lever {name!r}; known: {', '.join(LEVERS)}")
    alternatives = ALTERNATIVES.get(name, ())
    if not value:
        return name, alternatives
    chosen = tuple(change for change in alternatives if str(value_of(name, change)) == value.strip())
    if not chosen:
        listed = ", ".join(str(value_of(name, change)) for change in alternatives) or "none"
        raise UsageError(f"lever {name} has no alternative {value.strip()!r}; its alternatives: {listed}")
    return name, chosen


Scorer = Callable[[EdgeExtractor, str], Any]
"""Scores a program on the dev sample (label for progress) and returns its `DevScore`."""


def value_of(lever: str, change: dict[str, Any]) -> Any:
    """A lever's value as the manifest lists it: the option it is named after (`samples`: with its
    vote threshold); the program's options say the rest."""
    if lever == "samples":
        return f"{change['samples']} votes {change['votes']}"
    if change.get("glean_forced"):
        return f"{change['gleaning']} forced"
    return change[lever] if lever in change else next(iter(change.values()))


def build_program(
    base: EdgeExtractor, options: ProgramOptions, signatures: TypeSignatures | None
) -> EdgeExtractor:
    """A program with `options`, `base`'s demos and settings, and the learned signatures."""
    program = EdgeExtractor(
        max_reflexion_rounds=base.max_reflexion_rounds,
        closed_types=base.closed_types,
        output_shape=base.output_shape,
        options=options,
        type_signatures=signatures,
    )
    if not options.fact_span:  # a span reply has another shape than the demos' edges
        program.extract.demos = list(base.extract.demos)
    return program


def lever_cost(lever: str, options: ProgramOptions, dev_size: int) -> int:
    """LM calls (DSPy's cached replies count too) one dev pass of the lever's candidate makes at most;
    a cost lever also times the program so far again, and a call-cost lever counts its calls again."""
    again = lever in COST_LEVERS or lever in CALL_COST_LEVERS
    return options.lm_calls_per_episode * dev_size * (2 if again else 1)


def search_program(
    *,
    student: EdgeExtractor,
    before: Any,
    score: Scorer,
    signatures: TypeSignatures,
    dev: Sequence[LabeledEpisode],
    gold_demos: Callable[[], list[Any]] | None,
    budget: int | None,
    calls_spent: Callable[[], int],
    say: Callable[[str], None] = lambda message: None,
    levers: Sequence[str] = LEVERS,
    score_uncached: Scorer | None = None,
    max_samples: int | None = None,
) -> tuple[EdgeExtractor, Any, list[LeverResult]]:
    """Greedy search over `levers`; returns the chosen program, its dev score and every lever's result.

    `levers` are names or `name=value` (`parse_lever`). `before` is the `DevScore` of `student` (the
    uncompiled program); `score` scores a candidate on
    the same dev episodes; `score_uncached` does so without DSPy's cache, for a cost lever's timing
    (None: cost levers are not judged); `gold_demos` gives the demos of the `gold_demos` lever
    (None: not tried); `max_samples` is how many replies one request may ask of the model (a local
    server's slots; None: no limit known).
    """
    current, current_score = student, before
    results: list[LeverResult] = []
    for spec in levers:
        lever, alternatives = parse_lever(spec)
        if lever == "gold_demos":
            if gold_demos is None:
                continue
            candidates = [(len(demos := gold_demos()), None, demos)]
        else:
            candidates = [(value_of(lever, change), change, None) for change in alternatives]
        tried: list[tuple[LeverResult, EdgeExtractor, Any]] = []
        for value, change, demos in candidates:
            attempt = _try(
                lever, value, change, demos, current, current_score, score, score_uncached, signatures,
                dev, budget, calls_spent, say, max_samples,
            )  # fmt: skip
            results.append(attempt[0])
            if attempt[1] is not None:
                tried.append(attempt)  # type: ignore[arg-type]
        kept = [attempt for attempt in tried if attempt[0].kept]
        if kept:
            best = max(kept, key=lambda attempt: _preference(lever, attempt[0]))
            for result, _, _ in kept:
                if result is not best[0]:
                    preferred = f"{best[0].value} was preferred: {_why(lever, best[0])}"
                    results[results.index(result)] = result._replace(
                        kept=False, note=f"{preferred}; {result.note}" if result.note else preferred
                    )
            current, current_score = best[1], best[2]
    return current, current_score, results


def _try(
    lever: str,
    value: Any,
    change: dict[str, Any] | None,
    demos: list[Any] | None,
    current: EdgeExtractor,
    current_score: Any,
    score: Scorer,
    score_uncached: Scorer | None,
    signatures: TypeSignatures,
    dev: Sequence[LabeledEpisode],
    budget: int | None,
    calls_spent: Callable[[], int],
    say: Callable[[str], None],
    max_samples: int | None,
) -> tuple[LeverResult, EdgeExtractor | None, Any]:
    """Score one alternative of `lever` against the program so far; (result, candidate, its score),
    the candidate None when it was not judged."""
    options = current.options
    if demos is not None:
        if options.formulation != "edges" or options.fact_span:
            return _skipped(lever, value, "demos are edge lists; this program's replies are not"), None, None
        candidate = build_program(current, options, signatures)
        candidate.extract.demos = demos
    else:
        assert change is not None
        try:
            candidate_options = ProgramOptions.model_validate(options.model_dump() | change)
        except ValueError as conflict:
            note = str(conflict).splitlines()[-1].strip()
            return _skipped(lever, value, f"does not combine with the program so far: {note}"), None, None
        if candidate_options == options:
            return _skipped(lever, value, "the program so far has it already"), None, None
        if candidate_options.formulation != "edges" and (
            current.max_reflexion_rounds or current.output_shape != "seed"
        ):
            return _skipped(lever, value, "needs the seed shape and no reflexion rounds"), None, None
        marked = candidate_options.attributes == "in-extraction" or candidate_options.speaker_marks
        if marked and current.output_shape != "seed":
            return _skipped(lever, value, "needs the seed reply shape"), None, None
        if lever == "samples" and max_samples is not None and candidate_options.samples > max_samples:
            note = (
                f"the model takes {max_samples} replies per request, this needs {candidate_options.samples}"
            )
            return _skipped(lever, value, note), None, None
        if lever in COST_LEVERS and score_uncached is None:
            return _skipped(lever, value, "a cost lever needs timings without DSPy's cache"), None, None
        candidate = build_program(current, candidate_options, signatures)
    cost = lever_cost(lever, candidate.options, len(dev))
    spent = calls_spent()
    if budget is not None and spent + cost > budget:
        result = _skipped(lever, value, f"the budget has {budget - spent} calls left, it needs {cost}")
        say(f"{lever}={value}: skipped ({result.note})")
        return result, None, None
    say(f"{lever}={value}: scoring on {len(dev)} dev episodes")
    time_ratio: float | None = None
    current_calls: float | None = None
    if lever in CALL_COST_LEVERS:
        counted = calls_spent()
        score(current, f"dev {lever}: the program so far, counted")
        current_calls = (calls_spent() - counted) / len(dev)
    candidate_spent = calls_spent()
    if lever in COST_LEVERS:
        assert score_uncached is not None
        scored = score_uncached(candidate, f"dev {lever}")
        baseline = score_uncached(current, f"dev {lever}: the program so far, timed")
        time_ratio = _ratio(scored.median_latency_s, baseline.median_latency_s)
    else:
        scored = score(candidate, f"dev {lever}")
    stat = JUDGED_BY.get(lever, "edge_f1_micro")
    try:
        paired = paired_difference(current_score.episode_scores, scored.episode_scores, stat=stat)
    except ValueError as undefined:  # no matched edge: a date accuracy cannot be judged
        say(f"{lever}={value}: not judged ({undefined})")
        return _skipped(lever, value, str(undefined)), None, None
    calls_per_episode = (calls_spent() - candidate_spent) / len(dev) if current_calls is not None else None
    note = ""
    if lever in COST_LEVERS:
        kept = paired.high > 0 and time_ratio is not None and time_ratio <= SPAN_MAX_TIME_RATIO
    elif calls_per_episode is not None and current_calls is not None:
        edges = paired_difference(current_score.episode_scores, scored.episode_scores, stat="edge_f1_micro")
        cheaper = calls_per_episode < current_calls
        kept = edges.high >= 0 and (paired.better or (paired.high >= 0 and cheaper))
        note = (
            f"LM calls per dev episode {calls_per_episode:.2f} against {current_calls:.2f}; "
            f"edge-F1 paired {edges.text()}"
        )
    else:
        kept = paired.better
    result = LeverResult(
        lever,
        value,
        stat,
        paired.difference,
        paired.low,
        paired.high,
        kept,
        calls_spent() - spent,
        time_ratio=time_ratio,
        by_source=_by_source(current_score.episode_scores, scored.episode_scores, stat),
        dev_edge_f1=scored.edge_f1,
        dev_precision=stat_value(scored.episode_scores, "precision"),
        dev_recall=stat_value(scored.episode_scores, "recall"),
        dev_valid_at_accuracy=stat_value(scored.episode_scores, "valid_at_accuracy"),
        note=note,
        dev_attribute_accuracy=stat_value(scored.episode_scores, "attribute_accuracy"),
        calls_per_episode=calls_per_episode,
    )
    say(
        f"{lever}={value}: dev edge-F1 {scored.edge_f1:.3f}, {stat} paired {paired.text()}"
        + (f", time ratio {time_ratio:.2f}" if time_ratio is not None else "")
        + (f", {note}" if note else "")
        + (": kept" if kept else ": not kept"),
    )
    return result, candidate, scored


def _by_source(
    before: Sequence[Any], after: Sequence[Any], stat: Stat
) -> dict[str, tuple[float | None, float | None]]:
    """`stat` per source for two programs' scores of the same episodes (None where undefined)."""
    sources = sorted({score.source for score in before})
    return {
        source: tuple(  # type: ignore[misc]
            _defined(stat_value([s for s in scores if s.source == source], stat))
            for scores in (before, after)
        )
        for source in sources
    }


def _defined(value: float) -> float | None:
    return None if math.isnan(value) else value


def _preference(lever: str, result: LeverResult) -> tuple[Any, ...]:
    """How kept alternatives of one lever rank: by their difference; for a call-cost lever, one
    better beyond noise by its difference, else the one with the fewest LM calls."""
    difference = result.difference or 0.0
    if lever not in CALL_COST_LEVERS:
        return (difference,)
    better = result.low is not None and result.low > 0
    return (better, difference if better else -(result.calls_per_episode or 0.0))


def _why(lever: str, best: LeverResult) -> str:
    if lever in CALL_COST_LEVERS and not (best.low is not None and best.low > 0):
        return "no worse, with fewer LM calls"
    return "the larger difference"


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def _rounded(value: Any) -> Any:
    """Four decimals; nan (a date accuracy with no matched edge) as null, which JSON can hold."""
    if not isinstance(value, float):
        return value
    return None if math.isnan(value) else round(value, 4)


def _skipped(lever: str, value: Any, note: str) -> LeverResult:
    return LeverResult(
        lever, value, JUDGED_BY.get(lever, "edge_f1_micro"), None, None, None, False, 0, note=note
    )
