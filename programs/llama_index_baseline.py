"""LlamaIndex's `SchemaLLMPathExtractor` as a bench program: LlamaIndex's own prompt on edgewise's model.

The peer of edgewise's entity step plus its edge program for a LlamaIndex user: one call per episode
that names the entities and the relations between them, from the text alone (the input is a
`TextEpisode`; LlamaIndex's extractor sees neither previous episodes, nor a reference time, nor
custom instructions, so neither does this program).

The schema is what such a user would give the extractor for the episode: `possible_entities` a
`Literal` of its entity types (`entityTypes`, else the types its relationship types' signatures
name, as for edgewise's entity step; none: LlamaIndex's defaults), `possible_relations` a `Literal` of
its relationship types' names, and `kg_validation_schema` the triples (source type, relation, target
type) of their signatures, a relation without one joining any two of the possible entities. Each
type is written as LlamaIndex's validation rewrites a model's types before checking them (spaces to
underscores, upper case: `Person` -> `PERSON`), since a type in any other form could never pass it; the
episode's spelling is restored on the way out. `strict` and `max_triplets_per_chunk` keep
LlamaIndex's defaults (True, 10).

The extractor asks with `llm.structured_predict(KGSchema, prompt, text=..., max_triplets_per_chunk=...)`,
whose program depends on the model:

- `llama-index`: a model without native function calling (LlamaIndex's `OpenAILike` and `LlamaCPP`
  by default, the way a local llama.cpp server is used) gets `LLMTextCompletionProgram`: the prompt
  with `PydanticOutputParser`'s JSON-schema instructions appended (braces doubled, as LlamaIndex
  sends them), one user message, the reply read by the same parser (the outermost `{...}`,
  `KGSchema.model_validate_json`).
- `llama-index-structured`: a function-calling model gets `FunctionCallingProgram`, which sends the
  prompt alone and takes `KGSchema` as a tool. Reproduced as the prompt alone with `KGSchema`'s JSON
  schema as `response_format` (what a server without tools can constrain), the reply parsed
  tolerantly and validated by the same `KGSchema`, as `graphiti-structured` does for Graphiti.

Both prompts are rendered by the installed llama-index-core (its template, output parser and schema
classes), and the reply goes through the extractor's own validation and pruning
(`_prune_invalid_triplets`: triples outside the validation schema and self-references dropped).
What LlamaIndex treats as a failed chunk (its `ValueError`, `TypeError`, `AttributeError`) is here a
reply that could not be parsed, retried once and then a `parse_failure`, as for every program. Triplets
that LlamaIndex's validation drops are counted in a `framework_filtered` warning.

Each kept triplet becomes an edge (relationship type the relation, ends the subject's and object's
names). LlamaIndex writes no fact text and no dates: the fact is the triplet as "subject RELATION
object" and both dates are null. The subjects and objects are the found entities
(`ExtractionResult.entities`, kept by the entity step's rules, `modules.entities.found_entities`),
and the edges go through the same post-processing as every program, closed to those entities.
"""

from __future__ import annotations

import json
from functools import lru_cache
from itertools import product
from typing import Any, Final, Literal, get_args

import dspy
from llama_index.core.indices.property_graph.transformations.schema_llm import (
    DEFAULT_ENTITIES,
    SchemaLLMPathExtractor,
)
from llama_index.core.llms.mock import MockLLM
from llama_index.core.output_parsers.pydantic import PydanticOutputParser
from llama_index.core.output_parsers.utils import extract_json_str
from llama_index.core.schema import MetadataMode, TextNode

from edgewise.domain.episode import Episode, TextEpisode
from edgewise.modules.call_context import CallContext
from edgewise.modules.calls import call_step
from edgewise.modules.entities import entity_type_inputs, one_reply_result
from edgewise.modules.program_io import as_episode, result_prediction
from edgewise.modules.seed_prompt import (
    SeedParseError,
    configured_lm,
    parse_tolerant,
    reply_text,
    response_schema,
)
from edgewise.modules.steps import STEP_EXTRACT
from edgewise.signatures.extract_entities import ExtractedEntity
from edgewise.signatures.replies import ExtractedEdge

Triple = tuple[str, str, str]
FRAMEWORK_FILTERED: Final = "framework_filtered"
"""The warning for replies of which the framework's own validation dropped some items."""
_FAILED_CHUNK: Final = (ValueError, TypeError, AttributeError)
"""What `SchemaLLMPathExtractor._aextract` catches: for it, the chunk yields no triplets."""


def schema_label(name: str) -> str:
    """A type as LlamaIndex's validation rewrites a model's type before checking it: `Works at` -> `WORKS_AT`."""
    return name.replace(" ", "_").upper()


def llama_index_schema(episode: Episode) -> tuple[tuple[str, ...], tuple[str, ...], tuple[Triple, ...]]:
    """The possible entities, the possible relations and the validation triples a LlamaIndex user
    would give `SchemaLLMPathExtractor` for this episode (see the module docstring); empty means
    LlamaIndex's default."""
    entities = tuple(dict.fromkeys(schema_label(name) for name in entity_type_inputs(episode)))
    relations = tuple(dict.fromkeys(schema_label(edge_type.name) for edge_type in episode.edge_types))
    anyone = entities or get_args(DEFAULT_ENTITIES)
    triples = tuple(
        dict.fromkeys(
            (source, schema_label(edge_type.name), target)
            for edge_type in episode.edge_types
            for source, target in product(
                [schema_label(name) for name in edge_type.source_types or ()] or anyone,
                [schema_label(name) for name in edge_type.target_types or ()] or anyone,
            )
        )
    )
    return entities, relations, triples


