"""LangChain's `LLMGraphTransformer` as a bench program: LangChain's own prompt on edgewise's model.

The peer of edgewise's entity step plus its edge program for a LangChain user: one call per episode
that names the entities and the relations between them, from the text alone (the input is a
`TextEpisode`; the transformer reads a document's `page_content` and nothing else, so previous
episodes, the reference time and custom instructions are not shown).

The transformer is langchain_experimental's own, built as such a user would build it for the
episode: `allowed_nodes` the episode's entity types (`entityTypes`, else the types its relationship
types' signatures name, as for edgewise's entity step; none: any type), `allowed_relationships` its
relationship types as (source type, relation, target type) triples from their signatures where every
type has one whose types are all allowed nodes, else as names (LangChain takes one form or the other,
never both), `strict_mode` on (its default), and `ignore_tool_usage=True`: the prompt-based JSON mode
LangChain uses for a model without native function calling, as a local llama.cpp server is served.

Its chain (`create_unstructured_prompt(...) | llm`) runs with the model replaced by a call to the
configured DSPy LM: the system and human messages LangChain renders are sent as they are, and the
reply goes back through the transformer's `process_response` (`json_repair`, the head/relation/tail
items, the strict filter on node types and triples). LangChain reads any reply: a reply with no JSON
list or object is no graph at all for it, and here a reply that could not be parsed, retried once and
then a `parse_failure`, as for every program; so is a reply its `Node`s cannot hold (a non-string
name). Items that its parsing or strict filter drops are counted in a `framework_filtered` warning.

Each relationship becomes an edge (relationship type its type, ends its nodes' ids). LangChain writes
no fact text and no dates: the fact is the triple as "head RELATION tail" and both dates are null. The
graph's nodes are the found entities (`ExtractionResult.entities`, kept by the entity step's rules,
`modules.entities.found_entities`), in the order the relationships name them (LangChain's own list
comes from a set, in no fixed order), the others after them by name; a node type is given the spelling
of the allowed node it matches, and LangChain's placeholder type `Node` (an item without a type) means
none. The edges go through the same post-processing as every program, closed to those entities.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any, Final

import dspy
import json_repair
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, convert_to_openai_messages
from langchain_core.prompt_values import PromptValue
from langchain_core.runnables import RunnableLambda

with warnings.catch_warnings():  # langchain-community and -experimental announce their sunset on import
    warnings.simplefilter("ignore", DeprecationWarning)
    from langchain_community.graphs.graph_document import GraphDocument, Node
    from langchain_experimental.graph_transformers.llm import DEFAULT_NODE_TYPE, LLMGraphTransformer

from edgewise.domain.episode import Episode, TextEpisode
from edgewise.modules.call_context import CallContext
from edgewise.modules.calls import call_step
from edgewise.modules.entities import entity_type_inputs, one_reply_result
from edgewise.modules.program_io import as_episode, result_prediction
from edgewise.modules.seed_prompt import SeedParseError, configured_lm, reply_text
from edgewise.modules.steps import STEP_EXTRACT
from edgewise.signatures.extract_entities import ExtractedEntity
from edgewise.signatures.replies import ExtractedEdge

Triple = tuple[str, str, str]
FRAMEWORK_FILTERED: Final = "framework_filtered"
"""The warning for replies of which the framework's own parsing or filter dropped some items."""


def langchain_schema(episode: Episode) -> tuple[list[str], list[str] | list[Triple]]:
    """The `allowed_nodes` and `allowed_relationships` a LangChain user would give
    `LLMGraphTransformer` for this episode (see the module docstring)."""
    nodes = list(entity_type_inputs(episode))
    edge_types = episode.edge_types
    signed = all(
        edge_type.source_types
        and edge_type.target_types
        and set(edge_type.source_types) | set(edge_type.target_types) <= set(nodes)
        for edge_type in edge_types
    )
    if edge_types and signed:
        triples = [
            (source, edge_type.name, target)
            for edge_type in edge_types
            for source in edge_type.source_types or ()
            for target in edge_type.target_types or ()
        ]
        return nodes, list(dict.fromkeys(triples))
    return nodes, list(dict.fromkeys(edge_type.name for edge_type in edge_types))


