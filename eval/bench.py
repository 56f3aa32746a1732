# Over 400 lines: the run loop, its Ctrl-C handling and the per-run summary share one state.
"""The benchmark runner: every model x program over the same labeled episodes, scored by edge-F1.

A bench is how a user picks a model and a program: each pair extracts every episode, each episode is
scored against its gold edges (`edgewise.eval.scoring`), and the run records what it cost (LM calls,
tokens, latency, price) beside what it found. Nothing a single episode does can stop the bench: an LM
error or timeout is recorded as a failed episode, scored as an empty prediction and counted apart, and
Ctrl-C writes every finished episode (`results.json` marked partial) before it stops.

    from edgewise.eval import run_bench
    from edgewise.eval.report import markdown_table
    from edgewise.programs.names import resolve_program
    programs = {name: resolve_program(name) for name in ("seed", "default")}
    report = run_bench([LMConfig(model="openai/gpt-4o-mini")], programs, episodes,
                       workers=4, seed=0, out_dir="runs/bench")
    print(markdown_table(report))
"""

from __future__ import annotations

import hashlib
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, ExitStack, closing, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import dspy
import numpy as np

from edgewise.domain.episode import Episode, withheld
from edgewise.domain.errors import UsageError
from edgewise.domain.gold import GoldEdge, LabeledEpisode
from edgewise.domain.types import Edge, StepUsage
from edgewise.eval.bench_comparison import compare_to_baseline
from edgewise.eval.bench_records import (
    BenchReport,
    DataSummary,
    EpisodeRun,
    InjectionSummary,
    RunSummary,
)
from edgewise.eval.entity_metric import (
    EntityScore,
    end_to_end_score,
    entity_f1_ci95,
    score_entities,
)
from edgewise.eval.episode_log import EpisodeLog
from edgewise.eval.html_report import write_html
from edgewise.eval.injection import count_injections, injection_rate
from edgewise.eval.intervals import DEFAULT_RESAMPLES, bootstrap_ci
from edgewise.eval.open_vocabulary import alias_aware_score, type_shares, without_vocabulary
from edgewise.eval.pricing import price_usd
from edgewise.eval.records import Counts, EpisodeScore
from edgewise.eval.report import write_reports, write_results_json
from edgewise.eval.scoring import aggregate, score_episode
from edgewise.modules.extractor import EdgeExtractor
from edgewise.modules.program_io import input_model
from edgewise.programs.artifact_errors import ArtifactError
from edgewise.programs.lora_adapter import program_adapter
from edgewise.runtime.lm import LMConfig, build_lm, lm_context, open_lm, redact
from edgewise.runtime.runner import Outcome, run_episodes

LMFactory = Callable[[LMConfig], AbstractContextManager[dspy.BaseLM]]

_ERROR_MESSAGE_CHARS: Final[int] = 500
"""A provider error can carry a whole HTTP body; the report keeps its start."""

_SCORE_NUMBERS: Final = (
    "n_gold",
    "n_predicted",
    "tp",
    "fp",
    "fn",
    "f1",
    "attribute_right",
    "attribute_total",
    "attribute_values",
    "attribute_supported",
)
"""What an episode's `EpisodeRun` keeps of its `EpisodeScore`, under the same names (the records of
its mistakes go to the episode log)."""


class BenchInterrupted(KeyboardInterrupt):
    """Ctrl-C during a bench, after the finished episodes were written; `report` holds them (partial)."""

    def __init__(self, report: BenchReport) -> None:
        super().__init__("bench interrupted; partial results written")
        self.report = report


# --------------------------------------------------------------------------------------------------
# Sampling and labels
# --------------------------------------------------------------------------------------------------


def table_model_label(config: LMConfig) -> str:
    """How a model is named in tables: its model string, with `@api_base` when it has its own server."""
    if config.api_base and not config.is_local:
        return f"{config.model}@{config.api_base}"
    return config.model


