"""Hand-written conversational files: checked like the main source, built into their declared split, counted."""

from __future__ import annotations

import json
import tomllib
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
from paths import ROOT

from edgewise.data.converters import conversational
from edgewise.data.converters.conversational import (
    GENRES,
    HandwrittenEpisode,
    build_handwritten_episodes,
    check_handwritten,
    shipped_source,
)
from edgewise.data.converters.pipeline import default_raw_dir, episode_line
from edgewise.data.converters.splits import append_declared, group_key
from edgewise.data.stats import format_spread, handwritten_spread
from edgewise.domain.gold import GoldEdge, LabeledEpisode
from edgewise.domain.types import Entity


def _turn(time: str, text: str, entities: list[str], edges: list[dict], kind: list[str]) -> dict:
    return {"time": time, "text": text, "entities": entities, "edges": edges, "kind": kind}


def _works_at(source: str, target: str, fact: str, valid_at: str | None = "ref", **extra: object) -> dict:
    edge = {"type": "WORKS_AT", "source": source, "target": target, "fact": fact, "validAt": valid_at,
            "invalidAt": None, "attributes": {"role": None}}  # fmt: skip
    return edge | extra


def good_conversation(number: int = 150) -> dict:
    """Two turns: an email that states a job, then a diary entry in German that ends it."""
    return {
        "id": number,
        "user": "Nadia",
        "entities": {"Nadia": "Person", "Kettle & Crane": "Organization", "Lyon": "Location"},
        "turns": [
            _turn("2024-03-12T21:00:00Z", "Hi all, Nadia here: I joined Kettle & Crane in Lyon last Monday.",
                  ["Nadia", "Kettle & Crane", "Lyon"],
                  [_works_at("Nadia", "Kettle & Crane", "Nadia joined Kettle & Crane last Monday.", "last Monday"),
                   {"type": "LOCATED_IN", "source": "Kettle & Crane", "target": "Lyon",
                    "fact": "Kettle & Crane is in Lyon.", "validAt": "ref", "invalidAt": None}],
                  ["email", "relative_date"]),
            _turn("2024-05-02T08:00:00Z", "Heute war mein letzter Tag bei Kettle & Crane.",
                  ["Nadia", "Kettle & Crane"],
                  [_works_at("Nadia", "Kettle & Crane", "Nadias letzter Tag bei Kettle & Crane war heute.",
                             None, invalidAt="today")],
                  ["diary", "non_english", "ended_relation"]),
        ],
    }  # fmt: skip


def write(folder: Path, name: str, conversations: list[dict], split: str = "train") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps({"split": split, "conversations": conversations}), encoding="utf-8")
    return path


def test_the_shipped_hand_written_files_pass_every_check() -> None:
    built, problems = check_handwritten()
    assert problems == []
    ids = [item.episode["id"] for item in built]
    assert len(ids) == len(set(ids))
    main_keys = {group_key(f"conv-{c.id:03d}-1", "conversational") for c in shipped_source().conversations}
    assert not main_keys & {group_key(i, "conversational") for i in ids}
    assert all(item.kind[0] in GENRES and item.split in ("train", "dev") for item in built)
    assert all(item.episode["source"] == "conversational" for item in built)


def test_a_good_file_becomes_episodes_of_its_split_with_conversation_ids(tmp_path: Path) -> None:
    write(tmp_path, "mine.json", [good_conversation()], split="dev")
    first, second = build_handwritten_episodes(tmp_path)
    assert (first.split, first.kind, first.file) == (
        "dev",
        ("email", "relative_date"),
        str(tmp_path / "mine.json"),
    )
    assert [first.episode["id"], second.episode["id"]] == ["conv-150-1", "conv-150-2"]
    assert second.episode["previousEpisodes"] == [first.episode["episodeContent"]]
    # Tuesday 2024-03-12: "last Monday" is 2024-03-11; "today" on 2024-05-02 ends the job.
    assert first.episode["edges"][0]["validAt"] == "2024-03-11T00:00:00Z"
    assert second.episode["edges"][0]["invalidAt"] == "2024-05-02T00:00:00Z"
    LabeledEpisode.model_validate(second.episode)


