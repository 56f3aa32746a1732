"""`EdgewisePathExtractor`: LlamaIndex's property-graph extraction answered by an edgewise program.

    index = PropertyGraphIndex.from_documents(documents, kg_extractors=[EdgewisePathExtractor(model="local")])

A kg extractor of LlamaIndex's `PropertyGraphIndex`, in place of `SchemaLLMPathExtractor`, whose
schema arguments it takes (`possible_entities`, `possible_relations`, `kg_validation_schema`,
`strict`, `num_workers`). Each text node becomes one episode (`TextEpisode`: the node's text without
its metadata, and its reference time); the program finds the node's entities, typed with the
possible entities, and then the temporal edges between them. The node's metadata receives what
LlamaIndex's extractors write there (`KG_NODES_KEY`, `KG_RELATIONS_KEY`): an `EntityNode` per found
entity (`name`, `label` its type) and a `Relation` per edge (`label` its type, `source_id` and
`target_id` the entity nodes' ids), whose properties carry the edge's `fact`, `validAt` and
`invalidAt` (ISO 8601 UTC strings, or None where the text states no date) beside the node's metadata,
as `SchemaLLMPathExtractor` copies it onto what it writes. A node whose text names fewer than two
entities, or none, gets what was found and no relation: an empty graph, not an error.

The schema, in `SchemaLLMPathExtractor`'s shapes:

- `possible_entities` / `possible_relations`: a `Literal[...]` of names (LlamaIndex's own form), a list
  of names or of (name, description) pairs, or a dict name -> description. They become the episode's
  entity types and relationship types.
- `kg_validation_schema`: triples (subject type, relation, object type), as a list or as
  `{"relationships": [...]}`; or LlamaIndex's older dict, entity type -> the relations it may have.
  With `strict`, a triple schema becomes each relation's signature (`sourceTypes`/`targetTypes`, so
  the program flips a reversed edge and drops an impossible one), only the relations it names are
  offered, and an edge is written only when its (source type, relation, target type) is one of the
  triples; an entity without one of the possible types is not written, nor are its edges. The older
  dict is checked as `SchemaLLMPathExtractor` checks it. Without `strict` the program may also name
  types of its own and nothing is filtered.
- Given none of the three, LlamaIndex's default schema (`DEFAULT_ENTITIES`, `DEFAULT_RELATIONS`,
  `DEFAULT_VALIDATION_SCHEMA`) applies, as for `SchemaLLMPathExtractor`. Given some, a missing one is
  derived from the others (the types and relations the triples name) or left open; LlamaIndex's
  default triples are not applied to types of your own, where they would drop every edge.

Reference time: the node's metadata under `reference_time_key` (default `"reference_time"`: a
datetime, a date or an ISO 8601 string), else the `reference_time` argument, else the time of the
call (now, in UTC). Relative dates in the text ("last May") are resolved against it.

Program and model are chosen as `EdgewiseLLMClient` (Graphiti) chooses them: `program` a name or
folder (default: the shipped program compiled for `model`), run with its entity step; `model`
`local` (started on first use, stopped by `close()`), any LiteLLM model string, or `api_base`;
`lm` a ready DSPy LM instead. `PropertyGraphIndex` calls `acall` (its default `use_async=True`): at
most `num_workers` nodes are extracted at a time, each in a worker thread; `__call__`
(`use_async=False`) does the same with a thread pool, and works inside a running event loop. A model
failure is raised, as `SchemaLLMPathExtractor` raises its model's connection errors; a reply edgewise
cannot read is handled inside the program (its warnings go to the `edgewise.integrations` logger
at DEBUG).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Literal, get_args, get_origin

from llama_index.core.async_utils import run_jobs
from llama_index.core.bridge.pydantic import PrivateAttr
from llama_index.core.graph_stores.types import KG_NODES_KEY, KG_RELATIONS_KEY, EntityNode, Relation
from llama_index.core.indices.property_graph.transformations.schema_llm import (
    DEFAULT_ENTITIES,
    DEFAULT_RELATIONS,
    DEFAULT_VALIDATION_SCHEMA,
)
from llama_index.core.schema import BaseNode, MetadataMode, TransformComponent

from edgewise.domain.types import EdgeType, EntityType, ExtractionResult
from edgewise.integrations import text_graph

DEFAULT_REFERENCE_TIME_KEY = "reference_time"


class EdgewisePathExtractor(TransformComponent):
    """A `PropertyGraphIndex` kg extractor whose entities and edges come from an edgewise program
    (see the module docstring for what maps to what).

    `possible_entities`, `possible_relations`, `kg_validation_schema`, `strict` and `num_workers` are
    `SchemaLLMPathExtractor`'s; `reference_time` and `reference_time_key` give each node's reference
    time; `custom_prompt` is the episode's extra instructions; `program`, `model`, `api_base`,
    `api_key`, `lm` and any other `LMConfig` field (`lm_options`) choose the program and the model
    as `EdgewiseLLMClient` does. The program's name is `program_name`.
    """

    program_name: str
    entity_types: list[EntityType]
    edge_types: list[EdgeType]
    type_spelling: dict[str, str]
    triples: frozenset[text_graph.Triple] | None
    relations_by_entity_type: dict[str, frozenset[str]] | None
    strict: bool
    num_workers: int
    reference_time: datetime | str | None
    reference_time_key: str | None
    custom_prompt: str

    _runner: text_graph.TextGraphRunner = PrivateAttr()

    def __init__(
        self,
        *,
        possible_entities: Any = None,
        possible_relations: Any = None,
        kg_validation_schema: Any = None,
        strict: bool = True,
        num_workers: int = 4,
        reference_time: datetime | str | None = None,
        reference_time_key: str | None = DEFAULT_REFERENCE_TIME_KEY,
        custom_prompt: str = "",
        program: str | None = None,
        model: str = "local",
        api_base: str | None = None,
        api_key: str | None = None,
        lm: Any | None = None,
        **lm_options: Any,
    ) -> None:
        if possible_entities is None and possible_relations is None and kg_validation_schema is None:
            possible_entities, possible_relations = DEFAULT_ENTITIES, DEFAULT_RELATIONS
            kg_validation_schema = DEFAULT_VALIDATION_SCHEMA
        entities = _named(possible_entities, "possible_entities")
        relations = _named(possible_relations, "possible_relations")
        triples, by_type = _validation(kg_validation_schema)
        if entities is None:
            entities = dict.fromkeys(
                [kind for triple in triples for kind in (triple[0], triple[2])] if triples else by_type or [],
                "",
            )
        if relations is None:
            named = (
                [relation for _, relation, _ in triples]
                if triples
                else [relation for listed in (by_type or {}).values() for relation in listed]
            )
            relations = dict.fromkeys(named, "")
        if strict and triples is not None:
            in_schema = {relation for _, relation, _ in triples}
            relations = {name: meaning for name, meaning in relations.items() if name in in_schema}
            if not relations:
                raise ValueError(
                    "no relation of possible_relations is in kg_validation_schema: with strict=True "
                    "no edge could be written"
                )
        edge_types, spelling = text_graph.edge_types_for(
            relations, text_graph.signatures_of(triples) if strict and triples is not None else None
        )
        runner = text_graph.TextGraphRunner(
            program=program,
            model=model,
            api_base=api_base,
            api_key=api_key,
            lm=lm,
            open_types=not strict,
            lm_options=lm_options,
        )
        fields: dict[str, Any] = {
            "program_name": runner.program_name,
            "entity_types": [
                EntityType(name=name, description=meaning) for name, meaning in entities.items()
            ],
            "edge_types": edge_types,
            "type_spelling": spelling,
            "triples": frozenset(triples) if triples is not None else None,
            "relations_by_entity_type": (
                {kind: frozenset(listed) for kind, listed in by_type.items()} if by_type is not None else None
            ),
            "strict": strict,
            "num_workers": text_graph.check_workers(num_workers),
            "reference_time": reference_time,
            "reference_time_key": reference_time_key,
            "custom_prompt": custom_prompt,
        }
        super().__init__(**fields)
        self._runner = runner
        if reference_time is not None:  # a bad default time is refused now, not at the first node
            self._episode("x", {}, "reference_time")

    @classmethod
    def class_name(cls) -> str:
        return "EdgewisePathExtractor"

    # -- LlamaIndex's entry points --------------------------------------------------------------------

    def __call__(
        self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any
    ) -> list[BaseNode]:
        """Extract each node's entities and edges into its metadata, `num_workers` nodes at a time."""
        return text_graph.run_in_threads(self._extract_node, list(nodes), workers=self.num_workers)

    async def acall(
        self, nodes: Sequence[BaseNode], show_progress: bool = False, **kwargs: Any
    ) -> list[BaseNode]:
        """`__call__` for LlamaIndex's async path: at most `num_workers` nodes in flight."""
        return await run_jobs(
            [self._aextract_node(node) for node in nodes],
            workers=self.num_workers,
            show_progress=show_progress,
            desc="Extracting paths with edgewise",
        )

    def close(self) -> None:
        """Stop the local model server this extractor started (if any)."""
        self._runner.close()

    # -- one node -------------------------------------------------------------------------------------

    def _extract_node(self, node: BaseNode) -> BaseNode:
        episode = self._node_episode(node)
        result = self._runner.extract(episode) if episode is not None else None
        return self._write(node, result)

    async def _aextract_node(self, node: BaseNode) -> BaseNode:
        episode = self._node_episode(node)
        result = await self._runner.aextract(episode) if episode is not None else None
        return self._write(node, result)

    def _node_episode(self, node: BaseNode) -> Any:
        """The node as an episode; None for a node without text (nothing to extract, no model call)."""
        text = node.get_content(metadata_mode=MetadataMode.NONE)
        if not text.strip():
            return None
        key = self.reference_time_key
        timed = (
            f" (its reference time is metadata[{key!r}])" if key is not None and key in node.metadata else ""
        )
        return self._episode(text, node.metadata, f"node {node.node_id}{timed}")

    def _episode(self, text: str, metadata: Mapping[str, Any], where: str) -> Any:
        return text_graph.text_episode(
            text,
            text_graph.reference_time_of(metadata, self.reference_time_key, self.reference_time),
            entity_types=self.entity_types,
            edge_types=self.edge_types,
            custom_prompt=self.custom_prompt,
            where=where,
        )

    def _write(self, node: BaseNode, result: ExtractionResult | None) -> BaseNode:
        """Append the found entities and edges to the node's KG metadata, as LlamaIndex's extractors do."""
        existing_nodes = node.metadata.pop(KG_NODES_KEY, [])
        existing_relations = node.metadata.pop(KG_RELATIONS_KEY, [])
        metadata = node.metadata.copy()
        if result is not None:
            labels = {entity.name: entity.type for entity in result.entities or []}
            written: dict[str, EntityNode] = {}
            for name, label in labels.items():
                if self.strict and label is None:
                    continue
                entity = (
                    EntityNode(name=name, label=label, properties=dict(metadata))
                    if label is not None
                    else EntityNode(name=name, properties=dict(metadata))
                )
                written[name] = entity
                existing_nodes.append(entity)
            for edge in result.edges:
                source, target = written.get(edge.source_entity_name), written.get(edge.target_entity_name)
                relation = text_graph.caller_type(edge.relationship_type, self.type_spelling)
                if (
                    source is None
                    or target is None
                    or not self._allowed(source.label, relation, target.label)
                ):
                    continue
                existing_relations.append(
                    Relation(
                        label=relation,
                        source_id=source.id,
                        target_id=target.id,
                        properties={**metadata, **text_graph.edge_properties(edge)},
                    )
                )
        node.metadata[KG_NODES_KEY] = existing_nodes
        node.metadata[KG_RELATIONS_KEY] = existing_relations
        return node

    def _allowed(self, source_type: str, relation: str, target_type: str) -> bool:
        """Whether `strict` lets this edge be written: its triple is in the schema (or, for the older
        dict schema, `SchemaLLMPathExtractor`'s own check passes)."""
        if not self.strict:
            return True
        if self.triples is not None:
            return (source_type, relation, target_type) in self.triples
        if self.relations_by_entity_type is not None:
            either = frozenset({relation})
            return relation in self.relations_by_entity_type.get(
                source_type, either
            ) or relation in self.relations_by_entity_type.get(target_type, either)
        return not self.type_spelling or relation in self.type_spelling.values()


