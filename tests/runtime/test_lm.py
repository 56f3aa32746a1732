"""LM construction: config from flags and environment, structured-output bounds, key handling."""

from __future__ import annotations

import gc
import json

import dspy
import pydantic
import pytest
from dspy.clients import base_lm
from fakes import SchemaLM, edge, edges_reply, output_field
from mock_openai import MockOpenAIServer

from edgewise.modules.extractor import EdgeExtractor
from edgewise.modules.options import ProgramOptions
from edgewise.modules.seed_prompt import SeedEdgesReply, response_schema
from edgewise.runtime.lm import (
    MAX_LIST_ITEMS,
    MAX_STRING_CHARS,
    LMConfig,
    bounded_response_format,
    build_lm,
    lm_context,
)


def _schema_nodes(node, kind):
    if isinstance(node, dict):
        if node.get("type") == kind:
            yield node
        for value in node.values():
            yield from _schema_nodes(value, kind)
    elif isinstance(node, list):
        for value in node:
            yield from _schema_nodes(value, kind)


def test_bounds_apply_to_every_list_and_string_of_a_schema():
    bounded = bounded_response_format(response_schema(SeedEdgesReply))
    arrays = list(_schema_nodes(bounded, "array"))
    strings = list(_schema_nodes(bounded, "string"))
    assert arrays and all(a["maxItems"] == MAX_LIST_ITEMS for a in arrays)
    assert strings and all(s["maxLength"] == MAX_STRING_CHARS for s in strings)
    assert "maxItems" not in json.dumps(response_schema(SeedEdgesReply))  # the input is not changed


def test_pydantic_response_format_is_converted_then_bounded():
    bounded = bounded_response_format(SeedEdgesReply)
    assert bounded["type"] == "json_schema"
    assert next(iter(_schema_nodes(bounded, "array")))["maxItems"] == MAX_LIST_ITEMS


def test_non_schema_formats_pass_through():
    assert bounded_response_format({"type": "json_object"}) == {"type": "json_object"}


def test_self_hosted_requests_carry_the_bounded_schema():
    reply = edges_reply(edge("Alice", "WORKS_AT", "Acme", "x"))
    episode = {
        "episodeContent": "Alice works at Acme.",
        "entities": [{"name": "Alice"}, {"name": "Acme"}],
        "referenceTime": "2025-01-01T00:00:00Z",
    }
    with MockOpenAIServer(reply) as server:
        lm = build_lm(LMConfig(model="openai/mock", api_base=server.api_base, cache=False, num_retries=0))
        with lm_context(lm):
            result = EdgeExtractor()(episode).result
        body = server.requests[0]
    assert len(result.edges) == 1
    schema = body["response_format"]["json_schema"]["schema"]
    assert next(iter(_schema_nodes(schema, "array")))["maxItems"] == MAX_LIST_ITEMS


def _edge_properties(body):
    schema = body["response_format"]["json_schema"]["schema"]
    return next(
        node["properties"] for node in _schema_nodes(schema, "object") if "fact" in node.get("properties", {})
    )


_TYPED_EPISODE = {
    "episodeContent": "Alice works at Acme. Bob met Alice.",
    "entities": [{"name": "Alice"}, {"name": "Acme"}, {"name": "Bob"}],
    "referenceTime": "2025-01-01T00:00:00Z",
    "edgeTypes": [{"name": "WORKS_AT", "description": "employment"}, {"name": "MET", "description": "met"}],
}


def _served_request(program, reply):
    with MockOpenAIServer(reply) as server:
        lm = build_lm(LMConfig(model="openai/mock", api_base=server.api_base, cache=False, num_retries=0))
        with lm_context(lm):
            result = program(_TYPED_EPISODE).result
        return result, server.requests[0]


def test_vocabulary_becomes_an_enum_only_on_the_named_fields():
    from edgewise.modules.vocabulary import vocabulary_schemas
    from edgewise.signatures.extract_edges import ExtractEdges, extract_signature
    from edgewise.signatures.replies import ExtractedEdge

    schemas = vocabulary_schemas(
        ExtractEdges, {"relationshipType": ["A", "B", "A"], "absent": ["x"], "fact": []}
    )
    assert schemas == {
        ("edges", "relationshipType"): {
            "type": "string",
            "enum": ["A", "B"],
            "description": ExtractedEdge.model_fields["relationshipType"].description,
            "title": "Relationshiptype",
        }
    }
    assert vocabulary_schemas(ExtractEdges, {"fact": []}) == {}
    numbered = vocabulary_schemas(extract_signature("seed", fact_span=True), {"sentence": [1, 2, 3]})
    assert numbered[("edges", "sentence")]["type"] == "integer"
    assert numbered[("edges", "sentence")]["enum"] == [1, 2, 3]


