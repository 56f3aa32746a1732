"""LlamaIndex integration, offline: `EdgewisePathExtractor` as the kg extractor of LlamaIndex's own
`PropertyGraphIndex`, writing into its in-memory `SimplePropertyGraphStore`, with a scripted model.

No test reaches a network: a guard refuses every internet connection, so a download LlamaIndex might
start (NLTK data, a tiktoken file) fails the test. Without the llama-index extra the module is
skipped, unless EDGEWISE_REQUIRE_LLAMA_INDEX is set (CI sets it), where a missing package fails.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from typing import Any, Literal

import pytest

if os.environ.get("EDGEWISE_REQUIRE_LLAMA_INDEX"):  # CI installs the extra: there a missing one fails
    import llama_index.core  # noqa: F401  (the import is the check)
else:
    pytest.importorskip(
        "llama_index.core",
        reason="the LlamaIndex integration needs its extra: pip install 'edgewise[llama-index]'",
    )

from fakes import SchemaLM, ScriptedLM, edge, edges_reply, output_field
from llama_index.core import Document, PropertyGraphIndex
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.graph_stores import SimplePropertyGraphStore
from llama_index.core.graph_stores.types import KG_NODES_KEY, KG_RELATIONS_KEY, EntityNode, Relation
from llama_index.core.indices.property_graph import VectorContextRetriever
from llama_index.core.indices.property_graph.transformations.schema_llm import (
    DEFAULT_ENTITIES,
    DEFAULT_VALIDATION_SCHEMA,
    SchemaLLMPathExtractor,
)
from llama_index.core.llms import MockLLM
from llama_index.core.schema import TextNode

from edgewise.integrations.llama_index import EdgewisePathExtractor
from edgewise.programs.names import choose_program

ENTITIES = Literal["PERSON", "ORGANIZATION", "LOCATION"]
RELATIONS = Literal["WORKS_AT", "PART_OF"]
# PART_OF joins organizations and places, each to its own kind: as two sets (the program's
# signature) it would also allow ORGANIZATION -> LOCATION, which no triple does.
TRIPLES = [
    ("PERSON", "WORKS_AT", "ORGANIZATION"),
    ("ORGANIZATION", "PART_OF", "ORGANIZATION"),
    ("LOCATION", "PART_OF", "LOCATION"),
]
ANN = "Ann joined Acme in Leeds in March 2021."
BOB = "Bob joined Initech."
EMPTY = "It rained all day."
SCRIPT: dict[str, tuple[list[tuple[str, str | None]], list[dict[str, Any]]]] = {
    ANN: (
        [("Ann", "PERSON"), ("Acme", "ORGANIZATION"), ("Leeds", "LOCATION"), ("Yorkshire", None)],
        [
            edge("Acme", "WORKS_AT", "Ann", "Ann joined Acme in March 2021.", validAt="2021-03"),  # reversed
            edge("Acme", "PART_OF", "Leeds", "Acme is in Leeds."),  # ORGANIZATION -> LOCATION: no triple
            edge("Ann", "WORKS_AT", "Leeds", "Ann works in Leeds."),  # PERSON -> LOCATION: no signature
            edge("Leeds", "PART_OF", "Yorkshire", "Leeds is in Yorkshire."),  # an untyped end
        ],
    ),
    BOB: (
        [("Bob", "PERSON"), ("Initech", "ORGANIZATION")],
        [edge("Bob", "WORKS_AT", "Initech", "Bob joined Initech.")],
    ),
    EMPTY: ([], []),
}


def respond(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
    """The scripted reply for the document the request shows: its entities, or its edges."""
    content = str(messages[-1]["content"])
    text = next(text for text in SCRIPT if text in content)
    entities, edges = SCRIPT[text]
    if output_field(messages) == "entities":
        return json.dumps({"entities": [{"name": name, "type": kind} for name, kind in entities]})
    return edges_reply(*edges)


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Refuse every internet connection, and fail a test that tried one even if the caller swallowed
    the error (NLTK's downloader prints it); LlamaIndex reads its bundled NLTK and tiktoken data when
    NLTK_DATA and TIKTOKEN_CACHE_DIR are unset."""
    monkeypatch.delenv("NLTK_DATA", raising=False)
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    attempts: list[Any] = []
    connect = socket.socket.connect

    def guarded(self: socket.socket, address: Any) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            attempts.append(address)
            raise OSError(f"test: no network ({address})")
        connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    yield attempts
    assert attempts == [], f"tried to connect to {attempts}"