def summarize_data(episodes: Sequence[LabeledEpisode]) -> DataSummary:
    digest = hashlib.sha256("\n".join(episode.id for episode in episodes).encode()).hexdigest()
    return DataSummary(
        episodes=len(episodes),
        ids_sha256=digest,
        sources=dict(sorted(Counter(episode.source for episode in episodes).items())),
        non_exhaustive=sum(1 for episode in episodes if not episode.exhaustive),
        gold_edges=sum(len(episode.edges) for episode in episodes),
    )


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found: dict[str, str] = {}
    for package in ("edgewise", "dspy", "litellm"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            found[package] = "unknown"
    return found


# --------------------------------------------------------------------------------------------------
# Running
# --------------------------------------------------------------------------------------------------


@dataclass
class _Job:
    labeled: LabeledEpisode
    episode: Episode


@dataclass
class _RunState:
    """Episodes finished so far in the current model x program (what Ctrl-C still writes)."""

    summary: RunSummary
    config: LMConfig
    open_vocabulary: bool = False
    withhold_entities: bool = False
    scores: list[EpisodeScore] = field(default_factory=list)
    entity_scores: list[EntityScore] = field(default_factory=list)
    alias_aware_scores: list[EpisodeScore] = field(default_factory=list)
    predicted_edges: list[Edge] = field(default_factory=list)
    gold_edges: list[GoldEdge] = field(default_factory=list)
    usage: dict[str, StepUsage] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)


def _record_episode(state: _RunState, job: _Job, outcome: Outcome, log: EpisodeLog) -> None:
    result = outcome.result
    edges = result.edges if result is not None else []
    score = score_episode(job.labeled, edges)
    injected = count_injections(job.labeled, edges)
    state.predicted_edges.extend(edges)
    state.gold_edges.extend(job.labeled.edges)
    alias_aware = None
    entities = None
    if state.withhold_entities:
        found = result.entities if result is not None and result.entities is not None else []
        entities = score_entities(job.labeled, found)
        if entities is not None:
            state.entity_scores.append(entities)
        aware = end_to_end_score(job.labeled, found, edges)
    elif state.open_vocabulary:
        aware = alias_aware_score(job.labeled, edges)
    if state.withhold_entities or state.open_vocabulary:
        state.alias_aware_scores.append(aware)
        alias_aware = Counts(tp=aware.tp, fp=aware.fp, fn=aware.fn)
    message = None
    if outcome.error is not None:
        reason = outcome.reason or "internal_error"
        message = redact(f"{type(outcome.error).__name__}: {outcome.error}", state.config)[
            :_ERROR_MESSAGE_CHARS
        ]
        state.summary.failure_reasons[reason] = state.summary.failure_reasons.get(reason, 0) + 1
        state.summary.failed_per_source[job.labeled.source] = (
            state.summary.failed_per_source.get(job.labeled.source, 0) + 1
        )
    run = EpisodeRun(
        id=job.labeled.id,
        source=job.labeled.source,
        status="failed" if outcome.error is not None else "ok",
        error=message,
        latency_s=outcome.latency_s,
        **outcome.usage.model_dump(),  # calls and tokens, under `StepUsage`'s names
        parse_failures=result.parse_failures if result is not None else 0,
        warnings=len(result.warnings) if result is not None else 0,
        **{name: getattr(score, name) for name in _SCORE_NUMBERS},
        alias_aware=alias_aware,
        entities=entities,
        injections=injected.injections,
        injected_edges=injected.injected_edges,
    )
    if result is not None:
        for step, spent in result.usage.items():
            state.usage[step] = state.usage.get(step, StepUsage()) + spent
    state.summary.episodes.append(run)
    state.scores.append(score)
    log.record(state.summary.model, state.summary.program, job.labeled, run, score, result)


