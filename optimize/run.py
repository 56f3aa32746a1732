"""An optimizer run: tune the `EdgeExtractor`'s instructions and demos on a train split, keep the best.

A run measures the uncompiled program on the dev split, lets one DSPy optimizer search (MIPROv2,
GEPA, or bootstrapped demos with random search), measures the result on the same dev split, and
saves it as an artifact. Two things DSPy's optimizers do not do are added here: a hard cap on LM
calls (`budget`), and a checkpoint of the best program every time a candidate beats it on the dev
split, so that Ctrl-C, a crash or an exhausted budget still leaves the best program found so far.
"""

from __future__ import annotations

import contextlib
import hashlib
import random
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, NamedTuple, TextIO

import dspy
from dspy.utils.callback import BaseCallback
from dspy.utils.usage_tracker import UsageTracker
from tqdm import tqdm

from edgewise.data.loader import load_episodes, resolve, to_examples
from edgewise.data.sampling import stratified_sample
from edgewise.eval.feedback import edge_metric
from edgewise.eval.paired import PairedDifference, paired_difference
from edgewise.eval.records import EpisodeScore
from edgewise.eval.scoring import score_episode
from edgewise.modules.extractor import EdgeExtractor
from edgewise.modules.type_signatures import learn_type_signatures
from edgewise.optimize.artifact import Manifest, new_manifest, save
from edgewise.optimize.gold_demos import DEFAULT_DEMO_TOKEN_BUDGET, GoldDemos, select_gold_demos
from edgewise.optimize.program_search import LEVERS, search_program
from edgewise.runtime.runner import run_episodes
from edgewise.signatures.extract_edges import OutputShape
from edgewise.signatures.types import ExtractionResult, LabeledEpisode

OptimizerName = Literal["mipro", "gepa", "bootstrap", "gold", "program"]
AutoLevel = Literal["light", "medium", "heavy"]
RunStatus = Literal["complete", "budget_exhausted", "interrupted", "failed"]

OPTIMIZERS: Final[tuple[str, ...]] = ("mipro", "gepa", "bootstrap", "gold", "program")
AUTO_LEVELS: Final[tuple[str, ...]] = ("light", "medium", "heavy")

DEFAULT_DEMO_THRESHOLD: Final = 0.5
"""Edge-F1 a teacher's trace must reach on its training episode to become a demo.

DSPy's bootstrapping keeps a trace when the metric is truthy; an F1 is truthy at 0.01, which would
turn nearly every wrong answer into a demo, so a threshold is always set.
"""

DEFAULT_BOOTSTRAP_CANDIDATES: Final = 6
"""Demo sets random search tries (the size of MIPROv2's `light` run), besides the unshuffled one."""

DEFAULT_GOLD_CANDIDATES: Final = 4
"""Gold demo sets the `gold` search scores on dev (each a different seeded pick)."""

DEFAULT_MINIBATCH_SIZE: Final = 10
"""Dev episodes MIPROv2 scores a trial on. Its own default (35) costs a 1.5B model on 2 CPU cores
five minutes a trial; the best trials are still scored on the whole dev split."""

_UNSHUFFLED_CANDIDATE: Final = -1
"""Random search's candidate ids: -3 zero-shot and -2 labeled-only are skipped (the dev score before
the run is the zero-shot score, and labeled demos are not used), -1 bootstraps in train order."""


class BudgetExhausted(BaseException):
    """The run spent its LM-call budget.

    A `BaseException` on purpose: DSPy's evaluators and optimizers catch `Exception` per example
    and keep going, which would turn every refused call into a zero score instead of stopping.
    """


class DevScore(NamedTuple):
    """A program's score on the dev split: micro edge-F1 (the headline) and the per-episode mean F1.

    The mean is what the optimizers maximize (DSPy averages the metric over examples).
    """

    edge_f1: float
    mean_f1: float
    episodes: int
    parse_failures: int
    errors: int
    episode_scores: tuple[EpisodeScore, ...] = ()
    """Each dev episode's score, in dev order: what the paired comparison of two programs resamples."""


class PhaseUsage(NamedTuple):
    """LM traffic of one phase: calls made (replies from DSPy's cache included) and tokens billed."""

    calls: int
    prompt_tokens: int
    completion_tokens: int


class Split(NamedTuple):
    """Episodes of one split with where they came from: a file name and the sha256 of its bytes."""

    name: str
    episodes: list[LabeledEpisode]
    sha256: str


