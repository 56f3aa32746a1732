"""One input contract: every path reads an episode the same way, or refuses it naming the same field.

The four paths are Python (`Episode.model_validate`), a JSONL line (`edgewise extract`), a Ray row
(the episode's columns, `scale.rows.input_line`) and HTTP (`POST /v1/extract` and one item of
`POST /v1/extract/batch`). Each case of one table goes through all of them.

A signature may name entity types the episode has no entity of (one schema for a whole graph): it is
accepted everywhere and changes no edge. A type no entity of a whole file has is reported once per
file by the commands that read files (`edgewise extract`, `edgewise data validate`), which exit as
they would without it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import dspy
import pytest
from fakes import ScriptedLM, edge, edges_reply
from mock_openai import MockOpenAIServer
from pydantic import ValidationError

from edgewise.cli import main as cli_main
from edgewise.domain.episode import Episode
from edgewise.domain.names import field_path
from edgewise.domain.types import ExtractionResult
from edgewise.modules.extractor import EdgeExtractor
from edgewise.runtime.jsonl import parse_episode_line
from edgewise.runtime.lm import lm_context
from edgewise.scale.rows import input_line

REFERENCE = "2025-04-30T00:00:00Z"
TYPED = [{"name": "Ann", "type": "Person"}, {"name": "Co", "type": "Organization"}]
BASE: dict[str, Any] = {"episodeContent": "Ann works at Co.", "referenceTime": REFERENCE}
ANN_CO = [{"name": "Ann"}, {"name": "Co"}]
# One schema for a whole graph: LIVES_IN reaches an episode that mentions no place.
WORKS_AT = {"sourceTypes": ["Person"], "targetTypes": ["Organization"]}
SHARED_SCHEMA = {"WORKS_AT": WORKS_AT, "LIVES_IN": {"sourceTypes": ["Person"], "targetTypes": ["Location"]}}


def with_(**fields: Any) -> dict[str, Any]:
    return {**BASE, **fields}


# (the input, the episode it means as {field: value} checked on the dump, or the field the error names)
CASES: list[tuple[str, dict[str, Any], dict[str, Any] | str]] = [
    ("entities as objects", with_(entities=TYPED), {"entities": [e | {"summary": None} for e in TYPED]}),
    ("the seed's nodes", with_(nodes=TYPED), {"entities": [e | {"summary": None} for e in TYPED]}),
    (
        "plain-string nodes",
        with_(nodes=["Ann", "Co"]),
        {"entities": [{"name": n, "type": None, "summary": None} for n in ("Ann", "Co")]},
    ),
    ("full nodes beside empty entities", with_(nodes=["Ann", "Co"], entities=[]), {"customPrompt": ""}),
    ("empty nodes beside full entities", with_(nodes=[], entities=ANN_CO), {"customPrompt": ""}),
    ("both lists full", with_(nodes=["Ann"], entities=["Co"]), "nodes"),
    ("no entity list", with_(), "entities"),
    ("an empty nodes list", with_(nodes=[]), "nodes"),
    ("a nameless node", with_(nodes=["Ann", {"type": "Person"}]), "nodes[1].name"),
    (
        "the seed's edgeTypes object",
        with_(entities=ANN_CO, edgeTypes={"WORKS_AT": "a person works for an organization"}),
        {"edgeTypes": [{"name": "WORKS_AT", "description": "a person works for an organization"}]},
    ),
    (
        "an edgeTypes object with signatures",
        with_(
            entities=TYPED,
            edgeTypes={"WORKS_AT": {"sourceTypes": ["Person"], "targetTypes": ["Organization"]}},
        ),
        {"edgeTypes": [{"name": "WORKS_AT", "sourceTypes": ["Person"], "targetTypes": ["Organization"]}]},
    ),
    (
        "sourceTypes not a list",
        with_(entities=TYPED, edgeTypes=[{"name": "WORKS_AT", "sourceTypes": "Person"}]),
        "edgeTypes[0].sourceTypes",
    ),
    (
        "a shared schema: a signature naming an entity type no entity of the episode has",
        with_(entities=TYPED, edgeTypes=SHARED_SCHEMA),
        {"edgeTypes": [{"name": name, **fields} for name, fields in SHARED_SCHEMA.items()]},
    ),
    (
        "a misspelt entity type in a signature (one episode cannot tell it from an absent one)",
        with_(entities=TYPED, edgeTypes={"WORKS_AT": {"targetTypes": ["Persn"]}}),
        {"edgeTypes": [{"name": "WORKS_AT", "targetTypes": ["Persn"]}]},
    ),
    (
        "an empty entity type in a signature",
        with_(entities=TYPED, edgeTypes=[{"name": "WORKS_AT", "sourceTypes": [""]}]),
        "edgeTypes[0].sourceTypes[0]",
    ),
    (
        "an unknown edge type field",
        with_(entities=ANN_CO, edgeTypes=[{"name": "WORKS_AT", "colour": "red"}]),
        "edgeTypes[0].colour",
    ),
    (
        "previous episodes as objects",
        with_(entities=ANN_CO, previousEpisodes=[{"role": "user", "text": "hi"}]),
        {"previousEpisodes": ['{"role": "user", "text": "hi"}']},
    ),
    ("a null customPrompt", with_(entities=ANN_CO, customPrompt=None), {"customPrompt": ""}),
    ("a number as referenceTime", {**with_(entities=ANN_CO), "referenceTime": 1714435200}, "referenceTime"),
    ("a date that is not one", {**with_(entities=ANN_CO), "referenceTime": "soon"}, "referenceTime"),
    (
        "a time before year 1 in UTC",
        {**with_(entities=ANN_CO), "referenceTime": "0001-01-01T00:00:00+13:59"},
        "referenceTime",
    ),
    ("no episodeContent", {"entities": ANN_CO, "referenceTime": REFERENCE}, "episodeContent"),
]
IGNORED_CASE = with_(userId="u-1", nodes=[{"name": "Ann", "uuid": "n1"}, "Co"])


class RecordingProgram(dspy.Module):
    """Answers with no edges and keeps the episodes it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[Episode] = []

    def forward(self, episode: Episode) -> dspy.Prediction:
        self.seen.append(episode)
        return dspy.Prediction(result=ExtractionResult())


