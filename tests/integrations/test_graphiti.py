"""Graphiti integration, offline: the prompt contract against the installed graphiti-core, the client's
routing, its errors, and `Graphiti.add_episode` and `add_episode_bulk` end to end on an embedded Kuzu
graph."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest

graphiti_core = pytest.importorskip("graphiti_core", reason="the [graphiti] extra is not installed")

from graphiti_core.cross_encoder.client import CrossEncoderClient
from graphiti_core.embedder.client import EmbedderClient
from graphiti_core.llm_client.client import LLMClient, is_server_or_retry_error
from graphiti_core.llm_client.config import LLMConfig
from graphiti_core.llm_client.errors import RateLimitError
from graphiti_core.prompts import prompt_library
from graphiti_core.prompts.extract_edges import BatchEdgeTimestamps, ExtractedEdges
from mock_openai import MockOpenAIServer
from pydantic import BaseModel, Field

from edgewise.integrations.graphiti import EdgewiseLLMClient, graphiti_error, graphiti_type_name
from edgewise.integrations.graphiti_prompt import (
    UnreadablePrompt,
    read_batch_facts,
    read_edge_prompt,
    with_batch_facts,
)

REFERENCE = datetime(2024, 3, 14, 9, 30, tzinfo=UTC)


def context(**changes: Any) -> dict[str, Any]:
    """A context as `graphiti_core.utils.maintenance.edge_operations.extract_edges` builds it."""
    base = {
        "episode_content": "Alice: I joined Acme in Berlin last year. Bob is my manager.",
        "nodes": [
            {"name": "Alice", "entity_types": ["Entity", "Person"]},
            {"name": "Acme", "entity_types": ["Entity", "Organization"]},
            {"name": "Berlin", "entity_types": ["Entity"]},
            {"name": "Bob", "entity_types": ["Entity", "Person"]},
        ],
        "previous_episodes": [],
        "reference_time": REFERENCE,
        "edge_types": [],
        "strict_edge_types": False,
        "custom_extraction_instructions": "",
    }
    return base | changes


FACT_TYPES = [
    {
        "fact_type_name": "WORKS_AT",
        "fact_type_signatures": [("Person", "Organization")],
        "fact_type_description": "A person works at an organization.",
    },
    {
        "fact_type_name": "MANAGES",
        "fact_type_signatures": [("Person", "Person"), ("Entity", "Entity")],
        "fact_type_description": "The source manages the target.",
    },
    {
        "fact_type_name": "OWNS_PET",
        "fact_type_signatures": [("Person", "Pet")],  # no Pet in this episode
        "fact_type_description": "A person owns a pet.",
    },
]


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"edge_types": FACT_TYPES},
        {"edge_types": FACT_TYPES, "strict_edge_types": True},
        {
            "previous_episodes": [
                {"content": "Alice: hi!", "timestamp": "2024-03-13T08:00:00+00:00"},
                {"content": "Bob: hello Alice", "timestamp": None},
            ]
        },
        {"custom_extraction_instructions": "Only extract work facts.\nIgnore pets."},
        {"episode_content": "Ünïcødé: Alice → Acme ❤", "custom_extraction_instructions": "Be brief."},
    ],
)
def test_graphitis_own_edge_prompt_reads_back_field_by_field(changes: dict[str, Any]) -> None:
    rendered = context(**changes)
    read = read_edge_prompt(prompt_library.extract_edges.edge(rendered))
    episode = read.episode
    assert episode.episode_content == rendered["episode_content"]
    assert episode.previous_episodes == [item["content"] for item in rendered["previous_episodes"]]
    assert [(e.name, e.type) for e in episode.entities] == [
        ("Alice", "Person"),
        ("Acme", "Organization"),
        ("Berlin", None),
        ("Bob", "Person"),
    ]
    assert episode.reference_time == REFERENCE
    assert episode.custom_prompt == rendered["custom_extraction_instructions"].strip()
    assert read.strict_types == bool(rendered.get("strict_edge_types") and rendered["edge_types"])
    types = {t.name: t for t in episode.edge_types}
    if rendered["edge_types"]:
        assert set(types) == {"WORKS_AT", "MANAGES"}  # OWNS_PET cannot connect anything here
        assert types["WORKS_AT"].description == "A person works at an organization."
        assert types["WORKS_AT"].source_types == ["Person"] and types["WORKS_AT"].target_types == [
            "Organization"
        ]
        assert types["MANAGES"].source_types is None  # ("Entity", "Entity"): any
    else:
        assert types == {}


@pytest.mark.parametrize("split", ["train", "dev", "test"])
def test_every_labeled_episode_reads_back_from_graphitis_prompt_unchanged(split: str) -> None:
    """What the client hands the program equals the episode the bench scores, for every shipped episode."""
    from graphiti_core.prompts.models import Message

    from edgewise.data import load_episodes
    from edgewise.programs.graphiti_baseline import graphiti_messages

    def fields(episode: Any) -> tuple:
        return (
            episode.episode_content,
            episode.previous_episodes,
            episode.reference_time,
            episode.custom_prompt,
            [(e.name, e.type) for e in episode.entities],
            [(t.name, t.description, t.source_types, t.target_types) for t in episode.edge_types],
        )

    episodes = load_episodes(split)
    for episode in episodes:
        messages = [Message(**m) for m in graphiti_messages(episode, schema_in_prompt=True)]
        assert fields(read_edge_prompt(messages).episode) == fields(episode), episode.id


def test_the_prompt_after_graphitis_own_additions_still_reads() -> None:
    """LLMClient.generate_response appends the response schema and a language note before sending."""
    messages = prompt_library.extract_edges.edge(context(edge_types=FACT_TYPES))
    messages[-1].content += "\n\nRespond with a JSON object in the following format:\n\n" + json.dumps(
        ExtractedEdges.model_json_schema()
    )
    messages[0].content += "\n\nAny extracted information should be returned in the same language."
    assert read_edge_prompt(messages).episode.entities[0].name == "Alice"


def test_a_changed_template_is_unreadable() -> None:
    messages = prompt_library.extract_edges.edge(context())
    messages[-1].content = (
        messages[-1].content.replace("<ENTITIES>", "<NODES>").replace("</ENTITIES>", "</NODES>")
    )
    with pytest.raises(UnreadablePrompt, match="ENTITIES"):
        read_edge_prompt(messages)


def test_strict_mode_is_read_from_the_relation_type_rules_only() -> None:
    """Custom instructions that quote the strict rule do not make an open prompt strict."""
    quoting = "Use one of the provided fact_type_name values as the relation_type."
    opened = prompt_library.extract_edges.edge(
        context(edge_types=FACT_TYPES, custom_extraction_instructions=quoting)
    )
    assert read_edge_prompt(opened).strict_types is False
    strict = prompt_library.extract_edges.edge(context(edge_types=FACT_TYPES, strict_edge_types=True))
    assert read_edge_prompt(strict).strict_types is True
    strict[-1].content = strict[-1].content.replace(quoting, "Pick a fact type.")
    with pytest.raises(UnreadablePrompt, match="RELATION TYPE RULES"):
        read_edge_prompt(strict)  # neither rule: strictness cannot be told, so it is not guessed


BATCH_FACTS = [
    {"fact": "Alice works at Acme.", "reference_time": REFERENCE.isoformat()},
    {"fact": "Bob manages Alice ✓.", "reference_time": "unknown"},
    {"fact": "Alice lives in Berlin.", "reference_time": REFERENCE.isoformat()},
]


def batch_messages(facts: list[dict[str, Any]]) -> Any:
    """Graphiti's own batch timestamp prompt, as its combined extraction renders it."""
    return prompt_library.extract_edges.extract_timestamps_batch({"facts": facts})