@lru_cache(maxsize=64)
def _extractor(
    entities: tuple[str, ...], relations: tuple[str, ...], triples: tuple[Triple, ...]
) -> SchemaLLMPathExtractor:
    return SchemaLLMPathExtractor(
        llm=MockLLM(),  # a required field; never called: edgewise's LM answers
        possible_entities=Literal[entities] if entities else None,  # type: ignore[valid-type]
        possible_relations=Literal[relations] if relations else None,  # type: ignore[valid-type]
        kg_validation_schema=list(triples) or None,
    )


def llama_index_extractor(episode: Episode) -> SchemaLLMPathExtractor:
    """LlamaIndex's extractor built with the episode's schema (its prompt, `KGSchema` and validation)."""
    return _extractor(*llama_index_schema(episode))


def llama_index_text(episode: Episode) -> str:
    """The chunk text the extractor reads: the episode's content as a node without metadata."""
    return TextNode(text=episode.episode_content).get_content(metadata_mode=MetadataMode.LLM)


def llama_index_messages(
    extractor: SchemaLLMPathExtractor, text: str, *, schema_in_prompt: bool
) -> list[dict[str, str]]:
    """The messages LlamaIndex sends a chat model for one chunk: with the output parser's schema
    instructions (`LLMTextCompletionProgram`) or without (`FunctionCallingProgram`)."""
    parser = PydanticOutputParser(output_cls=extractor.kg_schema_cls) if schema_in_prompt else None
    # A copy: the program sets its parser on the prompt it is given, which is shared between extractors.
    template = extractor.extract_prompt.model_copy(update={"output_parser": parser})
    messages = template.format_messages(text=text, max_triplets_per_chunk=extractor.max_triplets_per_chunk)
    return [{"role": message.role.value, "content": message.content or ""} for message in messages]


def parse_llama_index_reply(
    extractor: SchemaLLMPathExtractor, text: str, *, structured: bool
) -> tuple[list[tuple[Any, Any, Any]], int | None]:
    """The triplets the extractor keeps of a reply, and how many the reply offered (None: not told).

    Raises `SeedParseError` where LlamaIndex's extractor would give the chunk up.
    """
    schema = extractor.kg_schema_cls
    try:
        if structured:
            data = parse_tolerant(text)
            offered = _count(data)
            kg_schema = schema.model_validate(data)
        else:
            offered = _count(_json_or_none(text))
            kg_schema = PydanticOutputParser(output_cls=schema).parse(text)
        return list(extractor._prune_invalid_triplets(kg_schema)), offered
    except _FAILED_CHUNK as error:  # not JSON, SeedParseError, pydantic's ValidationError, a bad item
        raise SeedParseError(f"not LlamaIndex's KGSchema ({type(error).__name__}: {error})") from error


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(extract_json_str(text))
    except ValueError:
        return None


def _count(data: Any) -> int | None:
    items = data.get("triplets") if isinstance(data, dict) else None
    return len(items) if isinstance(items, list) else None


class LlamaIndexPathExtractor(dspy.Module):
    """LlamaIndex's `SchemaLLMPathExtractor` prompt with the interface and post-processing of an
    edgewise program that finds its own entities."""

    finds_entities = True

    def __init__(self, *, structured: bool = False) -> None:
        super().__init__()
        self.structured = structured

    def forward(self, episode: Episode | dict[str, Any] | None = None, **fields: Any) -> dspy.Prediction:
        read = as_episode(episode, model=TextEpisode, **fields)
        extractor = llama_index_extractor(read)
        messages = llama_index_messages(
            extractor, llama_index_text(read), schema_in_prompt=not self.structured
        )
        lm = configured_lm()
        kwargs: dict[str, Any] = {}
        if self.structured and "response_format" in lm.supported_params:
            kwargs["response_format"] = response_schema(extractor.kg_schema_cls)
        context = CallContext()

        def ask(settings: dict[str, Any]) -> tuple[list[tuple[Any, Any, Any]], int | None]:
            text = reply_text(lm(messages=messages, **kwargs, **settings))
            return parse_llama_index_reply(extractor, text, structured=self.structured)

        parsed = call_step(STEP_EXTRACT, context, ask, unparsed=(SeedParseError,), lm=lm)
        triplets, offered = parsed if parsed is not None else ([], None)
        if offered is not None and offered > len(triplets):
            context.note(
                FRAMEWORK_FILTERED,
                f"LlamaIndex's validation kept {len(triplets)} of the reply's {offered} triplets "
                "(types outside the schema, self-references, malformed items)",
            )
        entity_spelling = {schema_label(name): name for name in entity_type_inputs(read)}
        relation_spelling = {schema_label(edge_type.name): edge_type.name for edge_type in read.edge_types}
        raw = [
            ExtractedEdge(
                relationshipType=relation_spelling.get(str(relation.label), str(relation.label)),
                sourceEntityName=subject.name,
                targetEntityName=obj.name,
                fact=f"{subject.name} {relation.label} {obj.name}",
            )
            for subject, relation, obj in triplets
        ]
        named = [
            ExtractedEntity(name=node.name, type=entity_spelling.get(str(node.label), str(node.label)))
            for subject, _, obj in triplets
            for node in (subject, obj)
        ]
        return result_prediction(one_reply_result(raw, read, named, context))
