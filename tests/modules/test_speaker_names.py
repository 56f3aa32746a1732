"""Speaker names, offline: the alias edges a transcript's forms of address and introductions give, the
names they must leave alone, the option through the extractor, and the diagnosis of benched misses."""

from __future__ import annotations

from typing import Any

from benchmark_scripts import RESULTS, load_script
from fakes import ScriptedLM, edge, edges_reply

from edgewise.domain.episode import Episode
from edgewise.domain.types import Edge
from edgewise.eval.bench_records import BenchReport
from edgewise.modules.call_context import CallContext
from edgewise.modules.extractor import EdgeExtractor
from edgewise.modules.options import ProgramOptions
from edgewise.modules.speaker_names import add_speaker_names
from edgewise.runtime.lm import lm_context

ALIAS = {"name": "ALSO_KNOWN_AS", "description": "both names refer to the same person", "symmetric": True}
LIKES = {"name": "LIKES", "description": "the subject likes the object"}


def transcript(text: str, names: dict[str, str], edge_types: list[dict[str, Any]] | None = None) -> Episode:
    speakers = sorted({line.split(":", 1)[0] for line in text.splitlines()})
    return Episode.model_validate(
        {
            "episodeContent": text,
            "entities": [{"name": s, "type": "Person"} for s in speakers]
            + [{"name": name, "type": kind} for name, kind in names.items()],
            "referenceTime": "2024-01-01T00:00:00Z",
            "edgeTypes": [ALIAS, LIKES] if edge_types is None else edge_types,
        }
    )


def aliases(episode: Episode, edges: list[Edge] | None = None) -> tuple[list[tuple[str, str]], list[str]]:
    context = CallContext()
    warnings = context.warnings
    found = add_speaker_names(edges or [], episode, context)
    pairs = [
        (e.source_entity_name, e.target_entity_name) for e in found if e.relationship_type == "ALSO_KNOWN_AS"
    ]
    return pairs, [w.code for w in warnings]


def test_a_name_called_out_is_the_speaker_who_answers() -> None:
    episode = transcript(
        "Speaker 1: Hey, so do you guys wanna go see a movie?\nSpeaker 1: Pheebs?\nSpeaker 2: No thanks.",
        {"Pheebs": "Person"},
    )
    assert aliases(episode) == ([("Pheebs", "Speaker 2")], ["speaker_named"])


def test_a_name_addressed_at_the_end_of_a_turn_is_the_previous_speaker_when_no_one_else_answers() -> None:
    episode = transcript(
        "Speaker 1: It's all taken care of.\nSpeaker 2: Ross, thank you.", {"Ross": "Person"}
    )
    assert aliases(episode)[0] == [("Ross", "Speaker 1")]


def test_a_speaker_who_introduces_themselves_is_that_name() -> None:
    episode = transcript(
        "Speaker 1: Hi Monica, it's Chip.\nSpeaker 2: Yesss!!", {"Chip": "Person", "Monica": "Person"}
    )
    assert sorted(aliases(episode)[0]) == [("Chip", "Speaker 1"), ("Monica", "Speaker 2")]


def test_the_edge_quotes_the_turn_that_gives_the_name() -> None:
    episode = transcript("Speaker 1: Pheebs?\nSpeaker 2: No thanks.", {"Pheebs": "Person"})
    (added,) = add_speaker_names([], episode, CallContext())
    assert (added.fact, added.valid_at, added.invalid_at) == ("Speaker 1: Pheebs?", None, None)


def test_names_that_are_not_people_or_are_forms_of_address_or_go_to_two_speakers_give_nothing() -> None:
    episode = transcript(
        "Speaker 1: Where did you grow up?\nSpeaker 2: Cleveland.\nSpeaker 1: Oh, honey.\nSpeaker 2: Yes?\n"
        "Speaker 3: Hey, Joey!\nSpeaker 1: Hi.\nSpeaker 2: Joey?\nSpeaker 3: What?",
        {"Cleveland": "Location", "honey": "Person", "Joey": "Person"},
    )
    assert aliases(episode) == ([], [])


def test_an_episode_without_an_alias_type_or_without_labelled_turns_gets_no_edge() -> None:
    no_type = transcript(
        "Speaker 1: Pheebs?\nSpeaker 2: No thanks.", {"Pheebs": "Person"}, edge_types=[LIKES]
    )
    assert aliases(no_type) == ([], [])
    prose = Episode.model_validate(
        {
            "episodeContent": "Ana said: Pheebs? Then Ben left.",
            "entities": [{"name": "Ana", "type": "Person"}, {"name": "Pheebs", "type": "Person"}],
            "referenceTime": "2024-01-01T00:00:00Z",
            "edgeTypes": [ALIAS],
        }
    )
    assert aliases(prose) == ([], [])


def test_an_alias_the_model_already_wrote_is_not_added_again() -> None:
    episode = transcript("Speaker 1: Pheebs?\nSpeaker 2: No thanks.", {"Pheebs": "Person"})
    written = Edge(
        relationship_type="ALSO_KNOWN_AS",
        source_entity_name="Speaker 2",
        target_entity_name="Pheebs",
        fact="x",
    )
    assert aliases(episode, [written]) == ([("Speaker 2", "Pheebs")], [])


def test_the_option_adds_the_speaker_names_and_is_off_by_default() -> None:
    episode = transcript("Speaker 1: Pheebs?\nSpeaker 2: No thanks.", {"Pheebs": "Person"})
    reply = edges_reply(edge("Speaker 1", "LIKES", "Pheebs", "Speaker 1 likes Pheebs"))
    with lm_context(ScriptedLM([reply, reply])):
        off = EdgeExtractor()(episode).result
        on = EdgeExtractor(options=ProgramOptions(speaker_names=True))(episode).result
    assert [e.relationship_type for e in off.edges] == ["LIKES"]
    assert [(e.relationship_type, e.source_entity_name, e.target_entity_name) for e in on.edges] == [
        ("LIKES", "Speaker 1", "Pheebs"),
        ("ALSO_KNOWN_AS", "Pheebs", "Speaker 2"),
    ]
    assert ProgramOptions(speaker_names=True).changed() == {"speaker_names": True}


def test_the_diagnosis_puts_every_gold_edge_in_one_kind_and_finds_what_the_bench_found(capsys) -> None:
    folder = RESULTS / "test-dialogre-program-1.5b"
    benched = BenchReport.model_validate_json((folder / "results.json").read_bytes())
    (run,) = [r for r in benched.runs if r.program == "baseline-v1"]
    assert load_script("diagnose_misses").main([str(folder), "--programs", run.program]) == 0
    kinds = capsys.readouterr().out.split("## Gold edges by what became of them")[1]
    (row,) = [
        line for line in kinds.splitlines() if line.startswith(f"| {run.model} | baseline-v1 | dialogre |")
    ]
    counts = [int(cell.split()[0]) for cell in row.strip("|").split("|")[3:]]
    assert counts[0] == run.scores.tp and sum(counts) == run.scores.tp + run.scores.fn
