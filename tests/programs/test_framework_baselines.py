"""LlamaIndex's and LangChain's own extraction prompts as bench programs (`llama-index`,
`llama-index-structured`, `langchain`), offline with a scripted model.

Each program's request is compared with what the framework itself sends: LlamaIndex's
`SchemaLLMPathExtractor` run on a chat model that records its messages, LangChain's
`create_unstructured_prompt` rendered directly. The same reply goes through the framework's own
extractor and through the program, and the program keeps what the framework keeps, less what
edgewise's post-processing drops, each with its warning. A reply that cannot be read is retried once
and then a `parse_failure`, as for every program.

Without an extra, its tests are skipped, unless EDGEWISE_REQUIRE_LLAMA_INDEX /
EDGEWISE_REQUIRE_LANGCHAIN is set (CI sets them), where a missing package fails.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import warnings
from typing import Any, Literal

import pytest
from fakes import SchemaLM, ScriptedLM

from edgewise.domain.episode import TextEpisode
from edgewise.domain.errors import MissingExtraError
from edgewise.domain.types import ExtractionResult
from edgewise.modules.program_io import input_model
from edgewise.programs.names import resolve_program
from edgewise.runtime.lm import lm_context

TEXT = "Ann joined Acme in Leeds. Ann knows Bob."
EPISODE: dict[str, Any] = {
    "episodeContent": TEXT,
    "previousEpisodes": ["Ann moved north."],
    "referenceTime": "2025-03-10T09:00:00Z",
    "customPrompt": "Prefer WORKS_AT.",
    "edgeTypes": [
        {
            "name": "WORKS_AT",
            "description": "works for",
            "sourceTypes": ["Person"],
            "targetTypes": ["Organization"],
        },
        {
            "name": "LOCATED_IN",
            "description": "is in",
            "sourceTypes": ["Organization"],
            "targetTypes": ["Location"],
        },
        {"name": "KNOWS", "description": "knows", "sourceTypes": ["Person"], "targetTypes": ["Person"]},
    ],
}
# What a user of either framework would give it for EPISODE: the types the signatures name, the
# relationship types, and the signatures as triples (in LlamaIndex's upper-case form there).
NODES = ["Person", "Organization", "Location"]
TRIPLES = [
    ("Person", "WORKS_AT", "Organization"),
    ("Organization", "LOCATED_IN", "Location"),
    ("Person", "KNOWS", "Person"),
]
KEPT = {("Ann", "WORKS_AT", "Acme"), ("Acme", "LOCATED_IN", "Leeds"), ("Ann", "KNOWS", "Bob")}
"""The edges of both replies below that the framework and then post-processing keep."""
FOUND = [("Ann", "Person"), ("Acme", "Organization"), ("Leeds", "Location"), ("Bob", "Person")]


def require(module: str, variable: str, extra: str) -> None:
    """Skip without the extra; fail where `variable` says it is installed."""
    if importlib.util.find_spec(module.split(".")[0]) is not None and importlib.util.find_spec(module):
        return
    message = f"{module} is missing: pip install 'edgewise[{extra}]'"
    if os.environ.get(variable):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture
def llama_index() -> None:
    require("llama_index.core", "EDGEWISE_REQUIRE_LLAMA_INDEX", "llama-index")


@pytest.fixture
def langchain() -> None:
    for module in ("langchain_core", "langchain_community", "langchain_experimental"):
        require(module, "EDGEWISE_REQUIRE_LANGCHAIN", "langchain")


def run(spec: str, lm: ScriptedLM, episode: dict[str, Any] | None = None) -> ExtractionResult:
    program = resolve_program(spec)
    with lm_context(lm):
        return program(episode or EPISODE).result


def triples(result: ExtractionResult) -> set[tuple[str, str, str]]:
    return {(e.source_entity_name, e.relationship_type, e.target_entity_name) for e in result.edges}


def dropped(result: ExtractionResult, code: str) -> list[tuple[str, str, str]]:
    """The (source, type, target) of the edges a warning `code` dropped (its edge in either spelling)."""
    return [
        (w.edge["sourceEntityName"], w.edge["relationshipType"], w.edge["targetEntityName"])
        for w in result.warnings
        if w.code == code and w.edge
    ]


def codes(result: ExtractionResult) -> list[str]:
    return [w.code for w in result.warnings]


# -- registration --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "module", "extra"),
    [
        ("llama-index", "edgewise.programs.llama_index_baseline", "llama-index"),
        ("llama-index-structured", "edgewise.programs.llama_index_baseline", "llama-index"),
        ("langchain", "edgewise.programs.langchain_baseline", "langchain"),
    ],
)
def test_a_missing_framework_names_the_extra_to_install(
    spec: str, module: str, extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # importing it now raises ImportError
    # A missing extra is the user's to install (exit 1 with its message), never reported as a bug.
    with pytest.raises(MissingExtraError, match=rf"pip install 'edgewise\[{extra}\]'"):
        resolve_program(spec)


@pytest.mark.parametrize("spec", ["llama-index", "llama-index-structured", "langchain"])
def test_the_framework_programs_take_text_alone_and_need_no_entity_step(
    spec: str, llama_index: None, langchain: None
) -> None:
    program = resolve_program(spec, find_entities=True)
    assert program.finds_entities is True
    assert input_model(program) is TextEpisode
    assert input_model(resolve_program("default")) is not TextEpisode


# -- LlamaIndex ----------------------------------------------------------------------------------


def llama_triplet(subject: tuple[str, str], relation: str, obj: tuple[str, str]) -> dict[str, Any]:
    return {
        "subject": {"name": subject[0], "type": subject[1]},
        "relation": {"type": relation},
        "object": {"name": obj[0], "type": obj[1]},
    }


LLAMA_REPLY = json.dumps(
    {
        "triplets": [
            llama_triplet(("Ann", "person"), "works at", ("Acme", "ORGANIZATION")),  # LlamaIndex's cleanup
            llama_triplet(("Acme", "ORGANIZATION"), "LOCATED_IN", ("Leeds", "LOCATION")),
            llama_triplet(("Ann", "PERSON"), "LOCATED_IN", ("Leeds", "LOCATION")),  # not a schema triple
            llama_triplet(("Ann", "PERSON"), "KNOWS", ("ann", "PERSON")),  # LlamaIndex's self-reference
            llama_triplet(("Ann", "PERSON"), "FOUNDED", ("Acme", "ORGANIZATION")),  # not a relation
            llama_triplet(("Ann", "PERSON"), "KNOWS", ("Bob", "PERSON")),
            llama_triplet(("Bob", "PERSON"), "KNOWS", ("bob ", "PERSON")),  # one entity to edgewise
            llama_triplet(("Leeds", "PERSON"), "WORKS_AT", ("Acme", "ORGANIZATION")),  # Leeds is a Location
        ]
    }
)


def llama_index_run(
    reply: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[list[dict[str, str]]], set[tuple[str, str, str]]]:
    """LlamaIndex's own extractor, on a chat model without function calling that answers `reply`:
    the messages it sent and the (subject, relation, object) it wrote."""
    from llama_index.core.base.llms.types import ChatMessage, ChatResponse, LLMMetadata
    from llama_index.core.bridge.pydantic import Field
    from llama_index.core.graph_stores.types import KG_NODES_KEY, KG_RELATIONS_KEY
    from llama_index.core.indices.property_graph.transformations.schema_llm import (
        DEFAULT_SCHEMA_PATH_EXTRACT_PROMPT,
        SchemaLLMPathExtractor,
    )
    from llama_index.core.llms.custom import CustomLLM
    from llama_index.core.schema import TextNode

    # LlamaIndex's text program sets its parser on the shared default prompt: put it back afterwards.
    prompt = DEFAULT_SCHEMA_PATH_EXTRACT_PROMPT
    monkeypatch.setattr(prompt, "output_parser", prompt.output_parser)

    class RecordingChatModel(CustomLLM):
        reply: str
        sent: list[list[dict[str, str]]] = Field(default_factory=list)

        @property
        def metadata(self) -> LLMMetadata:
            return LLMMetadata(is_chat_model=True, is_function_calling_model=False)

        def chat(self, messages: Any, **kwargs: Any) -> ChatResponse:
            self.sent.append([{"role": m.role.value, "content": m.content} for m in messages])
            return ChatResponse(message=ChatMessage(role="assistant", content=self.reply))

        def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            raise AssertionError("a chat model is asked to chat")

        def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Any:
            raise AssertionError("a chat model is asked to chat")

    llm = RecordingChatModel(reply=reply)
    extractor = SchemaLLMPathExtractor(
        llm=llm,
        possible_entities=Literal["PERSON", "ORGANIZATION", "LOCATION"],  # type: ignore[arg-type]
        possible_relations=Literal["WORKS_AT", "LOCATED_IN", "KNOWS"],  # type: ignore[arg-type]
        kg_validation_schema=[(s.upper(), r, o.upper()) for s, r, o in TRIPLES],
    )
    (node,) = extractor([TextNode(text=TEXT)])
    names = {entity.id: entity.name for entity in node.metadata[KG_NODES_KEY]}
    written = {(names[r.source_id], r.label, names[r.target_id]) for r in node.metadata[KG_RELATIONS_KEY]}
    return llm.sent, written


def test_llama_index_sends_the_extractors_prompt_and_keeps_what_it_keeps(
    llama_index: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent, written = llama_index_run(LLAMA_REPLY, monkeypatch)
    lm = ScriptedLM([LLAMA_REPLY])
    result = run("llama-index", lm)

    assert [call["messages"] for call in lm.calls] == sent  # one user message: prompt, then its schema
    assert "response_format" not in lm.calls[0]["kwargs"]
    assert "Ann moved north" not in sent[0][0]["content"]  # the chunk's text alone
    # LlamaIndex kept 5 of the 8 triplets; post-processing drops Bob -> "bob " (one entity) and
    # Leeds WORKS_AT Acme (Leeds was found as a Location), each with its warning.
    assert written == KEPT | {("Bob", "KNOWS", "bob "), ("Leeds", "WORKS_AT", "Acme")}
    assert triples(result) == KEPT
    assert dropped(result, "self_edge") == [("Bob", "KNOWS", "bob ")]
    assert dropped(result, "type_signature") == [("Leeds", "WORKS_AT", "Acme")]
    assert "LlamaIndex's validation kept 5 of the reply's 8 triplets" in result.warnings[0].message
    assert [(e.name, e.type) for e in result.entities or []] == FOUND
    assert {e.fact for e in result.edges} == {"Ann WORKS_AT Acme", "Acme LOCATED_IN Leeds", "Ann KNOWS Bob"}
    assert all(e.valid_at is None and e.invalid_at is None for e in result.edges)
    assert result.parse_failures == 0 and result.usage["extract"].calls == 1


def test_llama_index_structured_sends_the_prompt_alone_with_kgschema_as_response_format(
    llama_index: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from llama_index.core.indices.property_graph.transformations.schema_llm import (
        DEFAULT_SCHEMA_PATH_EXTRACT_PROMPT,
    )
    from llama_index.core.output_parsers.pydantic import PydanticOutputParser
    from llama_index.core.prompts import PromptTemplate

    from edgewise.programs.llama_index_baseline import llama_index_extractor

    # Where LlamaIndex's text program has left its parser on the shared default prompt, the program
    # still sends the prompt alone.
    schema = llama_index_extractor(TextEpisode.model_validate(EPISODE)).kg_schema_cls
    monkeypatch.setattr(DEFAULT_SCHEMA_PATH_EXTRACT_PROMPT, "output_parser", PydanticOutputParser(schema))
    lm = SchemaLM(["Here you go:\n```json\n" + LLAMA_REPLY + "\n```"])
    result = run("llama-index-structured", lm)

    prompt = PromptTemplate(DEFAULT_SCHEMA_PATH_EXTRACT_PROMPT.template)
    assert lm.calls[0]["messages"] == [
        {"role": "user", "content": prompt.format(text=TEXT, max_triplets_per_chunk=10)}
    ]
    assert lm.calls[0]["kwargs"]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "KGSchema", "schema": schema.model_json_schema()},
    }
    assert triples(result) == KEPT and result.parse_failures == 0


@pytest.mark.parametrize(
    ("spec", "first"),
    [
        ("llama-index", "I found no relations."),
        ("llama-index", json.dumps({"paths": []})),  # JSON, but no KGSchema
        (
            "llama-index",
            json.dumps({"triplets": [{**llama_triplet(("A", "PERSON"), "KNOWS", ("B", "PERSON")), "x": 1}]}),
        ),
        ("llama-index-structured", "I found no relations."),
    ],
)
def test_llama_index_reply_it_would_give_up_is_retried_then_a_parse_failure(
    spec: str, first: str, llama_index: None
) -> None:
    lm = SchemaLM([first, first])
    result = run(spec, lm)
    assert result.edges == [] and result.entities == []
    assert codes(result) == ["parse_failure"] and result.parse_failures == 1
    assert len(lm.calls) == 2 and lm.calls[1]["kwargs"]["cache"] is False

    lm = SchemaLM([first, LLAMA_REPLY])
    result = run(spec, lm)
    assert triples(result) == KEPT and result.parse_failures == 0


# -- LangChain -----------------------------------------------------------------------------------


def relation(head: tuple[str, str], kind: str, tail: tuple[str, str]) -> dict[str, str]:
    return {"head": head[0], "head_type": head[1], "relation": kind, "tail": tail[0], "tail_type": tail[1]}


LANGCHAIN_REPLY = json.dumps(
    [
        relation(("Ann", "person"), "works_at", ("Acme", "Organization")),  # its filter ignores case
        relation(("Acme", "Organization"), "LOCATED_IN", ("Leeds", "Location")),
        relation(("Ann", "Person"), "LOCATED_IN", ("Leeds", "Location")),  # not a schema triple
        {"head": "Ann", "head_type": "Person", "relation": "KNOWS"},  # no tail
        relation(("Ann", "Person"), "KNOWS", ("Bob", "Person")),
        relation(("Bob", "Person"), "KNOWS", ("bob ", "Person")),  # one entity to edgewise
        relation(("Leeds", "Person"), "WORKS_AT", ("Acme", "Organization")),  # Leeds is a Location
        relation(("Ann", "Person"), "KNOWS", ("Launch", "Event")),  # not an allowed node
    ]
)


def langchain_prompt(nodes: list[str], relationships: list[Any], kind: str) -> list[dict[str, str]]:
    """LangChain's own rendering of its JSON-mode prompt for TEXT, as a chat model's messages."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from langchain_experimental.graph_transformers.llm import create_unstructured_prompt

    roles = {"system": "system", "human": "user"}
    messages = create_unstructured_prompt(nodes, relationships, kind).format_messages(input=TEXT)
    return [{"role": roles[m.type], "content": str(m.content)} for m in messages]