@dataclass
class OptimizeReport:
    """What a run did: where the program is, how it scored before and after, what it cost."""

    out_dir: Path
    program: EdgeExtractor
    manifest: Manifest
    status: RunStatus
    before: DevScore
    after: DevScore | None
    usage: dict[str, PhaseUsage]
    budget: int | None
    wall_s: float
    candidate_scores: list[float] = field(default_factory=list)
    error: str | None = None

    @property
    def candidates(self) -> int:
        """Candidates scored on the full dev split."""
        return len(self.candidate_scores)

    def summary(self) -> str:
        """The lines printed at the end of `edgewise optimize`."""
        optimizer = self.manifest.optimizer
        lines = [f"edgewise optimize: {optimizer} on {self.manifest.task_model}: {self.status}"]
        after = self.after
        lines.append(
            f"  dev edge-F1 (micro, {self.before.episodes} episodes): before {self.before.edge_f1:.3f}, "
            + (
                f"after {after.edge_f1:.3f} ({after.edge_f1 - self.before.edge_f1:+.3f})"
                if after
                else "after: not measured"
            )
        )
        lines.append(
            f"  dev mean episode F1 (what the optimizer maximizes): before {self.before.mean_f1:.3f}, "
            + (f"after {after.mean_f1:.3f}" if after else "after: not measured")
        )
        if after is not None:
            lines.append(
                f"  dev parse failures: before {self.before.parse_failures}, after {after.parse_failures}"
            )
        search = self.usage.get("search", PhaseUsage(0, 0, 0))
        cap = f" of a budget of {self.budget}" if self.budget is not None else ""
        total = _total_usage(self.usage)
        lines.append(
            f"  LM calls: {total.calls} ({search.calls} in the search{cap}, the rest in dev evaluations); "
            f"tokens billed: {total.prompt_tokens} prompt + {total.completion_tokens} completion"
        )
        levers = self.manifest.notes.get("levers")
        if levers is not None:
            kept = [f"{row['lever']}={row['value']}" for row in levers if row["kept"]]
            lines.append(
                f"  levers judged on dev: {sum(row['difference'] is not None for row in levers)} of {len(levers)}; "
                f"kept: {', '.join(kept) or 'none'}; wall time: {self.wall_s:.1f} s"
            )
        else:
            scores = ", ".join(f"{score:.3f}" for score in self.candidate_scores)
            lines.append(
                f"  candidates scored on dev: {self.candidates}"
                + (f" (mean episode F1: {scores})" if scores else "")
                + f"; wall time: {self.wall_s:.1f} s"
            )
        lines.append(f"  program: {self.out_dir}")
        if self.error:
            lines.append(f"  stopped by: {self.error}")
        return "\n".join(lines)


def _total_usage(usage: dict[str, PhaseUsage]) -> PhaseUsage:
    return (
        PhaseUsage(*(sum(values) for values in zip(*usage.values(), strict=True)))
        if usage
        else PhaseUsage(0, 0, 0)
    )


# --------------------------------------------------------------------------------------------------
# Metering: call budget, token totals, best-so-far checkpoints
# --------------------------------------------------------------------------------------------------


class SharedUsage(UsageTracker):
    """A usage tracker that every worker thread of a run writes to.

    DSPy's parallel executor deep-copies the tracker into each thread ("each thread tracks its own
    usage") and never merges the copies back, so a run-level total would miss all threaded calls.
    """

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()

    def __deepcopy__(self, memo: dict[int, Any]) -> SharedUsage:
        return self

    def add_usage(self, lm: str, usage_entry: dict[str, Any]) -> None:
        with self._lock:
            super().add_usage(lm, usage_entry)

    def tokens(self) -> tuple[int, int]:
        with self._lock:
            entries = [entry for entries in self.usage_data.values() for entry in entries]
        return (
            sum(int(entry.get("prompt_tokens") or 0) for entry in entries),
            sum(int(entry.get("completion_tokens") or 0) for entry in entries),
        )


