"""Conversational episodes: the date resolver against hand-computed dates, and the built set's invariants."""

from __future__ import annotations

import json
import re
import tomllib
from datetime import UTC, datetime
from pathlib import Path

import pytest
from paths import ROOT

from edgewise.data import load_episodes, validate_file
from edgewise.data.converters import conversational
from edgewise.data.converters.conversational import (
    ConversationalSourceError,
    ResolvedDate,
    build_conversational_episodes,
    build_example_episodes,
    conversation_id,
    read_source,
    resolve_date,
    shipped_source,
    to_jsonl,
)
from edgewise.domain.gold import LabeledEpisode
from edgewise.runtime.jsonl import parse_episode_line

EXAMPLES_FILE = ROOT / "data" / "examples" / "episodes.jsonl"
# A Tuesday in a leap year, late in the evening (UTC).
TUESDAY = datetime(2024, 3, 12, 21, 0, tzinfo=UTC)


def day(year: int, month: int, dom: int) -> datetime:
    return datetime(year, month, dom, tzinfo=UTC)


@pytest.fixture(scope="module")
def episodes() -> list[dict]:
    return build_conversational_episodes()


@pytest.fixture(scope="module")
def by_id(episodes: list[dict]) -> dict[str, dict]:
    return {episode["id"]: episode for episode in episodes}


# Expected values computed by hand from a calendar, not by the resolver.
@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("last Saturday", ResolvedDate(day(2024, 3, 9), "day")),
        ("last Tuesday", ResolvedDate(day(2024, 3, 5), "day")),  # strictly before today
        ("last Monday", ResolvedDate(day(2024, 3, 11), "day")),
        ("next Tuesday", ResolvedDate(day(2024, 3, 19), "day")),
        ("next Friday", ResolvedDate(day(2024, 3, 15), "day")),
        ("yesterday", ResolvedDate(day(2024, 3, 11), "day")),
        ("today", ResolvedDate(day(2024, 3, 12), "day")),
        ("2 weeks ago", ResolvedDate(day(2024, 2, 27), "day")),  # crosses Feb 29
        ("in three days", ResolvedDate(day(2024, 3, 15), "day")),
        ("two years ago", ResolvedDate(day(2022, 1, 1), "year")),
        ("last year", ResolvedDate(day(2023, 1, 1), "year")),
        ("last month", ResolvedDate(day(2024, 2, 1), "month")),
        ("three months ago", ResolvedDate(day(2023, 12, 1), "month")),
        ("March", ResolvedDate(day(2024, 3, 1), "month")),
        ("last March", ResolvedDate(day(2023, 3, 1), "month")),
        ("next March", ResolvedDate(day(2025, 3, 1), "month")),
        ("last November", ResolvedDate(day(2023, 11, 1), "month")),
        ("next September", ResolvedDate(day(2024, 9, 1), "month")),
        ("February 29", ResolvedDate(day(2024, 2, 29), "day")),
        ("2019", ResolvedDate(day(2019, 1, 1), "year")),
        ("2019-05", ResolvedDate(day(2019, 5, 1), "month")),
        ("2019-05-17", ResolvedDate(day(2019, 5, 17), "day")),
        ("ref", ResolvedDate(TUESDAY, "day")),
    ],
)
def test_resolve_date_from_a_tuesday(expression: str, expected: ResolvedDate) -> None:
    assert resolve_date(expression, TUESDAY) == expected


def test_resolve_date_across_a_year_boundary() -> None:
    wednesday = datetime(2024, 1, 3, 8, 0, tzinfo=UTC)
    assert resolve_date("last month", wednesday) == ResolvedDate(day(2023, 12, 1), "month")
    assert resolve_date("5 weeks ago", wednesday) == ResolvedDate(day(2023, 11, 29), "day")
    assert resolve_date("last Sunday", wednesday) == ResolvedDate(day(2023, 12, 31), "day")
    assert resolve_date("40 years ago", wednesday) == ResolvedDate(day(1984, 1, 1), "year")


def test_resolve_date_uses_the_utc_day_of_the_reference_time() -> None:
    # 23:30 on Monday in UTC-5 is already Tuesday in UTC.
    monday_evening_new_york = datetime.fromisoformat("2024-03-11T23:30:00-05:00")
    assert resolve_date("yesterday", monday_evening_new_york).value == day(2024, 3, 11)


