"""LangChain integration, offline: `EdgewiseGraphTransformer` turns LangChain `Document`s into
langchain_community's `GraphDocument`s as langchain_experimental's `LLMGraphTransformer` does, with a
scripted model; its schema checks and strict filter are compared with `LLMGraphTransformer`'s own.

No test reaches a network: a guard refuses every internet connection. Without the langchain extra
the module is skipped, unless EDGEWISE_REQUIRE_LANGCHAIN is set (CI sets it), where a missing
package fails.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import socket
import threading
import time
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

if os.environ.get("EDGEWISE_REQUIRE_LANGCHAIN"):  # CI installs the extra: there a missing one fails
    import langchain_community.graphs.graph_document  # noqa: F401  (the import is the check)
    import langchain_experimental  # noqa: F401
else:
    pytest.importorskip(
        "langchain_community.graphs.graph_document",
        reason="the LangChain integration needs its extra: pip install 'edgewise[langchain]'",
    )
    pytest.importorskip(
        "langchain_experimental",
        reason="the LangChain integration needs its extra: pip install 'edgewise[langchain]'",
    )

from fakes import SchemaLM, ScriptedLM, edge, edges_reply, output_field
from langchain_community.graphs.graph_document import GraphDocument, Node, Relationship
from langchain_core.documents import Document

from edgewise.integrations.langchain import EdgewiseGraphTransformer
from edgewise.programs.names import choose_program

with warnings.catch_warnings():  # langchain-experimental announces its own sunset on import
    warnings.simplefilter("ignore", DeprecationWarning)
    from langchain_experimental.graph_transformers import LLMGraphTransformer
    from langchain_experimental.graph_transformers.llm import validate_and_get_relationship_type

NODES = ["Person", "Organization", "Location"]
# PART_OF joins organizations and places, each to its own kind: as two sets (the program's
# signature) it would also allow Organization -> Location, which no triple does.
TRIPLES = [
    ("Person", "WORKS_AT", "Organization"),
    ("Organization", "PART_OF", "Organization"),
    ("Location", "PART_OF", "Location"),
]
ANN = "Ann joined Acme in Leeds in March 2021."
BOB = "Bob joined Initech."
EMPTY = "It rained all day."
SCRIPT: dict[str, tuple[list[tuple[str, str | None]], list[dict[str, Any]]]] = {
    ANN: (
        [("Ann", "person"), ("Acme", "Organization"), ("Leeds", "Location"), ("Yorkshire", None)],
        [
            edge("Acme", "works at", "Ann", "Ann joined Acme in March 2021.", validAt="2021-03"),  # reversed
            edge("Acme", "PART_OF", "Leeds", "Acme is in Leeds."),  # Organization -> Location: no triple
            edge("Ann", "WORKS_AT", "Leeds", "Ann works in Leeds."),  # Person -> Location: no signature
            edge("Leeds", "PART_OF", "Yorkshire", "Leeds is in Yorkshire."),  # an untyped end
        ],
    ),
    BOB: (
        [("Bob", "Person"), ("Initech", "Organization")],
        [edge("Bob", "WORKS_AT", "Initech", "Bob joined Initech.", invalidAt="2024-12-31")],
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
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Refuse every internet connection, and fail a test that tried one even if it was swallowed."""
    attempts: list[Any] = []
    connect = socket.socket.connect

    def guarded(self: socket.socket, address: Any) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6):
            attempts.append(address)
            raise OSError(f"test: no network ({address})")
        connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    yield
    assert attempts == [], f"tried to connect to {attempts}"


def transformer(lm: Any, **changes: Any) -> EdgewiseGraphTransformer:
    settings: dict[str, Any] = {
        "allowed_nodes": NODES,
        "allowed_relationships": TRIPLES,
        "reference_time": "2025-01-01T00:00:00Z",
        "lm": lm,
    }
    return EdgewiseGraphTransformer(**(settings | changes))


def shape(graph: GraphDocument) -> tuple[set[tuple[str, str]], set[tuple[str, str, str, str, str]]]:
    nodes = {(str(node.id), node.type) for node in graph.nodes}
    relationships = {
        (r.source.type, str(r.source.id), r.type, r.target.type, str(r.target.id))
        for r in graph.relationships
    }
    return nodes, relationships