class CallMeter(BaseCallback):
    """Counts LM calls in its context and refuses the first one past `limit`.

    Counting happens before the request, for every model (task, teacher, reflection) and for replies
    from DSPy's cache too, so the cap is exact and a rerun stops at the same place. Once exhausted it
    stays exhausted: worker threads still holding queued examples are refused at once.
    """

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit
        self.calls = 0
        self.exhausted = False
        self._lock = threading.Lock()

    def on_lm_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        with self._lock:
            if self.limit is not None and (self.exhausted or self.calls >= self.limit):
                self.exhausted = True
                raise BudgetExhausted(f"the budget of {self.limit} LM calls is spent")
            self.calls += 1


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
    ) -> None:
        self._dev = list(dev)
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
        ids = sorted(_example_id(example) for example in devset)
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
        predictions already made saves one whole dev pass per compile (on 2 CPU cores, 40 episodes of
        the 1.5B model are about 10 minutes).
        """
        if self.best_results is None or program.dump_state() != self.best.dump_state():
            return None
        by_id = {_example_id(example): prediction for example, prediction, _ in self.best_results}
        results = [_result_of(by_id.get(episode.id)) for episode in self._dev]
        if any(result is None for result in results):  # a failure, or GEPA's (prediction, trace) pairs
            return None
        return dev_score(self._dev, results)


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


def _example_id(example: Any) -> str:
    labeled = example.get("labeled") if hasattr(example, "get") else None
    return labeled.id if isinstance(labeled, LabeledEpisode) else f"<unlabeled {id(example)}>"


@contextlib.contextmanager
def metered(limit: int | None = None, *extra: BaseCallback) -> Iterator[tuple[CallMeter, SharedUsage]]:
    """Count the calls and tokens of the block (and cap the calls at `limit`)."""
    meter, tracker = CallMeter(limit), SharedUsage()
    callbacks = [*dspy.settings.get("callbacks", []), meter, *extra]
    with dspy.context(callbacks=callbacks, usage_tracker=tracker):
        yield meter, tracker


def _phase_usage(meter: CallMeter, tracker: SharedUsage) -> PhaseUsage:
    return PhaseUsage(meter.calls, *tracker.tokens())


# --------------------------------------------------------------------------------------------------
# Data and scoring
# --------------------------------------------------------------------------------------------------

Dataset = Sequence[LabeledEpisode] | str | Path


def load_split(data: Dataset, role: str) -> Split:
    """Episodes with their provenance; in-memory episodes are hashed as the JSONL they would be."""
    if isinstance(data, str | Path):
        path = resolve(data)
        return Split(path.name, load_episodes(path), hashlib.sha256(path.read_bytes()).hexdigest())
    episodes = list(data)
    text = "".join(episode.model_dump_json(by_alias=True) + "\n" for episode in episodes)
    return Split(
        f"<{len(episodes)} {role} episodes in memory>", episodes, hashlib.sha256(text.encode()).hexdigest()
    )


def evaluate_program(
    program: dspy.Module,
    episodes: Sequence[LabeledEpisode],
    *,
    workers: int = 1,
    progress: TextIO | None = None,
    label: str = "dev",
) -> DevScore:
    """Score `program` on labeled episodes; an episode whose extraction raised scores as no edges.

    When every episode raised, the first error is raised instead: the model was never reached.
    """
    results: list[ExtractionResult | None] = []
    failures = []
    outcomes = run_episodes(program, episodes, episode_of=lambda labeled: labeled.episode(), workers=workers)
    bar = tqdm(outcomes, total=len(episodes), desc=label, unit="ep", file=progress, disable=progress is None)
    for _, outcome in bar:
        assert outcome is not None  # every labeled episode has an episode
        if outcome.result is None:
            failures.append(outcome.error)
        results.append(outcome.result)
    if failures and len(failures) == len(episodes):
        raise failures[
            0
        ]  # nothing reached the model (a wrong model name, a server down): say so, don't score 0
    return dev_score(episodes, results)


def dev_score(episodes: Sequence[LabeledEpisode], results: Sequence[ExtractionResult | None]) -> DevScore:
    """Score each episode's result (None: the extraction failed, scored as no edges), in episode order."""
    scores = tuple(
        score_episode(labeled, result.edges if result else []) for labeled, result in zip(episodes, results)
    )
    tp, fp, fn = (sum(getattr(s, name) for s in scores) for name in ("tp", "fp", "fn"))
    micro = 2 * tp / (2 * tp + fp + fn) if (tp + fp + fn) else 1.0
    mean = sum(s.f1 for s in scores) / len(scores) if scores else 1.0
    parse_failures = sum(result.parse_failures for result in results if result)
    errors = sum(result is None for result in results)
    return DevScore(micro, mean, len(scores), parse_failures, errors, scores)


# --------------------------------------------------------------------------------------------------
# The optimizers
# --------------------------------------------------------------------------------------------------


