"""`EdgewiseGraphTransformer`: LangChain's documents-to-graph step answered by an edgewise program.

    graph_documents = EdgewiseGraphTransformer(allowed_nodes=["Person", "Organization"]).convert_to_graph_documents(docs)

The interface of langchain_experimental's `LLMGraphTransformer` (`convert_to_graph_documents`,
`aconvert_to_graph_documents`, `allowed_nodes`, `allowed_relationships`, `strict_mode`,
`additional_instructions`), returning langchain_community's `GraphDocument`s, which a LangChain
graph store's `add_graph_documents` takes. Each document becomes one episode (`TextEpisode`: its
`page_content` and its reference time); the program finds the document's entities, typed with the
allowed nodes, and then the temporal edges between them. A `Node` is an entity (`id` its name as the
text writes it, `type` its type, `Node` when it has none); a `Relationship` an edge (`type` the
relationship type, `source` and `target` its entities), whose `properties` carry the edge's `fact`,
`validAt` and `invalidAt` (ISO 8601 UTC strings, or None where the text states no date). A document
whose text names fewer than two entities, or none, gets what was found and no relationship: an
empty graph, not an error.

The schema, as `LLMGraphTransformer` takes it: `allowed_nodes` (names; or a dict name -> description)
become the episode's entity types; `allowed_relationships`, names or (source type, relation, target
type) triples whose two types are allowed nodes, its relationship types. With `strict_mode` (the
default) and relationships given, the types are closed; triples become each relation's signature
(`sourceTypes`/`targetTypes`: the program flips a reversed edge and drops an impossible one), and
then, as `LLMGraphTransformer` filters (case-insensitively): a node whose type is not an allowed node
is left out, and so is a relationship one of whose ends is, or whose (source type, type, target
type) is not a triple (whose type is not listed, for names). Without `strict_mode` the program may
name types of its own and nothing is filtered. Relationship types come back in the caller's
spelling; types the caller did not list, in SCREAMING_SNAKE_CASE (as `LLMGraphTransformer` writes
them). Unlike it, node ids keep the text's spelling (no title case) and node types the caller's.

Reference time: the document's `metadata[reference_time_key]` (default `"reference_time"`: a
datetime, a date or an ISO 8601 string), else the `reference_time` argument, else the time of the
call (now, in UTC). Relative dates in the text ("last May") are resolved against it.

Program and model are chosen as `EdgewiseLLMClient` (Graphiti) chooses them: `program` a name or
folder (default: the shipped program compiled for `model`), run with its entity step; `model`
`local` (started on first use, stopped by `close()`), any LiteLLM model string, or `api_base`;
`lm` a ready DSPy LM instead. Both conversions extract at most `num_workers` documents at a time
(a `RunnableConfig`'s `max_concurrency`, when given, instead), in worker threads, and keep the input
order. A model failure is raised, as `LLMGraphTransformer` raises its model's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from langchain_community.graphs.graph_document import GraphDocument, Node, Relationship
from langchain_core.documents import Document
from langchain_core.runnables import RunnableConfig

from edgewise.domain.types import EntityType, ExtractionResult
from edgewise.integrations import text_graph

DEFAULT_NODE_TYPE = "Node"
"""The type of a node without one (`LLMGraphTransformer`'s default)."""
DEFAULT_REFERENCE_TIME_KEY = "reference_time"


class EdgewiseGraphTransformer:
    """Documents to `GraphDocument`s with an edgewise program (see the module docstring).

    `allowed_nodes`, `allowed_relationships`, `strict_mode` and `additional_instructions` (the
    episode's extra instructions) are `LLMGraphTransformer`'s; `num_workers` bounds the documents
    extracted at once; `reference_time` and `reference_time_key` give each document's reference
    time; `program`, `model`, `api_base`, `api_key`, `lm` and any other `LMConfig` field
    (`lm_options`) choose the program and the model as `EdgewiseLLMClient` does. The program's name
    is `program_name`.
    """

    def __init__(
        self,
        *,
        allowed_nodes: Sequence[str] | Mapping[str, str] = (),
        allowed_relationships: Sequence[str] | Sequence[text_graph.Triple] = (),
        strict_mode: bool = True,
        additional_instructions: str = "",
        num_workers: int = 4,
        reference_time: datetime | str | None = None,
        reference_time_key: str | None = DEFAULT_REFERENCE_TIME_KEY,
        program: str | None = None,
        model: str = "local",
        api_base: str | None = None,
        api_key: str | None = None,
        lm: Any | None = None,
        **lm_options: Any,
    ) -> None:
        nodes = (
            {str(name): str(meaning or "") for name, meaning in allowed_nodes.items()}
            if isinstance(allowed_nodes, Mapping)
            else dict.fromkeys(_names(allowed_nodes), "")
        )
        relations, triples = _relationships(allowed_relationships, nodes)
        self.allowed_nodes = list(nodes)
        self.allowed_relationships = list(allowed_relationships)
        self.strict_mode = strict_mode
        self.num_workers = text_graph.check_workers(num_workers)
        self.reference_time = reference_time
        self.reference_time_key = reference_time_key
        self.custom_prompt = additional_instructions
        closed = strict_mode and bool(relations)
        self.entity_types = [EntityType(name=name, description=meaning) for name, meaning in nodes.items()]
        self.edge_types, self._spelling = text_graph.edge_types_for(
            dict.fromkeys(relations, ""),
            text_graph.signatures_of(triples) if closed and triples is not None else None,
        )
        self._allowed_nodes = {name.casefold() for name in nodes}
        self._allowed_types = {name.casefold() for name in relations}
        self._triples = (
            {tuple(part.casefold() for part in triple) for triple in triples} if triples is not None else None
        )
        self._runner = text_graph.TextGraphRunner(
            program=program,
            model=model,
            api_base=api_base,
            api_key=api_key,
            lm=lm,
            open_types=not closed,
            lm_options=lm_options,
        )
        self.program_name = self._runner.program_name
        if reference_time is not None:  # a bad default time is refused now, not at the first document
            self._episode(Document(page_content="x"))

    # -- LLMGraphTransformer's interface --------------------------------------------------------------

    def process_response(self, document: Document, config: RunnableConfig | None = None) -> GraphDocument:
        """One document as a `GraphDocument`."""
        episode = self._episode(document)
        return self._graph(document, self._runner.extract(episode) if episode is not None else None)

    async def aprocess_response(
        self, document: Document, config: RunnableConfig | None = None
    ) -> GraphDocument:
        """`process_response` in a worker thread."""
        episode = self._episode(document)
        return self._graph(document, await self._runner.aextract(episode) if episode is not None else None)

    def convert_to_graph_documents(
        self, documents: Sequence[Document], config: RunnableConfig | None = None
    ) -> list[GraphDocument]:
        """The documents as `GraphDocument`s, in order, `num_workers` at a time."""
        return text_graph.run_in_threads(
            self.process_response, list(documents), workers=self._workers(config)
        )

    async def aconvert_to_graph_documents(
        self, documents: Sequence[Document], config: RunnableConfig | None = None
    ) -> list[GraphDocument]:
        """`convert_to_graph_documents` for async code: at most `num_workers` documents in flight."""
        import asyncio

        limit = asyncio.Semaphore(self._workers(config))

        async def one(document: Document) -> GraphDocument:
            async with limit:
                return await self.aprocess_response(document, config)

        return list(await asyncio.gather(*(one(document) for document in documents)))

    def close(self) -> None:
        """Stop the local model server this transformer started (if any)."""
        self._runner.close()

    # -- one document ---------------------------------------------------------------------------------

    def _workers(self, config: RunnableConfig | None) -> int:
        given = (config or {}).get("max_concurrency")
        return text_graph.check_workers(given) if given is not None else self.num_workers

    def _episode(self, document: Document) -> Any:
        """The document as an episode; None without text (nothing to extract, no model call)."""
        if not document.page_content.strip():
            return None
        key = self.reference_time_key
        timed = (
            f" (its reference time is metadata[{key!r}])"
            if key is not None and key in document.metadata
            else ""
        )
        return text_graph.text_episode(
            document.page_content,
            text_graph.reference_time_of(document.metadata, self.reference_time_key, self.reference_time),
            entity_types=self.entity_types,
            edge_types=self.edge_types,
            custom_prompt=self.custom_prompt,
            where=f"document {document.id or ''}".rstrip() + timed,
        )

    def _graph(self, document: Document, result: ExtractionResult | None) -> GraphDocument:
        if result is None:
            return GraphDocument(nodes=[], relationships=[], source=document)
        types = {entity.name: entity.type for entity in result.entities or []}
        nodes = {name: Node(id=name, type=kind or DEFAULT_NODE_TYPE) for name, kind in types.items()}
        strict = self.strict_mode and bool(self._allowed_nodes or self._allowed_types)
        relationships = [
            Relationship(
                source=nodes[edge.source_entity_name],
                target=nodes[edge.target_entity_name],
                type=text_graph.caller_type(edge.relationship_type, self._spelling),
                properties=text_graph.edge_properties(edge),
            )
            for edge in result.edges
            if edge.source_entity_name in nodes
            and edge.target_entity_name in nodes
            and (
                not strict
                or self._allowed(
                    types[edge.source_entity_name],
                    text_graph.caller_type(edge.relationship_type, self._spelling),
                    types[edge.target_entity_name],
                )
            )
        ]
        kept = [node for name, node in nodes.items() if not strict or self._node_allowed(types[name])]
        return GraphDocument(nodes=kept, relationships=relationships, source=document)

    def _node_allowed(self, kind: str | None) -> bool:
        """A node of this type passes the strict filter: no allowed nodes given, or one of them."""
        return not self._allowed_nodes or (kind is not None and kind.casefold() in self._allowed_nodes)

    def _allowed(self, source: str | None, relation: str, target: str | None) -> bool:
        """`LLMGraphTransformer`'s strict filter: both ends allowed nodes, the triple (or the type) listed."""
        if not (self._node_allowed(source) and self._node_allowed(target)):
            return False
        if self._triples is not None:
            if source is None or target is None:
                return False
            return (source.casefold(), relation.casefold(), target.casefold()) in self._triples
        return not self._allowed_types or relation.casefold() in self._allowed_types


def _names(values: Sequence[str]) -> list[str]:
    if isinstance(values, str) or not all(isinstance(value, str) for value in values):
        raise TypeError(f"allowed_nodes: expected a list of type names, not {values!r}")
    return list(values)


def _relationships(
    allowed: Sequence[str] | Sequence[text_graph.Triple], nodes: Mapping[str, str]
) -> tuple[list[str], list[text_graph.Triple] | None]:
    """The relationship types, and the triples when `allowed` gives triples (checked as
    `LLMGraphTransformer` checks them: all names or all triples whose two types are allowed nodes)."""
    if isinstance(allowed, str):
        raise TypeError(f"allowed_relationships: expected a list, not {allowed!r}")
    items = list(allowed)
    if all(isinstance(item, str) for item in items):
        return list(dict.fromkeys(items)), None  # type: ignore[arg-type]  (all strings here)
    triples: list[text_graph.Triple] = []
    for item in items:
        if not (
            isinstance(item, list | tuple)
            and len(item) == 3
            and all(isinstance(part, str) for part in item)
            and item[0] in nodes
            and item[2] in nodes
        ):
            raise ValueError(
                "allowed_relationships must be a list of names or of (source type, relation, target type) "
                f"triples whose two types are in allowed_nodes; {item!r} is neither"
            )
        triples.append((item[0], item[1], item[2]))
    return list(dict.fromkeys(relation for _, relation, _ in triples)), triples