def test_every_problem_is_reported_with_file_conversation_turn_and_field(tmp_path: Path) -> None:
    bad = good_conversation(151)
    bad["turns"][1]["edges"][0]["invalidAt"] = "the other day"
    bad["turns"][1]["edges"].append(_works_at("Nadia", "Lyon", "Nadia works in Lyon."))
    bad["turns"][1]["kind"] = ["non_english"]
    misspelled = good_conversation(152)
    misspelled["turns"][0]["edges"][1]["validat"] = "ref"
    write(tmp_path, "a.json", [bad])
    write(tmp_path, "b.json", [misspelled])
    _, problems = check_handwritten(tmp_path)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert problems == [
        f"{a}: conversation 151, turn 2, kind: the first tag must be one of {', '.join(GENRES)}",
        f"{a}: conversation 151, turn 2, edge 1, invalidAt: unknown date expression 'the other day'",
        f"{a}: conversation 151, turn 2, edge 2, target: 'Lyon' is not in this episode's entities",
        f"{b}: conversation 152, turn 1, edge 2, validat: Extra inputs are not permitted",
    ]
    with pytest.raises(conversational.ConversationalSourceError, match=r"4 problem\(s\)"):
        build_handwritten_episodes(tmp_path)


def test_an_edge_must_fit_its_types_signature(tmp_path: Path) -> None:
    conversation = good_conversation()
    edge = conversation["turns"][0]["edges"][1]
    edge.update(type="LIVES_IN", attributes={"with_whom": None})  # an Organization does not live anywhere
    write(tmp_path, "mine.json", [conversation])
    _, problems = check_handwritten(tmp_path)
    assert problems == [
        f"{tmp_path / 'mine.json'}: conversation 150, turn 1, edge 2, source: 'Kettle & Crane' is of type"
        + " Organization, and LIVES_IN takes Person as its source"
    ]


def test_ids_are_unique_across_files_and_the_main_source_and_test_is_not_a_split(tmp_path: Path) -> None:
    write(tmp_path, "a.json", [good_conversation(3), good_conversation(160)])
    write(tmp_path, "b.json", [good_conversation(160)])
    write(tmp_path, "c.json", [good_conversation(161)], split="test")
    _, problems = check_handwritten(tmp_path)
    a, b, c = (tmp_path / name for name in ("a.json", "b.json", "c.json"))
    assert problems[:2] == [
        f"{a}: conversation 3: id already used in data/converters/conversational_source.json",
        f"{b}: conversation 160: id already used in {a}",
    ]
    assert len(problems) == 3 and problems[2].startswith(f"{c}: split: Input should be 'train' or 'dev'")


def test_the_check_entry_point_prints_problems_and_counts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "good", "mine.json", [good_conversation()])
    assert conversational.main(["--check-handwritten", str(tmp_path / "good")]) == 0
    err = capsys.readouterr().err
    assert "mine.json: train, 1 conversations, 2 episodes, 3 gold edges" in err
    assert "no problems" in err
    broken = good_conversation()
    broken["turns"][0]["time"] = "2024-03-12 21:00"
    write(tmp_path / "bad", "mine.json", [broken])
    assert conversational.main(["--check-handwritten", str(tmp_path / "bad")]) == 1
    out = capsys.readouterr().out
    assert "conversation 150, turn 1, time: '2024-03-12 21:00' is not an ISO 8601 time with an offset" in out


def _episode(episode_id: str, edges: int = 0, ends: bool = False) -> LabeledEpisode:
    edge = GoldEdge(relationship_type="FRIEND_OF", source_entity_name="A", target_entity_name="B", fact="A, B.",
                    invalid_at=datetime(2024, 1, 1, tzinfo=UTC) if ends else None)  # fmt: skip
    return LabeledEpisode(
        id=episode_id,
        source="conversational",
        license="CC-BY-4.0",
        episode_content="A met B.",
        entities=[Entity(name="A"), Entity(name="B")],
        reference_time=datetime(2024, 1, 1, tzinfo=UTC),
        edges=[edge] * edges,
    )


