"""The baseline: the seed's prompts sent verbatim, parsed the way CORE parsed them.

Every benchmark shows this beside the compiled program on the same model. Two variants:
`seed` (free text, `JSON.parse` of the whole reply: fences or prose are parse failures, as in CORE)
and `seed-structured` (the same messages with the compiled program's `response_format` and tolerant
parsing), which separates the prompt's wording from the JSON fix.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Final

import dspy
import json_repair
from pydantic import BaseModel, ValidationError

from edgewise.domain.episode import Episode
from edgewise.domain.errors import REASON_PARSE, EdgewiseError
from edgewise.domain.types import ExtractionWarning
from edgewise.modules.call_context import CallContext
from edgewise.modules.calls import call_step
from edgewise.modules.context import seed_context
from edgewise.modules.postprocess import postprocess
from edgewise.modules.program_io import as_episode, result_prediction
from edgewise.modules.steps import STEP_EXTRACT, STEP_REFLEXION
from edgewise.signatures.replies import ExtractedEdge

EDGE_SYSTEM: Final = (
    "You are an expert fact extractor that extracts fact triples from text. "
    "1. Extracted fact triples should also be extracted with relevant date information."
    "2. Treat the CURRENT TIME as the time the CURRENT EPISODE was created. All temporal information "
    "should be extracted relative to this time."
)
REFLEXION_SYSTEM: Final = (
    "You are an AI assistant that determines which facts have not been extracted from the given context"
)
MISSED_FACTS_PREFIX: Final = "The following facts were missed in a previous extraction: "


def js_stringify(value: Any) -> str:
    """`JSON.stringify(value, null, 2)`: two-space indent, non-ASCII kept, NaN rejected."""
    return json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False)


def render_edge_messages(context: dict[str, Any]) -> list[dict[str, str]]:
    """The seed's `edge(context)`, byte for byte."""
    user = f"""
<PREVIOUS_EPISODES>
{js_stringify(context.get("previousEpisodes") or [])}
</PREVIOUS_EPISODES>

<CURRENT_EPISODE>
{context.get("episodeContent")}
</CURRENT_EPISODE>

<ENTITIES>
{js_stringify(context.get("nodes") or [])}
</ENTITIES>

<REFERENCE_TIME>
{context.get("referenceTime")}  # ISO 8601 (UTC); used to resolve relative time mentions
</REFERENCE_TIME>

<RELATIONSHIP TYPES>
{js_stringify(context.get("edgeTypes") or {})}
</RELATIONSHIP TYPES>

# TASK
Extract all factual relationships between the given ENTITIES based on the CURRENT EPISODE.
Only extract facts that:
- involve two DISTINCT ENTITIES from the ENTITIES list,
- are clearly stated or unambiguously implied in the CURRENT EPISODE,
    and can be represented as edges in a knowledge graph.
- The RELATIONSHIP TYPES provide a list of the most important types of relationships, make sure to extract any facts that
    could be classified into one of the provided relationship types

You may use information from the PREVIOUS EPISODES only to disambiguate references or support continuity.

{context.get("customPrompt") or ""}

# EXTRACTION RULES

1. Only emit facts where both the subject and object match entities in ENTITIES.
2. Each fact must involve two **distinct** entities.
3. Use a SCREAMING_SNAKE_CASE string as the `relationshipType` (e.g., FOUNDED, WORKS_AT).
4. Do not emit duplicate or semantically redundant facts.
5. The `fact` should quote or closely paraphrase the original source sentence(s).
6. Use `REFERENCE_TIME` to resolve vague or relative temporal expressions (e.g., "last week").
7. Do **not** hallucinate or infer temporal bounds from unrelated events.

# DATETIME RULES

- Use ISO 8601 with "Z" suffix (UTC) (e.g., 2025-04-30T00:00:00Z).
- If the fact is ongoing (present tense), set `validAt` to REFERENCE_TIME.
- If a change/termination is expressed, set `invalidAt` to the relevant timestamp.
- Leave both fields `null` if no explicit or resolvable time is stated.
- If only a date is mentioned (no time), assume 00:00:00.
- If only a year is mentioned, use January 1st at 00:00:00.

Respond with a JSON object containing an "edges" array of objects, each with "relationshipType", "sourceEntityName", "targetEntityName", "fact", and optionally "validAt" and "invalidAt" properties.
"""
    return [{"role": "system", "content": EDGE_SYSTEM}, {"role": "user", "content": user}]


