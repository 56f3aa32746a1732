"""Program options, offline: type signatures, the pairwise program, the precision step, dates from
facts, and the `program` search that keeps a lever only when its paired dev interval is above 0."""

from __future__ import annotations

import io
import json
import re
from datetime import UTC, datetime
from typing import Any

import pytest
from fakes import SchemaLM, ScriptedLM, output_field

from edgewise.domain.episode import Episode
from edgewise.domain.gold import LabeledEpisode
from edgewise.domain.types import Edge
from edgewise.modules.call_context import CallContext
from edgewise.modules.extractor import EdgeExtractor
from edgewise.modules.fact_dates import dates_from_facts
from edgewise.modules.options import ProgramOptions
from edgewise.modules.pairs import candidate_pairs, pair_edges, pair_reply_schema
from edgewise.modules.postprocess import postprocess
from edgewise.modules.type_signatures import PairRule, TypeSignatures, learn_type_signatures
from edgewise.optimize import OptimizeSettings, load, optimize
from edgewise.optimize.dev_scoring import dev_score
from edgewise.optimize.program_search import search_program
from edgewise.programs.artifact import MANIFEST_FILE, PROGRAM_FILE
from edgewise.runtime.lm import lm_context
from edgewise.signatures.label_pairs import PairLabel
from edgewise.signatures.replies import ExtractedEdge

REFERENCE = "2025-01-01T00:00:00Z"
TYPES = [
    {"name": "WORKS_AT", "description": "a person works at an organization"},
    {"name": "LIVES_IN", "description": "a person lives in a place"},
    {"name": "FRIEND_OF", "description": "two people are friends", "symmetric": True},
]


def labeled(i: int) -> LabeledEpisode:
    return LabeledEpisode.model_validate(
        {
            "id": f"ep{i}",
            "source": "test",
            "license": "CC0-1.0",
            "episodeContent": f"Ann{i} works at Co{i}. Ann{i} lives in Town{i}.",
            "entities": [
                {"name": f"Ann{i}", "type": "Person"},
                {"name": f"Co{i}", "type": "Organization"},
                {"name": f"Town{i}", "type": "Place"},
            ],
            "referenceTime": REFERENCE,
            "edgeTypes": TYPES,
            "edges": [
                {"relationshipType": "WORKS_AT", "sourceEntityName": f"Ann{i}", "targetEntityName": f"Co{i}", "fact": "w"},
                {"relationshipType": "LIVES_IN", "sourceEntityName": f"Ann{i}", "targetEntityName": f"Town{i}", "fact": "l"},
            ],
        }
    )  # fmt: skip


def raw(
    source: str, kind: str, target: str, fact: str = "a fact", valid_at: str | None = None
) -> ExtractedEdge:
    return ExtractedEdge(
        relationshipType=kind, sourceEntityName=source, targetEntityName=target, fact=fact, validAt=valid_at
    )


# ------------------------------------------------------------------------------------------------
# Type signatures
# ------------------------------------------------------------------------------------------------


def test_signatures_are_learned_from_the_gold_edges_of_labeled_episodes() -> None:
    episode = labeled(0).model_copy(deep=True)
    episode.entities.append(episode.entities[0].model_copy(update={"name": "Untyped", "type": None}))
    episode.edges.append(
        episode.edges[0].model_copy(update={"target_entity_name": "Untyped", "relationship_type": "LIKES"})
    )
    learned = learn_type_signatures([episode, labeled(1)])
    assert learned.triples == (("Person", "LIVES_IN", "Place"), ("Person", "WORKS_AT", "Organization"))
    assert learned.listing() == ["Person -LIVES_IN-> Place", "Person -WORKS_AT-> Organization"]


