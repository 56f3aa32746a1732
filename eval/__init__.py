"""Evaluation of edge extraction: the edge-F1 metric with feedback, and the reports built on it."""

from edgewise.domain.names import normalize_name
from edgewise.eval.bench import BenchInterrupted, run_bench
from edgewise.eval.bench_records import BenchReport, EpisodeRun, RunSummary
from edgewise.eval.dates import format_date
from edgewise.eval.feedback import edge_metric, feedback_text, format_edge
from edgewise.eval.intervals import bootstrap_ci
from edgewise.eval.matching import normalize_type
from edgewise.eval.records import (
    Counts,
    EpisodeScore,
    MissedEdge,
    MistypedEdge,
    ReversedEdge,
    SplitScore,
    SpuriousEdge,
    WrongDate,
)
from edgewise.eval.scoring import aggregate, score_episode

__all__ = [
    "BenchInterrupted",
    "BenchReport",
    "Counts",
    "EpisodeRun",
    "EpisodeScore",
    "MissedEdge",
    "MistypedEdge",
    "ReversedEdge",
    "RunSummary",
    "SplitScore",
    "SpuriousEdge",
    "WrongDate",
    "aggregate",
    "bootstrap_ci",
    "edge_metric",
    "feedback_text",
    "format_date",
    "format_edge",
    "normalize_name",
    "normalize_type",
    "run_bench",
    "score_episode",
]
