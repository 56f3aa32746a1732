"""EdgeExtractor driven by a fake LM: every step, the merge, usage accounting and failures."""

from __future__ import annotations

import asyncio
import json

import dspy
import pytest
from fakes import SchemaLM, ScriptedLM, edge, edges_reply, output_field
from pydantic import ValidationError

from edgewise.domain.episode import Episode
from edgewise.modules.extractor import EdgeExtractor
from edgewise.runtime.lm import lm_context


def _run(program, lm, episode):
    with lm_context(lm):
        return program(episode).result


def test_extracts_and_postprocesses(episode_fields):
    lm = ScriptedLM(
        [edges_reply(edge("alice", "worksAt", "Acme Corp", "Alice joined Acme Corp", validAt="2021-03"))]
    )
    result = _run(EdgeExtractor(), lm, episode_fields)
    assert [e.to_json_dict() for e in result.edges] == [
        {
            "relationshipType": "WORKS_AT",
            "sourceEntityName": "Alice",
            "targetEntityName": "Acme Corp",
            "fact": "Alice joined Acme Corp",
            "validAt": "2021-03-01T00:00:00Z",
            "invalidAt": None,
            "attributes": {},
        }
    ]
    assert {w.code for w in result.warnings} == {"name_resolved", "type_renamed", "date_normalized"}


def test_no_entities_is_an_input_error_before_any_lm_call(episode_fields):
    lm = ScriptedLM([])
    with pytest.raises(ValidationError, match="no entities") as raised:
        _run(EdgeExtractor(), lm, {**episode_fields, "entities": []})
    assert raised.value.errors()[0]["loc"] == ("entities",)
    assert lm.calls == []


def test_usage_is_reported_per_step(episode_fields):
    reply = edges_reply(edge("Alice", "WORKS_AT", "Acme Corp", "x"))
    lm = ScriptedLM([reply])
    result = _run(EdgeExtractor(), lm, episode_fields)
    messages = lm.calls[0]["messages"]
    assert result.usage["extract"].calls == 1
    assert result.usage["extract"].prompt_tokens == 10 * len(messages)
    assert result.usage["extract"].completion_tokens == len(reply) // 4
    assert set(result.usage) == {"extract"}


def test_reflexion_feeds_missing_facts_back_and_merges(episode_fields):
    def respond(messages, kwargs):
        field = output_field(messages)
        user = messages[-1]["content"]
        if field == "missing_facts":
            return json.dumps({"missing_facts": ["Alice is married to Bob"]})
        if "Alice is married to Bob" in user:
            return edges_reply(edge("Alice", "MARRIED_TO", "Bob", "her husband Bob"))
        return edges_reply(edge("Alice", "WORKS_AT", "Acme Corp", "Alice joined Acme Corp"))

    lm = ScriptedLM(respond)
    result = _run(EdgeExtractor(max_reflexion_rounds=1), lm, episode_fields)
    assert sorted(e.relationship_type for e in result.edges) == ["MARRIED_TO", "WORKS_AT"]
    assert [output_field(c["messages"]) for c in lm.calls] == ["edges", "missing_facts", "edges"]
    assert result.usage["extract"].calls == 2 and result.usage["reflexion"].calls == 1
    # The hints are an input of the re-extraction only; the first pass has no such field.
    assert "missing_facts" not in lm.calls[0]["messages"][0]["content"]
    assert "`missing_facts`" in lm.calls[2]["messages"][0]["content"]


def test_compact_shape_reply_becomes_seed_edges_with_the_vocabulary_on_its_keys(episode_fields):
    seen = []

    def respond(messages, kwargs):
        seen.append(kwargs.get("response_format"))
        return json.dumps(
            {
                "edges": [
                    {
                        "source": "Alice",
                        "type": "WORKS_AT",
                        "target": "Acme Corp",
                        "fact": "joined",
                        "validAt": "2021-03-01",
                    }
                ]
            }
        )

    result = _run(EdgeExtractor(output_shape="compact"), SchemaLM(respond), episode_fields)
    assert [(e.source_entity_name, e.relationship_type, e.target_entity_name) for e in result.edges] == [
        ("Alice", "WORKS_AT", "Acme Corp")
    ]
    assert result.edges[0].valid_at.isoformat() == "2021-03-01T00:00:00+00:00"
    schema = (
        json.dumps(seen[0].model_json_schema())
        if seen[0] is not None and hasattr(seen[0], "model_json_schema")
        else json.dumps(seen[0])
    )
    assert (
        '"enum": ["Alice", "Acme Corp", "Berlin", "Bob"]' in schema
        and '"enum": ["WORKS_AT", "MARRIED_TO"]' in schema
    )


