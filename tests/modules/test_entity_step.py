"""The entity step: an episode without entities has them found first; given entities are never replaced;
a program without the step refuses such an episode, saying how to get one."""

from __future__ import annotations

import json

import pytest
from fakes import SchemaLM, ScriptedLM, edge, edges_reply, output_field
from pydantic import ValidationError

from edgewise.domain.episode import Episode, TextEpisode
from edgewise.modules.extractor import EdgeExtractor
from edgewise.modules.options import ProgramOptions
from edgewise.modules.seed_prompt import SeedPromptExtractor
from edgewise.runtime.lm import lm_context

TEXT = {"episodeContent": "Ann works at Acme in Leeds.", "referenceTime": "2025-01-01T00:00:00Z"}


def entities_reply(*entities: tuple[str, str | None]) -> str:
    return json.dumps({"entities": [{"name": name, "type": kind} for name, kind in entities]})


def finder() -> EdgeExtractor:
    return EdgeExtractor(options=ProgramOptions(entity_step=True))


def test_the_entity_step_runs_first_and_its_entities_are_the_extractions(episode_fields):
    lm = SchemaLM(
        [
            entities_reply(("Ann", "Person"), ("Acme", "Organization"), ("Leeds", "Location")),
            edges_reply(edge("Ann", "WORKS_AT", "Acme", "Ann works at Acme.")),
        ]
    )
    with lm_context(lm):
        result = finder()({**TEXT, "entityTypes": ["Person", "Organization", "Location"]}).result
    assert [output_field(call["messages"]) for call in lm.calls] == ["entities", "edges"]
    assert [(e.name, e.type) for e in result.entities] == [
        ("Ann", "Person"),
        ("Acme", "Organization"),
        ("Leeds", "Location"),
    ]
    # The extraction was shown the found entities, and its reply schema allows only their names.
    extract_request = lm.calls[1]
    assert '"name": "Leeds"' in extract_request["messages"][-1]["content"]
    schema = json.dumps(extract_request["kwargs"]["response_format"])
    assert '"enum": ["Ann", "Acme", "Leeds"]' in schema
    # The entity call's schema allows only the declared types (or null).
    entity_schema = json.dumps(lm.calls[0]["kwargs"]["response_format"])
    assert '"enum": ["Person", "Organization", "Location"]' in entity_schema
    assert [e.source_entity_name for e in result.edges] == ["Ann"]
    assert set(result.usage) == {"entities", "extract"}


def test_given_entities_are_never_replaced_and_no_entity_call_is_made(episode_fields):
    lm = ScriptedLM([edges_reply(edge("Alice", "WORKS_AT", "Acme Corp", "x"))])
    with lm_context(lm):
        result = finder()(episode_fields).result
    assert [output_field(call["messages"]) for call in lm.calls] == ["edges"]
    assert result.entities is None
    assert "entities" not in result.to_json_dict()  # a given list is not echoed in the output


def test_found_names_are_kept_once_and_undeclared_types_dropped_with_a_warning():
    lm = ScriptedLM(
        [
            entities_reply(("Ann", "person"), ("  ann ", "Person"), ("Acme", "Company"), ("", None)),
            edges_reply(),
        ]
    )
    with lm_context(lm):
        result = finder()({**TEXT, "entityTypes": {"Person": "a human", "Organization": "a company"}}).result
    assert [(e.name, e.type) for e in result.entities] == [("Ann", "Person"), ("Acme", None)]
    assert [w.code for w in result.warnings] == ["entity_type_unknown"]
    assert "'Company'" in result.warnings[0].message


def test_types_come_from_the_relationship_signatures_when_no_entity_types_are_given():
    lm = ScriptedLM([entities_reply(("Ann", "Person"), ("Acme", "Organization")), edges_reply()])
    types = [{"name": "WORKS_AT", "sourceTypes": ["Person"], "targetTypes": ["Organization"]}]
    with lm_context(lm):
        finder()({**TEXT, "edgeTypes": types})
    first = lm.calls[0]["messages"][-1]["content"]
    assert '{"Person": "", "Organization": ""}' in first


def test_fewer_than_two_entities_found_ends_with_no_edges_and_no_more_calls():
    lm = ScriptedLM([entities_reply(("Ann", "Person"))])
    with lm_context(lm):
        result = finder()(TEXT).result
    assert len(lm.calls) == 1
    assert result.edges == []
    assert [e.name for e in result.entities] == ["Ann"]


def test_a_program_without_the_step_refuses_text_alone_and_says_how(episode_fields):
    lm = ScriptedLM([])
    for given in (TEXT, TextEpisode.model_validate(TEXT)):
        with pytest.raises(ValidationError, match="entity step") as raised, lm_context(lm):
            EdgeExtractor()(given)
        assert raised.value.errors()[0]["loc"] == ("entities",)
    with pytest.raises(ValidationError, match="no entities"), lm_context(lm):
        SeedPromptExtractor()(TEXT)
    assert lm.calls == []


def test_the_step_is_in_the_manifest_list_and_the_predictors():
    program = finder()
    assert program.step_names[0] == "find_entities"
    assert "find_entities" in dict(program.named_predictors())
    assert "find_entities" not in dict(EdgeExtractor().named_predictors())
    assert ProgramOptions(entity_step=True).changed() == {"entity_step": True}


def test_the_input_contracts_differ_only_in_the_entity_rule():
    assert TextEpisode.model_validate(TEXT).entities == []
    with pytest.raises(ValidationError, match="no entities"):
        Episode.model_validate(TEXT)
    assert "anyOf" in Episode.model_json_schema() and "anyOf" not in TextEpisode.model_json_schema()


def test_a_loaded_program_gains_the_step_and_keeps_its_tuning():
    program = EdgeExtractor()
    program.extract.signature = program.extract.signature.with_instructions("tuned words")
    added = program.with_entity_step()
    assert added is not program and program.step_names[0] != "find_entities"
    assert added.step_names[0] == "find_entities"
    assert added.extract.signature.instructions == "tuned words"
    assert added.with_entity_step() is added
    lm = ScriptedLM([entities_reply(("Ann", "Person"), ("Acme", None)), edges_reply()])
    with lm_context(lm):
        assert [e.name for e in added(TEXT).result.entities] == ["Ann", "Acme"]


def test_a_saved_program_with_the_step_loads_with_it_and_its_tuned_instruction(tmp_path):
    from edgewise.programs.artifact import load, new_manifest, save

    program = EdgeExtractor().with_entity_step()
    program.find_entities.signature = program.find_entities.signature.with_instructions("find them")
    manifest = new_manifest(
        program,
        task_model="any",
        optimizer="none",
        settings={"program_options": program.options.model_dump()},
    )
    loaded = load(save(program, tmp_path / "prog", manifest))
    assert loaded.step_names == program.step_names and loaded.step_names[0] == "find_entities"
    assert loaded.find_entities.signature.instructions == "find them"