@pytest.fixture(scope="module")
def http():
    from fastapi.testclient import TestClient

    from edgewise.service.app import create_app

    program = RecordingProgram()
    with TestClient(create_app(program, None)) as client:
        yield client, program


def python_path(data: dict[str, Any]) -> Episode | str:
    try:
        return Episode.model_validate(data)
    except ValidationError as error:
        return field_path(tuple(error.errors()[0]["loc"]))


def jsonl_path(data: dict[str, Any]) -> Episode | str:
    line = parse_episode_line(json.dumps({"id": "e1", **data}).encode(), 3, "in.jsonl")
    if line.episode is not None:
        return line.episode
    assert line.error is not None and line.error.line == 3
    return line.error.field or ""


def ray_path(data: dict[str, Any]) -> Episode | str:
    row = {"line": 3, "source": "rows", "id": "e1", **{key: value for key, value in data.items()}}
    line = input_line(row)
    if line.episode is not None:
        return line.episode
    assert line.error is not None
    return line.error.field or ""


def http_path(client: Any, program: RecordingProgram, data: dict[str, Any]) -> Episode | str:
    response = client.post("/v1/extract", json=data)
    if response.status_code == 200:
        return program.seen[-1]
    assert response.status_code == 422, response.text
    return response.json()["error"]["fields"][0]["field"]


def http_batch_path(client: Any, program: RecordingProgram, data: dict[str, Any]) -> Episode | str:
    response = client.post("/v1/extract/batch", json={"episodes": [data]})
    assert response.status_code == 200, response.text
    [item] = response.json()["results"]
    if item["ok"]:
        return program.seen[-1]
    field = item["error"]["fields"][0]["field"]
    assert field.startswith("episodes[0]"), field
    return field.removeprefix("episodes[0]").removeprefix(".")