def test_declared_episodes_follow_the_drawn_ones_and_leave_them_and_smoke_as_they_were() -> None:
    drawn = {
        "train": [_episode("conv-001-1")],
        "dev": [_episode("conv-002-1")],
        "smoke": [_episode("conv-002-1")],
    }
    declared = {"dev": [_episode("conv-301-2"), _episode("conv-301-1")], "train": [_episode("conv-101-1")]}
    splits = append_declared(drawn, declared)
    assert [e.id for e in splits["dev"]] == ["conv-002-1", "conv-301-1", "conv-301-2"]
    assert [e.id for e in splits["train"]] == ["conv-001-1", "conv-101-1"]
    assert splits["smoke"] == drawn["smoke"]
    with pytest.raises(ValueError, match="holdout"):
        append_declared(drawn, {"holdout": [_episode("conv-401-1")]})


@pytest.mark.skipif(not default_raw_dir().is_dir(), reason="raw data not present beside this checkout")
def test_the_build_appends_the_hand_written_episodes_and_changes_no_other_line(tmp_path: Path) -> None:
    from edgewise.data.converters.pipeline import build_all

    def quiet(_message: str) -> None:
        pass

    without = build_all(default_raw_dir(), log=quiet, handwritten_dir=tmp_path / "none")
    write(tmp_path / "mine", "mine.json", [good_conversation(198)], split="dev")
    with_files = build_all(default_raw_dir(), log=quiet, handwritten_dir=tmp_path / "mine")
    for name in ("train", "test", "smoke"):
        assert [episode_line(e) for e in with_files[name]] == [episode_line(e) for e in without[name]], name
    lines = [episode_line(e) for e in with_files["dev"]]
    assert lines[: len(without["dev"])] == [episode_line(e) for e in without["dev"]]
    assert [e.id for e in with_files["dev"][len(without["dev"]) :]] == ["conv-198-1", "conv-198-2"]


def test_the_spread_counts_genres_languages_edges_per_episode_and_tags() -> None:
    def item(episode_id: str, split: str, *kind: str) -> HandwrittenEpisode:
        return HandwrittenEpisode("f.json", split, kind, {"id": episode_id})

    handwritten = [
        item("conv-101-1", "train", "email", "relative_date"),
        item("conv-101-2", "train", "diary", "non_english", "ended_relation"),
        item("conv-301-1", "dev", "group_chat", "quoted_text", "negation"),
        item("conv-399-1", "dev", "email"),  # not in the sets (not built yet): not counted
    ]
    sets = {
        "train": [
            _episode("redocred-x-1", 3),
            _episode("conv-101-1", 2),
            _episode("conv-101-2", 1, ends=True),
        ],
        "dev": [_episode("conv-301-1", 0)],
    }
    train, dev, everything = handwritten_spread(handwritten, sets)
    assert (train.episodes, train.conversations, train.edges, train.non_english) == (2, 1, 3, 1)
    assert train.genres == Counter(email=1, diary=1) and train.edges_per_episode == Counter({"2": 1, "1": 1})
    assert train.tags == Counter(relative_date=1, ended_relation=1, invalidAt=1)
    assert dev.tags == Counter(quoted_text=1, negation=1, invalidAt=0)
    assert (everything.split, everything.episodes, everything.edges) == ("all", 3, 3)
    table = format_spread([train, dev, everything], GENRES)
    assert "| hand-written | train | dev | all |" in table
    assert "| genre: email | 1 (50%) | 0 (0%) | 1 (33%) |" in table
    assert "| language: not English | 1 (50%) | 0 (0%) | 1 (33%) |" in table
    assert "| gold edges: 0 | 0 (0%) | 1 (100%) | 1 (33%) |" in table
    assert "| an edge with invalidAt | 1 (50%) | 0 (0%) | 1 (33%) |" in table
    assert handwritten_spread(handwritten, {"test": sets["train"]}) == []


def test_the_hand_written_files_are_package_data() -> None:
    """`edgewise data build` and `edgewise data stats` read them from the installed package, as the source."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    package_data = pyproject["tool"]["setuptools"]["package-data"]["edgewise.data.converters"]
    assert f"{conversational.HANDWRITTEN_DIR.name}/*.json" in package_data
