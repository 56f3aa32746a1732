"""How an `Episode` is shown to a model: the seed's context object and the signatures' inputs.

Both views are derived here, once, so the seed baseline and the DSPy program see the same facts.
"""

from __future__ import annotations

from typing import Any, Final

from edgewise.domain.episode import Episode
from edgewise.domain.types import format_utc


def entity_rows(episode: Episode) -> list[dict[str, str]]:
    """Entities without empty fields: small models read fewer tokens and no `null`s."""
    return [entity.model_dump(exclude_none=True) for entity in episode.entities]


def relationship_types(episode: Episode) -> dict[str, str]:
    """The seed's `edgeTypes` object: type name -> description (symmetric types say so)."""
    return {
        edge_type.name: edge_type.description + (" (symmetric)" if edge_type.symmetric else "")
        for edge_type in episode.edge_types
    }


def seed_context(episode: Episode) -> dict[str, Any]:
    """The context object CORE passed to the seed's prompt builders."""
    return {
        "previousEpisodes": list(episode.previous_episodes),
        "episodeContent": episode.episode_content,
        "nodes": entity_rows(episode),
        "referenceTime": format_utc(episode.reference_time),
        "edgeTypes": relationship_types(episode),
        "customPrompt": episode.custom_prompt,
    }


# `ExtractEdges`' name for each field of the seed's context object: one set of facts, two vocabularies.
_INPUT_NAMES: Final = {
    "previousEpisodes": "previous_episodes",
    "episodeContent": "episode_content",
    "nodes": "entities",
    "referenceTime": "reference_time",
    "edgeTypes": "relationship_types",
    "customPrompt": "custom_prompt",
}


def extraction_inputs(episode: Episode) -> dict[str, Any]:
    """Keyword inputs of `ExtractEdges` (without `missing_facts`): the seed's context, renamed."""
    return {_INPUT_NAMES[key]: value for key, value in seed_context(episode).items()}
