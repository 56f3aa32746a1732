"""Typed inputs and outputs, and the three DSPy signatures that mirror the seed prompts."""

from edgewise.signatures.episode import Episode
from edgewise.signatures.gold import GoldEdge, LabeledEpisode
from edgewise.signatures.replies import ExtractedEdge
from edgewise.signatures.types import (
    Edge,
    EdgeAttribute,
    EdgeType,
    Entity,
    ExtractionResult,
    ExtractionWarning,
    StepUsage,
    format_utc,
)

__all__ = [
    "Edge",
    "EdgeAttribute",
    "EdgeType",
    "Entity",
    "Episode",
    "ExtractedEdge",
    "ExtractionResult",
    "ExtractionWarning",
    "GoldEdge",
    "LabeledEpisode",
    "StepUsage",
    "format_utc",
]