def test_reflexion_stops_when_nothing_is_missing(episode_fields):
    def respond(messages, kwargs):
        if output_field(messages) == "missing_facts":
            return json.dumps({"missing_facts": []})
        return edges_reply(edge("Alice", "WORKS_AT", "Acme Corp", "x"))

    lm = ScriptedLM(respond)
    result = _run(EdgeExtractor(max_reflexion_rounds=3), lm, episode_fields)
    assert len(lm.calls) == 2 and len(result.edges) == 1


def test_attributes_only_for_types_that_declare_them(episode_fields):
    episode_fields["edgeTypes"][0]["attributes"] = [
        {"name": "role", "kind": "string", "description": "job title"},
        {"name": "full_time", "kind": "boolean"},
    ]

    def respond(messages, kwargs):
        if output_field(messages) == "attributes":
            return json.dumps({"attributes": {"role": "engineer", "full_time": None}})
        return edges_reply(
            edge("Alice", "WORKS_AT", "Acme Corp", "Alice joined Acme Corp"),
            edge("Alice", "MARRIED_TO", "Bob", "x"),
        )

    lm = ScriptedLM(respond)
    result = _run(EdgeExtractor(), lm, episode_fields)
    by_type = {e.relationship_type: e for e in result.edges}
    assert by_type["WORKS_AT"].attributes == {"role": "engineer"}
    assert by_type["MARRIED_TO"].attributes == {}
    assert result.usage["attributes"].calls == 1


def test_unparseable_reply_is_a_counted_parse_failure_not_a_crash(episode_fields):
    lm = ScriptedLM(lambda m, k: "I think Alice works at Acme.")
    result = _run(EdgeExtractor(), lm, episode_fields)
    assert result.edges == [] and result.parse_failures == 1
    assert [w.code for w in result.warnings] == ["parse_failure"]


def test_lm_error_propagates_to_the_caller(episode_fields):
    def fail(messages, kwargs):
        raise ConnectionError("provider down")

    with pytest.raises(ConnectionError):
        _run(EdgeExtractor(), ScriptedLM(fail), episode_fields)


def test_accepts_episode_object_dict_or_keywords(episode_fields):
    reply = edges_reply(edge("Alice", "WORKS_AT", "Acme Corp", "x"))
    program = EdgeExtractor()
    with lm_context(ScriptedLM(lambda m, k: reply)):
        from_dict = program(episode_fields).result
        from_model = program(Episode.model_validate(episode_fields)).result
        from_keywords = program(**episode_fields).result
    assert from_dict == from_model == from_keywords


def test_batch_keeps_order_and_reports_failures(episode_fields):
    def respond(messages, kwargs):
        if "FAIL" in messages[-1]["content"]:
            raise TimeoutError("slow provider")
        return edges_reply(edge("Alice", "WORKS_AT", "Acme Corp", "x"))

    episodes = [dict(episode_fields, episodeContent=f"Alice works at Acme Corp. {i}") for i in range(6)]
    episodes[3]["episodeContent"] = "FAIL"
    with lm_context(ScriptedLM(respond)):
        results = EdgeExtractor().extract_many(episodes, workers=3)
    assert isinstance(results[3], TimeoutError)
    assert all(len(r.edges) == 1 for i, r in enumerate(results) if i != 3)


def test_aextract_uses_callers_lm(episode_fields):
    lm = ScriptedLM(lambda m, k: edges_reply(edge("Alice", "WORKS_AT", "Acme Corp", "x")))

    async def main():
        with lm_context(lm):
            return await asyncio.gather(*(EdgeExtractor().aextract(episode_fields) for _ in range(3)))

    results = asyncio.run(main())
    assert [len(r.edges) for r in results] == [1, 1, 1] and len(lm.calls) == 3


def test_negative_reflexion_rounds_rejected():
    with pytest.raises(ValueError):
        EdgeExtractor(max_reflexion_rounds=-1)


def test_predictors_are_the_three_signatures():
    names = [name for name, _ in EdgeExtractor().named_predictors()]
    assert names == ["extract", "reflect", "attributes"]
    assert isinstance(EdgeExtractor().extract, dspy.Predict)


def test_usage_counts_the_prompt_tokens_the_server_took_from_its_cache():
    from edgewise.modules.usage import usage_of

    entries = [
        {"prompt_tokens": 2000, "completion_tokens": 100, "prompt_tokens_details": {"cached_tokens": 1800}},
        {"prompt_tokens": 50, "completion_tokens": 5},  # a server that does not say
    ]
    assert usage_of(entries).model_dump() == {
        "calls": 2,
        "prompt_tokens": 2050,
        "completion_tokens": 105,
        "cached_prompt_tokens": 1800,
    }