@pytest.mark.parametrize(("data", "expected"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_every_path_reads_the_same_episode_or_names_the_same_field(
    http: Any, data: dict[str, Any], expected: dict[str, Any] | str
) -> None:
    client, program = http
    outcomes = {
        "python": python_path(data),
        "jsonl": jsonl_path(data),
        "ray row": ray_path(data),
        "http": http_path(client, program, data),
        "http batch": http_batch_path(client, program, data),
    }
    if isinstance(expected, str):
        assert outcomes == dict.fromkeys(outcomes, expected)
        return
    dumps = {
        path: outcome.to_json_dict() for path, outcome in outcomes.items() if isinstance(outcome, Episode)
    }
    assert set(dumps) == set(outcomes), outcomes
    first = dumps["python"]
    assert all(dump == first for dump in dumps.values()), dumps
    for field, value in expected.items():
        got = first[field]
        if field == "edgeTypes":  # compare the fields the case gives; the others are the defaults
            got = [{key: item[key] for key in want} for item, want in zip(got, value, strict=True)]
        assert got == value


def test_ignored_fields_are_the_same_warning_in_every_path(http: Any) -> None:
    client, _ = http
    episode = Episode.model_validate(IGNORED_CASE)
    assert episode.ignored_fields == ("userId", "nodes[0].uuid")
    jsonl = parse_episode_line(json.dumps(IGNORED_CASE).encode(), 1, "in.jsonl")
    ray = input_line({"line": 1, **IGNORED_CASE})
    response = client.post("/v1/extract", json=IGNORED_CASE).json()
    messages = [
        jsonl.warnings[0].message,
        ray.warnings[0].message,
        response["warnings"][0]["message"],
    ]
    assert [message.split(": ", 1)[1] for message in messages] == [
        "ignored unknown fields nodes[0].uuid, userId"
    ] * 3


def _edges(episode: Episode, reply: str) -> list[dict[str, Any]]:
    with lm_context(ScriptedLM(lambda _messages, _kwargs: reply)):
        result = EdgeExtractor()(episode).result
    return [item.to_json_dict() for item in result.edges]


def test_a_signature_naming_an_absent_entity_type_changes_no_edge_in_any_path(http: Any) -> None:
    """The same reply gives the same edges with and without the type that fits no pair of the episode.

    The model is made to write that type too (LIVES_IN between a person and an organization): its
    signature allows it nowhere here, so it is dropped as it would be if the type were not offered.
    """
    client, program = http
    reply = edges_reply(edge("Ann", "WORKS_AT", "Co"), edge("Ann", "LIVES_IN", "Co"))
    without = _edges(Episode.model_validate(with_(entities=TYPED, edgeTypes={"WORKS_AT": WORKS_AT})), reply)
    assert [item["relationshipType"] for item in without] == ["WORKS_AT"]
    data = with_(entities=TYPED, edgeTypes=SHARED_SCHEMA)
    episodes = {
        "python": python_path(data),
        "jsonl": jsonl_path(data),
        "ray row": ray_path(data),
        "http": http_path(client, program, data),
        "http batch": http_batch_path(client, program, data),
    }
    assert all(isinstance(episode, Episode) for episode in episodes.values()), episodes
    assert {path: _edges(episode, reply) for path, episode in episodes.items()} == dict.fromkeys(
        episodes, without
    )


def _file_with(tmp_path: Path, name: str, rows: list[dict[str, Any]]) -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


LABELS = {"source": "mine", "license": "CC-BY-4.0", "edges": []}
# Two episodes of one file: Location is the type of an entity of the second, "Persn" of none.
FILE_ROWS = [
    with_(id="a-1-0", entities=TYPED, edgeTypes={"MANAGES": {"sourceTypes": ["Persn"]}, **SHARED_SCHEMA}),
    with_(
        id="a-2-0",
        entities=[{"name": "Ann", "type": "Person"}, {"name": "Leeds", "type": "Location"}],
        edgeTypes={"LIVES_IN": {"sourceTypes": ["Persn"], "targetTypes": ["Location"]}},
    ),
]


def _reports(stderr: str, path: Path) -> list[str]:
    return [line for line in stderr.splitlines() if "signature type" in line and str(path) in line]


def test_a_misspelt_type_in_a_file_is_reported_once_by_extract_and_the_status_is_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = _file_with(tmp_path, "in.jsonl", FILE_ROWS)
    with MockOpenAIServer(edges_reply(edge("Ann", "WORKS_AT", "Co"))) as server:
        status = cli_main(
            ["extract", "--input", str(source), "--output", str(tmp_path / "out.jsonl"), "--model"]
            + ["openai/mock", "--api-base", server.api_base, "--program", "default", "--no-progress"]
        )
    assert status == 0
    [report] = _reports(capsys.readouterr().err, source)
    assert "signature type 'Persn' (line 1, edgeTypes[0].sourceTypes)" in report
    assert "entity types here: Location, Organization, Person" in report


def test_a_misspelt_type_in_a_file_is_reported_once_by_data_validate_and_the_status_is_unchanged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = _file_with(tmp_path, "good.jsonl", [row | LABELS for row in FILE_ROWS])
    assert cli_main(["data", "validate", str(good)]) == 0
    streams = capsys.readouterr()
    [report] = _reports(streams.err, good)
    assert "'Persn'" in report and "all valid" in streams.out
    # the same file with a line that has a problem: status 2 as before, the report the same
    bad = _file_with(tmp_path, "bad.jsonl", [row | LABELS for row in FILE_ROWS] + [{"id": "x"}])
    assert cli_main(["data", "validate", str(bad)]) == 2
    assert len(_reports(capsys.readouterr().err, bad)) == 1
    # a type absent from each episode but some entity of the file has is never reported
    rows = [row | LABELS | {"edgeTypes": SHARED_SCHEMA} for row in FILE_ROWS]  # one lacks Location, one Co
    shared = _file_with(tmp_path, "shared.jsonl", rows)
    assert cli_main(["data", "validate", str(shared)]) == 0
    assert _reports(capsys.readouterr().err, shared) == []


def test_a_labeled_line_s_own_fields_are_known_only_beside_its_gold_edges() -> None:
    labeled = with_(entities=ANN_CO) | {
        "source": "mine",
        "license": "CC0-1.0",
        "exhaustive": True,
        "edges": [],
    }
    assert Episode.model_validate(labeled).ignored_fields == ()
    unlabeled = with_(entities=ANN_CO, source="mine")
    assert Episode.model_validate(unlabeled).ignored_fields == ("source",)