@dataclass
class SearchSettings:
    """What the search may do; every field is recorded in the manifest."""

    optimizer: OptimizerName
    auto: AutoLevel | None = "light"
    seed: int = 0
    max_demos: int = 4
    budget: int | None = None
    reflexion_rounds: int = 0
    closed_types: bool = True
    output_shape: OutputShape = "seed"
    gold_demos: int = 0
    demo_tokens: int = DEFAULT_DEMO_TOKEN_BUDGET
    minibatch_size: int = DEFAULT_MINIBATCH_SIZE
    workers: int = 1
    candidates: int | None = None
    trials: int | None = None
    demo_threshold: float = DEFAULT_DEMO_THRESHOLD
    log_dir: str | None = None
    dev_size: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def validate(self) -> None:
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, not {self.optimizer!r}")
        if self.auto is not None and self.auto not in AUTO_LEVELS:
            raise ValueError(f"auto must be one of {', '.join(AUTO_LEVELS)}, not {self.auto!r}")
        if self.max_demos < 0 or self.reflexion_rounds < 0 or self.workers < 1:
            raise ValueError("max_demos and reflexion_rounds must be >= 0, workers >= 1")
        if self.optimizer == "bootstrap" and self.max_demos < 1:
            raise ValueError("the bootstrap optimizer tunes demos only: max_demos must be >= 1")
        if self.gold_demos < 0 or self.demo_tokens < 1 or self.minibatch_size < 1:
            raise ValueError("gold_demos must be >= 0, demo_tokens and minibatch_size >= 1")
        if self.optimizer == "bootstrap" and self.gold_demos:
            raise ValueError(
                "bootstrap tunes bootstrapped demos; gold demos are searched by --optimizer gold"
            )
        if self.budget is not None and self.budget < 1:
            raise ValueError("budget must be >= 1 LM call")
        if self.dev_size is not None and self.dev_size < 1:
            raise ValueError("dev_size must be >= 1 episode")
        if (self.candidates is None) != (self.trials is None) and self.optimizer == "mipro":
            raise ValueError("mipro: give both candidates and trials (they replace auto), or neither")

    def record(self) -> dict[str, Any]:
        values = {
            "auto": self.auto if self.optimizer != "bootstrap" else None,
            "seed": self.seed,
            "max_demos": self.max_demos,
            "budget": self.budget,
            "reflexion_rounds": self.reflexion_rounds,
            "closed_types": self.closed_types,
            "output_shape": self.output_shape,
            "gold_demos": self.gold_demos or None,
            "demo_tokens": self.demo_tokens if self.gold_demos or self.optimizer == "gold" else None,
            "minibatch_size": self.minibatch_size if self.optimizer == "mipro" else None,
            "candidates": self.candidates,
            "trials": self.trials,
            "demo_threshold": self.demo_threshold,
            "dev_size": self.dev_size,
            "selection": "dev, paired: the compiled program replaces the uncompiled one only when the "
            "paired bootstrap 95% interval of its dev edge-F1 minus the uncompiled one's is above 0",
        }
        return {key: value for key, value in values.items() if value is not None} | self.extra


def _compile(
    settings: SearchSettings,
    student: EdgeExtractor,
    train: list[dspy.Example],
    dev: list[dspy.Example],
    task_lm: dspy.BaseLM,
    teacher_lm: dspy.BaseLM | None,
    train_episodes: Sequence[LabeledEpisode] = (),
) -> dspy.Module:
    """Run the chosen optimizer (in the caller's LM context) and return the program it picked.

    `student` is where the search starts: the uncompiled program, or it with gold demos for mipro and
    gepa (`--gold-demos`), which then tune instructions around them.
    """
    teacher_settings = {"lm": teacher_lm} if teacher_lm is not None else {}
    if settings.optimizer == "gold":
        return _gold_search(settings, student, dev, train_episodes)
    if settings.optimizer == "bootstrap":
        candidates = settings.candidates if settings.candidates is not None else DEFAULT_BOOTSTRAP_CANDIDATES
        optimizer = dspy.BootstrapFewShotWithRandomSearch(
            metric=edge_metric,
            teacher_settings=teacher_settings,
            max_bootstrapped_demos=settings.max_demos,
            max_labeled_demos=0,
            num_candidate_programs=candidates,
            num_threads=settings.workers,
            metric_threshold=settings.demo_threshold,
        )
        train = list(train)
        random.Random(settings.seed).shuffle(train)  # the search's own candidates are seeded by their index
        restrict = range(_UNSHUFFLED_CANDIDATE, candidates)
        return optimizer.compile(student, trainset=train, valset=dev, restrict=restrict)
    if settings.optimizer == "mipro":
        candidates, trials = mipro_size(settings, len(dev))
        optimizer = dspy.MIPROv2(
            metric=edge_metric,
            prompt_model=teacher_lm or task_lm,
            task_model=task_lm,
            teacher_settings=teacher_settings,
            # With gold demos the search is over instructions only: the demos stay as they are.
            max_bootstrapped_demos=0 if settings.gold_demos else settings.max_demos,
            max_labeled_demos=0,
            auto=None if candidates is not None else settings.auto or "light",
            num_candidates=candidates,
            num_threads=settings.workers,
            seed=settings.seed,
            log_dir=settings.log_dir,
            metric_threshold=settings.demo_threshold,
        )
        minibatch = len(dev) > settings.minibatch_size
        return optimizer.compile(
            student,
            trainset=train,
            valset=dev,
            num_trials=trials,
            seed=settings.seed,
            minibatch=minibatch,
            minibatch_size=min(settings.minibatch_size, len(dev)),
            # With a budget: one full dev score, of the best trial, at the end.
            minibatch_full_eval_steps=trials if settings.budget is not None and trials else 5,
            # The dataset summary costs one long call per 10 training episodes; on a CPU-sized run
            # that budget buys trials instead. The proposer still sees the program and the demos.
            data_aware_proposer=False,
        )
    budgeted = settings.budget is not None
    optimizer = dspy.GEPA(
        metric=edge_metric,
        auto=None if budgeted else settings.auto or "light",
        # Metric calls are task-model calls; the reflection model's calls come on top of them.
        max_metric_calls=max(1, int(settings.budget * _GEPA_METRIC_SHARE)) if budgeted else None,
        reflection_lm=teacher_lm or task_lm,
        component_selector="all",
        num_threads=settings.workers,
        log_dir=settings.log_dir,
        seed=settings.seed,
    )
    return optimizer.compile(student, trainset=train, valset=_gepa_valset(settings, dev))


