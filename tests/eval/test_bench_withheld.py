"""`edgewise bench --withhold-entities`: episodes sent as text alone, edgewise programs with their
entity step, programs that cannot find entities reported as such, entity-F1 and the edge-F1 through
the entities found."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fakes import ScriptedLM, edge, edges_reply

from edgewise.domain.gold import LabeledEpisode
from edgewise.eval.bench import run_bench
from edgewise.programs.names import resolve_program
from edgewise.runtime.lm import LMConfig

GOLD = LabeledEpisode.model_validate(
    {
        "id": "conv-9-1",
        "source": "conversational",
        "license": "CC-BY-4.0",
        "exhaustiveEntities": True,
        "episodeContent": "Ann Lee works at Acme. Bo lives in Leeds.",
        "referenceTime": "2025-01-01T00:00:00Z",
        "entities": [
            {"name": "Ann", "type": "Person"},
            {"name": "Acme", "type": "Organization"},
            {"name": "Bo", "type": "Person"},
            {"name": "Leeds", "type": "Location"},
        ],
        "edgeTypes": [
            {"name": "WORKS_AT", "sourceTypes": ["Person"], "targetTypes": ["Organization"]},
            {"name": "LIVES_IN", "sourceTypes": ["Person"], "targetTypes": ["Location"]},
        ],
        "edges": [
            {
                "relationshipType": "WORKS_AT",
                "sourceEntityName": "Ann",
                "targetEntityName": "Acme",
                "fact": "x",
            },
            {
                "relationshipType": "LIVES_IN",
                "sourceEntityName": "Bo",
                "targetEntityName": "Leeds",
                "fact": "y",
            },
        ],
    }
)


def test_programs_find_their_own_entities_and_are_scored_through_them(tmp_path: Path) -> None:
    shown: list[str] = []

    def respond(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
        request = messages[-1]["content"]
        shown.append(request)
        if "`entities`" in request[-300:]:
            return json.dumps(
                {"entities": [{"name": "Ann Lee", "type": "Person"}, {"name": "Acme", "type": "Organization"},
                              {"name": "Tuesday", "type": None}]}
            )  # fmt: skip
        return edges_reply(edge("Ann Lee", "WORKS_AT", "Acme"))

    @contextmanager
    def factory(config: LMConfig) -> Iterator[ScriptedLM]:
        yield ScriptedLM(respond, model=config.model)

    report = run_bench(
        [LMConfig(model="openai/mock")],
        {"default": resolve_program("default"), "seed": resolve_program("seed")},
        [GOLD],
        workers=1,
        out_dir=tmp_path,
        progress=False,
        lm_factory=factory,
        withhold_entities=True,
    )
    assert all('"name": "Ann"' not in text for text in shown)  # no gold entity reached the model
    by_program = {run.program: run for run in report.runs}
    assert by_program["seed"].scores is None and "finds no entities" in by_program["seed"].error
    run = by_program["default"]
    # Ann Lee ~ Ann (a run of words), Acme alike; Tuesday spurious; Bo and Leeds missed.
    assert (run.entities.tp, run.entities.fp, run.entities.fn) == (2, 1, 2)
    assert run.entities.type_accuracy == 1.0
    # The edge found between them counts as the gold WORKS_AT: 1 of 2 gold edges, 1 of 1 written.
    assert run.episodes[0].alias_aware.tp == 1 and run.edge_f1_alias_aware == 2 / 3
    assert run.scores.edge_f1 == 0.0  # by its own names it matches no gold edge
    table = (tmp_path / "results.md").read_text()
    assert "Entities withheld" in table and "| openai/mock | default | 0.571 [" in table
    assert json.loads((tmp_path / "results.json").read_text())["withhold_entities"] is True
    lines = [json.loads(line) for line in (tmp_path / "predictions.jsonl").read_text().splitlines()]
    found = {line["program"]: line.get("entities") for line in lines}
    assert [entity["name"] for entity in found["default"]] == ["Ann Lee", "Acme", "Tuesday"]
    assert "seed" not in found  # a run that cannot find entities writes no episode


def test_entity_f1_and_the_edge_f1_through_it_are_paired_with_the_baseline_s(tmp_path: Path) -> None:
    entity_replies = iter(
        [
            [
                {"name": "Ann", "type": "Person"},
                {"name": "Acme", "type": "Organization"},
                {"name": "Bo", "type": "Person"},
                {"name": "Leeds", "type": "Location"},
            ],
            [{"name": "Ann", "type": "Person"}, {"name": "Tuesday", "type": None}],
        ]
    )  # fmt: skip  (the programs run in order: the baseline first, then the candidate)

    def respond(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
        if "`entities`" in messages[-1]["content"][-300:]:
            return json.dumps({"entities": next(entity_replies)})
        return edges_reply(edge("Ann", "WORKS_AT", "Acme"), edge("Bo", "LIVES_IN", "Leeds"))

    @contextmanager
    def factory(config: LMConfig) -> Iterator[ScriptedLM]:
        yield ScriptedLM(respond, model=config.model)

    report = run_bench(
        [LMConfig(model="openai/mock")],
        {"default": resolve_program("default"), "baseline-v1": resolve_program("baseline-v1")},
        [GOLD],
        workers=1,
        out_dir=tmp_path,
        progress=False,
        lm_factory=factory,
        withhold_entities=True,
        baseline="default",
    )
    base, run = report.runs
    assert (base.entities.f1, run.entities.f1) == (1.0, 2 / 6)  # 1 of 2 found, 3 missed
    assert run.entity_comparison.difference == 2 / 6 - 1.0
    # Bo and Leeds were not among the candidate's entities: its LIVES_IN edge has no entity to end at.
    assert run.alias_aware_comparison.difference == run.edge_f1_alias_aware - base.edge_f1_alias_aware < 0
    assert base.entity_comparison is None
    assert f"| {2 / 6 - 1.0:+.3f} [" in (tmp_path / "results.md").read_text()