def test_graphitis_batch_timestamp_prompt_reads_back_and_takes_a_subset_of_its_facts() -> None:
    messages = batch_messages(BATCH_FACTS)
    assert read_batch_facts(messages) == BATCH_FACTS
    subset = with_batch_facts(messages, [BATCH_FACTS[1]])
    assert read_batch_facts(subset) == [BATCH_FACTS[1]]
    assert subset[-1].content == batch_messages([BATCH_FACTS[1]])[-1].content  # as Graphiti writes it
    assert subset[0].content == messages[0].content
    assert read_batch_facts(messages) == BATCH_FACTS  # the caller's messages are left as they were
    assert (
        read_batch_facts(
            prompt_library.extract_edges.extract_timestamps({"fact": "x", "reference_time": "y"})
        )
        is None
    )


# ------------------------------------------------------------------------------------------------
# The client
# ------------------------------------------------------------------------------------------------


def default_reply(model: Any) -> dict[str, Any]:
    """The smallest valid reply for a Graphiti response model: empty lists, zeros, nulls."""
    reply: dict[str, Any] = {}
    for name, field in (model.model_fields if model else {}).items():
        if not field.is_required():
            continue
        annotation = str(field.annotation)
        reply[name] = [] if "list" in annotation else 0 if "int" in annotation else ""
    return reply


WRAPPED_DATE = "2099-01-01T00:00:00Z"  # what the fake wrapped client makes up for every date