_PLANNING_SHARE: Final = 0.9
"""Share of `--budget` a search plans for; the rest absorbs calls its plan cannot count exactly."""

_GEPA_METRIC_SHARE: Final = 0.6
"""Share of `--budget` GEPA may spend on metric calls (task-model extractions); its reflection calls
took the rest with room to spare in the tests' runs (3 components, minibatches of 3)."""

_MIPRO_FIXED_CALLS: Final = 32
"""LM calls a MIPROv2 run spends before its trials: bootstrapping traces for the proposer and
proposing instructions (31 in the fake-LM tests when all 3 predictors were tuned, 3 candidates each;
an upper bound now that only the called ones are)."""


def mipro_size(settings: SearchSettings, dev_size: int) -> tuple[int | None, int | None]:
    """(instruction candidates, trials) for MIPROv2: given, derived from `--budget`, or its `auto`.

    A budget pays for the fixed calls, one full dev score at the end and minibatch trials with the
    rest, so that the run ends by itself instead of being cut by the budget before any full score.
    """
    if settings.candidates is not None:
        return settings.candidates, settings.trials
    if settings.budget is None:
        return None, None
    minibatch = min(settings.minibatch_size, dev_size)
    # MIPROv2 scores the starting program and the best trial on all of dev: two full scores.
    spare = int(settings.budget * _PLANNING_SHARE) - _MIPRO_FIXED_CALLS - 2 * dev_size
    return 3, max(1, spare // minibatch)


MIN_SELECTION_DEV: Final = 40
"""The fewest dev episodes a budgeted run selects on by default: fewer make the paired interval of
the selection so wide that no candidate can clear it."""

_DEV_SHARE_OF_BUDGET: Final = 0.2
"""A budgeted run's dev sample is at most this share of `--budget` episodes, so one full dev score
costs at most a fifth of the search and MIPROv2's two of them leave more than half to its trials."""


def selection_dev_size(settings: SearchSettings, dev_size: int) -> int:
    """How many dev episodes the run scores and selects on: `--dev-size`, else all of dev, or with a
    `--budget` what it affords (`_DEV_SHARE_OF_BUDGET`), never below `MIN_SELECTION_DEV`."""
    if settings.dev_size is not None:
        return min(settings.dev_size, dev_size)
    if settings.budget is None:
        return dev_size
    return min(dev_size, max(MIN_SELECTION_DEV, int(settings.budget * _DEV_SHARE_OF_BUDGET)))


def searched_predictors(settings: SearchSettings, episodes: Sequence[LabeledEpisode]) -> tuple[str, ...]:
    """The predictors an instruction search tunes: those the program calls on these episodes.

    `extract` always; `reflect` only with reflexion rounds; `attributes` only when some episode's
    relationship types declare attributes. The others keep the uncompiled program's instructions.
    """
    names = ["extract"]
    if settings.reflexion_rounds > 0:
        names.append("reflect")
    if any(edge_type.attributes for episode in episodes for edge_type in episode.edge_types):
        names.append("attributes")
    return tuple(names)


def _gepa_valset(settings: SearchSettings, dev: list[dspy.Example]) -> list[dspy.Example]:
    """GEPA scores every new candidate on its whole valset; a budgeted run uses a source-stratified
    part of dev (twice the minibatch size), and the result is scored on all of dev after the search."""
    size = 2 * settings.minibatch_size
    if settings.budget is None or len(dev) <= size:
        return dev
    picked = {episode.id for episode in stratified_sample([e.labeled for e in dev], size, seed=settings.seed)}
    return [example for example in dev if example.labeled.id in picked]


def _gold_search(
    settings: SearchSettings, student: EdgeExtractor, dev: list[dspy.Example], train: Sequence[LabeledEpisode]
) -> dspy.Module:
    """Score seeded picks of gold demos (`select_gold_demos`) on dev and return the best program.

    Each candidate is scored with `dspy.Evaluate` on the whole dev split, so `BestTracker` sees it
    like any optimizer's candidate; a pick equal to an earlier one is not scored twice.
    """
    count = settings.candidates if settings.candidates is not None else DEFAULT_GOLD_CANDIDATES
    evaluate = dspy.Evaluate(
        devset=dev, metric=edge_metric, num_threads=settings.workers, display_progress=False
    )
    best, best_score, tried = student, float("-inf"), set()
    for index in range(max(1, count)):
        chosen = gold_demo_pick(settings, student, train, seed=settings.seed + index)
        if frozenset(chosen.episode_ids) in tried or not chosen.demos:
            continue
        tried.add(frozenset(chosen.episode_ids))
        candidate = student.deepcopy()
        candidate.extract.demos = chosen.demos
        result = evaluate(candidate)
        score = float(result.score)
        if score > best_score:
            best, best_score = candidate, score
    return best


def gold_demo_pick(
    settings: SearchSettings, student: EdgeExtractor, train: Sequence[LabeledEpisode], *, seed: int
) -> GoldDemos:
    """The gold demos a run uses: `--gold-demos` (else `--max-demos`) of them within `--demo-tokens`."""
    return select_gold_demos(
        train,
        student.output_shape,
        max_demos=settings.gold_demos or settings.max_demos,
        token_budget=settings.demo_tokens,
        seed=seed,
    )


def paired_record(paired: PairedDifference) -> dict[str, Any]:
    """The paired dev comparison as the manifest stores it."""
    return {
        "stat": "edge_f1_micro",
        "difference": round(paired.difference, 4),
        "low": round(paired.low, 4),
        "high": round(paired.high, 4),
        "episodes": paired.episodes,
        "level": 0.95,
    }


def demo_provenance(program: dspy.Module) -> dict[str, Any]:
    """What a manifest says of a program's demos: how many per step, and which gold episodes."""
    notes: dict[str, Any] = {}
    for name, predictor in program.named_predictors():
        if predictor.demos:
            notes[f"{name}_demos"] = len(predictor.demos)
            gold = [demo.get("gold_episode_id") for demo in predictor.demos if demo.get("gold_episode_id")]
            if gold:
                notes[f"{name}_gold_demo_ids"] = gold
    return notes


# --------------------------------------------------------------------------------------------------
# The run
# --------------------------------------------------------------------------------------------------


def public_model_name(model: str | None, secrets: Sequence[str | None] = ()) -> str | None:
    """A model string fit for a manifest: no `user:password@` and no secret that happens to be in it."""
    if model is None:
        return None
    name = re.sub(r"(?<=//)[^/@\s]+@", "", model)
    for secret in secrets:
        if secret and len(secret) >= 4:
            name = name.replace(secret, "***")
    return name


def _say(stream: TextIO | None, message: str) -> None:
    if stream is not None:
        print(f"optimize: {message}", file=stream, flush=True)


def optimize(
    *,
    task_lm: dspy.BaseLM,
    train: Dataset,
    dev: Dataset,
    out: str | Path,
    optimizer: OptimizerName = "bootstrap",
    teacher_lm: dspy.BaseLM | None = None,
    task_model: str | None = None,
    teacher_model: str | None = None,
    auto: AutoLevel | None = "light",
    seed: int = 0,
    max_demos: int = 4,
    budget: int | None = None,
    reflexion_rounds: int = 0,
    closed_types: bool = True,
    output_shape: OutputShape = "seed",
    gold_demos: int = 0,
    demo_tokens: int = DEFAULT_DEMO_TOKEN_BUDGET,
    minibatch_size: int = DEFAULT_MINIBATCH_SIZE,
    workers: int = 1,
    candidates: int | None = None,
    trials: int | None = None,
    demo_threshold: float = DEFAULT_DEMO_THRESHOLD,
    log_dir: str | Path | None = None,
    dev_size: int | None = None,
    levers: Sequence[str] | None = None,
    secrets: Sequence[str | None] = (),
    progress: TextIO | None = sys.stderr,
) -> OptimizeReport:
    """Compile an `EdgeExtractor` for `task_lm` and save it to `out`; return what happened.

    `train` and `dev` are split names, JSONL paths or lists of `LabeledEpisode`. The optimizer
    searches on `train` and selects on `dev`; keep the test split out of both. `teacher_lm` (a stronger
    model) bootstraps demos and proposes instructions (MIPROv2), or reflects (GEPA); the task model
    does it otherwise. `budget` caps the search's LM calls (all models, cached replies included);
    the dev evaluations before and after are counted separately. `task_model` / `teacher_model` are
    the names recorded in the manifest (default: the LMs' `model`); `secrets` are removed from them.

    The best program found is written whenever a candidate beats it on dev, and again at the end,
    also after Ctrl-C (re-raised), a crash (re-raised) or an exhausted budget (status
    `budget_exhausted`). No API key or endpoint is written: the model comes from the caller at load.
    """
    started = time.monotonic()
    settings = SearchSettings(
        optimizer=optimizer,
        auto=auto,
        seed=seed,
        max_demos=max_demos,
        budget=budget,
        reflexion_rounds=reflexion_rounds,
        closed_types=closed_types,
        output_shape=output_shape,
        gold_demos=gold_demos,
        demo_tokens=demo_tokens,
        minibatch_size=minibatch_size,
        workers=workers,
        candidates=candidates,
        trials=trials,
        demo_threshold=demo_threshold,
        log_dir=str(log_dir) if log_dir is not None else None,
        dev_size=dev_size,
    )
    settings.validate()
    unknown_levers = sorted(set(levers or ()) - set(LEVERS))
    if unknown_levers:
        raise ValueError(f"unknown lever(s) {', '.join(unknown_levers)}; known: {', '.join(LEVERS)}")
    train_split, dev_split = load_split(train, "train"), load_split(dev, "dev")
    if not train_split.episodes or not dev_split.episodes:
        raise ValueError("optimize needs at least one train and one dev episode")
    dev_total = len(dev_split.episodes)
    dev_used = selection_dev_size(settings, dev_total)
    settings.extra = {
        "train": f"{train_split.name} ({len(train_split.episodes)} episodes)",
        "dev": f"{dev_split.name} ({dev_total} episodes)"
        if dev_used == dev_total
        else f"{dev_split.name} ({dev_used} of {dev_total} episodes, stratified by source, seed {seed})",
    }
    if levers is not None:
        settings.extra["levers"] = list(levers)
    if dev_used < dev_total:
        dev_split = dev_split._replace(episodes=stratified_sample(dev_split.episodes, dev_used, seed=seed))
        _say(
            progress,
            f"selecting on {dev_used} of {dev_total} dev episodes, stratified by source (seed {seed}; "
            + ("--dev-size" if dev_size is not None else f"what --budget {budget} affords")
            + ")",
        )
    out_dir = Path(out)
    names = {
        "task_model": public_model_name(task_model or task_lm.model, secrets) or "unknown",
        "teacher_model": public_model_name(
            teacher_model or (teacher_lm.model if teacher_lm else None), secrets
        ),
    }
    usage: dict[str, PhaseUsage] = {}

    def manifest_for(
        program: dspy.Module, status: RunStatus, after: DevScore | None, **notes: Any
    ) -> Manifest:
        return new_manifest(
            program,
            **names,
            optimizer=optimizer,
            settings=settings.record(),
            data_hashes={"train": train_split.sha256, "dev": dev_split.sha256},
            dev_score_before=before.edge_f1,
            dev_score_after=after.edge_f1 if after else None,
            status=status,
            notes={
                "dev_mean_f1_before": before.mean_f1,
                **({"dev_mean_f1_after": after.mean_f1} if after else {}),
                **{f"{phase}_calls": spent.calls for phase, spent in usage.items()},
                "prompt_tokens": _total_usage(usage).prompt_tokens,
                "completion_tokens": _total_usage(usage).completion_tokens,
                "wall_s": round(time.monotonic() - started, 1),
                "search_score": best.best_score,
                "candidate_scores": best.scores,
                **notes,
            },
        )

    signatures = learn_type_signatures(train_split.episodes)
    student = EdgeExtractor(
        max_reflexion_rounds=reflexion_rounds,
        closed_types=closed_types,
        output_shape=output_shape,
        type_signatures=signatures,
    )
    train_examples, dev_examples = to_examples(train_split.episodes), to_examples(dev_split.episodes)
    start = student.deepcopy()
    if optimizer in ("mipro", "gepa"):
        tuned = searched_predictors(settings, [*train_split.episodes, *dev_split.episodes])
        start.tuned_only(tuned)
        settings.extra["tuned_predictors"] = list(tuned)
    if gold_demos and optimizer in ("mipro", "gepa"):
        chosen = gold_demo_pick(settings, student, train_split.episodes, seed=seed)
        start.extract.demos = chosen.demos
        _say(
            progress,
            f"{len(chosen.demos)} gold demos ({', '.join(chosen.episode_ids)}; about {chosen.estimated_tokens} tokens)",
        )

    _say(
        progress,
        f"{optimizer}: {len(train_examples)} train, {len(dev_examples)} dev episodes; scoring the "
        "uncompiled program on dev",
    )
    with metered() as (meter, tracker):
        before = evaluate_program(
            student, dev_split.episodes, workers=workers, progress=progress, label="dev before"
        )
    usage["before"] = _phase_usage(meter, tracker)
    _say(progress, f"dev before: edge-F1 {before.edge_f1:.3f}, mean episode F1 {before.mean_f1:.3f}")

    def checkpoint(program: dspy.Module, score: float) -> None:
        save(program, out_dir, manifest_for(program, "interrupted", None))
        _say(progress, f"new best on dev (mean episode F1 {score:.3f}); saved to {out_dir}")

    best = BestTracker(dev_split.episodes, student.deepcopy(), before.mean_f1, checkpoint)
    status: RunStatus = "complete"
    error: str | None = None
    compiled: dspy.Module | None = None
    searched: DevScore | None = None
    lever_notes: dict[str, Any] = {}
    try:
        with metered(budget, best) as (meter, tracker), contextlib.redirect_stdout(progress or sys.stderr):
            try:
                if optimizer == "program":
                    compiled, searched, levers = search_program(
                        student=start,
                        before=before,
                        score=lambda candidate, label: evaluate_program(
                            candidate, dev_split.episodes, workers=workers, progress=progress, label=label
                        ),
                        signatures=signatures,
                        dev=dev_split.episodes,
                        gold_demos=(
                            (lambda: gold_demo_pick(settings, student, train_split.episodes, seed=seed).demos)
                            if gold_demos
                            else None
                        ),
                        budget=budget,
                        calls_spent=lambda: meter.calls,
                        say=lambda message: _say(progress, message),
                        levers=levers or LEVERS,
                    )
                    lever_notes["levers"] = [result.record() for result in levers]
                else:
                    compiled = _compile(
                        settings,
                        start,
                        train_examples,
                        dev_examples,
                        task_lm,
                        teacher_lm,
                        train_split.episodes,
                    )
            finally:
                usage["search"] = _phase_usage(meter, tracker)
    except BudgetExhausted as stop:
        status, error = "budget_exhausted", str(stop)
        _say(progress, f"{stop}; keeping the best program found")
    except BaseException as stop:  # Ctrl-C or a crash: save what was found, then let it propagate
        status = "interrupted" if isinstance(stop, KeyboardInterrupt) else "failed"
        error = f"{type(stop).__name__}: {stop}"
        usage.setdefault("search", PhaseUsage(0, 0, 0))
        save(
            best.best,
            out_dir,
            manifest_for(best.best, status, None, error=error),
        )
        _say(progress, f"{status}; the best program so far is saved to {out_dir}")
        raise

    program = compiled if compiled is not None else best.best
    if isinstance(program, EdgeExtractor):
        program.tuned_only(None)
    after = searched if searched is not None else best.best_dev_score(program)
    if after is not None:  # the search's own evaluation of this very program
        _say(
            progress,
            f"search done ({best.candidates} candidates scored on dev); the result is the best one scored",
        )
        usage["after"] = PhaseUsage(0, 0, 0)
    else:
        _say(progress, f"search done ({best.candidates} candidates scored on dev); scoring the result on dev")
        with metered() as (meter, tracker):
            after = evaluate_program(
                program, dev_split.episodes, workers=workers, progress=progress, label="dev after"
            )
            if after.mean_f1 < best.best_score and best.best is not program:
                _say(
                    progress,
                    f"the optimizer's pick scores {after.mean_f1:.3f} < {best.best_score:.3f}; keeping the "
                    "best program seen on dev",
                )
                program = best.best
                after = best.best_dev_score(program) or evaluate_program(
                    program, dev_split.episodes, workers=workers, progress=progress, label="dev after"
                )
        usage["after"] = _phase_usage(meter, tracker)
    paired = paired_difference(before.episode_scores, after.episode_scores)
    selection = {"paired_dev_difference": paired_record(paired)}
    if not paired.better:
        if program is not student:
            _say(
                progress,
                f"dev edge-F1 difference {paired.text()} is not above 0 beyond noise: keeping the uncompiled program",
            )
        selection["selected"] = "uncompiled"
        program, after = student, before
    else:
        selection["selected"] = "compiled"
        _say(progress, f"dev edge-F1 difference {paired.text()}: the compiled program is kept")
    settings.extra["program_options"] = program.options.model_dump()
    extra_notes = {
        **selection,
        **lever_notes,
        "type_signatures": signatures.listing(),
        **demo_provenance(program),
        **({"error": error} if error else {}),
    }
    manifest = manifest_for(program, status, after, **extra_notes)
    save(program, out_dir, manifest)
    return OptimizeReport(
        out_dir=out_dir,
        program=program,
        manifest=manifest,
        status=status,
        before=before,
        after=after,
        usage=usage,
        budget=budget,
        wall_s=time.monotonic() - started,
        candidate_scores=list(best.scores),
        error=error,
    )


__all__ = [
    "BudgetExhausted",
    "DevScore",
    "OptimizeReport",
    "PhaseUsage",
    "SearchSettings",
    "evaluate_program",
    "load_split",
    "optimize",
]