def extractor(lm: Any, **changes: Any) -> EdgewisePathExtractor:
    settings: dict[str, Any] = {
        "possible_entities": ENTITIES,
        "possible_relations": RELATIONS,
        "kg_validation_schema": TRIPLES,
        "reference_time": "2025-01-01T00:00:00Z",
        "lm": lm,
    }
    return EdgewisePathExtractor(**(settings | changes))


def build(
    documents: list[Document], kg_extractor: EdgewisePathExtractor, **options: Any
) -> SimplePropertyGraphStore:
    store = SimplePropertyGraphStore()
    PropertyGraphIndex.from_documents(
        documents,
        kg_extractors=[kg_extractor],
        property_graph_store=store,
        embed_kg_nodes=options.pop("embed_kg_nodes", False),
        **options,
    )
    return store


def triplets(store: SimplePropertyGraphStore) -> set[tuple[str, str, str, str, str]]:
    return {
        (source.label, source.name, relation.label, target.label, target.name)  # type: ignore[attr-defined]
        for source, relation, target in store.graph.get_triplets()
    }


def entity_nodes(store: SimplePropertyGraphStore) -> dict[str, str]:
    return {node.name: node.label for node in store.get() if isinstance(node, EntityNode)}


def test_the_index_gets_the_entities_and_the_edges_the_triples_allow_with_fact_and_dates():
    lm = SchemaLM(respond)
    document = Document(text=ANN, metadata={"reference_time": "2024-06-01T00:00:00Z", "source": "hr"})
    store = build([document], extractor(lm))

    # The reversed WORKS_AT is flipped by its signature; PART_OF ORGANIZATION -> LOCATION passes the
    # signature's two sets but is no triple; PERSON WORKS_AT LOCATION and the untyped end are not written.
    assert triplets(store) == {("PERSON", "Ann", "WORKS_AT", "ORGANIZATION", "Acme")}
    # Strict: the untyped entity is no node; the others are, with their types as labels.
    assert entity_nodes(store) == {"Ann": "PERSON", "Acme": "ORGANIZATION", "Leeds": "LOCATION"}
    ((source, relation, target),) = store.graph.get_triplets()
    assert isinstance(relation, Relation)
    assert (relation.source_id, relation.target_id) == (source.id, target.id)
    chunk = next(node for node in store.get_llama_nodes([relation.properties["triplet_source_id"]]))
    assert chunk.get_content() == ANN
    assert relation.properties["fact"] == "Ann joined Acme in March 2021."
    assert relation.properties["validAt"] == "2021-03-01T00:00:00Z"
    assert relation.properties["invalidAt"] is None
    assert relation.properties["source"] == "hr"  # the node's metadata, as SchemaLLMPathExtractor copies it
    assert source.properties["source"] == "hr"

    entity_call, edge_call = lm.calls
    assert output_field(entity_call["messages"]) == "entities"
    # The node's metadata time is the reference time (not the constructor's default), and its text
    # is the episode without its metadata.
    assert "2024-06-01T00:00:00Z" in edge_call["messages"][-1]["content"]
    assert "source: hr" not in edge_call["messages"][-1]["content"]
    entity_schema = json.dumps(entity_call["kwargs"]["response_format"])
    assert '"enum": ["PERSON", "ORGANIZATION", "LOCATION"]' in entity_schema