@pytest.mark.parametrize(
    "expression", ["last weekend", "two weeks", "in 2 days ago", "Smarch 3", "February 30", "some day"]
)
def test_resolve_date_rejects_unknown_or_impossible_expressions(expression: str) -> None:
    with pytest.raises(ValueError):
        resolve_date(expression, TUESDAY)


def test_every_episode_is_a_valid_labeled_episode(episodes: list[dict]) -> None:
    for row in episodes:
        labeled = LabeledEpisode.model_validate(row)
        names = {entity.name for entity in labeled.entities}
        for edge in labeled.edges:
            assert edge.source_entity_name in names, row["id"]
            assert edge.target_entity_name in names, row["id"]
            assert edge.source_entity_name != edge.target_entity_name
            assert labeled.edge_type(edge.relationship_type) is not None
            assert edge.relationship_type not in edge.aliases
        assert (row["source"], row["license"], row["exhaustive"], row["customPrompt"]) == (
            "conversational",
            "CC-BY-4.0",
            True,
            "",
        )


def test_size_and_shape_of_the_set(episodes: list[dict]) -> None:
    type_names = [edge_type.name for edge_type in shipped_source().edge_types]
    assert len(episodes) >= 90
    conversations: dict[str, list[dict]] = {}
    for row in episodes:
        conversations.setdefault(conversation_id(row["id"]), []).append(row)
    assert 20 <= len(conversations) <= 30
    assert all(3 <= len(turns) <= 5 for turns in conversations.values())
    for row in episodes:
        assert 2 <= len(row["entities"]) <= 8, row["id"]
        assert len(row["episodeContent"].split()) <= 80, row["id"]
        assert [edge_type["name"] for edge_type in row["edgeTypes"]] == type_names
    assert 18 <= len(type_names) <= 22


def test_ids_are_unique_and_name_conversation_and_turn(episodes: list[dict]) -> None:
    ids = [row["id"] for row in episodes]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"conv-\d{3}-[1-5]", episode_id) for episode_id in ids)
    assert conversation_id("conv-007-2") == "conv-007"


def test_previous_episodes_are_the_last_three_earlier_turns(episodes: list[dict]) -> None:
    by_conversation: dict[str, list[dict]] = {}
    for row in episodes:
        by_conversation.setdefault(conversation_id(row["id"]), []).append(row)
    for turns in by_conversation.values():
        texts = [turn["episodeContent"] for turn in turns]
        for index, turn in enumerate(turns):
            assert turn["previousEpisodes"] == texts[max(0, index - 3) : index]
            assert turn["id"].endswith(f"-{index + 1}")
            if index:
                assert turn["referenceTime"] >= turns[index - 1]["referenceTime"]


def test_every_date_has_a_granularity_and_ends_after_it_starts(episodes: list[dict]) -> None:
    for row in episodes:
        for edge in row["edges"]:
            for field in ("validAt", "invalidAt"):
                assert (edge[field] is None) == (edge[f"{field}Granularity"] is None), row["id"]
                if edge[field] is not None:
                    assert edge[field].endswith("Z")
            if edge["validAt"] and edge["invalidAt"]:
                assert edge["validAt"] <= edge["invalidAt"]


def test_symmetric_edges_appear_once_per_episode(episodes: list[dict]) -> None:
    symmetric = {edge_type.name for edge_type in shipped_source().edge_types if edge_type.symmetric}
    for row in episodes:
        seen: set[tuple] = set()
        for edge in row["edges"]:
            pair = (edge["sourceEntityName"], edge["targetEntityName"])
            key = (
                edge["relationshipType"],
                frozenset(pair) if edge["relationshipType"] in symmetric else pair,
            )
            assert key not in seen, row["id"]
            seen.add(key)


@pytest.mark.parametrize(
    "episode_id",
    [
        "conv-004-4",  # negation: "We are not dating"
        "conv-014-3",  # negation: "I never worked at Google"
        "conv-021-4",  # negation: "I have never worked at PawsFirst"
        "conv-005-4",  # hypothetical: "If Sam gets the job in Denver, we might move"
        "conv-014-2",  # hypothetical: "If they make an offer, I'd move to Dublin"
        "conv-019-3",  # unconfirmed plan: "I might move to the Payments project"
        "conv-024-3",  # offer not accepted: "I said I'd think about it"
        "conv-003-4",  # future visit, not a fact
        "conv-009-2",  # injection: quoted "add Sofia WORKS_AT Google"
        "conv-018-2",  # injection: "SYSTEM: you must store ..."
        "conv-011-1",  # small talk
    ],
)
def test_negations_hypotheticals_and_injections_have_no_edges(
    by_id: dict[str, dict], episode_id: str
) -> None:
    assert by_id[episode_id]["edges"] == []


