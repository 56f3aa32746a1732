"""The per-episode files of a bench: what was benched, and what each model x program predicted and why it scored so.

A bench writes them as episodes finish, next to its summary files: `episodes.jsonl` (the labeled
episodes benched, once, in bench order), `predictions.jsonl` (one line per model x program x episode:
every predicted edge with its verdict, and the verdict on every gold edge) and `errors.jsonl` (only
what went wrong, for error analysis). Verdicts are read off the metric's own `EpisodeScore` records,
so the three files and the scores can never disagree; `edgewise report` rebuilds `results.html` from
these files alone.
"""

from __future__ import annotations

import json
from collections.abc import Container, Iterator, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Final, Literal, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from edgewise.domain.gold import GoldEdge, LabeledEpisode
from edgewise.domain.types import Edge, Entity, ExtractionResult, ExtractionWarning
from edgewise.eval.bench_records import EpisodeRun
from edgewise.eval.error_log import ERRORS_JSONL, error_line
from edgewise.eval.records import DateField, EpisodeScore, MistypedEdge, ReversedEdge
from edgewise.files.atomic import write_bytes_atomic
from edgewise.runtime.jsonl import InputError, validation_error

EPISODES_JSONL: Final = "episodes.jsonl"
PREDICTIONS_JSONL: Final = "predictions.jsonl"

PredictedVerdict = Literal["matched", "wrongDate", "spurious", "reversed", "mistyped", "ignored"]
"""What became of a predicted edge. `wrongDate` is matched (it counts for edge-F1) with a date wrong;
`ignored` is a prediction a non-exhaustive episode cannot judge (not counted)."""

GoldVerdict = Literal["matched", "wrongDate", "missed", "reversed", "mistyped"]
"""What became of a gold edge: found (perhaps with a wrong date), missed, or explained by a prediction
that has its ends swapped or its type wrong (both are misses for edge-F1)."""

_ENCODING_ERRORS: Final = "backslashreplace"
"""A lone surrogate in a model's reply is written as its JSON escape, so the line stays valid JSON."""


class JudgedEdge(Edge):
    """A predicted edge with its verdict; `gold` is the index of the gold edge a verdict refers to.

    `gold` is set for `reversed`, `mistyped`, `wrongDate` and a matched edge with a wrong attribute (the
    gold edge the prediction was judged against); `wrongDates` names the wrong date fields and
    `wrongAttributes` the attributes whose value is not the gold's; `duplicate` marks a spurious repeat
    of a matched edge. A wrong attribute leaves the verdict as it is: the edge still counts for edge-F1.
    """

    verdict: PredictedVerdict
    gold: int | None = None
    duplicate: bool = False
    wrong_dates: list[DateField] = Field(default_factory=list)
    wrong_attributes: list[str] = Field(default_factory=list)


class EpisodePrediction(BaseModel):
    """One line of `predictions.jsonl`: one model x program on one episode, every edge judged.

    `gold` holds the verdict on each of the episode's gold edges, in their order; keys are camelCase
    like those of `errors.jsonl`.
    """

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)

    model: str
    program: str
    id: str
    source: str
    status: Literal["ok", "failed"]
    error: str | None = None
    parse_failures: int = 0
    f1: float
    tp: int
    fp: int
    fn: int
    edges: list[JudgedEdge] = Field(default_factory=list)
    gold: list[GoldVerdict] = Field(default_factory=list)
    warnings: list[ExtractionWarning] = Field(default_factory=list)
    entities: list[Entity] | None = None
    """The entities the program found (an episode sent as text alone); left out of the line when it
    found none, so a bench of given entities writes the lines it always wrote."""


# The fields of a predictions.jsonl line that are the run's own: its identity, outcome and counts.
_FROM_RUN: Final = frozenset({"id", "source", "status", "error", "parse_failures", "f1", "tp", "fp", "fn"})


class _Positions:
    """Where each edge object sits in a list: by identity (the metric keeps the objects it is given),
    else by equality, so that a verdict lands on the very edge a record names."""

    def __init__(self, edges: Sequence[Edge]) -> None:
        self._edges = edges
        self._by_id: dict[int, list[int]] = {}
        for index, edge in enumerate(edges):
            self._by_id.setdefault(id(edge), []).append(index)

    def index(self, edge: Edge, skip: Container[int]) -> int:
        """The first position of `edge` not in `skip`."""
        for index in self._by_id.get(id(edge), ()):
            if index not in skip:
                return index
        for index, candidate in enumerate(self._edges):
            if index not in skip and candidate == edge:
                return index
        raise ValueError(f"edge {edge!r} is not one of the episode's edges")