def test_a_triple_schema_becomes_signatures_and_offers_only_the_relations_it_names():
    kg = extractor(
        ScriptedLM([]),
        possible_relations={"WORKS_AT": "employment", "PART_OF": "containment", "LIKES": "taste"},
    )
    assert [(t.name, t.description, t.source_types, t.target_types) for t in kg.edge_types] == [
        ("WORKS_AT", "employment", ["PERSON"], ["ORGANIZATION"]),
        ("PART_OF", "containment", ["LOCATION", "ORGANIZATION"], ["LOCATION", "ORGANIZATION"]),
    ]
    assert [t.name for t in kg.entity_types] == ["PERSON", "ORGANIZATION", "LOCATION"]
    # The types are the caller's; the program writes SCREAMING_SNAKE_CASE, and the caller's
    # spelling comes back on the relation.
    lm = ScriptedLM(
        [
            json.dumps(
                {"entities": [{"name": "Ann", "type": "Person"}, {"name": "Acme", "type": "Company"}]}
            ),
            edges_reply(edge("Ann", "WORKS_AT", "Acme", "Ann works at Acme.")),
        ]
    )
    kg = EdgewisePathExtractor(
        possible_entities=["Person", ("Company", "a business")],
        kg_validation_schema={"relationships": [("Person", "worksAt", "Company")]},
        lm=lm,
    )
    assert [(t.name, t.description) for t in kg.entity_types] == [("Person", ""), ("Company", "a business")]
    assert [(t.name, t.source_types) for t in kg.edge_types] == [("WORKS_AT", ["Person"])]
    (node,) = kg([TextNode(text="Ann works at Acme.")])
    (relation,) = node.metadata[KG_RELATIONS_KEY]
    assert relation.label == "worksAt"


def test_without_a_schema_llama_index_defaults_apply_as_for_schema_llm_path_extractor():
    kg = EdgewisePathExtractor(lm=ScriptedLM([]))
    assert [t.name for t in kg.entity_types] == list(DEFAULT_ENTITIES.__args__)
    assert kg.triples == frozenset(DEFAULT_VALIDATION_SCHEMA)
    names = [t.name for t in kg.edge_types]
    assert "HAS_ALIAS" not in names  # a default relation no default triple names cannot be written
    born = next(t for t in kg.edge_types if t.name == "BORN_IN")
    assert (born.source_types, born.target_types) == (["PERSON"], ["LOCATION", "TIME"])


def test_not_strict_writes_untyped_entities_and_types_of_the_programs_own():
    lm = ScriptedLM(respond)
    store = build([Document(text=ANN)], extractor(lm, strict=False))
    assert entity_nodes(store)["Yorkshire"] == "entity"  # LlamaIndex's label for a node without a type
    # Nothing is filtered: no signature is declared, and the triple schema is not checked.
    assert ("ORGANIZATION", "Acme", "PART_OF", "LOCATION", "Leeds") in triplets(store)
    assert ("LOCATION", "Leeds", "PART_OF", "entity", "Yorkshire") in triplets(store)
    assert ("PERSON", "Ann", "WORKS_AT", "LOCATION", "Leeds") in triplets(store)


def llama_index_keeps(
    schema: Any, typed_edges: list[tuple[str | None, str, str, str | None, str]]
) -> set[tuple[str, str, str]]:
    """What LlamaIndex's own `SchemaLLMPathExtractor` keeps of these (source type, source, relation,
    target type, target) edges under `schema` (its strict check, run on them as parsed triplets)."""
    reference = SchemaLLMPathExtractor(
        llm=MockLLM(),
        possible_entities=ENTITIES,  # pyright: ignore[reportArgumentType]  (LlamaIndex's own Literal form)
        possible_relations=RELATIONS,  # pyright: ignore[reportArgumentType]
        kg_validation_schema=schema,
    )
    parsed = reference.kg_schema_cls(
        triplets=[
            {
                "subject": {"type": source_type, "name": source},
                "relation": {"type": relation},
                "object": {"type": target_type, "name": target},
            }
            for source_type, source, relation, target_type, target in typed_edges
        ]
    )
    kept = reference._prune_invalid_triplets(parsed)
    return {(str(s), r.label, str(o)) for s, r, o in kept}  # an EntityNode without properties: its name


@pytest.mark.parametrize(
    "schema",
    [
        TRIPLES,
        {"PERSON": ["WORKS_AT"], "ORGANIZATION": ["WORKS_AT"], "LOCATION": ["WORKS_AT"]},
        {"PERSON": ["WORKS_AT"], "ORGANIZATION": ["WORKS_AT"]},  # LOCATION lists none: anything goes there
    ],
    ids=["triples", "dict", "dict-open-location"],
)
def test_strict_writes_what_schema_llm_path_extractor_would_keep_of_the_programs_edges(schema):
    lm = ScriptedLM(respond)
    kg = extractor(lm, kg_validation_schema=schema)
    result = kg._runner.extract(kg._episode(ANN, {}, "test"))  # the program's own edges, before the check
    types = {entity.name: entity.type for entity in result.entities or []}
    typed = [
        (
            types[e.source_entity_name],
            e.source_entity_name,
            e.relationship_type,
            types[e.target_entity_name],
            e.target_entity_name,
        )
        for e in result.edges
        if types[e.source_entity_name] and types[e.target_entity_name]
    ]
    (node,) = kg([TextNode(text=ANN)])
    written = {(r.source_id, r.label, r.target_id) for r in node.metadata[KG_RELATIONS_KEY]}
    assert written == llama_index_keeps(schema, typed)
    assert written  # the check is not vacuous: each schema keeps some edge ...
    assert len(written) < len(result.edges)  # ... and refuses another


