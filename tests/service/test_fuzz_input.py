"""Bad input never crashes a batch or the service: generated lines and bodies (wrong types, huge
strings, control characters, invalid UTF-8, deep nesting) each get a clear error naming line and field.
"""

from __future__ import annotations

import io
import json
import random
from collections.abc import Iterator
from typing import Any

import pytest
from fakes import ScriptedLM, edge, edges_reply
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mock_openai import MockOpenAIServer

from edgewise.cli import main
from edgewise.modules.extractor import EdgeExtractor
from edgewise.runtime.jsonl import (
    InputLine,
    encode_record,
    error_record,
    parse_episode_line,
    read_episode_lines,
)
from edgewise.service.app import create_app

GOOD: dict[str, Any] = {
    "id": "ep-1",
    "episodeContent": "Alice joined Acme in 2021.",
    "previousEpisodes": ["Alice was looking for a job."],
    "entities": [{"name": "Alice", "type": "Person"}, {"name": "Acme"}],
    "referenceTime": "2025-04-30T00:00:00Z",
    "edgeTypes": [{"name": "WORKS_AT", "description": "employment"}],
    "customPrompt": "",
}
EPISODE_FIELDS = [key for key in GOOD if key != "id"]
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Text with control characters, non-BMP characters and the occasional very long run.
nasty_text = st.one_of(
    st.text(st.characters(codec="utf-8"), max_size=40),
    st.text(st.characters(min_codepoint=0, max_codepoint=0x1F), max_size=10),
    st.integers(1, 200_000).map(lambda n: "\u202e" * 3 + "x" * n),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | nasty_text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(nasty_text, inner, max_size=4),
    max_leaves=20,
)


def _check_error(item: InputLine, line: int) -> None:
    assert item.line == line
    assert item.episode is None and item.error is not None
    assert item.error.message and f"line {line}" in str(item.error)
    json.loads(encode_record(error_record(item, "input", item.error.record())))


@FUZZ
@given(raw=st.binary(max_size=300))
def test_any_bytes_give_an_episode_or_a_line_error(raw: bytes) -> None:
    item = parse_episode_line(raw, 7, "in.jsonl")
    if item.episode is None:
        _check_error(item, 7)


@FUZZ
@given(value=json_values)
def test_any_json_value_gives_an_episode_or_a_line_error(value: Any) -> None:
    item = parse_episode_line(json.dumps(value).encode(), 3, "in.jsonl")
    if item.episode is None:
        _check_error(item, 3)


@FUZZ
@given(field=st.sampled_from(EPISODE_FIELDS), value=json_values)
def test_a_wrong_typed_field_is_named_in_the_error(field: str, value: Any) -> None:
    item = parse_episode_line(json.dumps({**GOOD, field: value}).encode(), 1, "in.jsonl")
    if item.episode is None:
        _check_error(item, 1)
        assert item.error is not None and item.error.field is not None
        assert item.error.field.split("[")[0].split(".")[0] == field
        assert item.id == "ep-1"


@FUZZ
@given(content=nasty_text, names=st.lists(nasty_text.filter(bool), min_size=1, max_size=3))
def test_control_characters_and_long_strings_are_valid_input_and_valid_output(
    content: str, names: list[str]
) -> None:
    line = json.dumps({**GOOD, "episodeContent": content, "entities": [{"name": name} for name in names]})
    item = parse_episode_line(line.encode(), 1, "in.jsonl")
    assert item.error is None and item.episode is not None
    assert item.episode.episode_content == content


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"[" * 100_000 + b"]" * 100_000, "not valid JSON"),
        (b'{"episodeContent": ' + b"[" * 5000 + b"]" * 5000 + b"}", "not valid JSON"),
        (b'{"episodeContent": "\xc3\x28"}', "invalid UTF-8 at byte 20"),
        (json.dumps({**GOOD, "episodeContent": "a"}).replace('"a"', '"\\ud800"').encode(), "surrogate"),
        (b'{"referenceTime": ' + b"9" * 5000 + b"}", "not valid JSON"),
        (b"   ", "empty line"),
        (b'"just a string"', "expected a JSON object"),
    ],
)
def test_pathological_lines_get_their_reason(raw: bytes, message: str) -> None:
    item = parse_episode_line(raw, 2, "in.jsonl")
    _check_error(item, 2)
    assert item.error is not None and message in item.error.message


def test_huge_episode_is_accepted_whole() -> None:
    content = "Alice works at Acme. " * 250_000  # about 5 MB on one line
    item = parse_episode_line(json.dumps({**GOOD, "episodeContent": content}).encode(), 1, "in.jsonl")
    assert item.episode is not None and len(item.episode.episode_content) == len(content)


@FUZZ
@given(lines=st.lists(st.binary(max_size=60).filter(lambda b: b"\n" not in b), max_size=30))
def test_every_input_line_yields_exactly_one_item_in_order(lines: list[bytes]) -> None:
    stream = io.BytesIO(b"".join(line + b"\n" for line in lines))
    items = list(read_episode_lines(stream, "in.jsonl"))
    assert [item.line for item in items] == list(range(1, len(lines) + 1))