def test_post_processing_flips_a_reversed_edge_and_drops_an_impossible_one() -> None:
    episode = labeled(0).episode()
    learned = learn_type_signatures([labeled(1)])
    edges, warnings = postprocess(
        [raw("Co0", "WORKS_AT", "Ann0"), raw("Town0", "WORKS_AT", "Co0"), raw("Ann0", "LIVES_IN", "Town0")],
        episode,
        closed_types=True,
        type_signatures=learned,
    )
    assert [(e.source_entity_name, e.relationship_type, e.target_entity_name) for e in edges] == [
        ("Ann0", "WORKS_AT", "Co0"),
        ("Ann0", "LIVES_IN", "Town0"),
    ]
    assert [w.code for w in warnings] == ["direction_flipped", "type_signature"]
    # without signatures the same raw edges pass unchanged: the check is the option, not a side effect
    unchecked, _ = postprocess([raw("Co0", "WORKS_AT", "Ann0")], episode, closed_types=True)
    assert unchecked[0].source_entity_name == "Co0"


def test_untyped_entities_and_types_without_a_signature_are_left_alone() -> None:
    learned = TypeSignatures(triples=(("Person", "WORKS_AT", "Organization"),))
    untyped = Episode.model_validate(
        {"episodeContent": "x", "entities": [{"name": "A"}, {"name": "B"}], "referenceTime": REFERENCE}
    )
    edges, warnings = postprocess([raw("B", "WORKS_AT", "A")], untyped, type_signatures=learned)
    assert len(edges) == 1 and warnings == []
    typed = labeled(0).episode()
    edges, warnings = postprocess([raw("Town0", "FRIEND_OF", "Co0")], typed, type_signatures=learned)
    assert len(edges) == 1 and warnings == []


def test_declared_source_and_target_types_win_over_learned_ones_and_symmetric_types_go_both_ways() -> None:
    data = labeled(0).model_dump(by_alias=True, include=set(Episode.model_fields))
    data["edgeTypes"] = [
        {"name": "WORKS_AT", "sourceTypes": ["Person"], "targetTypes": ["Place"]},
        {"name": "FRIEND_OF", "symmetric": True, "sourceTypes": ["Person"], "targetTypes": ["Organization"]},
    ]
    episode = Episode.model_validate(data)
    learned = TypeSignatures(triples=(("Person", "WORKS_AT", "Organization"),))
    rule = PairRule(episode, learned)
    assert rule.allowed("WORKS_AT", "Person", "Place") and not rule.allowed(
        "WORKS_AT", "Person", "Organization"
    )
    assert rule.allowed("FRIEND_OF", "Organization", "Person")  # symmetric: either way
    # declared signatures apply even with the learned ones off
    edges, warnings = postprocess([raw("Ann0", "WORKS_AT", "Co0")], episode)
    assert edges == [] and warnings[0].code == "type_signature"


# A malformed signature in every input path: tests/domain/test_input_contract.py.


# ------------------------------------------------------------------------------------------------
# Pairwise program
# ------------------------------------------------------------------------------------------------