class FakeGraphitiClient(LLMClient):
    """Graphiti's other calls: a fixed set of entities, no duplicates, and dates it would make up.

    `combined_edges`: its facts for `add_episode_bulk`'s combined node-and-edge call; `batch_facts`
    records the facts of each batch timestamp call it answers.
    """

    def __init__(self, entities: list[str], combined_edges: list[dict[str, Any]] | None = None) -> None:
        super().__init__(LLMConfig(model="fake"), cache=False)
        self.entities = entities
        self.combined_edges = combined_edges or []
        self.prompts: list[str | None] = []
        self.batch_facts: list[list[str]] = []

    async def generate_response(self, messages, response_model=None, max_tokens=None, model_size=None,
                                group_id=None, prompt_name=None, **options):  # fmt: skip
        self.prompts.append(prompt_name)
        return await self._generate_response(messages, response_model)

    async def _generate_response(self, messages, response_model=None, max_tokens=0, model_size=None, **options):  # fmt: skip
        name = getattr(response_model, "__name__", "")
        if name == "ExtractedEntities":
            return {"extracted_entities": [{"name": n, "entity_type_id": 0} for n in self.entities]}
        if name == "EdgeTimestamps":
            return {"valid_at": WRAPPED_DATE, "invalid_at": None}  # what edgewise must not let in
        if name == "BatchEdgeTimestamps":
            facts = [item["fact"] for item in read_batch_facts(messages) or []]
            self.batch_facts.append(facts)
            return {"timestamps": [{"valid_at": WRAPPED_DATE, "invalid_at": None} for _ in facts]}
        if name == "CombinedExtraction":
            entities = [{"name": n, "entity_type_id": 0} for n in self.entities]
            return {"extracted_entities": entities, "edges": self.combined_edges}
        if name == "ExtractedEdges":
            return {"edges": []}
        return default_reply(response_model)


EDGEWISE_REPLY = json.dumps(
    {
        "edges": [
            {"relationshipType": "WORKS_AT", "sourceEntityName": "Alice", "targetEntityName": "Acme",
             "fact": "Alice works at Acme.", "validAt": "2023-01-01T00:00:00Z", "invalidAt": None},
            {"relationshipType": "LIVES_IN", "sourceEntityName": "Alice", "targetEntityName": "Berlin",
             "fact": "Alice lives in Berlin.", "validAt": None, "invalidAt": None},
        ]
    }
)  # fmt: skip


def test_the_edge_call_is_answered_by_edgewise_and_every_other_call_by_the_wrapped_client() -> None:
    inner = FakeGraphitiClient(["Alice", "Acme"])
    with MockOpenAIServer(EDGEWISE_REPLY) as server:
        client = EdgewiseLLMClient(
            inner, model="openai/mock", api_base=server.api_base, api_key="x", cache=False
        )
        edges = asyncio.run(
            client.generate_response(
                prompt_library.extract_edges.edge(context()), ExtractedEdges, prompt_name="extract_edges.edge"
            )
        )
        other = asyncio.run(client.generate_response([], None, prompt_name="dedupe_nodes.nodes"))
        client.close()
    assert [
        (e["source_entity_name"], e["relation_type"], e["target_entity_name"]) for e in edges["edges"]
    ] == [
        ("Alice", "WORKS_AT", "Acme"),
        ("Alice", "LIVES_IN", "Berlin"),
    ]
    assert edges["edges"][0]["valid_at"] == "2023-01-01T00:00:00Z" and edges["edges"][1]["valid_at"] is None
    ExtractedEdges(**edges)  # Graphiti's own parse of the reply
    assert len(server.requests) == 1 and inner.prompts == ["dedupe_nodes.nodes"] and other == {}


def test_an_unreadable_prompt_goes_to_the_wrapped_client_with_one_warning(caplog) -> None:
    inner = FakeGraphitiClient([])
    client = EdgewiseLLMClient(inner, lm=object())  # never reached
    messages = prompt_library.extract_edges.edge(context())
    messages[-1].content = messages[-1].content.replace("<CURRENT_MESSAGE>", "<MESSAGE>")
    with caplog.at_level(logging.WARNING, logger="edgewise.integrations.graphiti"):
        for _ in range(3):
            copy = [message.model_copy() for message in messages]
            reply = asyncio.run(
                client.generate_response(copy, ExtractedEdges, prompt_name="extract_edges.edge")
            )
            assert reply == {"edges": []}
    assert inner.prompts == ["extract_edges.edge"] * 3
    assert [record.message for record in caplog.records].count(caplog.records[0].message) == 1
    assert len(caplog.records) == 1 and "could not be read" in caplog.records[0].message


@pytest.mark.parametrize("fault", ["429", "500"])
def test_a_model_failure_is_raised_as_graphitis_own_error_and_graphiti_retries_it(
    fault: str, monkeypatch
) -> None:
    import httpx
    from tenacity import wait_none

    monkeypatch.setattr(LLMClient._generate_response_with_retry.retry, "wait", wait_none())  # no real waits
    with MockOpenAIServer(EDGEWISE_REPLY, faults=lambda index, body: fault, retry_after=0.0) as server:
        client = CountingClient(
            FakeGraphitiClient([]),
            model="openai/mock",
            api_base=server.api_base,
            api_key="x",
            num_retries=0,
            cache=False,
        )
        with pytest.raises(Exception) as raised:
            asyncio.run(
                client.generate_response(
                    prompt_library.extract_edges.edge(context()),
                    ExtractedEdges,
                    prompt_name="extract_edges.edge",
                )
            )
        client.close()
    error = raised.value
    assert isinstance(error, RateLimitError if fault == "429" else httpx.HTTPStatusError)
    assert is_server_or_retry_error(error)
    assert client.attempts == 4  # Graphiti's own retry (stop_after_attempt(4)) ran edgewise four times
    assert len(server.requests) == 4  # num_retries=0: one request per attempt, no retry inside edgewise


