"""What edgewise speaks of: entities, edge types, edges and results, the episode input contract,
labeled episodes, the name rule and the error vocabulary.

Kept apart from `signatures/` (the prompts) so that every layer, the signatures included, can
import these types without importing DSPy's signatures.
"""

from edgewise.domain.episode import Episode
from edgewise.domain.gold import GoldEdge, LabeledEpisode
from edgewise.domain.types import (
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
    "ExtractionResult",
    "ExtractionWarning",
    "GoldEdge",
    "LabeledEpisode",
    "StepUsage",
    "format_utc",
]