def test_langchain_sends_the_transformers_prompt_and_keeps_what_it_keeps(langchain: None) -> None:
    from langchain_core.documents import Document
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from langchain_experimental.graph_transformers import LLMGraphTransformer

    graph = LLMGraphTransformer(
        llm=FakeListChatModel(responses=[LANGCHAIN_REPLY]),
        allowed_nodes=NODES,
        allowed_relationships=TRIPLES,
        ignore_tool_usage=True,
    ).process_response(Document(page_content=TEXT))
    lm = ScriptedLM([LANGCHAIN_REPLY])
    result = run("langchain", lm)

    assert lm.calls[0]["messages"] == langchain_prompt(NODES, TRIPLES, "tuple")
    assert "Ann moved north" not in json.dumps(lm.calls[0]["messages"])  # the document's text alone
    written = {(str(r.source.id), r.type, str(r.target.id)) for r in graph.relationships}
    assert written == {
        ("Ann", "works_at", "Acme"),
        ("Acme", "LOCATED_IN", "Leeds"),
        ("Ann", "KNOWS", "Bob"),
        ("Bob", "KNOWS", "bob "),
        ("Leeds", "WORKS_AT", "Acme"),
    }
    assert triples(result) == KEPT  # works_at in the episode's spelling
    assert dropped(result, "self_edge") == [("Bob", "KNOWS", "bob ")]
    assert dropped(result, "type_signature") == [("Leeds", "WORKS_AT", "Acme")]
    assert "kept 5 of the reply's 8 items" in result.warnings[0].message
    assert [(e.name, e.type) for e in result.entities or []] == FOUND
    assert {e.fact for e in result.edges} == {"Ann works_at Acme", "Acme LOCATED_IN Leeds", "Ann KNOWS Bob"}
    assert result.parse_failures == 0 and result.usage["extract"].calls == 1