def _finish(state: _RunState, *, seed: int, complete: bool) -> RunSummary:
    """Turn the finished episodes of a run into its summary numbers."""
    summary = state.summary
    runs = summary.episodes
    n = len(runs)
    summary.episodes_done = n
    summary.complete = complete
    summary.wall_s = time.perf_counter() - state.started
    summary.usage_per_step = dict(sorted(state.usage.items()))
    if not n:
        return summary
    summary.scores = aggregate(state.scores)
    completed = [score for score, run in zip(state.scores, runs, strict=True) if run.status == "ok"]
    summary.scores_completed = aggregate(completed) if completed else None
    summary.edge_f1_ci95 = bootstrap_ci(state.scores, n_resamples=DEFAULT_RESAMPLES, seed=seed)
    summary.type_shares = type_shares(state.predicted_edges, state.gold_edges)
    if state.alias_aware_scores:
        summary.edge_f1_alias_aware = aggregate(state.alias_aware_scores).edge_f1
        summary.edge_f1_alias_aware_ci95 = bootstrap_ci(
            state.alias_aware_scores, n_resamples=DEFAULT_RESAMPLES, seed=seed
        )
    if state.entity_scores:
        summary.entities = sum(state.entity_scores, EntityScore())
        summary.entity_f1_ci95 = entity_f1_ci95(state.entity_scores, n_resamples=DEFAULT_RESAMPLES, seed=seed)
    per_source = summary.scores.per_source.values()
    summary.edge_f1_macro_sources = (
        sum(s.edge_f1 for s in per_source) / len(per_source) if per_source else None
    )
    summary.failed_episodes = sum(1 for run in runs if run.status == "failed")
    summary.failure_reasons = dict(sorted(summary.failure_reasons.items()))
    summary.failed_per_source = dict(sorted(summary.failed_per_source.items()))
    summary.parse_failure_episodes = sum(1 for run in runs if run.parse_failures > 0)
    summary.parse_failure_rate = summary.parse_failure_episodes / n
    summary.calls = sum(run.calls for run in runs)
    summary.prompt_tokens = sum(run.prompt_tokens for run in runs)
    summary.completion_tokens = sum(run.completion_tokens for run in runs)
    summary.calls_per_episode = summary.calls / n
    summary.prompt_tokens_per_episode = summary.prompt_tokens / n
    cached = sum(run.cached_prompt_tokens for run in runs)
    summary.uncached_prompt_tokens_per_episode = (summary.prompt_tokens - cached) / n
    summary.completion_tokens_per_episode = summary.completion_tokens / n
    latencies = [run.latency_s for run in runs]
    summary.latency_p50_s = float(np.quantile(latencies, 0.50))
    summary.latency_p95_s = float(np.quantile(latencies, 0.95))
    summary.latency_mean_s = sum(latencies) / n
    summary.cost_usd = price_usd(state.config, summary.prompt_tokens, summary.completion_tokens)
    summary.cost_per_episode_usd = None if summary.cost_usd is None else summary.cost_usd / n
    rate = injection_rate(runs, n_resamples=DEFAULT_RESAMPLES, seed=seed)
    summary.injection = InjectionSummary.of(rate) if rate is not None else None
    return summary


def _bench_lm(config: LMConfig) -> AbstractContextManager[dspy.BaseLM]:
    """`open_lm` with DSPy's response cache off: a cache hit reports no usage and no latency."""
    return open_lm(config.model_copy(update={"cache": False}))


def _preflight(models: Sequence[LMConfig]) -> None:
    """Fail before any episode runs when a hosted model lacks credentials (not half-way through)."""
    for config in models:
        if not config.is_local:
            build_lm(config.model_copy(update={"cache": False}))


@contextmanager
def _no_cache(lm: dspy.BaseLM) -> Iterator[dspy.BaseLM]:
    """Make sure `lm` answers every call itself, whatever its factory set, and restore it after."""
    cached = getattr(lm, "cache", False)
    lm.cache = False
    try:
        yield lm
    finally:
        lm.cache = cached