def test_a_text_without_entities_is_an_empty_graph_for_its_node_not_an_error():
    lm = ScriptedLM(respond)
    store = build([Document(text=EMPTY), Document(text=BOB)], extractor(lm))
    assert triplets(store) == {("PERSON", "Bob", "WORKS_AT", "ORGANIZATION", "Initech")}
    # The empty episode ended after its entity call: no edge call was made for it.
    shown = [str(call["messages"][-1]["content"]) for call in lm.calls]
    assert sum(EMPTY in text for text in shown) == 1
    # A node without text makes no call at all, and still gets both keys, empty.
    before = len(lm.calls)
    (node,) = extractor(lm)([TextNode(text="   ")])
    assert node.metadata[KG_NODES_KEY] == [] and node.metadata[KG_RELATIONS_KEY] == []
    assert len(lm.calls) == before


def test_what_an_earlier_extractor_wrote_is_kept():
    lm = ScriptedLM(respond)
    earlier = EntityNode(name="Earlier", label="PERSON")
    node = TextNode(text=BOB, metadata={KG_NODES_KEY: [earlier], KG_RELATIONS_KEY: []})
    (done,) = extractor(lm)([node])
    assert [n.name for n in done.metadata[KG_NODES_KEY]] == ["Earlier", "Bob", "Initech"]
    assert [r.label for r in done.metadata[KG_RELATIONS_KEY]] == ["WORKS_AT"]


class GatedLM(ScriptedLM):
    """Holds each entity call until `parties` of them are in flight together, and counts the most
    model calls in flight at once: fewer workers than `parties` time out, more show in the count."""

    def __init__(self, parties: int) -> None:
        super().__init__(respond)
        self._gate = threading.Barrier(parties)
        self._count = threading.Lock()
        self.in_flight = 0
        self.most = 0

    def forward(self, prompt: str | None = None, messages: list[dict[str, Any]] | None = None, **kwargs: Any):
        with self._count:
            self.in_flight += 1
            self.most = max(self.most, self.in_flight)
        try:
            if output_field(messages or []) == "entities":
                self._gate.wait(timeout=10)
            time.sleep(0.02)
            return super().forward(prompt=prompt, messages=messages, **kwargs)
        finally:
            with self._count:
                self.in_flight -= 1


@pytest.mark.parametrize("use_async", [True, False], ids=["acall", "call"])
def test_num_workers_nodes_are_extracted_at_once_on_both_paths(use_async):
    lm = GatedLM(parties=2)
    documents = [Document(text=text) for text in (ANN, BOB, EMPTY, ANN + " ")]
    store = build(documents, extractor(lm, num_workers=2), use_async=use_async)
    assert lm.most == 2
    assert ("PERSON", "Bob", "WORKS_AT", "ORGANIZATION", "Initech") in triplets(store)
    assert len(lm.calls) == 7  # two calls for each of three texts, one for the text without entities


def test_one_worker_extracts_one_node_at_a_time():
    lm = GatedLM(parties=1)
    build([Document(text=ANN), Document(text=BOB)], extractor(lm, num_workers=1))
    assert lm.most == 1


def test_acall_runs_inside_a_running_event_loop_and_so_does_call():
    lm = ScriptedLM(respond)
    kg = extractor(lm)

    async def inside_a_loop() -> tuple[Any, Any]:
        (node,) = await kg.acall([TextNode(text=BOB)])
        (again,) = kg([TextNode(text=BOB)])  # no asyncio.run inside: it works with a loop running
        return node, again

    node, again = asyncio.run(inside_a_loop())
    assert [r.label for r in node.metadata[KG_RELATIONS_KEY]] == ["WORKS_AT"]
    assert [n.name for n in again.metadata[KG_NODES_KEY]] == ["Bob", "Initech"]


