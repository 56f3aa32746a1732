"""What every edgewise program takes and returns, shared by `EdgeExtractor`, the seed prompt and
Graphiti's prompt, so that a bench, the service and the metric can call any of them the same way."""

from __future__ import annotations

from typing import Any

import dspy

from edgewise.domain.episode import Episode
from edgewise.domain.types import ExtractionResult


def as_episode(episode: Episode | dict[str, Any] | None = None, **fields: Any) -> Episode:
    """Accept an `Episode`, its JSON dict, or its fields as keywords."""
    if isinstance(episode, Episode):
        return episode
    if episode is not None:
        return Episode.model_validate(episode)
    return Episode.model_validate(fields)


def result_prediction(result: ExtractionResult) -> dspy.Prediction:
    """The uniform return value of every edgewise program: edges for metrics, the full result for users."""
    return dspy.Prediction(edges=result.edges, result=result)
