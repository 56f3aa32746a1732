"""The recall levers, offline: re-typing, learned signatures that know what they have not seen,
coverage by entity, gleaning, samples and votes, the fact as a span, and the search over levers with
several alternatives."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from fakes import SchemaLM, output_field
from paths import ROOT

from edgewise.domain.episode import Episode
from edgewise.domain.gold import LabeledEpisode
from edgewise.domain.types import Edge, ExtractionResult
from edgewise.modules.call_context import CallContext
from edgewise.modules.coverage import MAX_EDGES_PER_SLOT, MAX_SLOTS, coverage_schema, slot_entities
from edgewise.modules.extractor import EdgeExtractor
from edgewise.modules.gleaning import exclusion_schema, written_triples
from edgewise.modules.options import ProgramOptions
from edgewise.modules.postprocess import postprocess
from edgewise.modules.spans import sentences
from edgewise.modules.type_signatures import PairRule, TypeSignatures
from edgewise.modules.votes import merge_votes
from edgewise.optimize.dev_scoring import dev_score
from edgewise.optimize.program_search import search_program
from edgewise.optimize.report import lever_table
from edgewise.runtime.lm import lm_context
from edgewise.signatures.replies import ExtractedEdge

REFERENCE = "2025-01-01T00:00:00Z"
TYPES = [
    {"name": "WORKS_AT", "description": "a person works at an organization"},
    {"name": "MANAGES", "description": "the source manages the target person"},
    {"name": "LIVES_IN", "description": "a person lives in a place"},
    {"name": "MEMBER_OF", "description": "a person belongs to a group"},
    {"name": "FRIEND_OF", "description": "two people are friends", "symmetric": True},
]
SIGNATURES = TypeSignatures(
    triples=(
        ("Person", "WORKS_AT", "Organization"),
        ("Person", "MANAGES", "Person"),
        ("Person", "LIVES_IN", "Location"),
        ("Person", "MEMBER_OF", "Organization"),
        ("Person", "FRIEND_OF", "Person"),
    )
)


def episode(content: str = "Tom manages Maya at Acme. Maya lives in Leeds.", **extra: Any) -> Episode:
    return Episode.model_validate(
        {
            "episodeContent": content,
            "entities": [
                {"name": "Maya", "type": "Person"},
                {"name": "Acme", "type": "Organization"},
                {"name": "Leeds", "type": "Location"},
                {"name": "Tom", "type": "Person"},
            ],
            "referenceTime": REFERENCE,
            "edgeTypes": TYPES,
            **extra,
        }
    )


def raw(source: str, kind: str, target: str, fact: str = "a fact") -> ExtractedEdge:
    return ExtractedEdge(relationshipType=kind, sourceEntityName=source, targetEntityName=target, fact=fact)


def triples(edges: list[Edge]) -> list[tuple[str, str, str]]:
    return [(e.source_entity_name, e.relationship_type, e.target_entity_name) for e in edges]


def codes(warnings: list[Any]) -> list[str]:
    return [warning.code for warning in warnings]


# ------------------------------------------------------------------------------------------------
# Re-typing instead of dropping
# ------------------------------------------------------------------------------------------------


def test_unique_retyping_takes_the_one_type_that_fits_and_warns() -> None:
    # LIVES_IN cannot go Person -> Organization; of the other types only WORKS_AT and MEMBER_OF can.
    # MANAGES cannot go Person -> Location; LIVES_IN is the one type that can.
    edges, warnings = postprocess(
        [raw("Tom", "MANAGES", "Leeds"), raw("Tom", "LIVES_IN", "Acme")],
        episode(),
        closed_types=True,
        type_signatures=SIGNATURES,
        retype="unique",
    )
    assert triples(edges) == [("Tom", "LIVES_IN", "Leeds")]
    assert codes(warnings) == ["retyped", "type_signature"]
    assert "2 other types could" in warnings[1].message


def test_unique_retyping_flips_an_edge_whose_one_fitting_type_goes_the_other_way() -> None:
    edges, warnings = postprocess(
        [raw("Leeds", "MANAGES", "Maya")],
        episode(),
        closed_types=True,
        type_signatures=SIGNATURES,
        retype="unique",
    )
    assert triples(edges) == [("Maya", "LIVES_IN", "Leeds")] and codes(warnings) == ["retyped"]


def test_without_retyping_the_impossible_edge_is_dropped_as_before() -> None:
    edges, warnings = postprocess(
        [raw("Tom", "MANAGES", "Acme")], episode(), closed_types=True, type_signatures=SIGNATURES
    )
    assert edges == [] and codes(warnings) == ["type_signature"]


def choosing_responder(answers: list[str]) -> Any:
    def respond(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
        if output_field(messages) == "answers":
            return json.dumps({"answers": answers})
        edges = [
            {"relationshipType": "MANAGES", "sourceEntityName": "Tom", "targetEntityName": "Acme", "fact": "Tom at Acme"},
            {"relationshipType": "MANAGES", "sourceEntityName": "Tom", "targetEntityName": "Maya", "fact": "Tom manages Maya"},
            {"relationshipType": "WORKS_AT", "sourceEntityName": "Maya", "targetEntityName": "Leeds", "fact": "in Leeds"},
        ]  # fmt: skip
        return json.dumps({"edges": edges})

    return respond


def asking_program() -> EdgeExtractor:
    return EdgeExtractor(
        options=ProgramOptions(type_signatures=True, retype="ask"), type_signatures=SIGNATURES
    )


def test_retyping_by_question_offers_only_the_types_the_signatures_allow_and_warns() -> None:
    lm = SchemaLM(choosing_responder(["WORKS_AT", "NONE"]))
    with lm_context(lm):
        result = asking_program()(episode()).result
    assert triples(result.edges) == [("Tom", "MANAGES", "Maya"), ("Tom", "WORKS_AT", "Acme")]
    assert codes(result.warnings) == ["retyped", "type_signature"]
    assert result.usage["retype"].calls == 1
    schema = json.dumps(lm.calls[1]["kwargs"]["response_format"]["json_schema"]["schema"])
    # Person -> Organization: WORKS_AT or MEMBER_OF; Person -> Location: LIVES_IN (nothing else fits)
    assert '"enum": ["WORKS_AT", "MEMBER_OF", "NONE"]' in schema and '"enum": ["LIVES_IN", "NONE"]' in schema
    assert "prefixItems" not in str(lm.calls[1]["messages"])  # the prompt shows the plain reply type


def test_an_answer_outside_the_options_drops_the_edge_and_never_becomes_its_type() -> None:
    with lm_context(SchemaLM(choosing_responder(["MANAGES", "LIVES_IN"]))):
        result = asking_program()(episode()).result
    assert triples(result.edges) == [("Tom", "MANAGES", "Maya"), ("Maya", "LIVES_IN", "Leeds")]
    assert codes(result.warnings) == ["type_signature", "retyped"]


def test_a_retyping_reply_of_the_wrong_length_drops_what_the_signatures_rule_out() -> None:
    with lm_context(SchemaLM(choosing_responder(["WORKS_AT"]))):
        result = asking_program()(episode()).result
    assert triples(result.edges) == [("Tom", "MANAGES", "Maya")]
    assert codes(result.warnings) == ["type_signature", "type_signature"]


# ------------------------------------------------------------------------------------------------
# Learned signatures and entity types the train split never used
# ------------------------------------------------------------------------------------------------


def unseen_episode(**types: Any) -> Episode:
    return Episode.model_validate(
        {
            "episodeContent": "Ana lives in Vigo and plays for the Tigers.",
            "entities": [
                {"name": "Ana", "type": "Person"},
                {"name": "Vigo", "type": "Place"},
                {"name": "Tigers", "type": "Team"},
            ],
            "referenceTime": REFERENCE,
            "edgeTypes": [{"name": "LIVES_IN", **types}, {"name": "MEMBER_OF"}],
        }
    )


def test_a_learned_signature_leaves_alone_an_entity_type_the_train_split_never_used() -> None:
    edges = [raw("Ana", "LIVES_IN", "Vigo"), raw("Ana", "MEMBER_OF", "Tigers")]
    strict, dropped = postprocess(edges, unseen_episode(), closed_types=True, type_signatures=SIGNATURES)
    assert strict == [] and codes(dropped) == ["type_signature", "type_signature"]
    kept, warnings = postprocess(
        edges, unseen_episode(), closed_types=True, type_signatures=SIGNATURES, unseen_types_open=True
    )
    assert triples(kept) == [("Ana", "LIVES_IN", "Vigo"), ("Ana", "MEMBER_OF", "Tigers")] and warnings == []


def test_a_declared_signature_still_applies_to_an_entity_type_it_does_not_name() -> None:
    declared = unseen_episode(sourceTypes=["Person"], targetTypes=["Team"])
    edges, warnings = postprocess(
        [raw("Ana", "LIVES_IN", "Vigo")],
        declared,
        closed_types=True,
        type_signatures=SIGNATURES,
        unseen_types_open=True,
    )
    assert edges == [] and codes(warnings) == ["type_signature"]


def test_a_known_entity_type_is_still_checked_with_unseen_types_open() -> None:
    rule = PairRule(episode(), SIGNATURES, unseen_types_open=True)
    assert not rule.allowed("MANAGES", "Person", "Organization")
    assert rule.allowed("MANAGES", "Person", "Team")  # Team: no learned signature uses it


# ------------------------------------------------------------------------------------------------
# Coverage by entity
# ------------------------------------------------------------------------------------------------


def test_the_coverage_schema_has_one_slot_per_entity_in_order_of_first_mention() -> None:
    ep = episode()
    slots = slot_entities(ep, CallContext())
    assert slots == ["Tom", "Maya", "Acme", "Leeds"]
    schema = coverage_schema(ep, slots, PairRule(ep, SIGNATURES), [t["name"] for t in TYPES])
    assert schema["minItems"] == schema["maxItems"] == 4
    assert [slot["properties"]["entity"]["const"] for slot in schema["prefixItems"]] == slots
    tom = schema["prefixItems"][0]["properties"]["edges"]
    assert tom["maxItems"] == MAX_EDGES_PER_SLOT
    assert tom["items"]["properties"]["targetEntityName"]["enum"] == ["Maya", "Acme", "Leeds"]
    assert set(tom["items"]["properties"]["relationshipType"]["enum"]) == {t["name"] for t in TYPES}
    # An organization is the subject of no type: its slot is an empty list
    assert schema["prefixItems"][2]["properties"]["edges"]["maxItems"] == 0
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid([{"entity": name, "edges": []} for name in slots])
    assert not validator.is_valid([{"entity": name, "edges": []} for name in slots[:3]])


def test_the_coverage_reply_is_bounded_to_its_slots_and_says_what_it_left_out() -> None:
    many = Episode.model_validate(
        {
            "episodeContent": " ".join(f"P{i} met P{i + 1}." for i in range(MAX_SLOTS + 3)),
            "entities": [{"name": f"P{i}", "type": "Person"} for i in range(MAX_SLOTS + 4)],
            "referenceTime": REFERENCE,
            "edgeTypes": TYPES,
        }
    )
    context = CallContext()
    warnings = context.warnings
    slots = slot_entities(many, context)
    assert (
        len(slots) == MAX_SLOTS and slots[:3] == ["P0", "P1", "P2"] and codes(warnings) == ["entities_capped"]
    )
    assert warnings[0].message == (
        f"{MAX_SLOTS + 4} entities, {MAX_SLOTS} answered for (the rest are mentioned later in the current "
        "episode, or not at all)"
    )


def test_the_coverage_program_returns_each_slots_edges_from_its_entity() -> None:
    def respond(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
        slot = {"relationshipType": "MANAGES", "targetEntityName": "Maya", "fact": "Tom manages Maya"}
        lives = {"relationshipType": "LIVES_IN", "targetEntityName": "Leeds", "fact": "Maya lives in Leeds"}
        return json.dumps(
            {
                "by_entity": [
                    {"entity": "Tom", "edges": [slot]},
                    {"entity": "Maya", "edges": [lives]},
                    {"entity": "Acme", "edges": []},
                    {"entity": "Leeds", "edges": []},
                ]
            }
        )

    lm = SchemaLM(respond)
    with lm_context(lm):
        result = EdgeExtractor(options=ProgramOptions(formulation="entities"))(episode()).result
    assert triples(result.edges) == [("Tom", "MANAGES", "Maya"), ("Maya", "LIVES_IN", "Leeds")]
    assert len(lm.calls) == 1 and result.usage["extract"].calls == 1
    assert "prefixItems" not in str(lm.calls[0]["messages"])


# ------------------------------------------------------------------------------------------------
# Gleaning
# ------------------------------------------------------------------------------------------------


def edge_json(source: str, kind: str, target: str) -> dict[str, Any]:
    return {"relationshipType": kind, "sourceEntityName": source, "targetEntityName": target, "fact": "f",
            "validAt": None, "invalidAt": None}  # fmt: skip


def test_the_gleaning_schema_excludes_exactly_the_triples_already_written() -> None:
    ep = episode()
    written = written_triples([raw("Tom", "MANAGES", "Maya"), raw("Maya", "FRIEND_OF", "Tom")], ep)
    assert ("Tom", "FRIEND_OF", "Maya") in written  # a symmetric type counts both ways
    schema = exclusion_schema(ep, written, PairRule(ep, SIGNATURES), [t["name"] for t in TYPES])
    validator = jsonschema.Draft202012Validator(schema)
    for repeated in (("Tom", "MANAGES", "Maya"), ("Maya", "FRIEND_OF", "Tom"), ("Tom", "FRIEND_OF", "Maya")):
        assert not validator.is_valid([edge_json(*repeated)]), repeated
    for new in (("Maya", "MANAGES", "Tom"), ("Tom", "WORKS_AT", "Acme"), ("Maya", "LIVES_IN", "Leeds")):
        assert validator.is_valid([edge_json(*new)]), new
    assert not validator.is_valid([edge_json("Acme", "WORKS_AT", "Tom")])  # an organization is no subject
    assert validator.is_valid([])
    forced = exclusion_schema(ep, written, PairRule(ep, SIGNATURES), [t["name"] for t in TYPES], forced=True)
    assert not jsonschema.Draft202012Validator(forced).is_valid([])


def test_gleaning_continues_the_same_chat_and_adds_what_the_first_reply_missed() -> None:
    first = json.dumps({"edges": [edge_json("Tom", "MANAGES", "Maya")]}, indent=1)

    def respond(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
        if messages[-1]["role"] == "user" and "were missed" in messages[-1]["content"]:
            return json.dumps(
                {"edges": [edge_json("Maya", "LIVES_IN", "Leeds"), edge_json("Tom", "MANAGES", "Maya")]}
            )
        return first

    lm = SchemaLM(respond)
    with lm_context(lm):
        result = EdgeExtractor(options=ProgramOptions(gleaning=1))(episode()).result
    assert triples(result.edges) == [("Tom", "MANAGES", "Maya"), ("Maya", "LIVES_IN", "Leeds")]
    assert codes(result.warnings) == ["duplicate"]  # a server that ignored the schema repeated one
    request, continuation = lm.calls
    assert continuation["messages"][: len(request["messages"])] == request["messages"]
    assert continuation["messages"][len(request["messages"])] == {"role": "assistant", "content": first}
    assert len(continuation["messages"]) == len(request["messages"]) + 2
    assert result.usage["glean"].calls == 1 and result.usage["extract"].calls == 1


def test_gleaning_stops_when_the_model_adds_nothing() -> None:
    def respond(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
        if "were missed" in str(messages[-1]["content"]):
            return json.dumps({"edges": []})
        return json.dumps({"edges": [edge_json("Tom", "MANAGES", "Maya")]})

    lm = SchemaLM(respond)
    with lm_context(lm):
        result = EdgeExtractor(options=ProgramOptions(gleaning=2))(episode()).result
    assert len(lm.calls) == 2 and triples(result.edges) == [("Tom", "MANAGES", "Maya")]


# ------------------------------------------------------------------------------------------------
# Samples and votes
# ------------------------------------------------------------------------------------------------


def test_votes_keep_the_edges_enough_replies_wrote_in_order_of_first_appearance() -> None:
    ep = episode()
    replies = [
        [raw("Tom", "MANAGES", "Maya", "one"), raw("Maya", "FRIEND_OF", "Tom")],
        [
            raw("Tom", "FRIEND_OF", "Maya"),
            raw("tom", "manages", "maya", "two"),
            raw("Maya", "LIVES_IN", "Leeds"),
        ],
        [raw("Maya", "LIVES_IN", "Leeds"), raw("Tom", "WORKS_AT", "Acme")],
    ]
    kept = merge_votes(replies, ep, 2)
    assert [(e.sourceEntityName, e.relationshipType, e.targetEntityName, e.fact) for e in kept] == [
        ("Tom", "MANAGES", "Maya", "one"),
        ("Maya", "FRIEND_OF", "Tom", "a fact"),
        ("Maya", "LIVES_IN", "Leeds", "a fact"),
    ]
    assert merge_votes(replies, ep, 2) == kept  # the same replies give the same list
    assert len(merge_votes(replies, ep, 1)) == 4 and merge_votes(replies, ep, 3) == []


def test_samples_are_one_request_for_several_replies_merged_by_votes() -> None:
    def respond(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> list[str]:
        shared = edge_json("Tom", "MANAGES", "Maya")
        return [
            json.dumps({"edges": [shared, edge_json("Tom", "WORKS_AT", "Acme")]}),
            json.dumps({"edges": [shared]}),
            json.dumps({"edges": [edge_json("Maya", "LIVES_IN", "Leeds"), shared]}),
        ][: kwargs.get("n", 1)]

    lm = SchemaLM(respond)
    with lm_context(lm):
        result = EdgeExtractor(options=ProgramOptions(samples=3, votes=2))(episode()).result
    assert triples(result.edges) == [("Tom", "MANAGES", "Maya")]
    assert len(lm.calls) == 1 and lm.calls[0]["kwargs"]["n"] == 3
    assert lm.calls[0]["kwargs"]["temperature"] == 0.7


def test_options_refuse_combinations_that_cannot_run() -> None:
    with pytest.raises(ValueError, match="votes"):
        ProgramOptions(samples=2, votes=3)
    with pytest.raises(ValueError, match="gleaning"):
        ProgramOptions(samples=2, gleaning=1)
    with pytest.raises(ValueError, match="span"):
        ProgramOptions(formulation="entities", fact_span=True)


# ------------------------------------------------------------------------------------------------
# The fact as a span
# ------------------------------------------------------------------------------------------------


def test_the_span_fact_is_the_sentences_own_text() -> None:
    text = 'Hi! I\'m Maya. Tom said "you start Monday." I live in Leeds.\nTom manages me'
    assert sentences(text) == [
        "Hi!",
        "I'm Maya.",
        'Tom said "you start Monday."',
        "I live in Leeds.",
        "Tom manages me",
    ]

    def respond(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
        edges = [
            {"relationshipType": "LIVES_IN", "sourceEntityName": "Maya", "targetEntityName": "Leeds", "sentence": 4},
            {"relationshipType": "MANAGES", "sourceEntityName": "Tom", "targetEntityName": "Maya", "sentence": 9},
        ]  # fmt: skip
        return json.dumps({"edges": edges})

    lm = SchemaLM(respond)
    with lm_context(lm):
        result = EdgeExtractor(options=ProgramOptions(fact_span=True))(episode(text)).result
    assert [(e.relationship_type, e.fact) for e in result.edges] == [("LIVES_IN", "I live in Leeds.")]
    assert codes(result.warnings) == ["empty_fact"]  # sentence 9 does not exist
    request = str(lm.calls[0]["messages"][-1]["content"])
    assert (
        '[1] Hi! [2] I\'m Maya. [3] Tom said "you start Monday." [4] I live in Leeds. [5] Tom manages me'
        in request
    )
    schema = json.dumps(lm.calls[0]["kwargs"]["response_format"]["json_schema"]["schema"])
    assert '"enum": [1, 2, 3, 4, 5]' in schema


# ------------------------------------------------------------------------------------------------
# The search over levers with several alternatives
# ------------------------------------------------------------------------------------------------


def labeled(i: int) -> LabeledEpisode:
    return LabeledEpisode.model_validate(
        {
            **episode().model_dump(by_alias=True, mode="json"),
            "id": f"ep{i}",
            "source": "test",
            "license": "CC0-1.0",
            "edges": [
                {"relationshipType": "MANAGES", "sourceEntityName": "Tom", "targetEntityName": "Maya", "fact": "m"},
                {"relationshipType": "LIVES_IN", "sourceEntityName": "Maya", "targetEntityName": "Leeds", "fact": "l"},
            ],
        }
    )  # fmt: skip


def _result(edges: list[Any]) -> ExtractionResult:
    return ExtractionResult(
        edges=[Edge.model_validate(e.model_dump(include=set(Edge.model_fields))) for e in edges]
    )


def test_the_search_keeps_the_best_alternative_whose_interval_is_above_zero() -> None:
    dev = [labeled(i) for i in range(8)]

    def found(candidate: EdgeExtractor) -> list[list[Any]]:
        options = candidate.options
        if options.formulation == "entities" or options.gleaning:
            return [list(e.edges) for e in dev]  # both find every edge
        if options.formulation == "pairs":
            return [e.edges[:1] + e.edges[:1] for e in dev]  # no better
        return [e.edges[:1] for e in dev]

    scored_programs: list[ProgramOptions] = []

    def score(candidate: EdgeExtractor, label: str) -> Any:
        scored_programs.append(candidate.options)
        return dev_score(dev, [_result(edges) for edge_list in [found(candidate)] for edges in edge_list])

    program, scored, results = search_program(
        student=EdgeExtractor(),
        before=score(EdgeExtractor(), "before"),
        score=score,
        signatures=TypeSignatures(),
        dev=dev,
        gold_demos=None,
        budget=None,
        calls_spent=lambda: 0,
        levers=("formulation", "gleaning", "samples", "fact_span"),
        max_samples=1,
    )
    assert program.options.formulation == "entities" and scored.edge_f1 == 1.0
    assert [(r.lever, r.value, r.kept) for r in results] == [
        ("formulation", "pairs", False),
        ("formulation", "entities", True),
        ("gleaning", 1, False),  # nothing left to gain on top of the entities' slots
        ("gleaning", "1 forced", False),
        ("samples", "3 votes 2", False),
        ("samples", "2 votes 1", False),
        ("fact_span", True, False),
    ]
    assert "needs 3" in results[4].note and "needs 2" in results[5].note  # one reply per request
    assert "does not combine" in results[6].note  # a span is a reply of the edges formulation


def test_a_lever_may_name_one_of_its_alternatives() -> None:
    from edgewise.optimize.program_search import parse_lever

    assert parse_lever("formulation=entities") == ("formulation", ({"formulation": "entities"},))
    assert parse_lever("gleaning=1 forced") == ("gleaning", ({"gleaning": 1, "glean_forced": True},))
    assert len(parse_lever("retype")[1]) == 2
    with pytest.raises(ValueError, match="its alternatives: pairs, entities"):
        parse_lever("formulation=tables")
    with pytest.raises(ValueError, match="unknown lever 'recall'"):
        parse_lever("recall")


# ------------------------------------------------------------------------------------------------
# The default vocabulary for an episode that lists no relationship types
# ------------------------------------------------------------------------------------------------


def test_an_episode_without_types_is_offered_the_default_vocabulary_and_kept_to_it() -> None:
    from edgewise.modules.default_vocabulary import DEFAULT_EDGE_TYPES

    def respond(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
        return json.dumps(
            {"edges": [edge_json("Maya", "LIVES_IN", "Leeds"), edge_json("Maya", "ADORES", "Tom")]}
        )

    untyped = episode(edgeTypes=[])
    lm = SchemaLM(respond)
    with lm_context(lm):
        result = EdgeExtractor(options=ProgramOptions(default_types=True))(untyped).result
    assert triples(result.edges) == [("Maya", "LIVES_IN", "Leeds")]
    assert codes(result.warnings) == ["default_types", "unknown_type"]
    request = str(lm.calls[0]["messages"][-1]["content"])
    assert all(edge_type.name in request for edge_type in DEFAULT_EDGE_TYPES)
    schema = json.dumps(lm.calls[0]["kwargs"]["response_format"]["json_schema"]["schema"])
    assert '"LIKES"' in schema and '"BORN_IN"' in schema
    with lm_context(lm):
        given = EdgeExtractor(options=ProgramOptions(default_types=True))(episode()).result
    assert "default_types" not in codes(given.warnings)
    assert "BORN_IN" not in str(lm.calls[-1]["messages"][-1]["content"])  # the user's own types only


def test_the_lever_table_shows_each_levers_interval_its_statistic_and_whether_it_was_kept() -> None:
    rows = [
        {
            "lever": "type_signatures",
            "value": True,
            "stat": "edge_f1_micro",
            "difference": 0.0135,
            "low": 0.0019,
            "high": 0.0376,
            "kept": True,
        },
        {
            "lever": "fact_span",
            "value": True,
            "stat": "edge_f1_micro",
            "difference": -0.0175,
            "low": -0.0938,
            "high": 0.0572,
            "kept": False,
            "time_ratio": 0.8644,
        },
        {
            "lever": "fact_dates",
            "value": True,
            "stat": "valid_at_accuracy",
            "difference": None,
            "low": None,
            "high": None,
            "kept": False,
            "note": "no matched edge with a date",
        },
        {
            "lever": "gleaning",
            "value": "1 forced",
            "stat": "edge_f1_micro",
            "difference": 0.0286,
            "low": -0.0391,
            "high": 0.1044,
            "kept": False,
        },
    ]
    lines = lever_table(rows).splitlines()
    assert lines[2] == "| `type_signatures` | edge-F1 | +0.013 [+0.002, +0.038] | yes |"
    assert lines[3] == "| `fact_span` | edge-F1 and time (ratio 0.86) | -0.018 [-0.094, +0.057] | no |"
    assert lines[4] == "| `fact_dates` | validAt accuracy | not judged: no matched edge with a date | no |"
    assert lines[5] == "| `gleaning` = 1 forced | edge-F1 | +0.029 [-0.039, +0.104] | no |"


def test_the_readmes_lever_table_is_the_shipped_recall_compiles_manifest() -> None:
    root = ROOT
    manifest = json.loads(
        (root / "optimize" / "compiled" / "qwen2.5-coder-1.5b-program-v2" / "manifest.json").read_text()
    )
    assert lever_table(manifest["notes"]["levers"]) in (root / "README.md").read_text()
