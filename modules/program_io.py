"""What every edgewise program takes and returns, shared by `EdgeExtractor`, the seed prompt and
Graphiti's prompt, so that a bench, the service and the metric can call any of them the same way."""

from __future__ import annotations

from typing import Any

import dspy

from edgewise.domain.episode import Episode, episode_model
from edgewise.domain.types import ExtractionResult


def as_episode(
    episode: Episode | dict[str, Any] | None = None, *, model: type[Episode] = Episode, **fields: Any
) -> Episode:
    """Accept an `Episode`, its JSON dict, or its fields as keywords, read by `model` (the program's
    input contract: `TextEpisode` for a program with an entity step).

    An episode without entities given to a program that needs them is read again by `model`, so it
    is refused with the message the input contract gives.
    """
    if isinstance(episode, Episode):
        if episode.entities or not model.entities_required:
            return episode
        episode = episode.model_dump(by_alias=True)
    if episode is not None:
        return model.model_validate(episode)
    return model.model_validate(fields)


def input_model(program: Any) -> type[Episode]:
    """The input contract of `program`: `TextEpisode` when it finds entities itself (an `EdgeExtractor`
    with the entity step, or a program that says `finds_entities = True`, as the bench programs of
    frameworks that extract entities and edges in one call do), else `Episode`."""
    options = getattr(program, "options", None)
    finds = getattr(program, "finds_entities", False) or getattr(options, "entity_step", False)
    return episode_model(bool(finds))


def result_prediction(result: ExtractionResult) -> dspy.Prediction:
    """The uniform return value of every edgewise program: edges for metrics, the full result for users."""
    return dspy.Prediction(edges=result.edges, result=result)