def run_bench(
    models: Sequence[LMConfig],
    programs: Mapping[str, dspy.Module],
    episodes: Sequence[LabeledEpisode],
    *,
    workers: int = 4,
    seed: int = 0,
    out_dir: str | Path | None = None,
    reflexion_rounds: int | None = None,
    open_types: bool = False,
    progress: bool = True,
    lm_factory: LMFactory | None = None,
    baseline: str | None = None,
    open_vocabulary: bool = False,
    withhold_entities: bool = False,
) -> BenchReport:
    """Run every program with every model over `episodes`, score them, and write the reports.

    `programs` maps the name shown in the report to a ready program (`edgewise.programs.names.resolve_program`
    builds them from names); `reflexion_rounds` and `open_types` only record how they were built.

    `out_dir` receives `results.md` (the table), `results.json`, `plot.png`, `results.html` (the
    page to read errors in) and the per-episode files `episodes.jsonl`, `predictions.jsonl` and
    `errors.jsonl` (written as episodes finish, flushed after each run); `results.json` and
    `results.html` are also rewritten after each model x program, so even a killed bench leaves the
    finished runs. `lm_factory(config)` is a context manager yielding
    the LM (default: `open_lm`, which starts the local server for `local` models); DSPy's cache is
    off for every LM either way. `seed` fixes the bootstrap resamples. `baseline` names one of
    `programs`: every other program's run gets its paired edge-F1 difference from it (overall and
    per source, `compare_to_baseline`). `open_vocabulary` sends every episode without its `edgeTypes`
    (scored against its gold as labeled) and adds the alias-aware edge-F1 of
    `edgewise.eval.open_vocabulary` to every run. When some episode labels injections, every run also
    gets its injected-edge rate (`edgewise.eval.injection`), paired against the baseline's.
    `withhold_entities` sends every episode as text alone: an edgewise program runs with its entity
    step added (`with_entity_step`), a program that finds entities itself (LlamaIndex's and LangChain's
    prompts) as it is, and any other gets a run that says it cannot; every run then gets its entity-F1
    (`edgewise.eval.entity_metric`) and the alias-aware edge-F1 through the entities it found. Raises
    `BenchInterrupted` (a `KeyboardInterrupt` carrying the partial report) on Ctrl-C, after writing
    what was done.
    """
    if workers < 1:
        raise UsageError(f"workers must be >= 1, got {workers}")
    if not models:
        raise UsageError("no models to benchmark")
    if not programs:
        raise UsageError("no programs to benchmark")
    if not episodes:
        raise UsageError("no episodes to benchmark")
    if baseline is not None and baseline not in programs:
        raise UsageError(f"baseline {baseline!r} is not one of the programs ({', '.join(programs)})")
    duplicate_ids = [name for name, count in Counter(episode.id for episode in episodes).items() if count > 1]
    if duplicate_ids:
        raise UsageError(f"episode ids must be unique; repeated: {', '.join(sorted(duplicate_ids)[:5])}")
    resolved = dict(programs)
    if lm_factory is None:
        _preflight(models)
        lm_factory = _bench_lm
    out_path = Path(out_dir) if out_dir is not None else None
    if out_path is not None:
        out_path.mkdir(parents=True, exist_ok=True)
    report = BenchReport(
        created_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        out_dir=str(out_path) if out_path is not None else None,
        versions=_versions(),
        seed=seed,
        workers=workers,
        reflexion_rounds=reflexion_rounds,
        open_types=open_types,
        open_vocabulary=open_vocabulary,
        withhold_entities=withhold_entities,
        baseline=baseline,
        models=[table_model_label(config) for config in models],
        programs=list(programs),
        data=summarize_data(episodes),
    )
    sent = without_vocabulary if open_vocabulary else (lambda episode: episode)
    if withhold_entities:
        resolved = _finding_entities(resolved, report, len(episodes))
        jobs = [_Job(labeled, withheld(sent(labeled.episode()))) for labeled in episodes]
    else:
        jobs = [_Job(labeled, sent(labeled.episode())) for labeled in episodes]
    with EpisodeLog(out_path, episodes) as log:
        try:
            _run_models(report, models, resolved, jobs, lm_factory, log, workers=workers, progress=progress)
        except _Interrupted as interrupted:
            cut = interrupted.state
            if cut is not None and not any(run is cut.summary for run in report.runs):
                report.runs.append(_finish(cut, seed=seed, complete=False))
            report.partial = True
            log.flush()  # the page reads the cut run's predictions back
            _write(report, out_path)
            raise BenchInterrupted(report) from None
    _write(report, out_path)
    return report


class _Interrupted(Exception):
    """Carries a Ctrl-C out of the run loop together with the run it cut short."""

    def __init__(self, state: _RunState | None) -> None:
        super().__init__("interrupted")
        self.state = state