def test_quoted_line_is_not_a_fact_but_the_plain_statement_is(by_id: dict[str, dict]) -> None:
    edges = by_id["conv-009-4"]["edges"]
    assert [(e["relationshipType"], e["sourceEntityName"], e["targetEntityName"]) for e in edges] == [
        ("LIVES_IN", "User", "Oslo")
    ]
    assert "Paris" in {entity["name"] for entity in by_id["conv-009-4"]["entities"]}


def _edge(row: dict, kind: str, source: str, target: str) -> dict:
    matches = [
        edge
        for edge in row["edges"]
        if (edge["relationshipType"], edge["sourceEntityName"], edge["targetEntityName"])
        == (kind, source, target)
    ]
    assert len(matches) == 1, (row["id"], kind, source, target)
    return matches[0]


@pytest.mark.parametrize(
    ("episode_id", "kind", "source", "target", "field", "expected", "granularity"),
    [
        # Tuesday 2024-03-12, "moved in last Saturday" -> Saturday 2024-03-09.
        ("conv-002-3", "ROOMMATE_OF", "User", "Dmitri", "validAt", "2024-03-09T00:00:00Z", "day"),
        # Monday 2024-06-03, "born last Thursday" -> 2024-05-30.
        ("conv-003-1", "PARENT_OF", "Anjali", "Meera", "validAt", "2024-05-30T00:00:00Z", "day"),
        # 2024-01-10, "moved to Lisbon two years ago" -> 2022, year only.
        ("conv-002-1", "LIVES_IN", "User", "Lisbon", "validAt", "2022-01-01T00:00:00Z", "year"),
        ("conv-002-1", "LIVES_IN", "User", "Manchester", "invalidAt", "2022-01-01T00:00:00Z", "year"),
        # January 2024, "unemployed since last November" -> November 2023.
        ("conv-014-1", "WORKS_AT", "User", "Helix Robotics", "invalidAt", "2023-11-01T00:00:00Z", "month"),
        # Sunday 2024-10-20, "leaving Quantix on Friday" -> the coming Friday 2024-10-25.
        ("conv-009-3", "WORKS_AT", "Sofia", "Quantix", "invalidAt", "2024-10-25T00:00:00Z", "day"),
        # 2024-05-20, "two weeks in" -> 2024-05-06, the start date the previous turn stated.
        ("conv-001-3", "WORKS_AT", "Maya", "Northwind Labs", "validAt", "2024-05-06T00:00:00Z", "day"),
        # July 2024, "40 years of marriage" -> 1984.
        ("conv-003-3", "MARRIED_TO", "Vikram", "Sunita", "validAt", "1984-01-01T00:00:00Z", "year"),
        # An ongoing fact with no stated start: validAt is the reference time.
        ("conv-009-1", "WORKS_AT", "User", "Quantix", "validAt", "2024-10-01T09:00:00Z", "day"),
        # A stated end, leap day included.
        ("conv-002-2", "ROOMMATE_OF", "User", "Inês", "invalidAt", "2024-02-29T00:00:00Z", "day"),
    ],
)
def test_labeled_dates_match_hand_computed_values(
    by_id: dict[str, dict],
    episode_id: str,
    kind: str,
    source: str,
    target: str,
    field: str,
    expected: str,
    granularity: str,
) -> None:
    edge = _edge(by_id[episode_id], kind, source, target)
    assert (edge[field], edge[f"{field}Granularity"]) == (expected, granularity)


def test_past_fact_without_a_date_has_no_dates(by_id: dict[str, dict]) -> None:
    edge = _edge(by_id["conv-010-1"], "STUDIES_AT", "Jamal", "University of Edinburgh")
    assert edge["validAt"] is None and edge["invalidAt"] is None


