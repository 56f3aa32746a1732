"""The loader and validator: good files load as DSPy examples; bad lines are named by line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from paths import ROOT

from edgewise.cli import main as cli_main
from edgewise.data import DatasetError, load_episodes, to_examples, validate_file
from edgewise.data.loader import SPLITS
from edgewise.domain.episode import Episode
from edgewise.domain.gold import LabeledEpisode


def good_line(episode_id: str = "mine-doc1-0", source: str = "mine") -> dict:
    return {
        "id": episode_id,
        "source": source,
        "license": "CC-BY-4.0",
        "episodeContent": "Ana joined Acme in March 2021.",
        "previousEpisodes": [],
        "entities": [{"name": "Ana", "type": "Person"}, {"name": "Acme"}],
        "referenceTime": "2024-01-01T00:00:00Z",
        "edgeTypes": [{"name": "WORKS_AT", "description": "the subject works at the object"}],
        "edges": [
            {
                "relationshipType": "WORKS_AT",
                "sourceEntityName": "Ana",
                "targetEntityName": "Acme",
                "fact": "Ana joined Acme in March 2021.",
                "validAt": "2021-03-01T00:00:00Z",
                "validAtGranularity": "month",
            }
        ],
    }


def write_lines(path: Path, lines: list[object]) -> Path:
    path.write_text(
        "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8"
    )
    return path


def test_a_valid_file_loads_filters_by_source_and_becomes_examples(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "mine.jsonl",
        [good_line("a-doc1-0", "mine"), good_line("b-doc2-0", "other"), good_line("c-doc3-0", "mine")],
    )
    assert validate_file(path) == []
    episodes = load_episodes(path)
    assert [e.id for e in episodes] == ["a-doc1-0", "b-doc2-0", "c-doc3-0"]
    assert episodes[0].edges[0].valid_at_granularity == "month"
    assert episodes[0].reference_time.utcoffset().total_seconds() == 0
    mine = load_episodes(str(path), sources=["mine"])
    assert [e.id for e in mine] == ["a-doc1-0", "c-doc3-0"]
    examples = to_examples(mine)
    assert set(examples[0].inputs().keys()) == {"episode"}
    assert isinstance(examples[0].episode, Episode) and not isinstance(examples[0].episode, LabeledEpisode)
    assert examples[0].labeled.id == "a-doc1-0"


def test_shipped_smoke_split_loads_and_covers_every_source() -> None:
    smoke = load_episodes("smoke")
    assert len(smoke) == 24
    assert {e.source for e in smoke} >= {"redocred", "dialogre", "tempreason", "timeqa"}


def errors_for(tmp_path: Path, lines: list[object]) -> list[str]:
    return [str(error) for error in validate_file(write_lines(tmp_path / "x.jsonl", lines))]


def test_bad_json_is_named_by_line(tmp_path: Path) -> None:
    errors = errors_for(tmp_path, [good_line(), '{"id": "broken",'])
    assert len(errors) == 1
    assert errors[0].startswith(f"{tmp_path / 'x.jsonl'} line 2: invalid JSON")


def test_missing_field_is_named_by_line_and_field(tmp_path: Path) -> None:
    line = good_line()
    del line["referenceTime"]
    assert errors_for(tmp_path, [line]) == [
        f'{tmp_path / "x.jsonl"} line 1, field "referenceTime": Field required'
    ]


def test_unknown_entity_is_named_by_edge_and_field(tmp_path: Path) -> None:
    line = good_line()
    line["edges"][0]["sourceEntityName"] = "Bob"
    second = good_line("mine-doc2-0")
    errors = errors_for(tmp_path, [second, line])
    assert errors == [
        f'{tmp_path / "x.jsonl"} line 2, field "edges[0].sourceEntityName": "Bob" is not in this episode\'s entities'
    ]


def test_bad_date_is_named_by_line_and_field(tmp_path: Path) -> None:
    line = good_line()
    line["edges"][0]["validAt"] = "2021-13-45"
    errors = errors_for(tmp_path, [line])
    assert len(errors) == 1
    assert errors[0].startswith(f'{tmp_path / "x.jsonl"} line 1, field "edges[0].validAt": ')
    assert "2021-13-45" in errors[0]


def test_rules_beyond_the_types(tmp_path: Path) -> None:
    line = good_line()
    line["edges"][0]["relationshipType"] = "works at"
    line["edges"][0]["invalidAt"] = "2020-01-01T00:00:00Z"
    errors = errors_for(tmp_path, [line, good_line()])
    path = tmp_path / "x.jsonl"
    assert errors == [
        f'{path} line 1, field "edges[0].relationshipType": "works at" is not SCREAMING_SNAKE_CASE',
        f'{path} line 1, field "edges[0].invalidAt": invalidAt is before validAt',
        f"{path} line 2, field \"id\": id 'mine-doc1-0' already used on line 1",
    ]


def with_role_attribute(edge_attributes: dict) -> dict:
    """`good_line` whose WORKS_AT declares a string `role` and an integer `years`, its edge labeled so."""
    line = good_line()
    line["edgeTypes"][0]["attributes"] = [{"name": "role"}, {"name": "years", "kind": "integer"}]
    line["edges"][0]["attributes"] = edge_attributes
    return line


def test_gold_attributes_must_be_declared_by_the_type_and_of_its_kind(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    assert errors_for(tmp_path, [with_role_attribute({"role": "engineer", "years": None})]) == []
    where = f'{path} line 1, field "edges[0].attributes'
    assert errors_for(tmp_path, [with_role_attribute({"title": "engineer", "years": "3", "role": 2})]) == [
        f'{where}.title": WORKS_AT declares no attribute "title" in edgeTypes (it declares: role, years)',
        f'{where}.years": "3" is not of kind integer (or null)',
        f'{where}.role": 2 is not of kind string (or null)',
    ]
    untyped = good_line()
    untyped["edges"][0]["attributes"] = {"role": None}  # WORKS_AT declares no attributes here
    assert errors_for(tmp_path, [untyped]) == [
        f'{where}.role": WORKS_AT declares no attribute "role" in edgeTypes (it declares: none)'
    ]


def test_stats_count_labeled_attribute_values_and_nulls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_lines(tmp_path / "mine.jsonl", [with_role_attribute({"role": "engineer", "years": None})])
    assert cli_main(["data", "stats", "--data", str(path)]) == 0
    assert "| 1/1 | 1 / 1 |" in capsys.readouterr().out


def test_load_episodes_raises_the_first_problem(tmp_path: Path) -> None:
    line = good_line()
    line["edges"][0]["targetEntityName"] = "Globex"
    path = write_lines(tmp_path / "x.jsonl", [good_line("mine-doc0-0"), line])
    with pytest.raises(DatasetError) as caught:
        load_episodes(path)
    assert (caught.value.line, caught.value.field) == (2, "edges[0].targetEntityName")
    assert isinstance(caught.value, ValueError)


def test_unknown_split_or_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no such episodes file"):
        load_episodes(tmp_path / "absent.jsonl")
    with pytest.raises(FileNotFoundError, match="or name a split"):
        load_episodes("validation")


def test_cli_validate_reports_each_problem_and_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = good_line()
    line["edges"][0]["sourceEntityName"] = "Bob"
    path = write_lines(tmp_path / "x.jsonl", [good_line("mine-doc0-0"), "not json", line])
    assert cli_main(["data", "validate", str(path)]) == 2  # the check ran; some lines have problems
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"{path} line 2: invalid JSON: Expecting value (column 1)",
        f'{path} line 3, field "edges[0].sourceEntityName": "Bob" is not in this episode\'s entities',
    ]
    good = write_lines(tmp_path / "good.jsonl", [good_line()])
    assert cli_main(["data", "validate", str(good)]) == 0
    assert "1 episodes, all valid" in capsys.readouterr().out


def test_cli_stats_prints_the_table_and_the_interval_hint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_lines(tmp_path / "mine.jsonl", [good_line("a-doc1-0"), good_line("b-doc2-0", "other")])
    assert cli_main(["data", "stats", "--data", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"| {path} | mine | 1 | 1 | 1 | 2.0 | 6 | 1 (100%) | 0 (0%) | 0/1/0 | 1/1 | 0 / 0 |" in out
    assert f"| {path} | all | 2 | 2 | 1 |" in out
    # 2 gold edges: 1.96 * sqrt(0.25 / 2) = 0.693 -> 69.3 points
    assert "±69.3 points for one system" in out


def test_invalid_utf8_is_one_line_s_problem_and_the_rest_is_still_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad_reference = good_line("mine-doc2-0")
    bad_reference["referenceTime"] = "soon"
    lines = [json.dumps(good_line("mine-doc0-0")), b'{"id": "x\xff"}', json.dumps(bad_reference)]
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(b"".join((x if isinstance(x, bytes) else x.encode()) + b"\n" for x in lines))
    assert [str(error) for error in validate_file(path)][:1] == [
        f"{path} line 2: invalid UTF-8 at byte 9 of the line: invalid start byte"
    ]
    assert cli_main(["data", "validate", str(path)]) == 2
    out = capsys.readouterr().out
    assert f"{path} line 2: invalid UTF-8 at byte 9" in out
    assert f'{path} line 3, field "referenceTime"' in out  # checked after the bad byte
    with pytest.raises(DatasetError, match="line 2: invalid UTF-8"):
        load_episodes(path)


def test_validate_takes_a_folder_and_checks_each_jsonl_in_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_lines(tmp_path / "a.jsonl", [good_line("mine-doc0-0")])
    write_lines(tmp_path / "b.jsonl", ["not json"])
    (tmp_path / "notes.txt").write_text("not an episode file")
    assert cli_main(["data", "validate", str(tmp_path)]) == 2
    streams = capsys.readouterr()
    assert f"{tmp_path / 'a.jsonl'}: 1 episodes, all valid" in streams.out
    assert f"{tmp_path / 'b.jsonl'} line 1: invalid JSON" in streams.out
    assert "notes.txt" not in streams.out + streams.err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli_main(["data", "validate", str(empty)]) == 1
    assert "folder without *.jsonl files" in capsys.readouterr().err
    assert cli_main(["data", "validate", str(tmp_path / "absent.jsonl")]) == 1


def test_readme_counts_each_shipped_episode_once() -> None:
    """smoke is a subset of dev: the README's total is the number of distinct episodes."""
    import re

    ids = {episode.id for split in SPLITS for episode in load_episodes(split)}
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    counted = re.search(r"`data/episodes/`, (\d+) distinct episodes", readme)
    assert counted is not None and int(counted[1]) == len(ids)
