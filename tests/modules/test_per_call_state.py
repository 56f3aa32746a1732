"""A production path keeps no per-call state: no DSPy history, and no class made per call.

Each program runs through the LM that `edgewise extract` and `edgewise serve` build (`build_lm` with
`keep_history=0`, `lm_context`) against the mock OpenAI-compatible server, over episodes whose names
and relationship types all differ, so every per-call reply schema differs too: the vocabulary, the
sentence numbers of a fact span, coverage by entity, a gleaning turn, a re-typing question, the
precision step, candidate pairs, per-episode attribute slots and attributes in the extraction reply.
"""

from __future__ import annotations

import gc
import json
import re
from typing import Any

import dspy
import pydantic
import pytest
from dspy.clients import base_lm
from fakes import output_field
from mock_openai import MockOpenAIServer

from edgewise.modules.extractor import EdgeExtractor
from edgewise.modules.options import ProgramOptions
from edgewise.modules.type_signatures import TypeSignatures
from edgewise.runtime.lm import LMConfig, build_lm, lm_context

SIGNATURES = TypeSignatures(
    triples=(
        ("Person", "WORKS_AT", "Organization"),
        ("Person", "MANAGES", "Person"),
        ("Person", "MEMBER_OF", "Organization"),
    )
)

PROGRAMS: dict[str, Any] = {
    "coverage by entity, re-typing by question, precision": lambda: EdgeExtractor(
        options=ProgramOptions(formulation="entities", type_signatures=True, retype="ask", precision=True),
        type_signatures=SIGNATURES,
    ),
    "gleaning, reflexion, per-episode attributes": lambda: EdgeExtractor(
        1, options=ProgramOptions(gleaning=1, attributes="per-episode")
    ),
    "fact as a span, per-edge attributes": lambda: EdgeExtractor(options=ProgramOptions(fact_span=True)),
    "attributes in the extraction reply": lambda: EdgeExtractor(
        options=ProgramOptions(attributes="in-extraction")
    ),
    "candidate pairs": lambda: EdgeExtractor(options=ProgramOptions(formulation="pairs")),
}

# The steps each program must have asked the model for, so that every per-call schema is exercised.
ASKED: dict[str, set[str]] = {
    "coverage by entity, re-typing by question, precision": {"by_entity", "answers", "stated"},
    "gleaning, reflexion, per-episode attributes": {"edges", "missing_facts", "attributes"},
    "fact as a span, per-edge attributes": {"edges", "attributes"},
    "attributes in the extraction reply": {"edges"},
    "candidate pairs": {"pairs"},
}


def episode(number: int) -> dict[str, Any]:
    """An episode whose guest and whose extra relationship type are its own."""
    guest, kind = f"Guest {number}", f"VISITED_{'ABCDEFGHIJ'[number]}"
    return {
        "episodeContent": f"Ann works at Acme. Ann manages {guest}. {guest} visited Acme.",
        "entities": [
            {"name": "Ann", "type": "Person"},
            {"name": "Acme", "type": "Organization"},
            {"name": guest, "type": "Person"},
        ],
        "referenceTime": "2025-01-01T00:00:00Z",
        "edgeTypes": [
            {"name": "WORKS_AT", "description": "works at", "attributes": [{"name": "role"}]},
            {"name": "MANAGES", "description": "manages"},
            {"name": "MEMBER_OF", "description": "belongs to"},
            {"name": kind, "description": "visited"},
        ],
    }


def _edge(source: str, kind: str, target: str, **fields: Any) -> dict[str, Any]:
    return {"relationshipType": kind, "sourceEntityName": source, "targetEntityName": target, **fields}


def respond(body: dict[str, Any]) -> str:
    """A valid reply for whichever step the request asks for, about the request's own guest."""
    messages = body["messages"]
    field = output_field(messages)
    guest = re.findall(r"Guest \d", json.dumps(messages))[-1]
    if field == "edges":
        first = _edge("Ann", "WORKS_AT", "Acme", fact="Ann works at Acme.", sentence=1, attributes={})
        second = _edge("Ann", "MANAGES", guest, fact=f"Ann manages {guest}.", sentence=2, attributes={})
        return json.dumps({"edges": [first, second]})
    if field == "by_entity":
        edges = [
            {"relationshipType": "WORKS_AT", "targetEntityName": "Acme", "fact": "Ann works at Acme."},
            {"relationshipType": "MANAGES", "targetEntityName": "Acme", "fact": "Ann runs Acme."},
        ]
        return json.dumps({"by_entity": [{"entity": "Ann", "edges": edges}]})
    if field == "pairs":
        label = _edge("Ann", "MANAGES", guest, pair=f"Ann | {guest}", fact=f"Ann manages {guest}.")
        return json.dumps({"pairs": [label]})
    if field == "attributes" and "`facts`" in str(messages[0]["content"]):
        return json.dumps({"attributes": [{"role": "nurse"}]})  # one slot per fact (per episode)
    replies = {
        "missing_facts": {"missing_facts": [f"{guest} visited Acme."]},
        "answers": {"answers": ["MEMBER_OF"]},
        "stated": {"stated": [True, True]},
        "attributes": {"attributes": {"role": "nurse"}},
    }
    return json.dumps(replies.get(field, {field: []}))


def _model_classes() -> set[type]:
    """Every pydantic model class alive (DSPy signatures are pydantic models too)."""
    found: set[type] = set()
    stack: list[type] = [pydantic.BaseModel]
    while stack:
        for subclass in stack.pop().__subclasses__():
            if subclass not in found:
                found.add(subclass)
                stack.append(subclass)
    return found


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_a_production_run_keeps_no_history_and_makes_no_class_per_call(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(base_lm, "GLOBAL_HISTORY", [])
    program = PROGRAMS[name]()
    trace = dspy.settings.trace  # the process-wide list a call outside any context appends to
    traced_before = len(trace)
    with MockOpenAIServer(respond) as server:
        lm = build_lm(LMConfig(model="openai/mock", api_base=server.api_base, cache=False, keep_history=0))
        with lm_context(lm):
            program(episode(0))  # the first call may import and build what every call shares
            gc.disable()  # a class made and dropped by a call stays listed until a collection
            try:
                before = _model_classes()
                results = [program(episode(number)).result for number in range(1, 6)]
                made = _model_classes() - before
            finally:
                gc.enable()
        bodies = server.requests
    assert made == set()
    assert all(result.edges for result in results)
    asked = {output_field(body["messages"]) for body in bodies}
    assert ASKED[name] <= asked
    schemas = [json.dumps(body.get("response_format")) for body in bodies]
    assert {number for number in range(6) for schema in schemas if f"Guest {number}" in schema} == set(
        range(6)
    )  # each episode's own names reached the decoder
    assert base_lm.GLOBAL_HISTORY == [] and lm.history == [] and program.history == []
    assert all(predictor.history == [] for _, predictor in program.named_predictors())
    assert len(trace) == traced_before