def test_langchain_lists_relationship_names_when_a_type_has_no_signature(langchain: None) -> None:
    episode = {**EPISODE, "edgeTypes": [*EPISODE["edgeTypes"], {"name": "MENTIONS", "description": "any"}]}
    lm = ScriptedLM(["[]"])
    result = run("langchain", lm, episode)
    names = ["WORKS_AT", "LOCATED_IN", "KNOWS", "MENTIONS"]
    assert lm.calls[0]["messages"] == langchain_prompt(NODES, names, "string")
    assert result.edges == [] and result.warnings == [] and result.entities == []


@pytest.mark.parametrize("first", ["Sorry, I cannot help with that.", "42"])
def test_langchain_reply_without_json_is_retried_then_a_parse_failure(first: str, langchain: None) -> None:
    lm = ScriptedLM([first, first])
    result = run("langchain", lm)
    assert result.edges == [] and result.entities == []
    assert codes(result) == ["parse_failure"] and result.parse_failures == 1
    assert len(lm.calls) == 2 and lm.calls[1]["kwargs"]["cache"] is False

    lm = ScriptedLM([first, LANGCHAIN_REPLY])
    assert triples(run("langchain", lm)) == KEPT


# -- both ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("spec", "reply"), [("llama-index", LLAMA_REPLY), ("langchain", LANGCHAIN_REPLY)])
def test_given_entities_are_kept_and_close_the_edges_ends(
    spec: str, reply: str, llama_index: None, langchain: None
) -> None:
    episode = {
        **EPISODE,
        "entities": [{"name": "Ann", "type": "Person"}, {"name": "Acme", "type": "Organization"}],
    }
    result = run(spec, ScriptedLM([reply]), episode)
    assert triples(result) == {("Ann", "WORKS_AT", "Acme")}
    assert ("Acme", "LOCATED_IN", "Leeds") in dropped(result, "unknown_entity")
    assert result.entities is None  # nothing was found: the episode's own entities were used
