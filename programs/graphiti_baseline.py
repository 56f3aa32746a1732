"""Graphiti's own edge prompt as a bench program: the peer a Python user runs today.

`graphiti` renders `prompt_library.extract_edges.edge` with the installed graphiti-core from each
episode, as Graphiti's `extract_edges` builds its context, and sends and parses it as Graphiti's
`LLMClient` does without a JSON schema: the response schema appended to the prompt, the language
note on the system message, the reply's code fence stripped, `json.loads`, `ExtractedEdges`.
`graphiti-structured` sends the same prompt with `ExtractedEdges`' JSON schema as `response_format`
(what `OpenAIGenericClient` does in its default json_schema mode) and parses tolerantly, as
`seed-structured` does for CORE's prompt. Both end in the same post-processing as every program.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

import dspy

from edgewise.domain.episode import Episode
from edgewise.modules.call_context import CallContext
from edgewise.modules.calls import call_step
from edgewise.modules.program_io import as_episode
from edgewise.modules.seed_prompt import (
    SeedParseError,
    cleaned_prediction,
    configured_lm,
    parse_tolerant,
    reply_text,
)
from edgewise.modules.steps import STEP_EXTRACT
from edgewise.signatures.replies import ExtractedEdge

GENERIC_LABEL: Final = "Entity"
"""The label every Graphiti entity node has; its other label, if any, is its entity type."""
_FENCE: Final = re.compile(r"^```[a-zA-Z0-9_-]*[ \t]*\r?\n?|\r?\n?```[ \t]*$")


def graphiti_context(episode: Episode) -> dict[str, Any]:
    """The context Graphiti's `extract_edges` would build for this episode (one episode, not strict)."""
    fact_types = [
        {
            "fact_type_name": edge_type.name,
            "fact_type_signatures": [
                (source, target)
                for source in edge_type.source_types or [GENERIC_LABEL]
                for target in edge_type.target_types or [GENERIC_LABEL]
            ],
            "fact_type_description": edge_type.description,
        }
        for edge_type in episode.edge_types
    ]
    return {
        "episode_content": episode.episode_content,
        "nodes": [
            {"name": entity.name, "entity_types": [GENERIC_LABEL, *([entity.type] if entity.type else [])]}
            for entity in episode.entities
        ],
        "previous_episodes": [{"content": text, "timestamp": None} for text in episode.previous_episodes],
        "reference_time": episode.reference_time,
        "edge_types": fact_types,
        "strict_edge_types": False,
        "custom_extraction_instructions": episode.custom_prompt,
    }


def graphiti_messages(episode: Episode, *, schema_in_prompt: bool) -> list[dict[str, str]]:
    """Graphiti's rendered edge prompt with what its client adds before sending it."""
    from graphiti_core.llm_client.client import get_extraction_language_instruction
    from graphiti_core.prompts import prompt_library
    from graphiti_core.prompts.extract_edges import ExtractedEdges

    messages = prompt_library.extract_edges.edge(graphiti_context(episode))
    if schema_in_prompt:
        messages[-1].content += "\n\nRespond with a JSON object in the following format:\n\n" + json.dumps(
            ExtractedEdges.model_json_schema()
        )
    messages[0].content += get_extraction_language_instruction(None)
    return [{"role": message.role, "content": message.content} for message in messages]


class GraphitiPromptExtractor(dspy.Module):
    """Graphiti's edge prompt with the same interface and post-processing as `EdgeExtractor`."""

    def __init__(self, *, structured: bool = False) -> None:
        super().__init__()
        self.structured = structured

    def forward(self, episode: Episode | dict[str, Any] | None = None, **fields: Any) -> dspy.Prediction:
        from graphiti_core.prompts.extract_edges import ExtractedEdges

        episode = as_episode(episode, **fields)
        messages = graphiti_messages(episode, schema_in_prompt=not self.structured)
        lm = configured_lm()
        kwargs: dict[str, Any] = {}
        if self.structured and "response_format" in lm.supported_params:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "ExtractedEdges", "schema": ExtractedEdges.model_json_schema()},
            }
        context = CallContext()
        raw: list[ExtractedEdge] = []

        def ask(settings: dict[str, Any]) -> Any:
            return self._parse(reply_text(lm(messages=messages, **kwargs, **settings)))

        parsed = call_step(STEP_EXTRACT, context, ask, unparsed=(SeedParseError,), lm=lm)
        if parsed is not None:
            raw = [
                ExtractedEdge(
                    relationshipType=edge.relation_type,
                    sourceEntityName=edge.source_entity_name,
                    targetEntityName=edge.target_entity_name,
                    fact=edge.fact,
                    validAt=edge.valid_at,
                    invalidAt=edge.invalid_at,
                )
                for edge in parsed.edges
            ]
        return cleaned_prediction(raw, episode, context)

    def _parse(self, text: str) -> Any:
        """The reply as Graphiti's `ExtractedEdges`, parsed as its client parses it (tolerantly with a
        JSON schema); anything else is a `SeedParseError`."""
        from graphiti_core.prompts.extract_edges import ExtractedEdges

        try:
            data = (
                parse_tolerant(text) if self.structured else json.loads(_FENCE.sub("", text.strip()).strip())
            )
            return ExtractedEdges.model_validate(data)
        except ValueError as error:  # not JSON, SeedParseError, or pydantic's ValidationError
            raise SeedParseError(f"not Graphiti's ExtractedEdges ({error})") from error