# ------------------------------------------------------------------------------------------------
# Graphiti's batch timestamp call and its strict mode
# ------------------------------------------------------------------------------------------------


def extracted_client(inner: LLMClient, server: MockOpenAIServer, **options: Any) -> EdgewiseLLMClient:
    """A client that has answered one edge call: EDGEWISE_REPLY's two facts, one dated, one not."""
    client = EdgewiseLLMClient(
        inner, model="openai/mock", api_base=server.api_base, api_key="x", cache=False, **options
    )
    asyncio.run(
        client.generate_response(
            prompt_library.extract_edges.edge(context()), ExtractedEdges, prompt_name="extract_edges.edge"
        )
    )
    return client


def ask_batch(client: LLMClient, facts: list[dict[str, Any]]) -> dict[str, Any]:
    return asyncio.run(
        client.generate_response(
            batch_messages(facts), BatchEdgeTimestamps, prompt_name="extract_edges.extract_timestamps_batch"
        )
    )


EDGEWISE_DATED = {"valid_at": "2023-01-01T00:00:00Z", "invalid_at": None}
EDGEWISE_NULL = {"valid_at": None, "invalid_at": None}
WRAPPED = {"valid_at": WRAPPED_DATE, "invalid_at": None}


def test_the_batch_timestamp_call_answers_edgewise_facts_and_asks_the_wrapped_client_for_the_rest() -> None:
    inner = FakeGraphitiClient([])
    with MockOpenAIServer(EDGEWISE_REPLY) as server:
        client = extracted_client(inner, server)
        mixed = ask_batch(client, BATCH_FACTS)
        known = ask_batch(client, [BATCH_FACTS[2], BATCH_FACTS[0]])
        unknown = ask_batch(client, [BATCH_FACTS[1]])
        client.close()
        requests = len(server.requests)
    # Each fact's entry in its own place: edgewise's date, the wrapped client's, edgewise's null.
    assert mixed == {"timestamps": [EDGEWISE_DATED, WRAPPED, EDGEWISE_NULL]}
    BatchEdgeTimestamps(**mixed)  # Graphiti's own parse of the reply
    assert known == {"timestamps": [EDGEWISE_NULL, EDGEWISE_DATED]}
    assert unknown == {"timestamps": [WRAPPED]}
    # The wrapped client was asked only for the fact edgewise did not extract, then for the batch of it alone.
    assert inner.batch_facts == [["Bob manages Alice ✓."], ["Bob manages Alice ✓."]]
    assert inner.prompts == ["extract_edges.extract_timestamps_batch"] * 2
    assert requests == 1  # the edgewise model answered the edge call only


class BatchReplyClient(FakeGraphitiClient):
    """A wrapped client whose batch timestamp reply is fixed."""

    def __init__(self, reply: Any) -> None:
        super().__init__([])
        self.reply = reply

    async def _generate_response(self, messages, response_model=None, max_tokens=0, model_size=None, **options):  # fmt: skip
        return self.reply


def test_a_short_wrapped_batch_reply_leaves_its_missing_facts_undated_and_a_malformed_one_is_an_error() -> (
    None
):
    with MockOpenAIServer(EDGEWISE_REPLY) as server:
        short = extracted_client(BatchReplyClient({"timestamps": []}), server)
        malformed = extracted_client(BatchReplyClient({"dates": []}), server)
        answered = ask_batch(short, BATCH_FACTS)
        with pytest.raises(ValueError, match="no timestamps list"):
            ask_batch(malformed, BATCH_FACTS)  # Graphiti logs it and asks again, as for its own client
        short.close()
        malformed.close()
    assert answered == {"timestamps": [EDGEWISE_DATED, EDGEWISE_NULL, EDGEWISE_NULL]}


@pytest.mark.parametrize("program", ["default", "seed"])
@pytest.mark.parametrize("strict", [False, True])
def test_strict_edge_types_return_only_graphitis_fact_types(program: str, strict: bool) -> None:
    """`seed` does not close types itself: the client holds it to the fact types."""
    with MockOpenAIServer(EDGEWISE_REPLY) as server:
        client = EdgewiseLLMClient(
            FakeGraphitiClient([]), program=program, model="openai/mock", api_base=server.api_base,
            api_key="x", cache=False,
        )  # fmt: skip
        reply = asyncio.run(
            client.generate_response(
                prompt_library.extract_edges.edge(context(edge_types=FACT_TYPES, strict_edge_types=strict)),
                ExtractedEdges,
                prompt_name="extract_edges.edge",
            )
        )
        client.close()
    types = [edge["relation_type"] for edge in reply["edges"]]
    assert types == (["WORKS_AT"] if strict else ["WORKS_AT", "LIVES_IN"])


