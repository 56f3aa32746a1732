"""Attribute grounding: a text value the episode does not state is dropped with a warning, and only then."""

from __future__ import annotations

import json
from typing import Any

from fakes import SchemaLM, output_field
from test_attribute_formulations import EDGES, episode

from edgewise.domain.types import Edge, ExtractionWarning
from edgewise.eval.attributes import value_key
from edgewise.modules.attribute_grounding import ground_attributes, value_items
from edgewise.modules.call_context import CallContext
from edgewise.modules.extractor import EdgeExtractor
from edgewise.modules.options import ProgramOptions
from edgewise.runtime.lm import lm_context


def edge(**attributes: Any) -> Edge:
    return Edge.model_validate(
        {"relationshipType": "WORKS_AT", "sourceEntityName": "Alice", "targetEntityName": "Acme Corp",
         "fact": "Alice works at Acme Corp.", "attributes": attributes}
    )  # fmt: skip


def grounded(*edges: Edge, content: str) -> tuple[list[Edge], list[ExtractionWarning]]:
    context = CallContext()
    return ground_attributes(list(edges), episode(episodeContent=content), context), context.warnings


def test_a_value_the_episode_states_is_kept_whatever_its_case_accents_articles_and_order() -> None:
    content = "Alice, the head of the Pédiatrie ward, lives with Bob and Chen."
    kept, warnings = grounded(
        edge(role="Head of Pediatrie ward", with_whom="chen & bob", years=3, remote=False), content=content
    )
    assert kept[0].attributes == {
        "role": "Head of Pediatrie ward", "with_whom": "chen & bob", "years": 3, "remote": False
    }  # fmt: skip
    assert warnings == []


def test_a_value_with_a_word_the_episode_lacks_is_dropped_with_a_warning_and_the_rest_kept() -> None:
    content = "Alice started at Acme Corp on Monday; Bob drove her."
    kept, warnings = grounded(edge(role="data analyst", with_whom="Bob"), edge(role="null"), content=content)
    assert [e.attributes for e in kept] == [{"with_whom": "Bob"}, {}]
    assert [w.code for w in warnings] == ["attribute_ungrounded", "attribute_ungrounded"]
    assert (
        "role='data analyst'" in warnings[0].message
        and warnings[0].edge["attributes"]["role"] == "data analyst"
    )


def test_a_value_must_be_whole_words_of_the_episode() -> None:
    kept, _ = grounded(edge(role="nurse"), content="Alice works at the nursery.")
    assert kept[0].attributes == {}


def test_the_metric_compares_values_by_the_same_items() -> None:
    assert value_key("Marco and Giulia") == value_items("giulia, marco") == frozenset({"marco", "giulia"})
    assert value_items("the") is None