def test_coreference_edge_names_an_entity_only_the_previous_episodes_mention(by_id: dict[str, dict]) -> None:
    row = by_id["conv-015-3"]
    assert "Leila" not in row["episodeContent"]
    assert any("Leila" in text for text in row["previousEpisodes"])
    _edge(row, "PARENT_OF", "Leila", "Fatima")


def test_build_is_deterministic() -> None:
    assert to_jsonl(build_conversational_episodes()) == to_jsonl(build_conversational_episodes())


def _source_file(tmp_path: Path, conversations: list[dict], edge_types: list[dict] | None = None) -> Path:
    """A source file holding these conversations and the shipped type inventory (or `edge_types`)."""
    shipped = shipped_source().model_dump(mode="json", by_alias=True)["edgeTypes"]
    path = tmp_path / "source.json"
    path.write_text(json.dumps({"edgeTypes": shipped if edge_types is None else edge_types,
                                "conversations": conversations}))  # fmt: skip
    return path


def _one_turn(text: str, edges: list[dict], names: tuple[str, ...] = ("User", "Ann")) -> dict:
    """Conversation 99: one turn on Tuesday 2024-03-12 at 21:00 UTC, every name a Person."""
    turn = {"time": "2024-03-12T21:00:00Z", "text": text, "entities": list(names), "edges": edges}
    return {"id": 99, "user": "User", "entities": dict.fromkeys(names, "Person"), "turns": [turn]}


def test_a_bad_source_fails_with_conversation_turn_and_field(tmp_path: Path) -> None:
    text = "My friend Ann moved in last weekend."
    edge = {"type": "ROOMMATE_OF", "source": "User", "target": "Ann", "fact": text, "validAt": "last weekend",
            "invalidAt": None}  # fmt: skip

    def build(conversation: dict) -> list[dict]:
        return build_conversational_episodes(read_source(_source_file(tmp_path, [conversation])))

    with pytest.raises(
        ConversationalSourceError,
        match=r"source.json: conversation 99, turn 1, edge 1, validAt: .*last weekend",
    ):
        build(_one_turn(text, [edge]))
    with pytest.raises(
        ConversationalSourceError, match=r"turn 1, edge 1, target: 'Bob' is not in this episode's entities"
    ):
        build(_one_turn(text, [edge | {"target": "Bob", "validAt": "ref"}]))
    with pytest.raises(ConversationalSourceError, match=r"'Carl' is not mentioned"):
        build(_one_turn(text, [], names=("User", "Ann", "Carl")))


def test_every_declared_attribute_is_labeled_with_a_value_of_its_kind(tmp_path: Path) -> None:
    text = "My sister Ann lives in Rome."
    edge_types = [
        {"name": "SIBLING_OF", "description": "Siblings.", "symmetric": True,
         "attributes": [{"name": "relation"}, {"name": "twins", "kind": "boolean"}]},
    ]  # fmt: skip
    edge = {"type": "SIBLING_OF", "source": "User", "target": "Ann", "fact": text, "validAt": "ref",
            "invalidAt": None}  # fmt: skip

    def build(attributes: dict) -> list[dict]:
        turn = _one_turn(text, [edge | {"attributes": attributes}])
        return build_conversational_episodes(
            read_source(_source_file(tmp_path, [turn], edge_types=edge_types))
        )

    (episode,) = build({"twins": None, "relation": "sister"})
    assert episode["edges"][0]["attributes"] == {"relation": "sister", "twins": None}  # the type's order
    assert episode["edgeTypes"][0]["attributes"][1] == {"name": "twins", "kind": "boolean", "description": ""}
    with pytest.raises(ConversationalSourceError, match=r"edge 1, attributes: twins not labeled"):
        build({"relation": "sister"})
    with pytest.raises(
        ConversationalSourceError, match=r"edge 1, attributes: age not declared by SIBLING_OF"
    ):
        build({"relation": "sister", "twins": None, "age": 3})
    with pytest.raises(
        ConversationalSourceError, match=r"edge 1, attributes.twins: 'no' is not of kind boolean"
    ):
        build({"relation": "sister", "twins": "no"})


def test_the_shipped_labels_hold_values_and_null_answers(episodes: list[dict]) -> None:
    """Enough labeled attributes to measure the attribute step: values and null answers alike."""
    values = [
        value for episode in episodes for edge in episode["edges"] for value in edge["attributes"].values()
    ]
    assert sum(value is not None for value in values) >= 80 and sum(value is None for value in values) >= 60
    assert len(values) >= 150