def test_in_strict_mode_no_fact_type_that_fits_the_entities_means_no_edges_and_no_model_call() -> None:
    inner = FakeGraphitiClient([])
    with MockOpenAIServer(EDGEWISE_REPLY) as server:
        client = EdgewiseLLMClient(
            inner, model="openai/mock", api_base=server.api_base, api_key="x", cache=False
        )
        only_pets = context(edge_types=[FACT_TYPES[2]], strict_edge_types=True)  # no Pet here
        reply = asyncio.run(
            client.generate_response(
                prompt_library.extract_edges.edge(only_pets), ExtractedEdges, prompt_name="extract_edges.edge"
            )
        )
        client.close()
        requests = len(server.requests)
    assert reply == {"edges": []} and requests == 0 and inner.prompts == []


def test_a_fact_type_comes_back_under_graphitis_own_name() -> None:
    from edgewise.domain.types import EdgeType

    types = [EdgeType(name="Employment", description=""), EdgeType(name="WORKS_AT", description="")]
    assert graphiti_type_name("EMPLOYMENT", types) == "Employment"
    assert graphiti_type_name("WORKS_AT", types) == "WORKS_AT"
    assert graphiti_type_name("LIVES_IN", types) == "LIVES_IN"  # not a fact type: as written


# ------------------------------------------------------------------------------------------------
# Graphiti's edge-attribute call
# ------------------------------------------------------------------------------------------------


class WorksAt(BaseModel):
    """A person works at an organization."""

    role: str | None = Field(default=None, description="the person's job title")
    team: str | None = Field(default=None, description="the team within the organization")


class WorksAtSince(BaseModel):
    """A person works at an organization, from a date."""

    role: str | None = None
    start_date: datetime | None = None  # a field edgewise has no kind for


def attribute_messages(fact: str, existing: dict[str, Any] | None = None) -> Any:
    """Graphiti's own attribute prompt, as `resolve_extracted_edge` renders it."""
    return prompt_library.extract_edges.extract_attributes(
        {"fact": fact, "reference_time": REFERENCE, "existing_attributes": existing or {}}
    )


def attributed_responder(body: dict[str, Any]) -> str:
    """The edge call gets EDGEWISE_REPLY; an attribute call (one per WORKS_AT edge) names a role."""
    if "`attributes`" in str(body["messages"][0]["content"]):
        return json.dumps({"attributes": {"role": "engineer", "team": None}})
    return EDGEWISE_REPLY


def test_graphiti_reads_back_its_attribute_prompts_fact_and_existing_attributes() -> None:
    from edgewise.integrations.graphiti_prompt import graphiti_attributes, read_attribute_prompt

    fact, existing = read_attribute_prompt(attribute_messages("Alice works at Acme.", {"team": "data"}))
    assert (fact, existing) == ("Alice works at Acme.", {"team": "data"})
    attributes = graphiti_attributes({"WORKS_AT": WorksAt, "SINCE": WorksAtSince})
    assert [(a.name, a.kind, a.description) for a in attributes["WORKS_AT"]] == [
        ("role", "string", "the person's job title"),
        ("team", "string", "the team within the organization"),
    ]
    assert [a.name for a in attributes["SINCE"]] == ["role"]  # a date has no edgewise kind


def test_the_attribute_call_for_an_edge_edgewise_extracted_is_answered_from_its_attributes() -> None:
    inner = FakeGraphitiClient([])
    with MockOpenAIServer(attributed_responder) as server:
        client = EdgewiseLLMClient(
            inner, model="openai/mock", api_base=server.api_base, api_key="x", cache=False,
            edge_types={"WORKS_AT": WorksAt},
        )  # fmt: skip
        edges = asyncio.run(
            client.generate_response(
                prompt_library.extract_edges.edge(context(edge_types=FACT_TYPES)),
                ExtractedEdges,
                prompt_name="extract_edges.edge",
            )
        )
        requests = len(server.requests)

        def ask(fact: str, model: Any = WorksAt, existing: dict[str, Any] | None = None) -> dict[str, Any]:
            return asyncio.run(
                client.generate_response(
                    attribute_messages(fact, existing), model, prompt_name="extract_edges.extract_attributes"
                )
            )

        answered = ask("Alice works at Acme.", existing={"team": "data"})
        kept_requests = len(server.requests)
        other_fact = ask("Bob works at Acme.")
        unknown_field = ask("Alice works at Acme.", WorksAtSince)
        untyped = ask("Alice lives in Berlin.")  # LIVES_IN has no model: the program wrote none
        client.close()
    assert [e["relation_type"] for e in edges["edges"]] == ["WORKS_AT", "LIVES_IN"]
    assert requests == 2  # the edge call and one attribute call, for the one WORKS_AT edge
    assert answered == {"role": "engineer", "team": "data"}  # a null keeps the existing value
    WorksAt(**answered)  # Graphiti's own model takes the reply
    assert kept_requests == requests  # answered without a model call
    assert inner.prompts == ["extract_edges.extract_attributes"] * 3  # the three others went on
    assert other_fact == unknown_field == untyped == {}  # the fake wrapped client's replies