def test_documents_become_graph_documents_with_the_edges_the_triples_allow():
    lm = SchemaLM(respond)
    document = Document(page_content=ANN, metadata={"reference_time": "2024-06-01T00:00:00Z"})
    (graph,) = transformer(lm).convert_to_graph_documents([document])

    assert isinstance(graph, GraphDocument) and graph.source is document
    nodes, relationships = shape(graph)
    # The model's "person" is the declared Person; the untyped Yorkshire is no allowed node.
    assert nodes == {("Ann", "Person"), ("Acme", "Organization"), ("Leeds", "Location")}
    # The reversed "works at" is flipped by its signature and written WORKS_AT; Organization PART_OF
    # Location passes the signature's two sets but is no triple; Person WORKS_AT Location and the
    # untyped end are not written.
    assert relationships == {("Person", "Ann", "WORKS_AT", "Organization", "Acme")}
    (relationship,) = graph.relationships
    assert isinstance(relationship, Relationship) and isinstance(relationship.source, Node)
    assert relationship.properties == {
        "fact": "Ann joined Acme in March 2021.",
        "validAt": "2021-03-01T00:00:00Z",
        "invalidAt": None,
    }

    entity_call, edge_call = lm.calls
    assert output_field(entity_call["messages"]) == "entities"
    assert '"enum": ["Person", "Organization", "Location"]' in json.dumps(
        entity_call["kwargs"]["response_format"]
    )
    # The document's metadata time is the reference time, not the constructor's default.
    assert "2024-06-01T00:00:00Z" in edge_call["messages"][-1]["content"]
    # Only the relations are offered, each with its signature from the triples.
    assert [(t.name, t.source_types, t.target_types) for t in transformer(lm).edge_types] == [
        ("WORKS_AT", ["Person"], ["Organization"]),
        ("PART_OF", ["Location", "Organization"], ["Location", "Organization"]),
    ]


def llm_graph_transformer_keeps(
    allowed_nodes: list[str], allowed_relationships: list[Any], graph: GraphDocument
) -> tuple[set[tuple[str, str]], set[tuple[str, str, str, str, str]]]:
    """What `LLMGraphTransformer`'s own strict filter keeps of the same nodes and relationships (its
    model replying with them through the unstructured-output path, which parses JSON)."""
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    rows = [
        {
            "head": str(r.source.id),
            "head_type": r.source.type,
            "relation": r.type,
            "tail": str(r.target.id),
            "tail_type": r.target.type,
        }
        for r in graph.relationships
    ]
    model = FakeListChatModel(responses=[json.dumps(rows)])
    reference = LLMGraphTransformer(
        llm=model,
        allowed_nodes=allowed_nodes,
        allowed_relationships=allowed_relationships,
        ignore_tool_usage=True,
    )
    return shape(reference.process_response(graph.source))


@pytest.mark.parametrize(
    ("allowed_relationships", "counts"),
    [(TRIPLES, (1, 3)), (["WORKS_AT"], (2, 2)), (["works_at", "PART_OF"], (3, 4))],
    ids=["triples", "one-name", "names-any-case"],
)
def test_the_strict_filter_keeps_what_llm_graph_transformer_keeps(allowed_relationships, counts):
    lm = ScriptedLM(respond)
    t = transformer(lm, allowed_relationships=allowed_relationships)
    document = Document(page_content=ANN)
    (strict,) = t.convert_to_graph_documents([document])
    # The same program output, unfiltered, through LangChain's own strict filter.
    result = t._runner.extract(t._episode(document))
    t.strict_mode = False
    unfiltered = t._graph(document, result)
    t.strict_mode = True
    _, kept = llm_graph_transformer_keeps(NODES, allowed_relationships, unfiltered)
    nodes, written = shape(strict)
    assert written == kept
    # Written of the program's edges: the triples refuse PART_OF Organization -> Location and the
    # untyped end; the names refuse only the untyped end (a closed type list leaves no other).
    assert (len(written), len(unfiltered.relationships)) == counts
    assert nodes == {(str(n.id), n.type) for n in unfiltered.nodes if n.type in NODES}


def test_not_strict_keeps_untyped_nodes_and_types_of_the_programs_own():
    lm = ScriptedLM(respond)
    (graph,) = transformer(lm, strict_mode=False).convert_to_graph_documents([Document(page_content=ANN)])
    nodes, relationships = shape(graph)
    assert ("Yorkshire", "Node") in nodes  # LLMGraphTransformer's type for a node without one
    # No signature is declared and nothing is filtered: the reversed edge stays as the model wrote it.
    assert relationships == {
        ("Organization", "Acme", "WORKS_AT", "Person", "Ann"),
        ("Organization", "Acme", "PART_OF", "Location", "Leeds"),
        ("Person", "Ann", "WORKS_AT", "Location", "Leeds"),
        ("Location", "Leeds", "PART_OF", "Node", "Yorkshire"),
    }


def test_relationship_types_come_back_in_the_callers_spelling():
    lm = ScriptedLM(respond)
    t = transformer(lm, allowed_relationships=[("Person", "worksAt", "Organization")])
    (graph,) = t.convert_to_graph_documents([Document(page_content=BOB)])
    assert [(r.type, r.properties["invalidAt"]) for r in graph.relationships] == [
        ("worksAt", "2024-12-31T00:00:00Z")
    ]
    assert [e.name for e in t.edge_types] == ["WORKS_AT"]  # the program's spelling, so signatures apply


def test_a_document_without_entities_is_an_empty_graph_document_not_an_error():
    lm = ScriptedLM(respond)
    empty, bob, blank = transformer(lm).convert_to_graph_documents(
        [Document(page_content=EMPTY), Document(page_content=BOB), Document(page_content="  ")]
    )
    assert (empty.nodes, empty.relationships) == ([], [])
    assert (blank.nodes, blank.relationships) == ([], [])
    assert shape(bob)[1] == {("Person", "Bob", "WORKS_AT", "Organization", "Initech")}
    shown = [str(call["messages"][-1]["content"]) for call in lm.calls]
    assert sum(EMPTY in text for text in shown) == 1  # the entity call only
    assert len(lm.calls) == 3  # and the blank document made none


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


