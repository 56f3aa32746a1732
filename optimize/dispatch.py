"""Which optimizer runs, and how: the one place that turns `OptimizeSettings` into a DSPy search.

Five searches: `bootstrap` (bootstrapped demos, random search), `gold` (seeded picks of labeled
training episodes as demos), `mipro` (MIPROv2: instructions and demos), `gepa` (GEPA: instructions
from the metric's feedback) and `program` (what the model is asked to do, lever by lever,
`edgewise.optimize.program_search`). Each runs in the caller's LM context and metering, and scores its
candidates with `dspy.Evaluate` on the dev examples (the program search through `score`), which is
what the best-so-far checkpoints watch.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Final, NamedTuple

import dspy

from edgewise.data.loader import to_examples
from edgewise.data.sampling import stratified_sample
from edgewise.domain.gold import LabeledEpisode
from edgewise.eval.feedback import edge_and_attribute_metric, edge_metric
from edgewise.modules.extractor import EdgeExtractor
from edgewise.modules.type_signatures import TypeSignatures
from edgewise.optimize.budget import gepa_metric_calls, mipro_size
from edgewise.optimize.dev_scoring import DevScore
from edgewise.optimize.gold_demos import GoldDemos, select_gold_demos
from edgewise.optimize.program_search import LEVERS, search_program
from edgewise.optimize.settings import OptimizeSettings

UNSHUFFLED_CANDIDATE: Final = -1
"""Random search's candidate ids: -3 zero-shot and -2 labeled-only are skipped (the dev score before
the run is the zero-shot score, and labeled demos are not used), -1 bootstraps in train order."""

INSTRUCTION_SEARCHES: Final = ("mipro", "gepa")
"""The searches that tune instructions, and may start from gold demos (`--gold-demos`)."""

Scorer = Callable[[EdgeExtractor, str], DevScore]
"""Scores a program on the dev episodes (the label names the pass in the progress bar)."""


class SearchResult(NamedTuple):
    """What a search returned: its pick, the pick's dev score if the search measured it, manifest notes."""

    program: dspy.Module
    dev_score: DevScore | None = None
    notes: Mapping[str, Any] = MappingProxyType({})


def searched_predictors(
    settings: OptimizeSettings, episodes: Sequence[LabeledEpisode], student: EdgeExtractor | None = None
) -> tuple[str, ...]:
    """The predictors an instruction search tunes: those the program calls on these episodes.

    `find_entities` when the run compiles an entity step; `extract` always; `reflect` only with
    reflexion rounds; `attributes` only when some episode's relationship types declare attributes and
    the program has an attribute call (not with attributes written in the extraction reply, which
    `extract` tunes). The others keep the uncompiled program's instructions.
    """
    names = ["find_entities"] if settings.find_entities else []
    names.append("extract")
    if settings.reflexion_rounds > 0:
        names.append("reflect")
    calls_attributes = student is None or student.options.attributes != "in-extraction"
    if calls_attributes and any(
        edge_type.attributes for episode in episodes for edge_type in episode.edge_types
    ):
        names.append("attributes")
    return tuple(names)


def search_metric(program: EdgeExtractor) -> Any:
    """The metric an instruction search scores candidates by: attribute accuracy in it when it tunes
    `attributes` (a predictor `tuned_only` left shown), since only then can the attribute step's
    instructions move the score (`edge_and_attribute_metric`); else plain edge-F1 (`edge_metric`)."""
    tuned = {name for name, _ in program.named_predictors()}
    return edge_and_attribute_metric if "attributes" in tuned else edge_metric


def uncompiled_program(settings: OptimizeSettings, signatures: TypeSignatures) -> EdgeExtractor:
    """The program every search starts from and is compared against: the settings' shape, no tuning.

    It carries the type signatures learned from train, which only the `type_signatures` option
    (the program search's lever) applies, and the entity step when the run compiles one.
    """
    program = EdgeExtractor(
        max_reflexion_rounds=settings.reflexion_rounds,
        closed_types=settings.closed_types,
        output_shape=settings.output_shape,
        type_signatures=signatures,
    )
    return program.with_entity_step() if settings.find_entities else program


def gold_demo_pick(
    settings: OptimizeSettings, student: EdgeExtractor, train: Sequence[LabeledEpisode], *, seed: int
) -> GoldDemos:
    """The gold demos a run uses: `--gold-demos` (else `--max-demos`) of them within `--demo-tokens`."""
    return select_gold_demos(
        train,
        student.output_shape,
        max_demos=settings.gold_demos or settings.max_demos,
        token_budget=settings.demo_tokens,
        seed=seed,
    )