def many_entities(count: int) -> Episode:
    names = [f"P{i}" for i in range(count)]
    return Episode.model_validate(
        {
            "episodeContent": " ".join(f"{name} met the others." for name in names[: count // 2]),
            "entities": [{"name": name, "type": "Person"} for name in names],
            "referenceTime": REFERENCE,
            "edgeTypes": TYPES,
        }
    )


def test_the_pairwise_program_bounds_its_pairs_and_says_so() -> None:
    episode = many_entities(12)  # 66 pairs
    context = CallContext()
    warnings = context.warnings
    pairs = candidate_pairs(episode, PairRule(episode, None), ["FRIEND_OF"], 10, context)
    assert len(pairs) == 10 and warnings[0].code == "pairs_capped"
    assert warnings[0].message == (
        "66 candidate pairs, 10 labeled (the rest mention the two entities farther apart, or not both in "
        "the current episode)"
    )
    mentioned = {f"P{i}" for i in range(6)}
    assert all({pair.first, pair.second} <= mentioned for pair in pairs)  # both named in the episode first
    schema = pair_reply_schema(pairs)
    assert len(schema["prefixItems"]) == schema["minItems"] == schema["maxItems"] == 10


def test_signatures_decide_which_pairs_and_types_are_candidates() -> None:
    episode = labeled(0).episode()
    learned = learn_type_signatures([labeled(1)])
    pairs = candidate_pairs(
        episode, PairRule(episode, learned), [t["name"] for t in TYPES], 24, CallContext()
    )
    assert {(pair.first, pair.second, pair.types) for pair in pairs} == {
        ("Ann0", "Co0", ("WORKS_AT", "FRIEND_OF")),  # FRIEND_OF has no signature: unconstrained
        ("Ann0", "Town0", ("LIVES_IN", "FRIEND_OF")),
        ("Co0", "Town0", ("FRIEND_OF",)),
    }


def test_pair_labels_become_edges_with_the_direction_the_model_chose() -> None:
    episode = labeled(0).episode()
    pairs = candidate_pairs(episode, PairRule(episode, None), ["WORKS_AT", "LIVES_IN"], 24, CallContext())
    by_text = {pair.text: pair for pair in pairs}
    labels = [
        PairLabel(pair="Ann0 | Co0", relationshipType="WORKS_AT", sourceEntityName="Ann0", fact="works"),
        PairLabel(pair="Ann0 | Town0", relationshipType="NONE"),
        PairLabel(pair="Co0 | Town0", relationshipType="LIVES_IN", sourceEntityName="Town0", fact="odd"),
    ]
    assert set(by_text) == {label.pair for label in labels}
    edges = pair_edges(labels, pairs, CallContext())
    assert [(e.sourceEntityName, e.relationshipType, e.targetEntityName) for e in edges] == [
        ("Ann0", "WORKS_AT", "Co0"),
        ("Town0", "LIVES_IN", "Co0"),
    ]


def pairs_responder(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
    text = str(messages[-1]["content"])
    candidates = json.loads(re.search(r"\[\[ ## candidate_pairs ## \]\]\n(\[.*?\])\n", text).group(1))
    labels = []
    for pair in candidates:
        first, second = pair.split(" | ")
        if first.startswith("Ann") and second.startswith("Co"):
            labels.append({"pair": pair, "relationshipType": "WORKS_AT", "sourceEntityName": first, "fact": "w",
                           "validAt": None, "invalidAt": None})  # fmt: skip
        else:
            labels.append({"pair": pair, "relationshipType": "NONE"})
    return json.dumps({"pairs": labels})


def test_the_pairwise_program_sends_one_answer_slot_per_pair_and_returns_seed_edges() -> None:
    lm = SchemaLM(pairs_responder)
    with lm_context(lm):
        result = EdgeExtractor(options=ProgramOptions(formulation="pairs"))(labeled(0).episode()).result
    assert [(e.source_entity_name, e.relationship_type, e.target_entity_name) for e in result.edges] == [
        ("Ann0", "WORKS_AT", "Co0")
    ]
    schema = json.dumps(lm.calls[0]["kwargs"]["response_format"]["json_schema"]["schema"])
    assert '"prefixItems"' in schema and '"const": "Ann0 | Co0"' in schema
    assert "prefixItems" not in str(lm.calls[0]["messages"])  # the prompt shows the plain reply type
    assert result.usage["pairs"].calls == 1


# ------------------------------------------------------------------------------------------------
# Precision step and dates from facts
# ------------------------------------------------------------------------------------------------


def verifying_responder(verdicts: list[bool] | None) -> Any:
    def respond(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
        if output_field(messages) == "stated":
            return json.dumps({"stated": verdicts})
        edges = [
            {"relationshipType": "WORKS_AT", "sourceEntityName": "Ann0", "targetEntityName": "Co0", "fact": "w"},
            {"relationshipType": "LIVES_IN", "sourceEntityName": "Ann0", "targetEntityName": "Town0", "fact": "l"},
            {"relationshipType": "FRIEND_OF", "sourceEntityName": "Ann0", "targetEntityName": "Co0", "fact": "f"},
        ]  # fmt: skip
        return json.dumps({"edges": edges})

    return respond


def test_the_precision_step_drops_exactly_the_edges_it_is_told_are_not_stated() -> None:
    lm = SchemaLM(verifying_responder([True, False, True]))
    with lm_context(lm):
        result = EdgeExtractor(options=ProgramOptions(precision=True))(labeled(0).episode()).result
    assert [e.relationship_type for e in result.edges] == ["WORKS_AT", "FRIEND_OF"]
    assert [w.code for w in result.warnings] == ["not_stated"]
    assert result.usage["verify"].calls == 1
    schema = json.dumps(lm.calls[1]["kwargs"]["response_format"]["json_schema"]["schema"])
    assert '"minItems": 3' in schema and '"maxItems": 3' in schema
    assert "minItems" not in str(lm.calls[1]["messages"])


def test_a_precision_reply_of_the_wrong_length_keeps_every_edge() -> None:
    with lm_context(ScriptedLM(verifying_responder([False]))):
        result = EdgeExtractor(options=ProgramOptions(precision=True))(labeled(0).episode()).result
    assert len(result.edges) == 3 and [w.code for w in result.warnings] == ["verify_mismatch"]
    assert result.warnings[0].message == "the precision step answered 1 times for 3 edges: every edge kept"


def test_dates_from_facts_replace_only_the_default_date_of_facts_that_did_not_end() -> None:
    reference = datetime(2024, 1, 10, 20, tzinfo=UTC)

    def edge(fact: str, valid_at: datetime | None) -> Edge:
        return Edge(
            relationship_type="X",
            source_entity_name="a",
            target_entity_name="b",
            fact=fact,
            valid_at=valid_at,
        )

    edges = [
        edge("friends since 2008", reference),
        edge("moved to Lisbon two years ago", None),
        edge("joined in 2019", datetime(2020, 5, 1, tzinfo=UTC)),  # the model's own date stays
        edge("worked there until 2021", reference),  # ended: its date is invalidAt's
        edge("works at Acme", reference),
    ]
    context = CallContext()
    warnings = context.warnings
    changed = dates_from_facts(edges, reference, context)
    assert [e.valid_at.year if e.valid_at else None for e in changed] == [2008, 2022, 2020, 2024, 2024]
    assert [w.code for w in warnings] == ["date_from_fact", "date_from_fact"]


# ------------------------------------------------------------------------------------------------
# The program search
# ------------------------------------------------------------------------------------------------


def test_the_search_keeps_only_levers_whose_paired_interval_is_above_zero() -> None:
    dev = [labeled(i) for i in range(8)]
    student = EdgeExtractor()
    perfect = [list(e.edges) for e in dev]

    def score(candidate: EdgeExtractor, label: str) -> Any:
        # precision makes every episode perfect; every other lever changes nothing
        edges = perfect if candidate.options.precision else [e.edges[:1] for e in dev]
        return dev_score(dev, [_result(found) for found in edges])

    calls = iter(range(0, 1000, 8))
    program, scored, results = search_program(
        student=student,
        before=dev_score(dev, [_result(e.edges[:1]) for e in dev]),
        score=score,
        signatures=TypeSignatures(),
        dev=dev,
        gold_demos=None,
        budget=None,
        calls_spent=lambda: next(calls),
        levers=("input_order", "fact_dates", "precision"),
    )
    assert program.options == ProgramOptions(precision=True) and scored.edge_f1 == 1.0
    assert [(r.lever, r.kept) for r in results] == [
        ("input_order", False),
        ("fact_dates", False),
        ("precision", True),
    ]
    assert results[2].low > 0 and results[0].difference == 0


def test_the_search_skips_a_lever_its_budget_cannot_pay_for() -> None:
    dev = [labeled(i) for i in range(4)]
    before = dev_score(dev, [_result(e.edges) for e in dev])
    _, _, results = search_program(
        student=EdgeExtractor(),
        before=before,
        score=lambda candidate, label: before,
        signatures=TypeSignatures(),
        dev=dev,
        gold_demos=None,
        budget=6,
        calls_spent=lambda: 0,
        levers=("fact_dates", "precision"),
    )
    assert [(r.lever, r.kept, r.dev_edge_f1) for r in results] == [
        ("fact_dates", False, 1.0),
        ("precision", False, None),
    ]
    assert "needs 8" in results[1].note


def _result(edges: list[Any]) -> Any:
    from edgewise.domain.types import ExtractionResult

    return ExtractionResult(
        edges=[Edge.model_validate(e.model_dump(include=set(Edge.model_fields))) for e in edges]
    )


def program_responder(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
    """Extraction writes the right edges reversed; signatures flip them back."""
    text = str(messages[-1]["content"])
    i = re.search(r"Ann(\d+) works", text).group(1)
    return json.dumps(
        {
            "edges": [
                {"relationshipType": "WORKS_AT", "sourceEntityName": f"Co{i}", "targetEntityName": f"Ann{i}", "fact": "w"},
                {"relationshipType": "LIVES_IN", "sourceEntityName": f"Town{i}", "targetEntityName": f"Ann{i}", "fact": "l"},
            ]
        }
    )  # fmt: skip


def test_optimize_program_learns_signatures_keeps_what_helps_and_records_it(tmp_path) -> None:
    lm = ScriptedLM(program_responder)
    with lm_context(lm):
        report = optimize(
            task_lm=lm,
            train=[labeled(i) for i in range(4)],
            dev=[labeled(i) for i in range(10, 18)],
            out=tmp_path / "prog",
            settings=OptimizeSettings(optimizer="program", levers=("fact_dates", "type_signatures")),
            progress=io.StringIO(),
        )
    assert report.before.edge_f1 == 0.0 and report.after.edge_f1 == 1.0
    assert "levers judged on dev: 1 of 2; kept: type_signatures=True" in report.summary()  # no date to judge
    manifest = json.loads((tmp_path / "prog" / MANIFEST_FILE).read_text())
    assert manifest["settings"]["program_options"]["type_signatures"] is True
    assert manifest["settings"]["program_options"]["fact_dates"] is False
    assert [(row["lever"], row["kept"]) for row in manifest["notes"]["levers"]] == [
        ("fact_dates", False),
        ("type_signatures", True),
    ]
    assert "Person -WORKS_AT-> Organization" in manifest["notes"]["type_signatures"]
    assert manifest["notes"]["selected"] == "compiled"
    state = json.loads((tmp_path / "prog" / PROGRAM_FILE).read_text())
    assert ["Person", "LIVES_IN", "Place"] in state["type_signatures"]["triples"]
    loaded = load(tmp_path / "prog")
    assert loaded.options.type_signatures and loaded.type_signatures == report.program.type_signatures
    with lm_context(ScriptedLM(program_responder)):
        edges = loaded(labeled(30).episode()).edges
    assert {(e.source_entity_name, e.target_entity_name) for e in edges} == {
        ("Ann30", "Co30"),
        ("Ann30", "Town30"),
    }


def test_an_unknown_lever_is_refused_before_any_call(tmp_path) -> None:
    lm = ScriptedLM(program_responder)
    with pytest.raises(ValueError, match="unknown lever"):
        optimize(task_lm=lm, train=[labeled(0)], dev=[labeled(1)], out=tmp_path / "p",
                 settings=OptimizeSettings(optimizer="program", levers=("speed",)), progress=io.StringIO())  # fmt: skip
    assert lm.calls == []


def test_baseline_v1_is_shipped_and_is_the_uncompiled_program() -> None:
    from edgewise.programs.names import resolve_program

    frozen = resolve_program("baseline-v1")
    assert frozen.dump_state() == EdgeExtractor().dump_state()
    assert frozen.options == ProgramOptions()


def test_dates_from_facts_are_judged_by_valid_at_accuracy_not_edge_f1() -> None:
    dev = [labeled(i) for i in range(8)]
    for episode in dev:
        episode.edges[0].valid_at = datetime(2008, 1, 1, tzinfo=UTC)
    reference = datetime(2025, 1, 1, tzinfo=UTC)

    def score(candidate: EdgeExtractor, label: str) -> Any:
        year = 2008 if candidate.options.fact_dates else reference.year
        found = [
            [
                e.model_copy(update={"valid_at": datetime(year, 1, 1, tzinfo=UTC) if e.valid_at else None})
                for e in ep.edges
            ]
            for ep in dev
        ]
        return dev_score(dev, [_result(edges) for edges in found])

    before = score(EdgeExtractor(), "before")
    program, _, results = search_program(
        student=EdgeExtractor(),
        before=before,
        score=score,
        signatures=TypeSignatures(),
        dev=dev,
        gold_demos=None,
        budget=None,
        calls_spent=lambda: 0,
        levers=("fact_dates",),
    )
    (result,) = results
    assert result.stat == "valid_at_accuracy" and result.kept and program.options.fact_dates
    assert result.difference == pytest.approx(0.5) and result.dev_edge_f1 == before.edge_f1 == 1.0