def test_without_graphitis_edge_types_edgewise_writes_no_attributes_and_answers_no_attribute_call() -> None:
    inner = FakeGraphitiClient([])
    with MockOpenAIServer(attributed_responder) as server:
        client = EdgewiseLLMClient(
            inner, model="openai/mock", api_base=server.api_base, api_key="x", cache=False
        )
        asyncio.run(
            client.generate_response(
                prompt_library.extract_edges.edge(context(edge_types=FACT_TYPES)),
                ExtractedEdges,
                prompt_name="extract_edges.edge",
            )
        )
        asyncio.run(
            client.generate_response(
                attribute_messages("Alice works at Acme."),
                WorksAt,
                prompt_name="extract_edges.extract_attributes",
            )
        )
        client.close()
    assert len(server.requests) == 1 and inner.prompts == ["extract_edges.extract_attributes"]


class CountingClient(EdgewiseLLMClient):
    attempts = 0

    async def _generate_response(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        self.attempts += 1
        return await super()._generate_response(*args, **kwargs)


def test_a_misspelled_model_option_is_an_error_when_the_client_is_built() -> None:
    with pytest.raises(TypeError, match="max_retries.*num_retries"):
        EdgewiseLLMClient(FakeGraphitiClient([]), model="openai/mock", max_retries=0)
    with pytest.raises(ValueError, match="num_retries"):  # LMConfig's own check, also at construction
        EdgewiseLLMClient(FakeGraphitiClient([]), model="openai/mock", num_retries=-1)


def test_graphiti_error_maps_edgewise_reasons() -> None:
    from dspy.utils.exceptions import LMAuthError, LMRateLimitError, LMServerError

    assert isinstance(graphiti_error(LMRateLimitError("slow down", model="m")), RateLimitError)
    server = graphiti_error(LMServerError("down", model="m", status=502))
    assert is_server_or_retry_error(server) and server.response.status_code == 502
    auth = LMAuthError("bad key", model="m")
    assert graphiti_error(auth) is auth and not is_server_or_retry_error(auth)


# ------------------------------------------------------------------------------------------------
# End to end: Graphiti.add_episode on Kuzu
# ------------------------------------------------------------------------------------------------


class HashEmbedder(EmbedderClient):
    """A deterministic embedding: the sha256 of the text as 32 numbers."""

    async def create(self, input_data: Any) -> list[float]:
        text = input_data if isinstance(input_data, str) else json.dumps(input_data, default=str)
        digest = hashlib.sha256(text.encode()).digest()
        return [byte / 255 for byte in digest]

    async def create_batch(self, input_data_list: list[str]) -> list[list[float]]:
        return [await self.create(text) for text in input_data_list]


class EqualRanker(CrossEncoderClient):
    async def rank(self, query: str, passages: list[str]) -> list[tuple[str, float]]:
        return [(passage, 1.0) for passage in passages]


@contextlib.asynccontextmanager
async def kuzu_graphiti(path: Any, client: LLMClient) -> AsyncIterator[Any]:
    """A Graphiti on an embedded Kuzu graph at `path`, with `client` as its LLM client."""
    from graphiti_core import Graphiti
    from graphiti_core.driver.kuzu_driver import KuzuDriver
    from graphiti_core.graph_queries import get_fulltext_indices

    with pytest.warns(DeprecationWarning):
        driver = KuzuDriver(db=str(path))
    graphiti = Graphiti(
        graph_driver=driver, llm_client=client, embedder=HashEmbedder(), cross_encoder=EqualRanker()
    )
    try:
        # graphiti-core 0.31.2's Kuzu driver creates no full-text index (its build step is a no-op);
        # its edge search needs them, so they are made here from Graphiti's own list.
        for query in get_fulltext_indices(driver.provider):
            await driver.execute_query(query)
        yield graphiti
    finally:
        await graphiti.close()


async def stored_edges(graphiti: Any) -> list[Any]:
    """The entity edges of the default group (graphiti-core 0.31.2 fails on an explicit group_id with Kuzu)."""
    from graphiti_core.edges import EntityEdge
    from graphiti_core.helpers import get_default_group_id

    return await EntityEdge.get_by_group_ids(
        graphiti.driver, [get_default_group_id(graphiti.driver.provider)]
    )


def mock_client(inner: LLMClient, api_base: str, **options: Any) -> EdgewiseLLMClient:
    return EdgewiseLLMClient(
        inner, model="openai/mock", api_base=api_base, api_key="x", cache=False, **options
    )


async def add_chat_line(graphiti: Any, **options: Any) -> Any:
    return await graphiti.add_episode(
        name="chat-1",
        episode_body="Alice: I work at Acme and live in Berlin.",
        source_description="chat",
        reference_time=REFERENCE,
        **options,
    )


async def add_chat_lines_in_bulk(graphiti: Any, **options: Any) -> Any:
    from graphiti_core.nodes import EpisodeType
    from graphiti_core.utils.bulk_utils import RawEpisode

    episode = RawEpisode(
        name="chat-2",
        content="Alice: I work at Acme and live in Berlin. Bob manages me.",
        source_description="chat",
        source=EpisodeType.message,
        reference_time=REFERENCE,
    )
    return await graphiti.add_episode_bulk([episode], **options)


def add_episode(tmp_path: Any, inner: LLMClient, api_base: str, **options: Any) -> tuple[Any, list[Any]]:
    """`Graphiti.add_episode` of one chat line on an embedded Kuzu graph, edgewise answering its edge
    call; `options` go to both the client and `add_episode` (`edge_types`). Returns the result and
    the stored edges."""

    async def run() -> tuple[Any, list[Any]]:
        client = mock_client(inner, api_base, **options)
        try:
            async with kuzu_graphiti(tmp_path / "graph.kuzu", client) as graphiti:
                result = await add_chat_line(graphiti, **options)
                return result, await stored_edges(graphiti)
        finally:
            await client.aclose()

    return asyncio.run(run())


def test_graphiti_add_episode_stores_edgewise_edges_with_their_facts_and_dates(tmp_path) -> None:
    inner = FakeGraphitiClient(["Alice", "Acme", "Berlin"])
    with MockOpenAIServer(EDGEWISE_REPLY) as server:
        result, stored = add_episode(tmp_path, inner, server.api_base)
        edgewise_requests = len(server.requests)
    names = {node.uuid: node.name for node in result.nodes}
    found = {
        (names[e.source_node_uuid], e.name, names[e.target_node_uuid], e.fact, _utc(e.valid_at))
        for e in stored
    }
    assert found == {
        ("Alice", "WORKS_AT", "Acme", "Alice works at Acme.", datetime(2023, 1, 1, tzinfo=UTC)),
        ("Alice", "LIVES_IN", "Berlin", "Alice lives in Berlin.", None),  # the null stays null
    }
    assert edgewise_requests == 1 and "extract_edges.edge" not in inner.prompts
    assert "extract_edges.extract_timestamps" not in inner.prompts  # edgewise's null answered it
    assert "extract_nodes.extract_message" in inner.prompts


def _utc(value: datetime | None) -> datetime | None:
    """Kuzu returns naive datetimes; Graphiti stores UTC."""
    return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value


def test_graphiti_add_episode_stores_the_attributes_edgewise_wrote_for_its_edge_types(tmp_path) -> None:
    inner = FakeGraphitiClient(["Alice", "Acme", "Berlin"])
    with MockOpenAIServer(attributed_responder) as server:
        _, stored = add_episode(tmp_path, inner, server.api_base, edge_types={"WORKS_AT": WorksAt})
        edgewise_requests = len(server.requests)
    attributes = {e.name: e.attributes for e in stored}
    assert attributes["WORKS_AT"].get("role") == "engineer"
    assert edgewise_requests == 2  # the edge call, and the program's one attribute call
    assert "extract_edges.extract_attributes" not in inner.prompts  # edgewise answered Graphiti's


class RecordingClient(EdgewiseLLMClient):
    """Records its own replies to Graphiti by prompt name (Graphiti filters some of them itself)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.replies: dict[str, list[Any]] = {}

    async def generate_response(self, messages, response_model=None, *args, prompt_name=None, **kwargs):  # fmt: skip
        reply = await super().generate_response(
            messages, response_model, *args, prompt_name=prompt_name, **kwargs
        )
        self.replies.setdefault(str(prompt_name), []).append(reply)
        return reply


@pytest.mark.parametrize("mixed", [False, True])
def test_add_episode_bulk_dates_edgewise_facts_in_its_batch_timestamp_call(tmp_path, mixed: bool) -> None:
    """The combined call's facts are the wrapped client's; those edgewise extracted before get its dates.

    The same client serves `add_episode` on one graph (edgewise extracts two facts) and then
    `add_episode_bulk` on a fresh one, whose combined extraction repeats them (and, mixed, adds one).
    """
    facts = [("Acme", "WORKS_AT", "Alice works at Acme."), ("Berlin", "LIVES_IN", "Alice lives in Berlin.")]
    if mixed:
        facts.insert(1, ("Bob", "MANAGES", "Bob manages Alice."))
    combined = [
        {"source_entity_name": "Alice", "target_entity_name": target, "relation_type": kind, "fact": fact}
        for target, kind, fact in facts
    ]
    inner = FakeGraphitiClient(["Alice", "Acme", "Berlin", "Bob"], combined_edges=combined)

    async def run() -> list[Any]:
        client = mock_client(inner, server.api_base)
        try:
            async with kuzu_graphiti(tmp_path / "first.kuzu", client) as graphiti:
                await add_chat_line(graphiti)
            async with kuzu_graphiti(tmp_path / "bulk.kuzu", client) as graphiti:
                await add_chat_lines_in_bulk(graphiti)
                return await stored_edges(graphiti)
        finally:
            await client.aclose()

    with MockOpenAIServer(EDGEWISE_REPLY) as server:
        stored = asyncio.run(run())
        edgewise_requests = len(server.requests)
    dates = {edge.fact: (_utc(edge.valid_at), _utc(edge.invalid_at)) for edge in stored}
    expected = {
        "Alice works at Acme.": (datetime(2023, 1, 1, tzinfo=UTC), None),  # edgewise's date
        "Alice lives in Berlin.": (None, None),  # edgewise's null, not the wrapped client's made-up date
    }
    if mixed:
        expected["Bob manages Alice."] = (datetime(2099, 1, 1, tzinfo=UTC), None)  # the wrapped client's
    assert dates == expected
    assert "extract_nodes_and_edges.extract_message" in inner.prompts  # the combined path ran
    assert inner.batch_facts == ([["Bob manages Alice."]] if mixed else [])  # asked only for its own fact
    assert edgewise_requests == 1  # add_episode's edge call; the bulk call had none


class Employment(BaseModel):
    """A person is employed by an organization."""


EMPLOYMENT_REPLY = EDGEWISE_REPLY.replace('"WORKS_AT"', '"Employment"')


@pytest.mark.parametrize("strict", [False, True])
def test_add_episode_bulk_with_strict_edge_types_gets_only_graphitis_types_from_edgewise(
    tmp_path, strict: bool
) -> None:
    """Separate extraction (`use_combined_extraction=False`): edgewise answers the bulk edge calls."""
    inner = FakeGraphitiClient(["Alice", "Acme", "Berlin"])

    async def run() -> tuple[RecordingClient, list[Any]]:
        client = RecordingClient(
            inner, model="openai/mock", api_base=server.api_base, api_key="x", cache=False
        )
        try:
            async with kuzu_graphiti(tmp_path / "graph.kuzu", client) as graphiti:
                await add_chat_lines_in_bulk(
                    graphiti,
                    edge_types={"Employment": Employment},
                    strict_edge_types=strict,
                    use_combined_extraction=False,
                )
                return client, await stored_edges(graphiti)
        finally:
            await client.aclose()

    with MockOpenAIServer(EMPLOYMENT_REPLY) as server:
        client, stored = asyncio.run(run())
    (edge_reply,) = client.replies["extract_edges.edge"]
    returned = [edge["relation_type"] for edge in edge_reply["edges"]]
    # Graphiti's own name, which its strict filter matches exactly (the program writes EMPLOYMENT).
    assert returned == (["Employment"] if strict else ["Employment", "LIVES_IN"])
    assert sorted(edge.name for edge in stored) == sorted(returned)
    assert "extract_edges.edge" not in inner.prompts


# ------------------------------------------------------------------------------------------------
# Graphiti's prompt as a bench program
# ------------------------------------------------------------------------------------------------

GRAPHITI_REPLY = json.dumps(
    {"edges": [{"source_entity_name": "Alice", "target_entity_name": "Acme", "relation_type": "WORKS_AT",
                "fact": "Alice works at Acme.", "valid_at": "2023-01-01T00:00:00Z", "invalid_at": None}]}
)  # fmt: skip


def bench_episode() -> Any:
    from edgewise.domain.episode import Episode

    return Episode.model_validate(
        {
            "episodeContent": "Alice: I joined Acme last year.",
            "entities": [{"name": "Alice", "type": "Person"}, {"name": "Acme", "type": "Organization"}],
            "referenceTime": "2024-03-14T09:30:00Z",
            "edgeTypes": [{"name": "WORKS_AT", "description": "works at", "sourceTypes": ["Person"]}],
        }
    )


@pytest.mark.parametrize("program", ["graphiti", "graphiti-structured"])
def test_graphitis_prompt_is_a_bench_program_sent_and_parsed_as_graphiti_does(program: str) -> None:
    from fakes import SchemaLM

    from edgewise.programs.names import resolve_program
    from edgewise.runtime.lm import lm_context

    lm = SchemaLM(lambda messages, kwargs: f"```json\n{GRAPHITI_REPLY}\n```")
    with lm_context(lm):
        result = resolve_program(program)(bench_episode()).result
    assert [(e.source_entity_name, e.relationship_type, e.target_entity_name) for e in result.edges] == [
        ("Alice", "WORKS_AT", "Acme")
    ]
    (call,) = lm.calls
    user = call["messages"][-1]["content"]
    assert "<CURRENT_MESSAGE>\nAlice: I joined Acme last year.\n</CURRENT_MESSAGE>" in user
    assert '"fact_type_signatures": [["Person", "Entity"]]' in user  # the episode's signature, Graphiti's way
    assert "same language" in call["messages"][0]["content"]
    if program == "graphiti":
        assert (
            "Respond with a JSON object in the following format" in user
            and "response_format" not in call["kwargs"]
        )
    else:
        assert call["kwargs"]["response_format"]["json_schema"]["name"] == "ExtractedEdges"
        assert "Respond with a JSON object in the following format" not in user


def test_a_reply_that_is_not_graphitis_extracted_edges_is_a_counted_parse_failure() -> None:
    from fakes import ScriptedLM

    from edgewise.programs.names import resolve_program
    from edgewise.runtime.lm import lm_context

    with lm_context(ScriptedLM(['{"edges": [{"from": "Alice"}]}'] * 2)):  # the reply and its retry
        result = resolve_program("graphiti")(bench_episode()).result
    assert result.edges == [] and result.parse_failures == 1 and result.usage["extract"].calls == 2