def test_kg_nodes_embedded_with_an_embedding_model_are_found_by_llama_index_retrievers():
    lm = ScriptedLM(respond)
    store = SimplePropertyGraphStore()
    embed = MockEmbedding(embed_dim=8)
    index = PropertyGraphIndex.from_documents(
        [Document(text=BOB)], kg_extractors=[extractor(lm)], property_graph_store=store, embed_model=embed
    )
    retriever = index.as_retriever(
        sub_retrievers=[
            VectorContextRetriever(
                index.property_graph_store,
                vector_store=index.vector_store,
                embed_model=embed,
                include_text=False,
            )
        ]
    )
    found = [hit.node.get_content() for hit in retriever.retrieve("Where does Bob work?")]
    assert any("WORKS_AT" in text and "Initech" in text for text in found), found


def test_the_reference_time_is_the_metadata_the_argument_or_now():
    lm = ScriptedLM(respond)
    kg = extractor(lm, reference_time="2023-02-03T04:05:06Z", reference_time_key="published")
    kg([TextNode(text=BOB, metadata={"published": "2022-01-01"})])
    kg([TextNode(text=BOB)])
    shown = [
        str(call["messages"][-1]["content"]) for call in lm.calls if output_field(call["messages"]) == "edges"
    ]
    assert "2022-01-01T00:00:00Z" in shown[0] and "2023-02-03T04:05:06Z" in shown[1]
    now = extractor(lm, reference_time=None)
    now([TextNode(text=BOB)])
    assert time.strftime("%Y-%m-%dT", time.gmtime()) in str(lm.calls[-1]["messages"][-1]["content"])
    with pytest.raises(ValueError, match="published"):
        kg([TextNode(text=BOB, metadata={"published": "not a time"})])


def test_misuse_is_refused_when_the_extractor_is_made():
    lm = ScriptedLM([])
    with pytest.raises(ValueError, match="cannot find entities"):
        extractor(lm, program="seed")
    with pytest.raises(ValueError, match="no edge could be written"):
        extractor(lm, possible_relations=["LIKES"])
    with pytest.raises(ValueError, match="reference_time"):
        extractor(lm, reference_time="soon")
    with pytest.raises(TypeError, match="triple"):
        extractor(lm, kg_validation_schema=[("PERSON", "WORKS_AT")])
    with pytest.raises(TypeError, match="max_retries"):
        extractor(lm, max_retries=0)  # a misspelled LMConfig field, refused as LMConfig refuses it
    with pytest.raises(ValueError, match="num_workers"):
        extractor(lm, num_workers=0)


def test_the_program_is_chosen_as_for_graphiti():
    assert extractor(ScriptedLM([])).program_name == "default"  # an LM of the caller's: the uncompiled one
    # Nothing is started until the first node: the local model's program is named, not run.
    local = EdgewisePathExtractor(possible_entities=ENTITIES, possible_relations=RELATIONS, model="local")
    assert local.program_name == choose_program(None, "local").name != "default"
    assert local.model_dump()["class_name"] == "EdgewisePathExtractor"
    assert "api_key" not in json.dumps(local.to_dict())


def test_importing_llama_index_and_splitting_text_downloads_nothing(tmp_path):
    """In a fresh interpreter with an empty home: no connection, and no cache written there."""
    probe = textwrap.dedent(
        """
        import socket
        def refuse(self, address):
            raise SystemExit(f"connected to {address}")
        socket.socket.connect = refuse
        from llama_index.core import Document
        from llama_index.core.node_parser import SentenceSplitter
        import edgewise.integrations.llama_index
        nodes = SentenceSplitter(chunk_size=64, chunk_overlap=0)([Document(text="Ann works. Bob rests. " * 40)])
        print(len(nodes))
        """
    )
    environment = {
        key: value for key, value in os.environ.items() if key not in ("NLTK_DATA", "TIKTOKEN_CACHE_DIR")
    }
    environment |= {"HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", probe],
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout.split()[-1]) > 1
    assert not (tmp_path / "cache").exists() and not (tmp_path / ".cache").exists()