def test_the_option_grounds_what_the_attribute_step_wrote_and_is_off_by_default() -> None:
    def respond(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
        if output_field(messages) == "attributes":
            return json.dumps({"attributes": {"role": "surgeon", "years": 3, "with_whom": "Bob"}})
        return json.dumps({"edges": EDGES})

    results = {}
    for on in (False, True):
        with lm_context(SchemaLM(respond)):
            results[on] = EdgeExtractor(options=ProgramOptions(attribute_grounding=on))(episode()).result
    assert [e.attributes for e in results[False].edges][:2] == [
        {"role": "surgeon", "years": 3},
        {"with_whom": "Bob"},
    ]
    assert [e.attributes for e in results[True].edges][:2] == [{"years": 3}, {"with_whom": "Bob"}]
    codes = [w.code for w in results[True].warnings]
    assert codes.count("attribute_ungrounded") == 1 and "attribute_ungrounded" not in [
        w.code for w in results[False].warnings
    ]
    assert ProgramOptions().attribute_grounding is False
    assert ProgramOptions(attribute_grounding=True).changed() == {"attribute_grounding": True}


def test_compile_keeps_grounding_when_it_lifts_dev_attribute_accuracy(tmp_path) -> None:
    import io

    from test_attribute_formulations import labeled_episodes

    from edgewise.optimize import OptimizeSettings, optimize
    from edgewise.programs.artifact import load

    dev = [
        e.model_copy(update={"id": f"conv-01{i}-1", "edges": [e.edges[0], e.edges[1].model_copy(update={"attributes": {"with_whom": None}})]})
        for i, e in enumerate(labeled_episodes() * 2)
    ]  # fmt: skip

    def respond(messages: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
        if output_field(messages) == "attributes":  # Carl is a guess: the episode never names him
            fields = json.dumps(kwargs["response_format"]["json_schema"]["schema"])
            return json.dumps(
                {"attributes": {"role": "nurse"} if '"role"' in fields else {"with_whom": "Carl"}}
            )
        return json.dumps({"edges": EDGES[:2]})

    lm = SchemaLM(respond)
    with lm_context(lm):
        optimize(
            task_lm=lm, train=dev[:2], dev=dev, out=tmp_path / "prog",
            settings=OptimizeSettings(optimizer="program", levers=("attribute_grounding",)), progress=io.StringIO(),
        )  # fmt: skip
    manifest = json.loads((tmp_path / "prog" / "manifest.json").read_text())
    (row,) = manifest["notes"]["levers"]
    assert (row["lever"], row["stat"], row["kept"]) == ("attribute_grounding", "attribute_accuracy", True)
    assert row["low"] > 0 and row["dev_attribute_accuracy"] == 1.0
    assert load(tmp_path / "prog").options.attribute_grounding is True


def test_the_replay_scores_the_bench_as_it_was_then_grounded_and_lists_each_changed_value(capsys) -> None:
    from benchmark_scripts import RESULTS, load_script

    from edgewise.eval.bench_records import BenchReport

    folders = sorted((RESULTS / "test-conversational-attributes-1.5b").glob("chunk-*"))
    runs = [
        r
        for folder in folders
        for r in BenchReport.model_validate_json((folder / "results.json").read_bytes()).runs
        if r.program == "qwen2.5-coder-1.5b-program"
    ]
    script = load_script("attribute_grounding_replay")
    assert script.main([*map(str, folders), "--programs", runs[0].program]) == 0
    report = capsys.readouterr().out
    (row,) = [
        line for line in report.splitlines() if line.startswith(f"| {runs[0].model} | {runs[0].program} |")
    ]
    cells = [cell.strip() for cell in row.split("|")[3:-1]]
    right = sum(r.scores.attribute_right for r in runs)
    total = sum(r.scores.attribute_total for r in runs)
    assert cells[0] == f"{right / total:.3f} ({right}/{total})"
    fixed, broke, still_wrong, _, _ = (int(n) for n in cells[5].split(" / "))
    assert cells[2] == f"{(right + fixed - broke) / total:.3f} ({right + fixed - broke}/{total})"
    changed = [line for line in report.splitlines() if line.startswith(f"| {runs[0].program} | conv-")]
    assert len(changed) == sum(int(n) for n in cells[5].split(" / ")) and fixed + broke + still_wrong > 0


def test_a_value_naming_the_edges_own_end_loses_that_name_and_nothing_else() -> None:
    content = "Alice moved in with Bob at Acme Corp's flat; her cat Acme Corp is a tabby."
    kept, warnings = grounded(edge(with_whom="Alice and Bob", breed="Acme Corp", role="Bob"), content=content)
    assert kept[0].attributes == {"with_whom": "Bob", "role": "Bob"}
    assert [w.code for w in warnings] == ["attribute_own_end", "attribute_own_end"]
    assert "'Bob' kept" in warnings[0].message and "dropped" in warnings[1].message


def test_an_own_end_is_matched_as_the_metric_matches_values() -> None:
    kept, warnings = grounded(edge(with_whom="alice, Bob & Chen"), content="Alice lives with Bob and Chen.")
    assert kept[0].attributes == {"with_whom": "Bob and Chen"} and len(warnings) == 1