def search(
    settings: OptimizeSettings,
    *,
    start: EdgeExtractor,
    student: EdgeExtractor,
    train: Sequence[LabeledEpisode],
    dev: Sequence[LabeledEpisode],
    before: DevScore,
    signatures: TypeSignatures,
    task_lm: dspy.BaseLM,
    teacher_lm: dspy.BaseLM | None,
    score: Scorer,
    calls_spent: Callable[[], int],
    say: Callable[[str], None],
    score_uncached: Scorer | None = None,
    max_samples: int | None = None,
) -> SearchResult:
    """Run the search `settings.optimizer` names from `start` and return what it picked.

    `student` is the uncompiled program (gold demos are picked for its reply shape); `start` is where
    the search begins: `student`, or for an instruction search it with only the tuned predictors
    shown and possibly gold demos (`starting_program`). `before` is the uncompiled program's dev score.
    `score_uncached` scores without DSPy's cache (a cost lever's timings); `max_samples` bounds the
    replies one request may ask for.
    """
    if settings.optimizer == "program":
        program, searched, levers = search_program(
            student=start,
            before=before,
            score=score,
            signatures=signatures,
            dev=dev,
            gold_demos=(
                (lambda: gold_demo_pick(settings, student, train, seed=settings.seed).demos)
                if settings.gold_demos
                else None
            ),
            budget=settings.budget,
            calls_spent=calls_spent,
            say=say,
            levers=settings.levers or LEVERS,
            score_uncached=score_uncached,
            max_samples=max_samples,
        )
        return SearchResult(program, searched, {"levers": [result.record() for result in levers]})
    return SearchResult(_compile(settings, start, train, dev, task_lm, teacher_lm))


def starting_program(
    settings: OptimizeSettings,
    student: EdgeExtractor,
    train: Sequence[LabeledEpisode],
    dev: Sequence[LabeledEpisode],
    say: Callable[[str], None],
) -> tuple[EdgeExtractor, tuple[str, ...] | None]:
    """Where the search starts, and the predictors an instruction search tunes (None: not one).

    An instruction search sees only the predictors the program calls on these episodes, so that it
    spends no proposals on the others; with `--gold-demos` it starts from them and tunes the
    instructions around them.
    """
    start = student.deepcopy()
    if settings.optimizer not in INSTRUCTION_SEARCHES:
        return start, None
    tuned = searched_predictors(settings, [*train, *dev], student)
    start.tuned_only(tuned)
    if settings.gold_demos:
        chosen = gold_demo_pick(settings, student, train, seed=settings.seed)
        start.extract.demos = chosen.demos
        say(
            f"{len(chosen.demos)} gold demos ({', '.join(chosen.episode_ids)}; about {chosen.estimated_tokens} tokens)",
        )
    return start, tuned


def _compile(
    settings: OptimizeSettings,
    student: EdgeExtractor,
    train_episodes: Sequence[LabeledEpisode],
    dev_episodes: Sequence[LabeledEpisode],
    task_lm: dspy.BaseLM,
    teacher_lm: dspy.BaseLM | None,
) -> dspy.Module:
    """Run one of DSPy's optimizers (or the gold search) and return the program it picked."""
    withheld = settings.find_entities
    train = to_examples(list(train_episodes), entities_withheld=withheld)
    dev = to_examples(list(dev_episodes), entities_withheld=withheld)
    teacher_settings = {"lm": teacher_lm} if teacher_lm is not None else {}
    if settings.optimizer == "gold":
        return _gold_search(settings, student, dev, train_episodes)
    if settings.optimizer == "bootstrap":
        candidates = settings.candidate_count()
        optimizer = dspy.BootstrapFewShotWithRandomSearch(
            metric=edge_metric,
            teacher_settings=teacher_settings,
            max_bootstrapped_demos=settings.max_demos,
            max_labeled_demos=0,
            num_candidate_programs=candidates,
            num_threads=settings.workers,
            metric_threshold=settings.demo_threshold,
        )
        random.Random(settings.seed).shuffle(train)  # the search's own candidates are seeded by their index
        restrict = range(UNSHUFFLED_CANDIDATE, candidates)
        return optimizer.compile(student, trainset=train, valset=dev, restrict=restrict)
    log_dir = str(settings.log_dir) if settings.log_dir is not None else None
    if settings.optimizer == "mipro":
        candidates, trials = mipro_size(settings, len(dev))
        optimizer = dspy.MIPROv2(
            metric=search_metric(student),
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
            log_dir=log_dir,
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
        metric=search_metric(student),
        auto=None if budgeted else settings.auto or "light",
        # Metric calls are task-model calls; the reflection model's calls come on top of them.
        max_metric_calls=gepa_metric_calls(settings),
        reflection_lm=teacher_lm or task_lm,
        component_selector="all",
        num_threads=settings.workers,
        log_dir=log_dir,
        seed=settings.seed,
    )
    return optimizer.compile(student, trainset=train, valset=_gepa_valset(settings, dev))


def _gepa_valset(settings: OptimizeSettings, dev: list[dspy.Example]) -> list[dspy.Example]:
    """GEPA scores every new candidate on its whole valset; a budgeted run uses a source-stratified
    part of dev (twice the minibatch size), and the result is scored on all of dev after the search."""
    size = 2 * settings.minibatch_size
    if settings.budget is None or len(dev) <= size:
        return dev
    picked = {episode.id for episode in stratified_sample([e.labeled for e in dev], size, seed=settings.seed)}
    return [example for example in dev if example.labeled.id in picked]


def _gold_search(
    settings: OptimizeSettings,
    student: EdgeExtractor,
    dev: list[dspy.Example],
    train: Sequence[LabeledEpisode],
) -> dspy.Module:
    """Score seeded picks of gold demos (`select_gold_demos`) on dev and return the best program.

    Each candidate is scored with `dspy.Evaluate` on the whole dev split, so `BestTracker` sees it
    like any optimizer's candidate; a pick equal to an earlier one is not scored twice.
    """
    evaluate = dspy.Evaluate(
        devset=dev, metric=edge_metric, num_threads=settings.workers, display_progress=False
    )
    best, best_score, tried = student, float("-inf"), set()
    for index in range(max(1, settings.candidate_count())):
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