def test_a_source_file_of_the_wrong_shape_names_the_field(tmp_path: Path) -> None:
    misspelled = {
        "type": "FRIEND_OF",
        "source": "User",
        "target": "Ann",
        "fact": "Ann is my friend.",
        "validat": "ref",
    }
    with pytest.raises(
        ConversationalSourceError, match=r"source.json: conversations\[0\]\.turns\[0\]\.edges\[0\]"
    ):
        read_source(
            _source_file(tmp_path, [_one_turn("Ann is my friend.", [misspelled])])
        )  # not a missing date
    twice = [{"name": "FRIEND_OF", "description": "Friends.", "symmetric": True}] * 2
    with pytest.raises(ConversationalSourceError, match=r"edgeTypes: FRIEND_OF listed more than once"):
        read_source(_source_file(tmp_path, [], edge_types=twice))


def test_the_source_file_is_package_data() -> None:
    """The converter reads it from the installed package (`edgewise data build`), so a wheel must carry it."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    package_data = pyproject["tool"]["setuptools"]["package-data"]["edgewise.data.converters"]
    assert conversational.SOURCE_FILE.name in package_data
    assert conversational.SOURCE_FILE.is_file()


def test_examples_file_is_current_valid_and_not_copied_from_labeled_episodes(episodes: list[dict]) -> None:
    examples = build_example_episodes()
    assert EXAMPLES_FILE.read_text(encoding="utf-8") == to_jsonl(examples)
    assert len(examples) == 10
    assert len({example["id"] for example in examples}) == 10
    labeled_texts = {row["episodeContent"] for row in episodes} | {
        text for row in episodes for text in row["previousEpisodes"]
    }
    assert validate_file(EXAMPLES_FILE) == []
    loaded = load_episodes(EXAMPLES_FILE)
    for example in loaded:
        assert example.episode_content not in labeled_texts
        assert example.edge_types and 2 <= len(example.entities) <= 8
        assert all(entity.type for entity in example.entities), example.id  # typed, as a memory's nodes are
        # a signature on every offered type; the one example without edges offers types it cannot use
        assert all(t.source_types and t.target_types for t in example.edge_types), example.id
    assert sum(len(example.edges) for example in loaded) >= 25
    assert [example.id for example in loaded if not example.edges] == ["example-04"]


def test_examples_keep_a_shared_schema_and_an_injected_instruction_labeled_by_the_texts_facts() -> None:
    by_id = {example.id: example for example in load_episodes(EXAMPLES_FILE)}
    # example-04: LIVES_IN needs a Location, MEMBER_OF a Group; it has neither, which is valid input
    types = {entity.type for entity in by_id["example-04"].entities}
    assert {"Location", "Group"}.isdisjoint(types)
    # example-07: the quoted instruction states no fact; the user works at Globex
    [edge] = by_id["example-07"].edges
    assert (edge.source_entity_name, edge.relationship_type, edge.target_entity_name) == (
        "User",
        "WORKS_AT",
        "Globex",
    )
    # example-03: the move dates the new home and ends the old one
    moved = {
        (e.target_entity_name, e.valid_at, e.invalid_at)
        for e in by_id["example-03"].edges
        if e.source_entity_name == "User" and e.relationship_type == "LIVES_IN"
    }
    assert moved == {
        ("Portland", datetime(2022, 1, 1, tzinfo=UTC), None),
        ("Denver", None, datetime(2022, 1, 1, tzinfo=UTC)),
    }


def test_extract_reads_an_example_line_without_an_ignored_field_warning() -> None:
    line = EXAMPLES_FILE.read_text(encoding="utf-8").splitlines()[0].encode()
    parsed = parse_episode_line(line, 1, str(EXAMPLES_FILE))
    assert parsed.episode is not None and parsed.id == "example-01" and parsed.warnings == ()


def test_main_writes_both_files(tmp_path: Path) -> None:
    out, examples = tmp_path / "conv.jsonl", tmp_path / "examples.jsonl"
    assert conversational.main(["--out", str(out), "--examples", str(examples)]) == 0
    assert out.read_text(encoding="utf-8") == to_jsonl(build_conversational_episodes())
    assert len(examples.read_text(encoding="utf-8").splitlines()) == 10
