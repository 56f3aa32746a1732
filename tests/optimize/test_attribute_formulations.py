"""The three attribute formulations against fake LMs: the calls each makes and the reply schema each sends.

`per-edge` (the seed's and the default), `per-episode` (one call, one slot per edge) and
`in-extraction` (attributes inside the extraction reply). Each reply schema is read off the request
the fake server received, and the prompt is checked to show the plain type.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from fakes import SchemaLM, ScriptedLM, output_field
from paths import ROOT

from edgewise.domain.episode import Episode
from edgewise.domain.types import Edge
from edgewise.modules.extractor import EdgeExtractor
from edgewise.modules.options import ProgramOptions
from edgewise.modules.type_signatures import TypeSignatures
from edgewise.programs.artifact import load, new_manifest, save, signature_fingerprints
from edgewise.programs.names import resolve_program
from edgewise.runtime.lm import lm_context

EDGES = [
    {"relationshipType": "WORKS_AT", "sourceEntityName": "alice", "targetEntityName": "Acme Corp",
     "fact": "Alice is a nurse at Acme Corp."},
    {"relationshipType": "LIVES_IN", "sourceEntityName": "Alice", "targetEntityName": "Berlin",
     "fact": "Alice lives in Berlin with Bob."},
    {"relationshipType": "MARRIED_TO", "sourceEntityName": "Alice", "targetEntityName": "Bob",
     "fact": "Bob is Alice's husband."},
]  # fmt: skip


def episode(**changes: Any) -> Episode:
    fields = {
        "episodeContent": "Alice is a nurse at Acme Corp. She lives in Berlin with her husband Bob.",
        "entities": [
            {"name": "Alice", "type": "Person"},
            {"name": "Acme Corp", "type": "Organization"},
            {"name": "Berlin", "type": "Place"},
            {"name": "Bob", "type": "Person"},
        ],
        "referenceTime": "2025-04-30T12:00:00Z",
        "edgeTypes": [
            {"name": "WORKS_AT", "description": "works for", "attributes": [
                {"name": "role", "description": "job title"}, {"name": "years", "kind": "integer"}]},
            {"name": "LIVES_IN", "description": "lives in", "attributes": [
                {"name": "with_whom", "description": "who they live with"}]},
            {"name": "MARRIED_TO", "description": "spouses", "symmetric": True},
        ],
    }  # fmt: skip
    return Episode.model_validate(fields | changes)


def run(
    options: ProgramOptions, responder: Any, lm_class: type = SchemaLM, **changes: Any
) -> tuple[Any, Any]:
    lm = lm_class(responder)
    with lm_context(lm):
        result = EdgeExtractor(options=options)(episode(**changes)).result
    return result, lm


def response_schema(call: dict[str, Any]) -> dict[str, Any]:
    return call["kwargs"]["response_format"]["json_schema"]["schema"]


def test_per_edge_is_the_default_and_asks_once_per_edge_of_a_type_with_attributes() -> None:
    answers = {"role": {"role": "nurse", "years": "3"}, "with_whom": {"with_whom": "Bob"}}

    def respond(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
        if output_field(messages) == "attributes":
            properties = response_schema({"kwargs": kwargs})["$defs"]
            fields = next(
                set(d["properties"]) for name, d in properties.items() if name.endswith("Attributes")
            )
            return json.dumps({"attributes": answers["role" if "role" in fields else "with_whom"]})
        return json.dumps({"edges": EDGES})

    assert ProgramOptions().attributes == "per-edge"
    result, lm = run(ProgramOptions(), respond)
    assert [e.attributes for e in result.edges] == [{"role": "nurse", "years": 3}, {"with_whom": "Bob"}, {}]
    assert result.usage["attributes"].calls == 2 and len(lm.calls) == 3  # MARRIED_TO declares none
    schema = response_schema(lm.calls[1])
    (model,) = [d for name, d in schema["$defs"].items() if name == "WorksAtAttributes"]
    assert set(model["properties"]) == {"role", "years"}


def per_episode_responder(slots: list[dict[str, Any]]) -> Any:
    def respond(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
        if output_field(messages) == "attributes":
            return json.dumps({"attributes": slots})
        return json.dumps({"edges": EDGES})

    return respond


def test_per_episode_asks_once_with_one_slot_per_edge_each_typed_for_its_edge() -> None:
    slots = [{"role": "nurse", "years": 3, "team": "ER"}, {"with_whom": None}]
    result, lm = run(ProgramOptions(attributes="per-episode"), per_episode_responder(slots))
    assert [e.attributes for e in result.edges] == [{"role": "nurse", "years": 3}, {}, {}]
    assert [w.code for w in result.warnings if w.code == "attribute_dropped"] == ["attribute_dropped"]  # team
    assert result.usage["attributes"].calls == 1 and len(lm.calls) == 2
    reply = response_schema(lm.calls[1])["properties"]["attributes"]
    assert reply["minItems"] == reply["maxItems"] == 2
    works_at, lives_in = reply["prefixItems"]
    assert works_at["required"] == ["role", "years"] and works_at["additionalProperties"] is False
    assert works_at["properties"]["years"]["type"] == ["integer", "null"]
    assert lives_in["required"] == ["with_whom"]
    prompt = str(lm.calls[1]["messages"])
    assert "prefixItems" not in prompt and "who they live with" in prompt  # the facts carry the meanings


def test_per_episode_sets_nothing_from_a_reply_with_another_number_of_slots() -> None:
    result, _ = run(
        ProgramOptions(attributes="per-episode"), per_episode_responder([{"role": "nurse"}]), ScriptedLM
    )
    assert all(e.attributes == {} for e in result.edges)
    assert "attributes_mismatch" in [w.code for w in result.warnings]


def test_per_episode_drops_a_value_of_another_kind_and_keeps_the_rest() -> None:
    slots = [{"role": "nurse", "years": "several"}, {"with_whom": "Bob"}]
    result, _ = run(ProgramOptions(attributes="per-episode"), per_episode_responder(slots), ScriptedLM)
    assert [e.attributes for e in result.edges] == [{"role": "nurse"}, {"with_whom": "Bob"}, {}]
    dropped = [w.message for w in result.warnings if w.code == "attribute_dropped"]
    assert dropped == ["dropped: years not of the declared kind"]


def test_per_episode_makes_no_call_when_no_edge_has_attributes() -> None:
    result, lm = run(
        ProgramOptions(attributes="per-episode"), lambda m, k: json.dumps({"edges": EDGES[2:]}), ScriptedLM
    )
    assert len(lm.calls) == 1 and "attributes" not in result.usage


def in_reply_responder(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
    assert output_field(messages) == "edges", "in-extraction makes no attribute call"
    edges = [
        EDGES[0] | {"attributes": {"role": "nurse", "years": None}},
        EDGES[1] | {"attributes": {"with_whom": "Bob", "mood": "happy"}},
        EDGES[2] | {"attributes": {}},
    ]
    return json.dumps({"edges": edges})


def test_in_extraction_writes_attributes_in_the_extraction_reply_and_makes_no_other_call() -> None:
    result, lm = run(ProgramOptions(attributes="in-extraction"), in_reply_responder)
    assert len(lm.calls) == 1 and set(result.usage) == {"extract"}
    assert [e.attributes for e in result.edges] == [{"role": "nurse"}, {"with_whom": "Bob"}, {}]
    assert result.edges[0].source_entity_name == "Alice"  # the name resolved; the attributes kept
    assert [w.message for w in result.warnings if w.code == "attribute_dropped"] == [
        "dropped: mood not declared by LIVES_IN"
    ]


def test_in_extraction_ties_each_edges_attribute_fields_to_its_type_in_the_decoding_schema() -> None:
    _, lm = run(ProgramOptions(attributes="in-extraction"), in_reply_responder)
    reply = response_schema(lm.calls[0])["properties"]["edges"]
    alternatives = {
        json.dumps(a["properties"]["relationshipType"]): a["properties"]["attributes"]
        for a in reply["items"]["anyOf"]
    }
    assert alternatives['{"const": "WORKS_AT"}']["required"] == ["role", "years"]
    assert alternatives['{"const": "LIVES_IN"}']["properties"]["with_whom"]["type"] == ["string", "null"]
    (others,) = [a for key, a in alternatives.items() if "enum" in key]
    assert others["properties"] == {} and others["additionalProperties"] is False  # MARRIED_TO
    first = next(a for a in reply["items"]["anyOf"])
    assert first["properties"]["sourceEntityName"]["enum"] == ["Alice", "Acme Corp", "Berlin", "Bob"]
    prompt = json.dumps(lm.calls[0]["messages"])
    assert "const" not in prompt and "with_whom" in prompt  # the plain type; the names come as input


def test_in_extraction_shows_the_same_prompt_prefix_for_every_episode() -> None:
    """Entities differ per episode; the instructions and the displayed reply type do not."""
    _, first = run(ProgramOptions(attributes="in-extraction"), in_reply_responder)
    other = {"entities": [{"name": "Alice", "type": "Person"}, {"name": "Zed Ltd", "type": "Organization"}]}
    _, second = run(ProgramOptions(attributes="in-extraction"), lambda m, k: '{"edges": []}', **other)
    system = [call["messages"][0]["content"] for call in (first.calls[0], second.calls[0])]
    assert system[0] == system[1] and "attributes" in system[0]
    user = first.calls[0]["messages"][-1]["content"]
    assert "relationship_attributes" in user and "who they live with" in user


def test_in_extraction_needs_the_edges_formulation_and_the_seed_shape() -> None:
    with pytest.raises(ValueError, match="seed reply shape"):
        EdgeExtractor(output_shape="compact", options=ProgramOptions(attributes="in-extraction"))
    with pytest.raises(ValueError, match="edges formulation"):
        ProgramOptions(attributes="in-extraction", formulation="pairs")
    with pytest.raises(ValueError, match="without a fact span"):
        ProgramOptions(attributes="in-extraction", fact_span=True)


@pytest.mark.parametrize("formulation", ["per-episode", "in-extraction"])
def test_the_formulation_is_recorded_and_rebuilt_by_load(formulation: str, tmp_path) -> None:
    program = EdgeExtractor(options=ProgramOptions(attributes=formulation))
    settings = {"program_options": program.options.model_dump()}
    save(
        program, tmp_path / "p", new_manifest(program, task_model="m", optimizer="program", settings=settings)
    )
    loaded = load(tmp_path / "p")
    assert loaded.options.attributes == formulation
    assert signature_fingerprints(loaded) == signature_fingerprints(program)


@pytest.mark.parametrize(
    "name",
    [
        "baseline-v1",
        "qwen2.5-coder-1.5b-program",
        "qwen2.5-coder-1.5b-program-v2",
        "qwen2.5-coder-1.5b-gold",
        "qwen2.5-coder-0.5b-gold",
    ],
)
def test_shipped_programs_keep_the_per_edge_formulation(name: str) -> None:
    program = resolve_program(name)
    assert program.options.attributes == "per-edge"
    assert type(program.attributes.signature).__name__ == type(EdgeExtractor().attributes.signature).__name__
    assert program.attributes.signature.instructions == EdgeExtractor().attributes.signature.instructions


# ------------------------------------------------------------------------------------------------
# The bench: attribute accuracy beside validAt accuracy, paired, with its cost, and the misses listed
# ------------------------------------------------------------------------------------------------


def labeled_episodes() -> list[Any]:
    from edgewise.domain.gold import LabeledEpisode

    base = episode().model_dump(by_alias=True, exclude={"nodes"})
    gold = [
        {"relationshipType": "WORKS_AT", "sourceEntityName": "Alice", "targetEntityName": "Acme Corp",
         "fact": "f", "attributes": {"role": "nurse", "years": None}},
        {"relationshipType": "LIVES_IN", "sourceEntityName": "Alice", "targetEntityName": "Berlin",
         "fact": "f", "attributes": {"with_whom": "Bob"}},
    ]  # fmt: skip
    return [
        LabeledEpisode.model_validate(
            base | {"id": f"conv-00{i}-1", "source": "conversational", "license": "CC-BY-4.0", "edges": gold}
        )
        for i in range(1, 5)
    ]


def bench_responder(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
    """The per-edge step names no one Alice lives with; the per-episode step gets both right."""
    if output_field(messages) != "attributes":
        return json.dumps({"edges": EDGES[:2]})
    if "facts" in str(messages[0]["content"]):
        return json.dumps({"attributes": [{"role": "Nurse", "years": None}, {"with_whom": "Bob"}]})
    fields = json.dumps(kwargs["response_format"]["json_schema"]["schema"])
    return json.dumps({"attributes": {"role": "nurse"} if '"role"' in fields else {"with_whom": "Carl"}})


def test_the_bench_reports_attribute_accuracy_paired_with_its_cost_and_lists_the_misses(tmp_path) -> None:
    from contextlib import contextmanager

    from edgewise.eval import run_bench
    from edgewise.eval.episode_log import read_predictions
    from edgewise.eval.error_log import read_errors
    from edgewise.runtime.lm import LMConfig

    @contextmanager
    def factory(config: LMConfig) -> Any:
        yield SchemaLM(bench_responder, model=config.model)

    programs = {
        "per-edge": EdgeExtractor(),
        "per-episode": EdgeExtractor(options=ProgramOptions(attributes="per-episode")),
    }
    report = run_bench(
        [LMConfig(model="fake/a")], programs, labeled_episodes(), workers=1, seed=0, out_dir=tmp_path,
        progress=False, lm_factory=factory, baseline="per-edge",
    )  # fmt: skip
    per_edge, per_episode = report.runs
    assert per_edge.scores.attribute_accuracy == pytest.approx(2 / 3)  # with_whom Carl is wrong
    assert per_edge.scores.attribute_precision == pytest.approx(1 / 2) and per_edge.calls_per_episode == 3
    assert per_episode.scores.attribute_accuracy == 1.0 and per_episode.calls_per_episode == 2
    paired = per_episode.comparison.attribute_accuracy
    assert paired is not None and paired.difference == pytest.approx(1 / 3) and paired.episodes == 4
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["runs"][0]["scores"]["attribute_total"] == 12
    assert results["runs"][0]["episodes"][0]["attribute_right"] == 2
    table = (tmp_path / "results.md").read_text()
    assert "| attribute acc | attribute prec |" in table and "Attributes on matched edges" in table
    row = next(line for line in table.splitlines() if line.startswith("| fake/a | per-episode | 12/12"))
    assert "+0.333 [+0.333, +0.333]" in row and "| 1.00 |" in row  # one attribute call per episode
    (miss,) = {(e["program"], e["id"]): e for e in read_errors(tmp_path / "errors.jsonl")}[
        ("per-edge", "conv-001-1")
    ]["wrongAttributes"]
    assert (miss["attribute"], miss["predictedValue"], miss["goldValue"]) == ("with_whom", "Carl", "Bob")
    line = next(p for p in read_predictions(tmp_path) if p.program == "per-edge")
    assert [e.wrong_attributes for e in line.edges] == [[], ["with_whom"]]
    page = (tmp_path / "results.html").read_text()
    assert '<span class="attr bad">with_whom=Carl</span>' in page
    assert "r0:wrongAttribute" in page and "r1:wrongAttribute" not in page
    assert "years=null" in page  # the gold's labeled null is shown


def test_a_program_variant_changes_the_option_and_keeps_what_the_program_learned(
    tmp_path, monkeypatch
) -> None:
    """benchmarks/program_variant.py: the shipped 1.5B program with another attribute formulation."""
    import importlib.util
    import sys

    folder = ROOT / "benchmarks"
    monkeypatch.syspath_prepend(str(folder))
    spec = importlib.util.spec_from_file_location("program_variant", folder / "program_variant.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    monkeypatch.setattr(
        sys, "argv", ["program_variant.py", "qwen2.5-coder-1.5b-program", str(tmp_path / "v"), "--set",
                      "attributes=in-extraction"],
    )  # fmt: skip
    script.main()
    source, built = resolve_program("qwen2.5-coder-1.5b-program"), load(tmp_path / "v")
    assert built.options == source.options.model_copy(update={"attributes": "in-extraction"})
    assert built.type_signatures == source.type_signatures
    assert built.extract.signature.instructions == source.extract.signature.instructions
    manifest = json.loads((tmp_path / "v" / "manifest.json").read_text())
    assert manifest["notes"]["variant_of"] == "qwen2.5-coder-1.5b-program"
    assert manifest["settings"]["program_options"]["attributes"] == "in-extraction"
    with pytest.raises(SystemExit, match="NAME=VALUE"):
        script.parse_changes(["attribute=per-episode"])


# ------------------------------------------------------------------------------------------------
# --optimizer program: the attributes lever, judged by attribute accuracy, tie-broken by LM calls
# ------------------------------------------------------------------------------------------------

CALLS_PER_EPISODE = {"per-edge": 3, "per-episode": 2, "in-extraction": 1}


def attribute_search(role_of: dict[str, str | None], edges_lost: frozenset[str] = frozenset()) -> Any:
    """The lever judged on 8 dev episodes by a fake `score`: each formulation writes `role_of[it]` as
    the role (the gold's is "nurse"), loses its WORKS_AT edge where listed, and makes its calls."""
    from edgewise.domain.types import ExtractionResult
    from edgewise.optimize.dev_scoring import dev_score
    from edgewise.optimize.program_search import search_program

    dev = labeled_episodes() + [
        e.model_copy(update={"id": e.id.replace("-1", "-2")}) for e in labeled_episodes()
    ]
    spent = [0]

    def score(candidate: EdgeExtractor, label: str) -> Any:
        formulation = candidate.options.attributes
        spent[0] += CALLS_PER_EPISODE[formulation] * len(dev)
        results = []
        for episode in dev:
            edges = [
                edge.model_copy(
                    update={
                        "attributes": {"role": role_of[formulation]} if edge.attributes.get("role") else {}
                    }
                )
                for edge in episode.edges
                if not (formulation in edges_lost and edge.relationship_type == "WORKS_AT")
            ]
            results.append(
                ExtractionResult(
                    edges=[Edge.model_validate(e.model_dump(include=set(Edge.model_fields))) for e in edges]
                )
            )
        return dev_score(dev, results)

    student = EdgeExtractor()
    program, _, results = search_program(
        student=student, before=score(student, "before"), score=score, signatures=TypeSignatures(), dev=dev,
        gold_demos=None, budget=None, calls_spent=lambda: spent[0], levers=("attributes",),
    )  # fmt: skip
    return program, results


def test_an_attribute_formulation_no_worse_and_cheaper_wins_and_the_cheapest_of_those() -> None:
    program, results = attribute_search(
        {"per-edge": "nurse", "per-episode": "nurse", "in-extraction": "nurse"}
    )
    assert [(r.value, r.stat, r.kept) for r in results] == [
        ("per-episode", "attribute_accuracy", False),
        ("in-extraction", "attribute_accuracy", True),
    ]
    assert program.options.attributes == "in-extraction"
    assert results[0].note.startswith("in-extraction was preferred: no worse, with fewer LM calls")
    assert (results[0].calls_per_episode, results[1].calls_per_episode) == (2.0, 1.0)
    assert "against 3.00" in results[1].note


def test_a_worse_formulation_is_not_kept_however_cheap() -> None:
    program, results = attribute_search(
        {"per-edge": "nurse", "per-episode": "nurse", "in-extraction": "cook"}
    )
    assert [(r.value, r.kept) for r in results] == [("per-episode", True), ("in-extraction", False)]
    assert program.options.attributes == "per-episode"
    assert results[1].difference < 0 and results[1].high < 0


def test_better_attributes_win_over_fewer_calls_and_edges_may_not_get_worse() -> None:
    program, results = attribute_search(
        {"per-edge": None, "per-episode": "nurse", "in-extraction": "nurse"},
        edges_lost=frozenset({"in-extraction"}),
    )
    assert program.options.attributes == "per-episode" and results[0].low > 0
    assert not results[1].kept and "edge-F1 paired -" in results[1].note  # it lost the WORKS_AT edges


def test_a_pick_that_changes_only_attributes_is_kept_by_the_statistic_it_was_judged_by() -> None:
    from edgewise.domain.types import ExtractionResult
    from edgewise.optimize.dev_scoring import dev_score
    from edgewise.optimize.metering import NO_USAGE
    from edgewise.optimize.selection import Scored, keep_if_better

    dev = labeled_episodes()

    def scored(role: str | None) -> Any:
        fields = set(Edge.model_fields) - {"attributes"}
        results = [
            ExtractionResult(
                edges=[Edge(**g.model_dump(include=fields), attributes={"role": role}) for g in episode.edges]
            )
            for episode in dev
        ]
        return dev_score(dev, results)

    student, compiled = EdgeExtractor(), EdgeExtractor(options=ProgramOptions(attributes="per-episode"))
    before, after = scored("cook"), scored("nurse")
    pick = Scored(compiled, after, NO_USAGE)
    kept, _, notes = keep_if_better(pick, student, before, lambda message: None)
    assert kept is student and notes["selected"] == "uncompiled"  # edge-F1 alone: no difference
    kept, _, notes = keep_if_better(pick, student, before, lambda message: None, ["attribute_accuracy"])
    assert kept is compiled and notes["selected"] == "compiled"
    assert notes["paired_dev_difference_by"]["stat"] == "attribute_accuracy"


def test_optimize_program_chooses_an_attribute_formulation_and_saves_it(tmp_path) -> None:
    import io

    from edgewise.optimize import OptimizeSettings, optimize

    gold_edges = [EDGES[0] | {"fact": "f"}, EDGES[1] | {"fact": "f"}]

    def respond(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
        system = str(messages[0]["content"])
        if output_field(messages) == "attributes":
            if "`facts`" in system:  # per episode: right
                return json.dumps({"attributes": [{"role": "nurse", "years": None}, {"with_whom": "Bob"}]})
            return json.dumps({"attributes": {"role": "cook", "years": None, "with_whom": "Carl"}})
        if "relationship_attributes" in system:  # in the extraction reply: wrong
            return json.dumps({"edges": [edge | {"attributes": {}} for edge in gold_edges]})
        return json.dumps({"edges": gold_edges})

    lm = ScriptedLM(respond)
    dev = labeled_episodes() + [
        e.model_copy(update={"id": e.id.replace("-1", "-2")}) for e in labeled_episodes()
    ]
    with lm_context(lm):
        report = optimize(
            task_lm=lm, train=labeled_episodes()[:2], dev=dev, out=tmp_path / "prog",
            settings=OptimizeSettings(optimizer="program", levers=("attributes",)), progress=io.StringIO(),
        )  # fmt: skip
    manifest = json.loads((tmp_path / "prog" / "manifest.json").read_text())
    assert manifest["settings"]["program_options"]["attributes"] == "per-episode"
    assert manifest["notes"]["selected"] == "compiled"
    assert manifest["notes"]["paired_dev_difference_by"]["stat"] == "attribute_accuracy"
    rows = {row["value"]: row for row in manifest["notes"]["levers"]}
    assert rows["per-episode"]["kept"] and not rows["in-extraction"]["kept"]
    assert rows["per-episode"]["dev_attribute_accuracy"] == 1.0
    assert load(tmp_path / "prog").options.attributes == "per-episode" and report.after is not None