def render_reflexion_messages(context: dict[str, Any]) -> list[dict[str, str]]:
    """The seed's `reflexion(context)`, byte for byte (trailing space after "FACTS;" included)."""
    user = f"""
<PREVIOUS EPISODES>
{js_stringify(context.get("previousEpisodes") or [])}
</PREVIOUS EPISODES>

<CURRENT EPISODE>
{context.get("episodeContent")}
</CURRENT EPISODE>

<EXTRACTED ENTITIES>
{js_stringify(context.get("nodes") or [])}
</EXTRACTED ENTITIES>

<EXTRACTED FACTS>
{js_stringify(context.get("extractedFacts") or [])}
</EXTRACTED FACTS>

Given the above EPISODES, list of EXTRACTED ENTITIES entities, and list of EXTRACTED FACTS; \n\
determine if any facts haven't been extracted. Respond with a JSON object containing a "missingFacts" array of strings.
"""
    return [{"role": "system", "content": REFLEXION_SYSTEM}, {"role": "user", "content": user}]


class SeedEdgesReply(BaseModel):
    """The reply shape the seed asks for; its JSON schema is the structured variant's response_format."""

    edges: list[ExtractedEdge]


class SeedMissingFactsReply(BaseModel):
    missingFacts: list[str]


class SeedParseError(EdgewiseError, ValueError):
    """The reply is not the JSON the seed asked for (counted as a parse failure, never raised to users)."""

    reason = REASON_PARSE


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_strict(text: str) -> Any:
    """`JSON.parse(text)`: the whole reply must be JSON (NaN/Infinity are not)."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except ValueError as error:
        raise SeedParseError(f"reply is not JSON: {error}") from error


_FENCE: Final = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def parse_tolerant(text: str) -> Any:
    """Parse the JSON object inside a reply: code fences, prose around it and small syntax slips allowed."""
    fenced = _FENCE.search(text)
    body = fenced.group(1) if fenced else text
    start, end = body.find("{"), body.rfind("}")
    if start == -1 or end <= start:
        raise SeedParseError("reply holds no JSON object")
    value = json_repair.loads(body[start : end + 1])
    if not isinstance(value, dict):
        raise SeedParseError("reply holds no JSON object")
    return value


def response_schema(model: type[BaseModel]) -> dict[str, Any]:
    """An OpenAI `response_format` of type json_schema for `model`."""
    return {
        "type": "json_schema",
        "json_schema": {"name": model.__name__, "schema": model.model_json_schema()},
    }


def with_edges(data: Any) -> dict[str, Any]:
    """`data` when it is an object with an "edges" array; a reply without one is a parse failure."""
    if not isinstance(data, dict) or not isinstance(data.get("edges"), list):
        raise SeedParseError('reply has no "edges" array')
    return data


def edges_from_reply(data: Any, context: CallContext) -> list[ExtractedEdge]:
    """Read the "edges" array; a malformed item is dropped with a warning, a missing array is a failure."""
    data = with_edges(data)
    edges: list[ExtractedEdge] = []
    for position, item in enumerate(data["edges"]):
        try:
            edges.append(ExtractedEdge.model_validate(item))
        except ValidationError as error:
            context.warn(
                ExtractionWarning(
                    code="invalid_edge",
                    message=f"edges[{position}] dropped: {error.errors()[0]['msg']}",
                    edge=item if isinstance(item, dict) else None,
                )
            )
    return edges


def reply_text(outputs: list[Any]) -> str:
    first = outputs[0] if outputs else ""
    return (first.get("text") or "") if isinstance(first, dict) else str(first or "")


class NoModelError(EdgewiseError, RuntimeError):
    """A prompt baseline was called with no model configured (a `RuntimeError`, as it was before)."""


def configured_lm() -> dspy.BaseLM:
    """The caller's DSPy LM, which a prompt baseline calls directly (its messages are the prompt's own)."""
    lm = dspy.settings.lm
    if lm is None:
        raise NoModelError("no language model configured: pass --model or call dspy.configure(lm=...)")
    return lm


def cleaned_prediction(raw: list[ExtractedEdge], episode: Episode, context: CallContext) -> dspy.Prediction:
    """A prompt baseline's raw edges through the same post-processing as every program (open types)."""
    edges, cleanup_warnings = postprocess(raw, episode)
    context.warn_all(cleanup_warnings)
    return result_prediction(context.result(edges))


