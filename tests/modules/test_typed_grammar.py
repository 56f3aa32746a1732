"""The typed grammar, offline: each entity pair is offered only the relationship types its entity
types allow, the pair written first, and the request carries that schema to the decoder."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from fakes import SchemaLM
from test_recall_levers import SIGNATURES, TYPES, edge_json, episode, raw, triples

from edgewise.domain.episode import Episode
from edgewise.modules.extractor import EdgeExtractor
from edgewise.modules.gleaning import exclusion_schema, written_triples
from edgewise.modules.options import ProgramOptions
from edgewise.modules.type_signatures import PairRule, TypeSignatures
from edgewise.modules.typed_grammar import MAX_PAIR_BRANCHES, typed_reply_schemas
from edgewise.modules.vocabulary import vocabulary_schemas
from edgewise.runtime.lm import lm_context
from edgewise.signatures.extract_edges import ExtractEdges

KEYS = ("sourceEntityName", "targetEntityName", "relationshipType")
TYPE_NAMES = [t["name"] for t in TYPES]


def typed(ep: Episode, signatures: TypeSignatures | None = SIGNATURES) -> dict[str, Any]:
    names = [entity.name for entity in ep.entities]
    vocabulary = vocabulary_schemas(ExtractEdges, {KEYS[0]: names, KEYS[1]: names, KEYS[2]: TYPE_NAMES})
    schemas = typed_reply_schemas(ExtractEdges, vocabulary, ep, PairRule(ep, signatures), TYPE_NAMES, KEYS)
    return dict(schemas)


def test_each_pair_is_offered_only_the_types_its_entity_types_allow() -> None:
    schema = typed(episode())[("edges",)]
    validator = jsonschema.Draft202012Validator(schema)
    for allowed in (("Tom", "WORKS_AT", "Acme"), ("Maya", "LIVES_IN", "Leeds"), ("Tom", "MANAGES", "Maya"),
                    ("Maya", "FRIEND_OF", "Tom"), ("Maya", "MEMBER_OF", "Acme")):  # fmt: skip
        assert validator.is_valid([edge_json(*allowed)]), allowed
    for ruled_out in (("Tom", "WORKS_AT", "Maya"), ("Maya", "WORKS_AT", "Leeds"), ("Acme", "WORKS_AT", "Tom"),
                      ("Tom", "LIVES_IN", "Acme"), ("Tom", "MANAGES", "Tom")):  # fmt: skip
        assert not validator.is_valid([edge_json(*ruled_out)]), ruled_out
    assert validator.is_valid([])
    # No type goes from an organization or a place to anything: those pairs have no branch at all.
    sources = {
        name
        for branch in schema["items"]["anyOf"]
        for name in branch["properties"]["sourceEntityName"]["enum"]
    }
    assert sources == {"Maya", "Tom"}


def test_the_pair_is_written_before_the_type_and_every_other_field_is_kept() -> None:
    branch = typed(episode())[("edges",)]["items"]["anyOf"][0]
    assert list(branch["properties"])[:3] == list(KEYS)
    assert set(branch["properties"]) == set(
        ExtractEdges.output_fields["edges"].annotation.__args__[0].model_fields
    )
    assert branch["required"] == list(branch["properties"]) and branch["additionalProperties"] is False


def test_nothing_known_against_any_pair_leaves_the_plain_vocabulary() -> None:
    ep = episode()
    names = [entity.name for entity in ep.entities]
    vocabulary = vocabulary_schemas(ExtractEdges, {KEYS[0]: names, KEYS[1]: names, KEYS[2]: TYPE_NAMES})
    assert typed(ep, signatures=None) == dict(vocabulary)
    assert typed_reply_schemas(ExtractEdges, vocabulary, ep, PairRule(ep, SIGNATURES), [], KEYS) is vocabulary


def test_many_entities_get_one_branch_per_type_instead_of_per_pair() -> None:
    people = [{"name": f"P{number}", "type": "Person"} for number in range(10)]
    ep = episode(entities=[*people, {"name": "Acme", "type": "Organization"}])
    assert 10 * 9 > MAX_PAIR_BRANCHES
    branches = typed(ep)[("edges",)]["items"]["anyOf"]
    assert [branch["properties"]["relationshipType"]["enum"] for branch in branches] == [
        ["WORKS_AT"], ["MANAGES"], ["MEMBER_OF"], ["FRIEND_OF"],
    ]  # fmt: skip
    assert list(branches[0]["properties"])[:3] == ["relationshipType", "sourceEntityName", "targetEntityName"]
    assert branches[0]["properties"]["targetEntityName"] == {"type": "string", "enum": ["Acme"]}
    validator = jsonschema.Draft202012Validator(typed(ep)[("edges",)])
    assert validator.is_valid([edge_json("P1", "WORKS_AT", "Acme")])
    assert not validator.is_valid([edge_json("Acme", "WORKS_AT", "P1")])


def test_the_program_sends_the_typed_schema_and_keeps_what_fits() -> None:
    def respond(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
        return json.dumps({"edges": [edge_json("Maya", "LIVES_IN", "Leeds")]})

    lm = SchemaLM(respond)
    options = ProgramOptions(type_signatures=True, typed_grammar=True)
    with lm_context(lm):
        result = EdgeExtractor(options=options, type_signatures=SIGNATURES)(episode()).result
    assert triples(result.edges) == [("Maya", "LIVES_IN", "Leeds")] and result.warnings == []
    (call,) = lm.calls
    sent = call["kwargs"]["response_format"]["json_schema"]["schema"]["properties"]["edges"]
    branches = sent["items"]["anyOf"]
    pair = next(b for b in branches if b["properties"]["targetEntityName"]["enum"] == ["Leeds"]
                and b["properties"]["sourceEntityName"]["enum"] == ["Maya"])  # fmt: skip
    assert pair["properties"]["relationshipType"] == {"type": "string", "enum": ["LIVES_IN"]}


def test_the_typed_grammar_refuses_the_formulations_it_does_not_shape() -> None:
    for bad in ({"formulation": "entities"}, {"formulation": "pairs"}, {"attributes": "in-extraction"}):
        with pytest.raises(ValueError, match="typed grammar"):
            ProgramOptions(typed_grammar=True, **bad)


def test_typed_gleaning_offers_each_pair_its_allowed_types_less_those_written() -> None:
    ep = episode()
    written = written_triples([raw("Tom", "MANAGES", "Maya"), raw("Maya", "FRIEND_OF", "Tom")], ep)
    schema = exclusion_schema(ep, written, PairRule(ep, SIGNATURES), TYPE_NAMES, forced=True, typed=True)
    validator = jsonschema.Draft202012Validator(schema)
    for repeated in (("Tom", "MANAGES", "Maya"), ("Maya", "FRIEND_OF", "Tom"), ("Tom", "FRIEND_OF", "Maya")):
        assert not validator.is_valid([edge_json(*repeated)]), repeated
    for ruled_out in (("Tom", "LIVES_IN", "Acme"), ("Maya", "WORKS_AT", "Tom")):
        assert not validator.is_valid([edge_json(*ruled_out)]), ruled_out
    for new in (("Maya", "MANAGES", "Tom"), ("Tom", "WORKS_AT", "Acme"), ("Maya", "LIVES_IN", "Leeds")):
        assert validator.is_valid([edge_json(*new)]), new
    assert not validator.is_valid([])  # forced: at least one edge
    branch = schema["items"]["anyOf"][0]
    assert list(branch["properties"])[:3] == list(KEYS) and branch["properties"]["fact"]["maxLength"] > 0


def test_a_typed_gleaning_turn_with_nothing_left_to_write_allows_only_an_empty_list() -> None:
    ep = episode(entities=[{"name": "Maya", "type": "Person"}, {"name": "Acme", "type": "Organization"}])
    written = {("Maya", "WORKS_AT", "Acme"), ("Maya", "MEMBER_OF", "Acme")}
    schema = exclusion_schema(ep, written, PairRule(ep, SIGNATURES), TYPE_NAMES, forced=True, typed=True)
    assert schema == {"type": "array", "maxItems": 0}