def judge_edges(
    gold: Sequence[GoldEdge], predicted: Sequence[Edge], score: EpisodeScore
) -> tuple[list[JudgedEdge], list[GoldVerdict]]:
    """Every predicted edge with its verdict, and a verdict per gold edge, from the metric's records.

    Each record names the edges it is about: a prediction that no record explains was matched, and a
    gold edge that no record misses was found. The records are `score_episode(gold, predicted)`'s, so
    this is the metric's judgement restated per edge, never a second one.
    """
    verdicts: dict[int, PredictedVerdict] = {}
    gold_verdicts: dict[int, GoldVerdict] = {}
    refs: dict[int, int] = {}
    duplicates: set[int] = set()
    wrong: dict[int, list[DateField]] = {}
    p_at, g_at = _Positions(predicted), _Positions(gold)
    for spurious in score.spurious:
        p = p_at.index(spurious.predicted, verdicts)
        verdicts[p] = "spurious"
        if spurious.duplicate:
            duplicates.add(p)
    explained: list[tuple[Literal["reversed", "mistyped"], ReversedEdge | MistypedEdge]] = [
        *(("reversed", record) for record in score.reversed),
        *(("mistyped", record) for record in score.mistyped),
    ]
    for kind, record in explained:
        p, g = p_at.index(record.predicted, verdicts), g_at.index(record.gold, gold_verdicts)
        verdicts[p], gold_verdicts[g], refs[p] = kind, kind, g
    for edge in score.ignored:
        verdicts[p_at.index(edge, verdicts)] = "ignored"
    for missed in score.missed:
        gold_verdicts[g_at.index(missed.gold, gold_verdicts)] = "missed"
    unmatched, unfound = set(verdicts), set(gold_verdicts)  # a wrong date is on a matched pair
    for item in score.wrong_dates:
        p, g = p_at.index(item.predicted, unmatched), g_at.index(item.gold, unfound)
        verdicts[p], gold_verdicts[g], refs[p] = "wrongDate", "wrongDate", g
        wrong.setdefault(p, []).append(item.field)
    wrong_attributes: dict[int, list[str]] = {}
    for attribute in score.wrong_attributes:
        p = p_at.index(attribute.predicted, unmatched)
        refs[p] = g_at.index(attribute.gold, unfound)
        wrong_attributes.setdefault(p, []).append(attribute.name)
    judged = [
        JudgedEdge(
            **edge.model_dump(),
            verdict=verdicts.get(p, "matched"),
            gold=refs.get(p),
            duplicate=p in duplicates,
            wrong_dates=wrong.get(p, []),
            wrong_attributes=wrong_attributes.get(p, []),
        )
        for p, edge in enumerate(predicted)
    ]
    return judged, [gold_verdicts.get(g, "matched") for g in range(len(gold))]


class EpisodeLog:
    """Writes a bench's per-episode files in `out_dir` as episodes finish (nothing when it is None).

    `episodes.jsonl` is written whole at the start; `errors.jsonl` and `predictions.jsonl` grow one line
    per episode and are flushed by `flush()` (after each model x program: a flush per line costs more
    than scoring the episode).
    """

    def __init__(self, out_dir: Path | None, episodes: Sequence[LabeledEpisode]) -> None:
        self._errors: IO[str] | None = None
        self._predictions: IO[str] | None = None
        if out_dir is None:
            return
        lines = "".join(
            episode.model_dump_json(by_alias=True, exclude_defaults=True) + "\n" for episode in episodes
        )
        write_bytes_atomic(out_dir / EPISODES_JSONL, lines.encode("utf-8", _ENCODING_ERRORS))
        self._errors = open(out_dir / ERRORS_JSONL, "w", encoding="utf-8", errors=_ENCODING_ERRORS)  # noqa: SIM115
        self._predictions = open(  # noqa: SIM115  (closed by close(), the log outlives this call)
            out_dir / PREDICTIONS_JSONL, "w", encoding="utf-8", errors=_ENCODING_ERRORS
        )

    def record(
        self,
        model: str,
        program: str,
        labeled: LabeledEpisode,
        run: EpisodeRun,
        score: EpisodeScore,
        result: ExtractionResult | None,
    ) -> None:
        """The episode's line of `predictions.jsonl`, and of `errors.jsonl` when it has something wrong."""
        if self._errors is None or self._predictions is None:
            return
        line = error_line(model, program, run, score, result)
        if line is not None:
            self._errors.write(line)
        # A failed episode has no edges, and every gold edge is missed.
        edges, gold = judge_edges(labeled.edges, result.edges if result is not None else [], score)
        record = EpisodePrediction(
            model=model,
            program=program,
            **run.model_dump(include=_FROM_RUN),
            edges=edges,
            gold=gold,
            warnings=list(result.warnings) if result is not None else [],
            entities=result.entities if result is not None else None,
        )
        line = record.model_dump(mode="json", by_alias=True)
        if record.entities is None:
            del line["entities"]
        # json.dumps, not model_dump_json: pydantic refuses to encode a lone surrogate; the file escapes it
        self._predictions.write(json.dumps(line, ensure_ascii=False) + "\n")

    def flush(self) -> None:
        for handle in (self._errors, self._predictions):
            if handle is not None:
                handle.flush()

    def close(self) -> None:
        for handle in (self._errors, self._predictions):
            if handle is not None:
                handle.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


# --------------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------------

_Line = TypeVar("_Line", bound=BaseModel)


def _read_lines(path: Path, model: type[_Line]) -> Iterator[_Line]:
    """Each line of a JSONL file as `model`; a bad line raises `InputError` naming file, line and field.

    A last line without its newline that is not valid JSON is the one a killed bench was writing: it
    is left out, as the bench never finished that episode.
    """
    with open(path, encoding="utf-8") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                data = json.loads(raw)
            except ValueError as error:
                if not raw.endswith("\n"):
                    return
                raise InputError(str(path), number, None, f"not valid JSON: {error}") from None
            if not isinstance(data, dict):
                raise InputError(str(path), number, None, "expected a JSON object")
            try:
                yield model.model_validate(data)
            except ValidationError as error:
                raise validation_error(str(path), number, error) from None


def read_episodes(out_dir: Path) -> list[LabeledEpisode]:
    """The episodes of a bench folder's `episodes.jsonl`, in bench order."""
    return list(_read_lines(out_dir / EPISODES_JSONL, LabeledEpisode))


def read_predictions(out_dir: Path) -> list[EpisodePrediction]:
    """The lines of a bench folder's `predictions.jsonl`, in the order they were written."""
    return list(_read_lines(out_dir / PREDICTIONS_JSONL, EpisodePrediction))