def _named(value: Any, what: str) -> dict[str, str] | None:
    """Names (and descriptions) from LlamaIndex's shapes: `Literal[...]`, names, (name, description)
    pairs, or a dict name -> description; None when not given."""
    if value is None:
        return None
    if get_origin(value) is Literal:
        return {str(name): "" for name in get_args(value)}
    if isinstance(value, Mapping):
        return {str(name): str(meaning or "") for name, meaning in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value) if isinstance(value, set | frozenset) else value
        named: dict[str, str] = {}
        for item in items:
            if isinstance(item, str):
                named[item] = ""
            elif isinstance(item, list | tuple) and len(item) == 2 and all(isinstance(x, str) for x in item):
                named[item[0]] = item[1]
            else:
                raise TypeError(f"{what}: {item!r} is neither a name nor a (name, description) pair")
        return named
    raise TypeError(
        f"{what}: expected a Literal[...] of names, a list of names or of (name, description) pairs, "
        f"or a dict name -> description, not {value!r}"
    )


def _validation(schema: Any) -> tuple[list[text_graph.Triple] | None, dict[str, list[str]] | None]:
    """`kg_validation_schema` as triples, or as LlamaIndex's older dict entity type -> relations."""
    if schema is None:
        return None, None
    if isinstance(schema, Mapping) and "relationships" in schema:
        schema = schema["relationships"]
    if isinstance(schema, Mapping):
        return None, {str(kind): [str(relation) for relation in listed] for kind, listed in schema.items()}
    triples: list[text_graph.Triple] = []
    for item in schema:
        if not (isinstance(item, list | tuple) and len(item) == 3 and all(isinstance(x, str) for x in item)):
            raise TypeError(
                f"kg_validation_schema: {item!r} is not a (subject type, relation, object type) triple"
            )
        triples.append((item[0], item[1], item[2]))
    return triples, None