def test_a_reply_outside_the_vocabulary_still_parses_and_loses_only_the_offending_edge():
    """The enum guides the decoder; a server that ignored it still gets its reply parsed."""
    reply = edges_reply(
        edge("Alice", "WORKS_AT", "Acme", "Alice works at Acme."),
        edge("Zoe", "MET", "Alice", "Zoe met Alice."),
    )
    result, _body = _served_request(EdgeExtractor(), reply)
    assert [(e.source_entity_name, e.target_entity_name) for e in result.edges] == [("Alice", "Acme")]
    assert result.parse_failures == 0
    assert "unknown_entity" in [warning.code for warning in result.warnings]


def test_extractor_limits_decoding_to_the_episodes_entities_and_types():
    reply = edges_reply(edge("Alice", "WORKS_AT", "Acme", "Alice works at Acme."))
    result, body = _served_request(EdgeExtractor(), reply)
    properties = _edge_properties(body)
    assert properties["sourceEntityName"]["enum"] == ["Alice", "Acme", "Bob"]
    assert properties["targetEntityName"]["enum"] == ["Alice", "Acme", "Bob"]
    assert properties["relationshipType"]["enum"] == ["WORKS_AT", "MET"]
    assert [e.relationship_type for e in result.edges] == ["WORKS_AT"]


def test_open_types_leave_the_relationship_type_free_but_keep_entity_names_closed():
    reply = edges_reply(edge("Alice", "FRIEND_OF", "Bob", "Bob met Alice."))
    result, body = _served_request(EdgeExtractor(closed_types=False), reply)
    properties = _edge_properties(body)
    assert "enum" not in properties["relationshipType"]
    assert properties["sourceEntityName"]["enum"] == ["Alice", "Acme", "Bob"]
    assert [e.relationship_type for e in result.edges] == ["FRIEND_OF"]


def test_the_prompt_is_the_same_for_every_episode_so_the_server_can_cache_it():
    """The vocabulary is in the response schema only: the system prompt never names an entity."""
    other = {**_TYPED_EPISODE, "entities": [{"name": "Zed"}, {"name": "Yolanda"}]}
    reply = edges_reply(edge("Zed", "MET", "Yolanda", "Zed met Yolanda."))
    with MockOpenAIServer(reply) as server:
        lm = build_lm(LMConfig(model="openai/mock", api_base=server.api_base, cache=False, num_retries=0))
        with lm_context(lm):
            EdgeExtractor()(_TYPED_EPISODE)
            EdgeExtractor()(other)
        first, second = (request["messages"][0]["content"] for request in server.requests)
        assert first == second and "Zed" not in first and "Alice" not in first
        assert _edge_properties(server.requests[1])["sourceEntityName"]["enum"] == ["Zed", "Yolanda"]


def test_a_hosted_model_that_takes_a_schema_gets_the_vocabulary_too():
    from edgewise.modules.vocabulary import VocabularyJSONAdapter

    captured = {}

    class HostedLM(dspy.BaseLM):
        supports_response_schema = True

        def __init__(self):
            super().__init__("openai/gpt-4o-mini")

        @property
        def supported_params(self):
            return {"response_format"}

        def forward(self, prompt=None, messages=None, **kwargs):
            captured.update(kwargs)
            raise RuntimeError("stop after the request is built")

    with (
        dspy.context(lm=HostedLM(), adapter=VocabularyJSONAdapter()),
        pytest.raises(RuntimeError, match="stop"),
    ):
        EdgeExtractor()(_TYPED_EPISODE)
    schema = json.dumps(captured["response_format"]["json_schema"]["schema"])
    assert '"enum": ["Alice", "Acme", "Bob"]' in schema and '"enum": ["WORKS_AT", "MET"]' in schema


def _model_classes() -> set[type]:
    found: set[type] = set()
    stack: list[type] = [pydantic.BaseModel]
    while stack:
        for subclass in stack.pop().__subclasses__():
            if subclass not in found:
                found.add(subclass)
                stack.append(subclass)
    return found


def _guest_episode(number: int) -> dict:
    names = [{"name": "Alice"}, {"name": "Acme"}, {"name": f"Guest {number}"}]
    return {**_TYPED_EPISODE, "entities": names}


def _verifying_reply(messages, _kwargs):
    if output_field(messages) == "stated":
        return json.dumps({"stated": [True]})
    return edges_reply(edge("Alice", "WORKS_AT", "Acme", "Alice works at Acme."))


def test_an_episode_with_new_names_makes_no_new_class():
    """The vocabulary is data in the reply schema, not a pydantic model and a signature per call."""
    lm = SchemaLM(_verifying_reply)
    program = EdgeExtractor(options=ProgramOptions(precision=True))
    with lm_context(lm):
        program(_guest_episode(0))  # the first call may import and build what every call shares
        gc.disable()  # a class made and dropped by a call stays listed until a collection
        try:
            before = _model_classes()
            results = [program(_guest_episode(number)).result for number in (1, 2, 3)]
            made = _model_classes() - before
        finally:
            gc.enable()
    assert made == set()
    assert all(len(result.edges) == 1 for result in results)
    enums = [_edge_properties(call["kwargs"])["targetEntityName"]["enum"] for call in lm.calls[2::2]]
    assert enums == [["Alice", "Acme", f"Guest {number}"] for number in (1, 2, 3)]