DOCUMENTS = [ANN, BOB, EMPTY, BOB + " "]


@pytest.mark.parametrize("path", ["sync", "async"])
def test_num_workers_documents_at_once_in_order_on_both_paths(path):
    lm = GatedLM(parties=2)
    t = transformer(lm, num_workers=2)
    documents = [Document(page_content=text) for text in DOCUMENTS]
    if path == "sync":
        graphs = t.convert_to_graph_documents(documents)
    else:
        graphs = asyncio.run(t.aconvert_to_graph_documents(documents))
    assert lm.most == 2
    assert [graph.source for graph in graphs] == documents
    assert [len(graph.relationships) for graph in graphs] == [1, 1, 0, 1]


def test_a_configs_max_concurrency_bounds_the_workers_instead():
    lm = GatedLM(parties=1)
    t = transformer(lm, num_workers=4)
    asyncio.run(
        t.aconvert_to_graph_documents([Document(page_content=ANN)] * 3, config={"max_concurrency": 1})
    )
    assert lm.most == 1


def test_the_reference_time_is_the_metadata_the_argument_or_now():
    lm = ScriptedLM(respond)
    t = transformer(lm, reference_time="2023-02-03T04:05:06Z", reference_time_key="published")
    t.convert_to_graph_documents(
        [Document(page_content=BOB, metadata={"published": "2022-01-01"}), Document(page_content=BOB)]
    )
    shown = sorted(
        str(call["messages"][-1]["content"]) for call in lm.calls if output_field(call["messages"]) == "edges"
    )
    assert any("2022-01-01T00:00:00Z" in text for text in shown)
    assert any("2023-02-03T04:05:06Z" in text for text in shown)
    transformer(lm).convert_to_graph_documents([Document(page_content=BOB)])
    now = transformer(lm, reference_time=None)
    now.convert_to_graph_documents([Document(page_content=BOB)])
    assert time.strftime("%Y-%m-%dT", time.gmtime()) in str(lm.calls[-1]["messages"][-1]["content"])
    with pytest.raises(ValueError, match="published"):
        t.convert_to_graph_documents([Document(page_content=BOB, metadata={"published": "not a time"})])


@pytest.mark.parametrize(
    ("allowed_nodes", "allowed_relationships"),
    [
        (NODES, TRIPLES),
        (NODES, ["WORKS_AT", "PART_OF"]),
        (["Person"], [("Person", "KNOWS", "Robot")]),  # an end that is no allowed node
        (NODES, ["WORKS_AT", ("Person", "KNOWS", "Person")]),  # names and triples mixed
    ],
)
def test_the_relationship_schema_is_accepted_and_refused_as_llm_graph_transformer_does(
    allowed_nodes, allowed_relationships
):
    try:
        validate_and_get_relationship_type(allowed_relationships, allowed_nodes)
    except ValueError:
        with pytest.raises(ValueError, match="allowed_relationships"):
            transformer(
                ScriptedLM([]), allowed_nodes=allowed_nodes, allowed_relationships=allowed_relationships
            )
    else:
        transformer(ScriptedLM([]), allowed_nodes=allowed_nodes, allowed_relationships=allowed_relationships)


def test_misuse_is_refused_when_the_transformer_is_made():
    lm = ScriptedLM([])
    with pytest.raises(ValueError, match="cannot find entities"):
        transformer(lm, program="seed-structured")
    with pytest.raises(ValueError, match="reference_time"):
        transformer(lm, reference_time="soon")
    with pytest.raises(TypeError, match="max_retries"):
        transformer(lm, max_retries=0)  # a misspelled LMConfig field, refused as LMConfig refuses it
    with pytest.raises(ValueError, match="num_workers"):
        transformer(lm, num_workers=0)
    with pytest.raises(ValueError, match="one type"):
        transformer(lm, allowed_relationships=["WORKS_AT", "worksAt"])


def test_the_conversions_have_llm_graph_transformers_signatures():
    for name in ("convert_to_graph_documents", "aconvert_to_graph_documents", "process_response"):
        ours = list(inspect.signature(getattr(EdgewiseGraphTransformer, name)).parameters)
        theirs = list(inspect.signature(getattr(LLMGraphTransformer, name)).parameters)
        assert ours == theirs, name
    assert inspect.iscoroutinefunction(EdgewiseGraphTransformer.aconvert_to_graph_documents)


def test_the_program_is_chosen_as_for_graphiti():
    assert transformer(ScriptedLM([])).program_name == "default"  # an LM of the caller's: the uncompiled one
    # Nothing is started until the first document: the local model's program is named, not run.
    local = EdgewiseGraphTransformer(allowed_nodes=NODES, model="local")
    assert local.program_name == choose_program(None, "local").name != "default"