def langchain_transformer(episode: Episode, llm: Callable[[PromptValue], AIMessage]) -> LLMGraphTransformer:
    """LangChain's transformer for this episode in its prompt-based JSON mode, `llm` its model."""
    nodes, relationships = langchain_schema(episode)
    return LLMGraphTransformer(
        llm=RunnableLambda(llm),  # type: ignore[arg-type]  (only piped after the prompt in this mode)
        allowed_nodes=nodes,
        allowed_relationships=relationships,
        ignore_tool_usage=True,
    )


def openai_messages(prompt: PromptValue) -> list[dict[str, str]]:
    """LangChain's rendered messages as a chat model is sent them (system, user)."""
    return [
        {"role": str(message["role"]), "content": str(message["content"])}
        for message in convert_to_openai_messages(prompt.to_messages(), text_format="string")
    ]


def _offered(text: str) -> int:
    """How many items the reply holds, read as `process_response` reads it; no list or object is a
    reply that could not be parsed."""
    data = json_repair.loads(text)
    if isinstance(data, dict):
        return 1
    if isinstance(data, list):
        return len(data)
    raise SeedParseError("reply holds no JSON list or object")


def _spelled(kind: str, names: list[str]) -> str:
    """`kind` in the spelling of the listed name it matches, case aside (LangChain's filter ignores
    case); as written when it matches none."""
    return next((name for name in names if name.casefold() == kind.casefold()), kind)


def _node_type(kind: str, names: list[str]) -> str | None:
    """A node's type in the allowed nodes' spelling; LangChain's placeholder for a missing type is none."""
    spelled = _spelled(kind, names)
    return None if spelled == DEFAULT_NODE_TYPE and DEFAULT_NODE_TYPE not in names else spelled


def _ordered_nodes(graph: GraphDocument) -> list[Node]:
    """The graph's nodes in the order its relationships name them, the others after them by name."""
    key = {(str(node.id), node.type): node for node in graph.nodes}
    order: dict[tuple[str, str], Node] = {}
    for relationship in graph.relationships:
        for node in (relationship.source, relationship.target):
            named = (str(node.id), node.type)
            if named in key:
                order.setdefault(named, key[named])
    for named in sorted(key):
        order.setdefault(named, key[named])
    return list(order.values())


class LangChainGraphExtractor(dspy.Module):
    """LangChain's `LLMGraphTransformer` prompt with the interface and post-processing of an edgewise
    program that finds its own entities."""

    finds_entities = True

    def forward(self, episode: Episode | dict[str, Any] | None = None, **fields: Any) -> dspy.Prediction:
        read = as_episode(episode, model=TextEpisode, **fields)
        document = Document(page_content=read.episode_content)
        lm = configured_lm()
        context = CallContext()

        def ask(settings: dict[str, Any]) -> tuple[GraphDocument, int]:
            offered: list[int] = []

            def answer(prompt: PromptValue) -> AIMessage:
                text = reply_text(lm(messages=openai_messages(prompt), **settings))
                offered.append(_offered(text))
                return AIMessage(content=text)

            try:
                graph = langchain_transformer(read, answer).process_response(document)
            except SeedParseError:
                raise
            except (ValueError, TypeError) as error:  # an item LangChain's Node or Relationship refuses
                raise SeedParseError(f"not LangChain's graph ({type(error).__name__}: {error})") from error
            return graph, offered[0]

        parsed = call_step(STEP_EXTRACT, context, ask, unparsed=(SeedParseError,), lm=lm)
        if parsed is None:
            graph, offered = GraphDocument(nodes=[], relationships=[], source=document), 0
        else:
            graph, offered = parsed
        if offered > len(graph.relationships):
            context.note(
                FRAMEWORK_FILTERED,
                f"LangChain's parsing and strict filter kept {len(graph.relationships)} of the reply's "
                f"{offered} items (no head, relation or tail, types outside the schema)",
            )
        node_types = list(entity_type_inputs(read))
        relation_names = [edge_type.name for edge_type in read.edge_types]
        raw = [
            ExtractedEdge(
                relationshipType=_spelled(relationship.type, relation_names),
                sourceEntityName=str(relationship.source.id),
                targetEntityName=str(relationship.target.id),
                fact=f"{relationship.source.id} {relationship.type} {relationship.target.id}",
            )
            for relationship in graph.relationships
        ]
        named = [
            ExtractedEntity(name=str(node.id), type=_node_type(node.type, node_types))
            for node in _ordered_nodes(graph)
        ]
        return result_prediction(one_reply_result(raw, read, named, context))
