"""What a bench measured, as data: one record per episode, a summary per model x program, the report.

The bench writes these and its readers (`results.json`, the Markdown table, the page, the per-episode
log, `edgewise report`) read them, so they live apart from both: a reader imports the records, not
the runner.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, model_serializer

from edgewise.domain.types import StepUsage
from edgewise.eval.entity_metric import EntityScore
from edgewise.eval.injection import InjectionRate
from edgewise.eval.intervals import DEFAULT_RESAMPLES
from edgewise.eval.open_vocabulary import TypeShare
from edgewise.eval.paired import PairedDifference
from edgewise.eval.records import Count, Counts, SplitScore, without_unjudged_attributes

EpisodeStatus = Literal["ok", "failed"]


class EpisodeRun(BaseModel):
    """One episode under one model x program: what it cost and how it scored (the bare counts)."""

    id: str
    source: str
    status: EpisodeStatus
    error: str | None = None
    latency_s: float
    calls: Count
    prompt_tokens: Count
    completion_tokens: Count
    cached_prompt_tokens: Count
    parse_failures: Count
    warnings: Count
    n_gold: int
    n_predicted: int
    tp: int
    fp: int
    fn: int
    f1: float
    attribute_right: Count
    attribute_total: Count
    attribute_values: Count
    attribute_supported: Count

    alias_aware: Counts | None = None
    """With `--open-vocabulary`: the counts of the alias-aware edge-F1 (`edgewise.eval.open_vocabulary`);
    with `--withhold-entities`, of the same edge-F1 through the program's own entities
    (`edgewise.eval.entity_metric.end_to_end_score`)."""
    entities: EntityScore | None = None
    """With `--withhold-entities`, on an episode whose entity list is exhaustive: the entity counts."""
    injections: Count
    """The episode's labeled injections (`edgewise.eval.injection`); 0 and left out of JSON when none."""
    injected_edges: Count
    """The written edges that match one of the injections' edges."""

    @model_serializer(mode="wrap")
    def _attributes_when_judged(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = without_unjudged_attributes(handler(self))
        if not data.get("injections"):
            data.pop("injections", None)
            data.pop("injected_edges", None)
        return data


class PairedResult(BaseModel):
    """A program's edge-F1 minus the baseline's on the same episodes, with its paired 95% interval."""

    difference: float
    low: float
    high: float
    episodes: int

    @classmethod
    def of(cls, paired: PairedDifference) -> PairedResult:
        return cls(difference=paired.difference, low=paired.low, high=paired.high, episodes=paired.episodes)

    def text(self) -> str:
        """`+0.081 [+0.011, +0.150]`; a difference whose interval holds 0 is no difference."""
        return f"{self.difference:+.3f} [{self.low:+.3f}, {self.high:+.3f}]"


class InjectionSummary(BaseModel):
    """A run's injected-edge rate over its episodes with injections (`edgewise.eval.injection`): written
    edges that an injected instruction asked for, per injection; lower is better.

    `comparison` is the rate minus the `--baseline` program's, paired on the same episodes.
    """

    episodes: int
    injections: int
    injected_edges: int
    rate: float
    ci95: tuple[float, float] | None = None
    comparison: PairedResult | None = None

    @classmethod
    def of(cls, rate: InjectionRate) -> InjectionSummary:
        """The summary of `rate`, whose fields it has under the same names; `comparison` is `compare_to_baseline`'s to set."""
        return cls(**rate._asdict())


class Comparison(BaseModel):
    """A run against the bench's `--baseline` program on the same model: overall and per source.

    `attribute_accuracy` is the paired difference of attribute accuracy on matched edges, where both
    runs judged some attribute (None otherwise).
    """

    baseline: str
    overall: PairedResult
    per_source: dict[str, PairedResult] = Field(default_factory=dict)
    attribute_accuracy: PairedResult | None = None

    @model_serializer(mode="wrap")
    def _attributes_when_judged(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        return data if data.get("attribute_accuracy") is not None else without_unjudged_attributes(data)


class RunSummary(BaseModel):
    """One model x program over the episodes: scores, failures, usage, latency and cost.

    `scores` counts a failed episode as an empty prediction (its gold edges are misses), so a model
    that times out cannot look better by skipping the hard texts; `scores_completed` leaves failed
    episodes out, for telling extraction quality apart from reliability.
    """

    model: str
    program: str
    reflexion_rounds: int | None = None
    episodes_planned: int
    episodes_done: int = 0
    complete: bool = False
    error: str | None = None
    scores: SplitScore | None = None
    scores_completed: SplitScore | None = None
    edge_f1_ci95: tuple[float, float] | None = None
    edge_f1_macro_sources: float | None = None
    """Mean of the sources' micro edge-F1: each source counts once, however many edges it has."""
    comparison: Comparison | None = None
    edge_f1_alias_aware: float | None = None
    """With `--open-vocabulary`: micro edge-F1 where a type that normalizes like the gold's counts right."""
    edge_f1_alias_aware_ci95: tuple[float, float] | None = None
    alias_aware_comparison: PairedResult | None = None
    """The alias-aware edge-F1 minus the baseline program's, paired on the same episodes."""
    entities: EntityScore | None = None
    """With `--withhold-entities`: the entity counts pooled over the episodes with exhaustive lists."""
    entity_f1_ci95: tuple[float, float] | None = None
    entity_comparison: PairedResult | None = None
    """The entity-F1 minus the baseline program's, paired on the episodes both judged."""
    type_shares: list[TypeShare] = Field(default_factory=list)
    """Every relationship type the run wrote, most written first, with the gold's share of it."""
    failed_episodes: int = 0
    failure_reasons: dict[str, int] = Field(default_factory=dict)
    failed_per_source: dict[str, int] = Field(default_factory=dict)
    parse_failure_episodes: int = 0
    parse_failure_rate: float | None = None
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls_per_episode: float | None = None
    prompt_tokens_per_episode: float | None = None
    uncached_prompt_tokens_per_episode: float | None = None
    """Prompt tokens the server evaluated, not taken from its prompt cache (where it reports that)."""
    completion_tokens_per_episode: float | None = None
    usage_per_step: dict[str, StepUsage] = Field(default_factory=dict)
    latency_p50_s: float | None = None
    latency_p95_s: float | None = None
    latency_mean_s: float | None = None
    cost_usd: float | None = None
    cost_per_episode_usd: float | None = None
    wall_s: float = 0.0
    injection: InjectionSummary | None = None
    """The injected-edge rate, when some episode has labeled injections (else left out of JSON)."""
    episodes: list[EpisodeRun] = Field(default_factory=list)

    @model_serializer(mode="wrap")
    def _injection_when_labeled(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data = handler(self)
        if data.get("injection") is None:
            data.pop("injection", None)
        return data

    @property
    def tokens_per_episode(self) -> float | None:
        if self.prompt_tokens_per_episode is None or self.completion_tokens_per_episode is None:
            return None
        return self.prompt_tokens_per_episode + self.completion_tokens_per_episode


class DataSummary(BaseModel):
    """Which episodes were benchmarked: a fingerprint of their ids, and how many came from each source."""

    episodes: int
    ids_sha256: str
    sources: dict[str, int]
    non_exhaustive: int
    gold_edges: int


class BenchReport(BaseModel):
    """Everything a bench measured; `results.json` is this model, `partial` when Ctrl-C stopped it."""

    partial: bool = False
    created_at: str
    out_dir: str | None = None
    versions: dict[str, str]
    seed: int
    workers: int
    reflexion_rounds: int | None = None
    open_types: bool = False
    open_vocabulary: bool = False
    """The episodes were sent without their `edgeTypes` (scored against their gold as labeled)."""
    withhold_entities: bool = False
    """The episodes were sent without their entities: each program found its own (entity-F1, and the
    alias-aware edge-F1 through the entities it found)."""
    baseline: str | None = None
    bootstrap_resamples: int = DEFAULT_RESAMPLES
    models: list[str]
    programs: list[str]
    data: DataSummary
    runs: list[RunSummary] = Field(default_factory=list)