@pytest.mark.parametrize("keep", [0, 2])
def test_dspy_keeps_the_history_the_lm_is_told_to_and_no_trace(keep):
    lm = build_lm(LMConfig(model="openai/mock", api_base="http://127.0.0.1:9/v1", keep_history=keep))
    program = EdgeExtractor()
    trace = dspy.settings.trace  # the process-wide list a call outside any context appends to
    kept_before = len(trace)
    with MockOpenAIServer(edges_reply(edge("Alice", "WORKS_AT", "Acme", "Alice works at Acme."))) as server:
        lm.kwargs["api_base"] = server.api_base
        with lm_context(lm):
            for number in range(3):
                program(_guest_episode(number))
    assert len(lm.history) == len(program.history) == len(program.extract.history) == keep
    assert len(trace) == kept_before
    if keep:
        assert base_lm.GLOBAL_HISTORY == lm.history == program.extract.history
        assert [entry["messages"][-1]["content"] for entry in lm.history] == [
            entry["messages"][-1]["content"] for entry in program.history
        ]
        assert "Guest 2" in json.dumps(lm.history[-1]["kwargs"]["response_format"])


def test_the_reply_cache_keeps_the_newest_replies_in_memory_and_every_reply_on_disk(tmp_path, monkeypatch):
    from edgewise.runtime.reply_cache import use_reply_cache

    monkeypatch.setitem(dspy.__dict__, "cache", None)  # DSPy's own cache is put back after the test
    cache = use_reply_cache(tmp_path, memory_entries=5)
    assert dspy.cache is cache
    assert (cache.memory_cache.maxsize, cache.disk_cache_dir) == (5, str(tmp_path))
    for number in range(8):
        cache.put({"request": number}, {"reply": number})
    assert len(cache.memory_cache) == 5
    assert [cache.get({"request": number}) for number in (0, 7)] == [{"reply": 0}, {"reply": 7}]


def test_keep_history_is_a_model_flag_of_every_command():
    from edgewise.cli import build_parser
    from edgewise.cli.options import config_from_args

    parser = build_parser()
    for command in (["extract"], ["serve"], ["bench"], ["optimize", "--out", "runs/x"]):
        args = parser.parse_args([*command, "--keep-history", "5"])
        assert config_from_args(args).keep_history == 5
        assert config_from_args(parser.parse_args(command)).keep_history == 0
    with pytest.raises(SystemExit):
        parser.parse_args(["serve", "--keep-history", "-1"])


def test_environment_fills_unset_fields(monkeypatch):
    monkeypatch.setenv("EDGEWISE_MODEL", "openai/gpt-4o-mini")
    monkeypatch.setenv("EDGEWISE_API_BASE", "http://127.0.0.1:9/v1")
    config = LMConfig.from_env(model=None, api_base=None)
    assert (config.model, config.api_base) == ("openai/gpt-4o-mini", "http://127.0.0.1:9/v1")
    assert LMConfig.from_env(model="local").model == "local"


@pytest.mark.parametrize(
    "make",
    [
        lambda: LMConfig(max_retries=0),
        lambda: LMConfig.from_env(model="openai/x", max_retries=0),
        lambda: LMConfig.model_validate({"model": "openai/x", "max_retries": 0}),
    ],
    ids=["keyword", "from_env", "model_validate"],
)
def test_an_unknown_field_is_refused_naming_the_field_meant_and_every_field(make):
    with pytest.raises(TypeError) as refused:
        make()
    message = str(refused.value)
    assert "max_retries (did you mean num_retries?)" in message
    assert all(name in message for name in LMConfig.model_fields)


def test_an_unknown_field_never_echoes_its_value():
    with pytest.raises(TypeError) as refused:
        LMConfig(model="openai/x", apikey="sk-secret-value")
    assert "apikey (did you mean api_key?)" in str(refused.value)
    assert "sk-secret-value" not in str(refused.value)


def test_bare_model_name_on_a_server_is_routed_as_openai_compatible():
    lm = build_lm(LMConfig(model="qwen2.5", api_base="http://127.0.0.1:9/v1"))
    assert lm.model == "openai/qwen2.5"
    assert lm.supports_response_schema and "response_format" in lm.supported_params


def test_response_format_none_turns_structured_output_off():
    lm = build_lm(LMConfig(model="openai/x", api_base="http://127.0.0.1:9/v1", response_format="none"))
    assert "response_format" not in lm.supported_params
