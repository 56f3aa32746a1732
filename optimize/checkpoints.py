"""The search and its checkpoints: the best program on dev is saved every time a candidate beats it.

DSPy's optimizers return their pick only at the end; a Ctrl-C, a crash or an exhausted budget would
lose everything found before it. `BestTracker` watches the optimizer's own dev evaluations (as a DSPy
callback) and hands each new best to `Checkpoints.save_best`, which writes it as an artifact;
`Checkpoints.run` runs the search under the call budget and saves the best so far however it ends.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple, TextIO

import dspy
from dspy.utils.callback import BaseCallback

from edgewise.domain.gold import LabeledEpisode
from edgewise.domain.types import ExtractionResult
from edgewise.modules.extractor import EdgeExtractor
from edgewise.optimize.dev_scoring import DevScore, dev_score
from edgewise.optimize.dispatch import SearchResult
from edgewise.optimize.manifest import RunRecord, RunStatus
from edgewise.optimize.metering import NO_USAGE, BudgetExhausted, Meter, metered
from edgewise.programs.artifact import save


class BestTracker(BaseCallback):
    """Watches the optimizer's evaluations and keeps (and checkpoints) the best program on the dev split.

    Every DSPy optimizer scores candidates with `dspy.Evaluate` (GEPA through its trace-capturing
    wrapper); an evaluation over exactly the dev examples is a full score of that candidate.
    Minibatch and training-set evaluations are ignored.
    """

    def __init__(
        self,
        dev: Sequence[LabeledEpisode],
        best: dspy.Module,
        best_score: float,
        on_new_best: Callable[[dspy.Module, float], None],
        *,
        entities_withheld: bool = False,
    ) -> None:
        self._dev = list(dev)
        self._entities_withheld = entities_withheld
        self._dev_ids = sorted(episode.id for episode in dev)
        self.best = best
        self.best_score = best_score
        self.scores: list[float] = []  # each full dev score, in the order the optimizer produced them
        self.best_results: list[Any] | None = None  # `Evaluate`'s (example, prediction, score) of the best
        self._on_new_best = on_new_best
        self._pending: dict[str, dspy.Module] = {}
        self._lock = threading.Lock()

    @property
    def candidates(self) -> int:
        return len(self.scores)

    def on_evaluate_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        devset = inputs.get("devset") or getattr(instance, "devset", None) or []
        ids = sorted(example_id(example) for example in devset)
        if ids == self._dev_ids and inputs.get("program") is not None:
            with self._lock:
                self._pending[call_id] = inputs["program"]

    def on_evaluate_end(self, call_id: str, outputs: Any | None, exception: Exception | None = None) -> None:
        with self._lock:
            program = self._pending.pop(call_id, None)
        if program is None or exception is not None or outputs is None:
            return
        results = getattr(outputs, "results", None) or []
        score = sum(float(r[2]) for r in results) / len(results) if results else float(outputs.score) / 100
        with self._lock:
            self.scores.append(round(score, 4))
            if score <= self.best_score:
                return
            self.best, self.best_score = clean_copy(program), score
            self.best_results = list(results)
        self._on_new_best(self.best, score)

    def best_dev_score(self, program: dspy.Module) -> DevScore | None:
        """The dev score of `program` from the search's own evaluation, when it is the best one seen.

        At temperature 0 a second pass over dev would repeat the same requests; scoring the
        predictions already made saves one whole dev pass per compile.
        """
        if self.best_results is None or program.dump_state() != self.best.dump_state():
            return None
        by_id = {example_id(example): prediction for example, prediction, _ in self.best_results}
        results = [_result_of(by_id.get(episode.id)) for episode in self._dev]
        if any(result is None for result in results):  # a failure, or GEPA's (prediction, trace) pairs
            return None
        return dev_score(self._dev, results, entities_withheld=self._entities_withheld)


def clean_copy(program: dspy.Module) -> dspy.Module:
    """A copy of a program under evaluation, without the `forward` that GEPA's trace capture patches in.

    `bootstrap_trace_data` replaces `program.forward` on the instance while it evaluates; a plain
    deep copy would keep that patch, bound to the original program.
    """
    duplicate = program.deepcopy()
    duplicate.__dict__.pop("forward", None)
    if isinstance(duplicate, EdgeExtractor):
        duplicate.tuned_only(None)  # a program that is saved or compared shows all its predictors
    return duplicate


def _result_of(prediction: Any) -> ExtractionResult | None:
    """The `ExtractionResult` in a program's prediction; None where `Evaluate` recorded a failure."""
    result = getattr(prediction, "result", None) if prediction is not None else None
    return result if isinstance(result, ExtractionResult) else None


def example_id(example: Any) -> str:
    """The labeled episode's id of a DSPy example (a unique placeholder for one without)."""
    labeled = example.get("labeled") if hasattr(example, "get") else None
    return labeled.id if isinstance(labeled, LabeledEpisode) else f"<unlabeled {id(example)}>"


class SearchOutcome(NamedTuple):
    """How the search ended: its result (None: it stopped first), the run's status and what stopped it."""

    found: SearchResult | None
    status: RunStatus
    error: str | None = None


@dataclass(frozen=True)
class Checkpoints:
    """Where a run keeps its best program so far: saved into `out_dir` with the manifest `record`
    makes, each save told through `say`."""

    out_dir: Path
    record: RunRecord
    say: Callable[[str], None]

    def save_best(self, program: dspy.Module, score: float) -> None:
        """The `on_new_best` of a run's `BestTracker`: save the new best as an `interrupted` artifact.

        The status is the one the artifact keeps if the process dies before the run ends; the run's
        last save replaces it.
        """
        save(program, self.out_dir, self.record.manifest(program, "interrupted", None))
        self.say(f"new best on dev (mean episode F1 {score:.3f}); saved to {self.out_dir}")

    def run(
        self, search: Callable[[Meter], SearchResult], best: BestTracker, progress: TextIO | None
    ) -> SearchOutcome:
        """Run `search` under the run's call budget with `best` watching, and survive how it may end.

        An exhausted budget ends the search normally (status `budget_exhausted`), with the best program
        seen as its result. Ctrl-C or a crash saves the best program so far with that status and
        propagates. The optimizers' own prints go to `progress`, never to stdout, which carries the summary.
        """
        record = self.record
        try:
            with (
                metered(record.settings.budget, best) as meter,
                contextlib.redirect_stdout(progress or sys.stderr),
            ):
                try:
                    return SearchOutcome(search(meter), "complete")
                finally:
                    record.usage["search"] = meter.usage()
        except BudgetExhausted as stop:
            self.say(f"{stop}; keeping the best program found")
            return SearchOutcome(None, "budget_exhausted", str(stop))
        except BaseException as stop:  # Ctrl-C or a crash: save what was found, then let it propagate
            status: RunStatus = "interrupted" if isinstance(stop, KeyboardInterrupt) else "failed"
            error = f"{type(stop).__name__}: {stop}"
            record.usage.setdefault("search", NO_USAGE)
            save(best.best, self.out_dir, record.manifest(best.best, status, None, error=error))
            self.say(f"{status}; the best program so far is saved to {self.out_dir}")
            raise