def _run_models(
    report: BenchReport,
    models: Sequence[LMConfig],
    programs: dict[str, dspy.Module],
    jobs: list[_Job],
    lm_factory: LMFactory,
    log: EpisodeLog,
    *,
    workers: int,
    progress: bool,
) -> None:
    """Every model x program in order, appending each finished run to `report.runs`.

    A Ctrl-C comes out as `_Interrupted` carrying the run it stopped, so the caller can keep its
    finished episodes.
    """
    out_path = Path(report.out_dir) if report.out_dir is not None else None
    state: _RunState | None = None
    try:
        for config in models:
            label = table_model_label(config)
            for served, group in _served_groups(config, programs, report, len(jobs)):
                stack = ExitStack()
                try:
                    lm = stack.enter_context(lm_factory(served))
                except Exception as error:  # noqa: BLE001  (a model that cannot start is reported; others run)
                    stack.close()
                    message = redact(f"could not open the model: {type(error).__name__}: {error}", config)
                    for spec in group:
                        report.runs.append(_unrun(report, label, spec, len(jobs), message))
                    continue
                with stack, _no_cache(lm), lm_context(lm):
                    for spec, program in group.items():
                        state = _RunState(
                            RunSummary(
                                model=label,
                                program=spec,
                                reflexion_rounds=report.reflexion_rounds,
                                episodes_planned=len(jobs),
                            ),
                            served,
                            open_vocabulary=report.open_vocabulary,
                            withhold_entities=report.withhold_entities,
                        )
                        _run_program(state, program, jobs, workers=workers, progress=progress, log=log)
                        report.runs.append(_finish(state, seed=report.seed, complete=True))
                        state = None
                        if out_path is not None:
                            compare_to_baseline(report)
                            so_far = report.model_copy(update={"partial": True})
                            write_results_json(so_far, out_path)
                            write_html(so_far, out_path, plot=False)
    except KeyboardInterrupt:
        raise _Interrupted(state) from None


def _finding_entities(
    programs: dict[str, dspy.Module], report: BenchReport, planned: int
) -> dict[str, dspy.Module]:
    """The programs as they run on text alone: an edgewise program with its entity step, a program
    that finds entities itself as it is; any other gets a run on every model that says why not."""
    runnable: dict[str, dspy.Module] = {}
    for spec, program in programs.items():
        if isinstance(program, EdgeExtractor):
            runnable[spec] = program.with_entity_step()
        elif input_model(program).entities_required:
            for label in report.models:
                report.runs.append(
                    _unrun(report, label, spec, planned, "finds no entities: it needs them given")
                )
        else:
            runnable[spec] = program
    return runnable


def _unrun(report: BenchReport, label: str, spec: str, planned: int, message: str) -> RunSummary:
    """The run of a program that could not start on a model, with the reason."""
    return RunSummary(
        model=label,
        program=spec,
        reflexion_rounds=report.reflexion_rounds,
        episodes_planned=planned,
        error=message[:_ERROR_MESSAGE_CHARS],
    )


def _served_groups(
    config: LMConfig, programs: dict[str, dspy.Module], report: BenchReport, planned: int
) -> list[tuple[LMConfig, dict[str, dspy.Module]]]:
    """`programs` grouped by the model settings each runs on, in their order: a fine-tuned program
    runs on `config`'s model with its adapter (one server per adapter), every other on `config`.

    A program whose adapter belongs to another model gets a run that says so, and the rest go on.
    """
    groups: dict[Path | None, tuple[LMConfig, dict[str, dspy.Module]]] = {}
    for spec, program in programs.items():
        try:
            adapter = program_adapter(program, config.model)
        except ArtifactError as error:
            report.runs.append(_unrun(report, table_model_label(config), spec, planned, str(error)))
            continue
        served = config if adapter is None else config.model_copy(update={"lora_adapter": adapter})
        groups.setdefault(adapter, (served, {}))[1][spec] = program
    return list(groups.values())


def _run_program(
    state: _RunState,
    program: dspy.Module,
    jobs: list[_Job],
    *,
    workers: int,
    progress: bool,
    log: EpisodeLog,
) -> None:
    from tqdm import tqdm

    desc = f"{state.summary.model} {state.summary.program}"
    # A reply that failed on its retry too is scored as it is, and counted (`parse_failure_episodes`).
    outcomes = run_episodes(
        program, jobs, episode_of=lambda job: job.episode, workers=workers, keep_unparsed=True
    )
    with (
        tqdm(total=len(jobs), desc=desc, unit="ep", file=sys.stderr, disable=not progress) as bar,
        closing(outcomes),
    ):
        for job, outcome in outcomes:
            assert outcome is not None  # every job has an episode
            _record_episode(state, job, outcome, log)
            bar.update(1)
            if state.summary.failure_reasons:
                bar.set_postfix(failed=sum(state.summary.failure_reasons.values()), refresh=False)
    log.flush()  # per run, not per line: a line-by-line flush costs more than scoring the episode


def _write(report: BenchReport, out_path: Path | None) -> None:
    compare_to_baseline(report)
    if out_path is None:
        return
    written = write_reports(report, out_path)
    write_html(report, out_path, plot="plot" in written)