class SeedPromptExtractor(dspy.Module):
    """The seed prompt as a program with the same interface and post-processing as `EdgeExtractor`."""

    def __init__(self, *, structured: bool = False, max_reflexion_rounds: int = 0) -> None:
        super().__init__()
        self.structured = structured
        self.max_reflexion_rounds = max_reflexion_rounds

    def forward(self, episode: Episode | dict[str, Any] | None = None, **fields: Any) -> dspy.Prediction:
        episode = as_episode(episode, **fields)
        lm = configured_lm()
        context = CallContext()
        prompt = seed_context(episode)
        raw = self._extract(lm, prompt, context)
        for _ in range(self.max_reflexion_rounds):
            missing = self._missing_facts(lm, prompt, raw, context)
            if not missing:
                break
            hinted = {**prompt, "customPrompt": _with_missed_facts(prompt["customPrompt"], missing)}
            raw = raw + self._extract(lm, hinted, context)
        return cleaned_prediction(raw, episode, context)

    def _ask(
        self,
        lm: dspy.BaseLM,
        messages: list[dict[str, str]],
        schema: type[BaseModel],
        step: str,
        context: CallContext,
        check: Callable[[Any], Any] = lambda data: data,
    ) -> Any:
        """The parsed reply, None when it failed on its retry too; `check` raises `SeedParseError` for
        a reply of the wrong shape, which is a parse failure too."""
        kwargs: dict[str, Any] = {}
        if self.structured and "response_format" in lm.supported_params:
            kwargs["response_format"] = response_schema(schema)
        parse = parse_tolerant if self.structured else parse_strict

        def ask(settings: dict[str, Any]) -> Any:
            return check(parse(reply_text(lm(messages=messages, **kwargs, **settings))))

        return call_step(step, context, ask, unparsed=(SeedParseError,), lm=lm)

    def _extract(
        self,
        lm: dspy.BaseLM,
        prompt: dict[str, Any],
        context: CallContext,
    ) -> list[ExtractedEdge]:
        messages = render_edge_messages(prompt)
        data = self._ask(lm, messages, SeedEdgesReply, STEP_EXTRACT, context, check=with_edges)
        return [] if data is None else edges_from_reply(data, context)

    def _missing_facts(
        self,
        lm: dspy.BaseLM,
        prompt: dict[str, Any],
        raw: list[ExtractedEdge],
        context: CallContext,
    ) -> list[str]:
        reflexion_prompt = {**prompt, "extractedFacts": [edge.fact for edge in raw]}
        messages = render_reflexion_messages(reflexion_prompt)
        data = self._ask(lm, messages, SeedMissingFactsReply, STEP_REFLEXION, context)
        facts = data.get("missingFacts") if isinstance(data, dict) else None
        return (
            [fact for fact in facts if isinstance(fact, str) and fact.strip()]
            if isinstance(facts, list)
            else []
        )


def _with_missed_facts(custom_prompt: str, missing: list[str]) -> str:
    """Graphiti's way of feeding reflexion back: the missed facts appended to the custom prompt."""
    hint = MISSED_FACTS_PREFIX + "; ".join(missing)
    return f"{custom_prompt}\n\n{hint}" if custom_prompt else hint