def _nasty_lines(rng: random.Random, count: int) -> Iterator[bytes]:
    makers = [
        lambda: json.dumps(GOOD).encode(),
        lambda: bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40))).replace(b"\n", b" "),
        lambda: json.dumps(
            {**GOOD, rng.choice(EPISODE_FIELDS): rng.choice([None, 5, [], {}, "", [[1]]])}
        ).encode(),
        lambda: b"{" * rng.randrange(1, 3000),
        lambda: json.dumps({**GOOD, "episodeContent": "\x00\x1b[2J" + "y" * rng.randrange(50_000)}).encode(),
        lambda: json.dumps({**GOOD, "id": {"nested": [1, 2]}}).encode(),
    ]
    for _ in range(count):
        yield rng.choice(makers)()


def test_the_cli_answers_every_nasty_line_once_and_keeps_running(tmp_path) -> None:
    lines = list(_nasty_lines(random.Random(11), 60))
    source, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    source.write_bytes(b"\n".join(lines) + b"\n")
    reply = edges_reply(edge("Alice", "WORKS_AT", "Acme", "Alice joined Acme in 2021."))
    with MockOpenAIServer(reply) as server:
        code = main(["extract", "-i", str(source), "-o", str(out), "--model", "openai/mock", "--api-base",
                     server.api_base, "--no-progress", "--no-cache", "--workers", "4"])  # fmt: skip
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert code == (2 if any("error" in record for record in records) else 0)
    assert [record["line"] for record in records] == list(range(1, len(lines) + 1))
    for record in records:
        assert ("edges" in record) != ("error" in record)
        if "error" in record:
            assert record["error"]["kind"] == "input" and record["error"]["message"]


# -- the service -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def client() -> Iterator[TestClient]:
    lm = ScriptedLM(lambda _messages, _kwargs: edges_reply(edge("Alice", "WORKS_AT", "Acme", "a fact")))
    with TestClient(create_app(EdgeExtractor(), lm), raise_server_exceptions=False) as test_client:
        yield test_client


SEED_CONTEXT = {
    "episodeContent": "Alice joined Acme in 2021.",
    "nodes": ["Alice", "Acme"],
    "referenceTime": "2025-04-30T00:00:00Z",
    "edgeTypes": {"WORKS_AT": "employment"},
}


def _assert_clear(response: Any) -> None:
    assert response.status_code in (200, 400, 413, 422), response.text
    if response.status_code != 200:
        error = response.json()["error"]
        assert error["status"] == response.status_code and error["reason"] and error["message"]
        if response.status_code == 422:
            assert error["fields"] and all(problem["field"] for problem in error["fields"])


@settings(max_examples=60, deadline=None)
@given(field=st.sampled_from([*SEED_CONTEXT, "previousEpisodes", "customPrompt"]), value=json_values)
def test_service_answers_wrong_types_with_the_field(client: TestClient, field: str, value: Any) -> None:
    response = client.post("/v1/extract", json={**SEED_CONTEXT, field: value})
    _assert_clear(response)
    if response.status_code == 422:
        assert any(problem["field"].startswith(field) for problem in response.json()["error"]["fields"])


@settings(max_examples=60, deadline=None)
@given(body=st.binary(max_size=200))
def test_service_answers_any_bytes_clearly(client: TestClient, body: bytes) -> None:
    _assert_clear(client.post("/v1/extract", content=body, headers={"content-type": "application/json"}))


@settings(max_examples=30, deadline=None)
@given(items=st.lists(json_values, max_size=5))
def test_service_batch_answers_each_item_on_its_own(client: TestClient, items: list[Any]) -> None:
    response = client.post("/v1/extract/batch", json={"episodes": [SEED_CONTEXT, *items]})
    if response.status_code == 413:  # generated items can pass the body limit: refused whole, clearly
        assert response.json()["error"]["reason"] == "body_too_large"
        return
    assert response.status_code == 200, response.text
    results = response.json()["results"]
    assert [result["index"] for result in results] == list(range(len(items) + 1))
    assert results[0]["ok"] is True
    for result in results[1:]:
        assert result["ok"] or (result["error"]["status"] == 422 and result["error"]["fields"])


@pytest.mark.parametrize(
    "body",
    [
        b'{"episodeContent": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        b'{"episodeContent": "a", "nodes": [], "referenceTime": ' + b"9" * 5000 + b"}",
        b'{"episodeContent": "\xff", "nodes": [], "referenceTime": "2025-01-01T00:00:00Z"}',
        json.dumps({**SEED_CONTEXT, "episodeContent": "\x00\x1b[31m" + "z" * 200_000}).encode(),
    ],
)
def test_service_pathological_bodies_get_a_clear_status(client: TestClient, body: bytes) -> None:
    _assert_clear(client.post("/v1/extract", content=body, headers={"content-type": "application/json"}))


def test_service_refuses_a_lone_surrogate_as_a_field_error(client: TestClient) -> None:
    body = json.dumps({**SEED_CONTEXT, "episodeContent": "a"}).replace('"a"', '"\\ud800"').encode()
    response = client.post("/v1/extract", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 422


@FUZZ
@given(value=json_values)
def test_every_record_is_one_line_for_any_line_splitter(value: Any) -> None:
    """U+0085, U+2028 and U+2029 are valid raw in JSON strings, but str.splitlines ends a line there."""
    text = encode_record({"id": "x", "line": 1, "value": value}).decode("utf-8")
    assert text.endswith("\n") and len(text.splitlines()) == 1
    assert json.loads(text)["value"] == json.loads(json.dumps(value))
