"""`edgewise serve`: the seed's context object in, the seed's edges out; every failure a status, a
reason and no secret. Most tests use a fake program; the last ones run the real `EdgeExtractor`
against the mock OpenAI-compatible server.
"""

from __future__ import annotations

import argparse
import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import dspy
import pytest
from dspy.utils.exceptions import (
    ContextWindowExceededError,
    LMAuthError,
    LMRateLimitError,
    LMServerError,
    LMTimeoutError,
    LMTransportError,
)
from fastapi.testclient import TestClient
from mock_openai import MockOpenAIServer

from edgewise.cli import serve as serve_cli
from edgewise.domain.episode import Episode
from edgewise.domain.types import Edge, ExtractionResult, StepUsage
from edgewise.runtime.redaction import redact
from edgewise.service.app import create_app

SEED_CONTEXT: dict[str, Any] = {
    "episodeContent": "Alice joined Acme as CTO in March 2024.",
    "previousEpisodes": ["Alice was looking for a job.", {"content": "She met Bob.", "time": "2024-01-02"}],
    "nodes": [{"name": "Alice", "type": "Person"}, "Acme"],
    "referenceTime": "2025-04-30T10:00:00Z",
    "edgeTypes": {"WORKS_AT": "a person is employed by an organization"},
    "customPrompt": "Prefer employment facts.",
}
SECRET_KEY = "sk-live-0123456789abcdef"
PLAIN_SECRET = "hunter2-correct-horse"

Failure = Exception | Callable[[Episode], Exception | None] | None


class FakeProgram(dspy.Module):
    """Links the first two entities with WORKS_AT, or raises the failure it was given."""

    def __init__(self, failure: Failure = None, delay: float = 0.0) -> None:
        super().__init__()
        self.failure = failure
        self.delay = delay
        self.seen: list[Episode] = []
        self.lms_seen: list[Any] = []
        self.active = 0
        self.most_active = 0
        self._lock = threading.Lock()

    def forward(self, episode: Episode) -> dspy.Prediction:
        with self._lock:
            self.seen.append(episode)
            self.lms_seen.append(dspy.settings.lm)
            self.active += 1
            self.most_active = max(self.most_active, self.active)
        try:
            time.sleep(self.delay)
            error = self.failure(episode) if callable(self.failure) else self.failure
            if error is not None:
                raise error
            edges = []
            if len(episode.entities) >= 2:
                edges.append(
                    Edge(
                        relationship_type="WORKS_AT",
                        source_entity_name=episode.entities[0].name,
                        target_entity_name=episode.entities[1].name,
                        fact=episode.episode_content,
                        valid_at=episode.reference_time,
                    )
                )
            result = ExtractionResult(
                edges=edges, usage={"extract": StepUsage(calls=1, prompt_tokens=120, completion_tokens=30)}
            )
            return dspy.Prediction(edges=edges, result=result)
        finally:
            with self._lock:
                self.active -= 1


def _client(program: dspy.Module | None = None, lm: dspy.BaseLM | None = None, **settings: Any) -> TestClient:
    return TestClient(create_app(program or FakeProgram(), lm, **settings))


def _error(response: Any) -> dict[str, Any]:
    body = response.json()
    assert set(body) == {"error"}
    return body["error"]


def test_seed_context_in_seed_edges_out() -> None:
    program = FakeProgram()
    lm = dspy.LM("openai/mock", api_key=SECRET_KEY, cache=False)
    with _client(program, lm) as client:
        response = client.post("/v1/extract", json=SEED_CONTEXT)
    assert response.status_code == 200
    assert response.json() == {
        "edges": [
            {
                "relationshipType": "WORKS_AT",
                "sourceEntityName": "Alice",
                "targetEntityName": "Acme",
                "fact": "Alice joined Acme as CTO in March 2024.",
                "validAt": "2025-04-30T10:00:00Z",
                "invalidAt": None,
                "attributes": {},
            }
        ],
        "warnings": [],
        "usage": {
            "extract": {"calls": 1, "promptTokens": 120, "completionTokens": 30, "cachedPromptTokens": 0}
        },
        "parseFailures": 0,
    }
    (episode,) = program.seen
    assert [(entity.name, entity.type) for entity in episode.entities] == [
        ("Alice", "Person"),
        ("Acme", None),
    ]
    assert [(edge_type.name, edge_type.description) for edge_type in episode.edge_types] == [
        ("WORKS_AT", "a person is employed by an organization")
    ]
    assert episode.previous_episodes[1] == '{"content": "She met Bob.", "time": "2024-01-02"}'
    assert episode.custom_prompt == "Prefer employment facts."
    assert program.lms_seen == [lm]


def test_entities_synonym_edge_type_objects_and_snake_case() -> None:
    program = FakeProgram()
    request = {
        "episode_content": "Bob founded Initech.",
        "entities": [{"name": "Bob"}, {"name": "Initech", "summary": "a company"}],
        "reference_time": "2025-01-01T00:00:00+02:00",
        "edgeTypes": [{"name": "FOUNDED", "description": "started a company", "symmetric": False}],
        "customPrompt": None,
    }
    with _client(program) as client:
        response = client.post("/v1/extract", json=request)
    assert response.status_code == 200, response.text
    assert response.json()["edges"][0]["validAt"] == "2024-12-31T22:00:00Z"
    (episode,) = program.seen
    assert episode.entities[1].summary == "a company"
    assert episode.edge_types[0].name == "FOUNDED"
    assert episode.custom_prompt == ""


def test_unknown_fields_are_reported_as_warnings_not_dropped_silently() -> None:
    request = dict(
        SEED_CONTEXT, userId="u-1", nodes=[{"name": "Alice", "uuid": "n1", "labels": ["Person"]}, "Acme"]
    )
    with _client() as client:
        warnings = client.post("/v1/extract", json=request).json()["warnings"]
    assert [(w["code"], w["message"]) for w in warnings] == [
        ("ignored_field", "request: ignored unknown fields nodes[0].labels, nodes[0].uuid, userId"),
    ]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"episodeContent": None}, "episodeContent"),
        ({"referenceTime": "yesterday-ish"}, "referenceTime"),
        ({"nodes": [{"name": "Alice"}, {"name": ""}]}, "nodes[1].name"),
        ({"nodes": [{"type": "Person"}]}, "nodes[0].name"),
        ({"edgeTypes": [{"name": "WORKS_AT", "colour": "red"}]}, "edgeTypes[0].colour"),
        ({"previousEpisodes": [3]}, "previousEpisodes[0]"),
        ({"entities": ["Alice"]}, "nodes"),  # both nodes and entities, both full
    ],
)
def test_validation_errors_are_422_naming_the_field(change: dict[str, Any], field: str) -> None:
    request = {key: value for key, value in {**SEED_CONTEXT, **change}.items() if value is not None}
    program = FakeProgram()
    with _client(program) as client:
        response = client.post("/v1/extract", json=request)
    assert response.status_code == 422
    error = _error(response)
    assert error["reason"] == "invalid_request"
    assert field in [problem["field"] for problem in error["fields"]]
    assert field in error["message"]
    assert program.seen == []


@pytest.mark.parametrize(
    ("change", "field", "hint"),
    [
        ({"nodes": None}, "entities", ""),  # SEED_CONTEXT without nodes
        ({"nodes": []}, "nodes", ""),
        ({"nodes": None, "entites": ["Alice", "Acme"]}, "entities", "this episode has 'entites'"),
        ({"nodes": None, "entities": []}, "entities", ""),
    ],
)
def test_a_request_without_entities_is_422_as_a_jsonl_line_without_them_is(
    change: dict[str, Any], field: str, hint: str
) -> None:
    request = {key: value for key, value in {**SEED_CONTEXT, **change}.items() if value is not None}
    program = FakeProgram()
    with _client(program) as client:
        response = client.post("/v1/extract", json=request)
    assert response.status_code == 422
    [problem] = _error(response)["fields"]
    assert problem["field"] == field
    assert problem["message"].startswith("no entities: edges need at least two entities to connect")
    assert hint in problem["message"]
    assert program.seen == []


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("episodeContent", "a\ud800", "episodeContent"),
        ("previousEpisodes", ["b\udfff"], "previousEpisodes[0]"),
        ("customPrompt", "\ud800", "customPrompt"),
    ],
)
def test_fields_are_named_in_camel_case_in_every_422(field: str, value: Any, named: str) -> None:
    body = json.dumps({**SEED_CONTEXT, field: value})  # a lone surrogate: valid JSON, not valid Unicode
    with _client() as client:
        response = client.post("/v1/extract", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 422
    assert [problem["field"] for problem in _error(response)["fields"]] == [named]


def test_the_service_and_the_cli_warn_about_unknown_fields_with_one_helper() -> None:
    from edgewise.runtime import episode_fields, jsonl
    from edgewise.service import app as service

    assert service.input_warnings is jsonl.input_warnings is episode_fields.input_warnings


def test_a_request_uvicorn_cannot_parse_gets_the_json_error_shape() -> None:
    """`Content-Length: abc` is refused by uvicorn's HTTP parser before the app sees it."""
    import socket

    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(FakeProgram(), None), **serve_cli.server_settings(
        "127.0.0.1", port, "critical")))  # fmt: skip
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
            connection.sendall(
                b"POST /v1/extract HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                b"Content-Length: abc\r\n\r\n{}"
            )
            reply = b""
            while chunk := connection.recv(65536):
                reply += chunk
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ")
    assert b"content-type: application/json" in head.lower()
    error = json.loads(body)["error"]
    assert (error["status"], error["reason"]) == (400, "bad_request")
    assert "not valid HTTP/1.1" in error["message"] and "Content-Length" in error["message"]


@pytest.mark.parametrize(
    "body",
    [
        b'{"episodeContent": "x", ',
        b'{"episodeContent": "\xff\xfe", "referenceTime": "2025-01-01"}',
        b"[1, 2]",
    ],
)
def test_malformed_bodies_are_422_not_500(body: bytes) -> None:
    with _client() as client:
        response = client.post("/v1/extract", content=body, headers={"content-type": "application/json"})
    assert response.status_code == 422
    assert _error(response)["fields"]


def test_entity_limit_is_422_on_the_entity_field() -> None:
    with _client(max_entities=3) as client:
        ok = client.post("/v1/extract", json=dict(SEED_CONTEXT, nodes=["A", "B", "C"]))
        too_many = client.post(
            "/v1/extract", json=dict(SEED_CONTEXT, entities=["A", "B", "C", "D"], nodes=None)
        )
    assert ok.status_code == 200
    assert too_many.status_code == 422
    error = _error(too_many)
    assert error["fields"][0]["field"] == "entities"
    assert "at most 3" in error["message"]


def test_body_size_limit_is_413_with_and_without_content_length() -> None:
    program = FakeProgram()
    with _client(program, max_body_bytes=2_000) as client:
        small = client.post("/v1/extract", json=SEED_CONTEXT)
        big = client.post("/v1/extract", json=dict(SEED_CONTEXT, episodeContent="x" * 5_000))
        chunks = [
            json.dumps(dict(SEED_CONTEXT, episodeContent="y" * 5_000)).encode()[i : i + 500]
            for i in range(0, 6_000, 500)
        ]
        chunked = client.post(
            "/v1/extract", content=iter(chunks), headers={"content-type": "application/json"}
        )
    assert small.status_code == 200
    assert big.status_code == 413
    assert _error(big)["reason"] == "body_too_large"
    assert chunked.status_code == 413
    assert len(program.seen) == 1


def test_bearer_token_guards_v1_routes_only() -> None:
    with _client(api_token=PLAIN_SECRET) as client:
        missing = client.post("/v1/extract", json=SEED_CONTEXT)
        wrong = client.post("/v1/extract", json=SEED_CONTEXT, headers={"Authorization": "Bearer nope"})
        unparsed = client.post(
            "/v1/extract", content=b"{not json", headers={"content-type": "application/json"}
        )
        right = client.post(
            "/v1/extract", json=SEED_CONTEXT, headers={"Authorization": f"Bearer {PLAIN_SECRET}"}
        )
        batch = client.post("/v1/extract/batch", json={"episodes": []})
        health = client.get("/healthz")
    for response in (missing, wrong, unparsed, batch):
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == "Bearer"
        assert _error(response)["reason"] == "unauthorized"
        assert PLAIN_SECRET not in response.text
    assert right.status_code == 200
    assert health.status_code == 200


@pytest.mark.parametrize(
    ("failure", "status", "reason"),
    [
        (LMRateLimitError("slow down", status=429, retry_after=2.2), 503, "rate_limited"),
        (LMTimeoutError("timed out", status=408), 503, "timeout"),
        (TimeoutError("deadline"), 503, "timeout"),
        (LMTransportError("connection reset"), 503, "connection"),
        (LMServerError("upstream 500", status=500), 502, "server_error"),
        (LMAuthError("bad key", status=401), 502, "auth"),
        (ContextWindowExceededError(model="mock"), 422, "context_window"),
        (RuntimeError("bug in a step"), 500, "internal_error"),
    ],
)
def test_program_failures_map_to_status_and_reason(failure: Exception, status: int, reason: str) -> None:
    with _client(FakeProgram(failure)) as client:
        response = client.post("/v1/extract", json=SEED_CONTEXT)
    assert response.status_code == status
    error = _error(response)
    assert (error["status"], error["reason"]) == (status, reason)
    assert type(failure).__name__ in error["message"]
    if reason == "rate_limited":
        assert response.headers["retry-after"] == "2"


def test_api_keys_never_reach_responses_or_logs(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "env-provider-key-987654")
    lm = dspy.LM("openai/mock", api_key=PLAIN_SECRET, cache=False)
    failures = [
        LMAuthError(
            f"Incorrect API key provided: {PLAIN_SECRET}. Header was Authorization: Bearer {PLAIN_SECRET}"
        ),
        LMServerError(f"echo of {SECRET_KEY} and api_key={SECRET_KEY}"),
        RuntimeError("env-provider-key-987654 leaked in a bug"),
    ]
    program = FakeProgram(lambda episode: failures[len(program.seen) - 1])
    with caplog.at_level(logging.DEBUG), _client(program, lm) as client:
        bodies = [client.post("/v1/extract", json=SEED_CONTEXT).text for _ in failures]
    for text in [*bodies, caplog.text]:
        for secret in (PLAIN_SECRET, SECRET_KEY, "env-provider-key-987654"):
            assert secret not in text
    assert "***" in bodies[0]
    assert "auth" in bodies[0]


def test_redact_masks_known_and_key_shaped_secrets() -> None:
    assert redact(f"key {PLAIN_SECRET} here", [PLAIN_SECRET]) == "key *** here"
    assert redact(f"bad {SECRET_KEY}!") == "bad ***!"
    assert redact('{"api_key": "abcd1234"}') == '{"api_key": "***"}'
    assert redact("nothing secret") == "nothing secret"


def test_batch_answers_each_item_and_never_fails_the_whole_call() -> None:
    def failure(episode: Episode) -> Exception | None:
        return LMRateLimitError("busy", retry_after=1) if "busy" in episode.episode_content else None

    program = FakeProgram(failure)
    episodes = [
        SEED_CONTEXT,
        {key: value for key, value in SEED_CONTEXT.items() if key != "referenceTime"},
        dict(SEED_CONTEXT, episodeContent="busy day"),
        "not an object",
        dict(SEED_CONTEXT, nodes=["A", "B", "C", "D", "E"]),
    ]
    with _client(program, max_entities=4) as client:
        response = client.post("/v1/extract/batch", json={"episodes": episodes})
    assert response.status_code == 200
    results = response.json()["results"]
    assert [(item["index"], item["ok"]) for item in results] == [
        (0, True),
        (1, False),
        (2, False),
        (3, False),
        (4, False),
    ]
    assert results[0]["result"]["edges"][0]["relationshipType"] == "WORKS_AT"
    assert results[1]["error"]["fields"][0]["field"] == "episodes[1].referenceTime"
    assert (results[2]["error"]["status"], results[2]["error"]["reason"]) == (503, "rate_limited")
    assert results[3]["error"]["status"] == 422
    assert results[4]["error"]["fields"][0]["field"] == "nodes"


def test_batch_size_limit_and_shape_errors() -> None:
    with _client(max_batch=2) as client:
        too_many = client.post("/v1/extract/batch", json={"episodes": [SEED_CONTEXT] * 3})
        wrong_shape = client.post("/v1/extract/batch", json={"items": []})
    assert too_many.status_code == 422
    assert _error(too_many)["fields"][0]["field"] == "episodes"
    assert wrong_shape.status_code == 422
    assert _error(wrong_shape)["fields"][0]["field"] == "episodes"


def test_workers_bound_how_many_extractions_run_at_once() -> None:
    program = FakeProgram(delay=0.05)
    with _client(program, workers=2) as client:
        response = client.post("/v1/extract/batch", json={"episodes": [SEED_CONTEXT] * 6})
    assert all(item["ok"] for item in response.json()["results"])
    assert program.most_active == 2


def test_healthz_and_openapi_docs() -> None:
    lm = dspy.LM("openai/mock-model", api_key=SECRET_KEY, cache=False)
    with _client(lm=lm, workers=3) as client:
        health = client.get("/healthz").json()
        schema = client.get("/openapi.json").json()
        docs = client.get("/docs")
    assert health == {"status": "ok", "program": "FakeProgram", "model": "openai/mock-model", "workers": 3}
    assert {"/v1/extract", "/v1/extract/batch", "/healthz"} <= set(schema["paths"])
    assert "episodeContent" in schema["components"]["schemas"]["Episode"]["properties"]
    assert docs.status_code == 200
    assert SECRET_KEY not in json.dumps(schema) + json.dumps(health)


def test_create_app_refuses_nonsense_limits() -> None:
    with pytest.raises(ValueError, match="workers"):
        create_app(FakeProgram(), None, workers=0)


# --- the CLI and the real program against the mock OpenAI-compatible server ---------------------------

EDGES_REPLY = json.dumps(
    {
        "edges": [
            {
                "relationshipType": "WORKS_AT",
                "sourceEntityName": "Alice",
                "targetEntityName": "Acme",
                "fact": "Alice joined Acme as CTO in March 2024.",
                "validAt": "2024-03-01T00:00:00Z",
                "invalidAt": None,
            }
        ]
    }
)


def _serve_args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="edgewise")
    serve_cli.register(parser.add_subparsers(dest="command"))
    return parser.parse_args(["serve", *argv])


def test_every_serve_flag_has_help_with_an_example() -> None:
    parser = argparse.ArgumentParser(prog="edgewise")
    serve_cli.register(parser.add_subparsers(dest="command"))
    serve_parser = parser._subparsers._group_actions[0].choices["serve"]  # type: ignore[union-attr]
    flags = [action for action in serve_parser._actions if action.option_strings and action.dest != "help"]
    assert {"--program", "--host", "--port", "--workers", "--max-body-bytes", "--max-entities"} <= {
        action.option_strings[0] for action in flags
    }
    for action in flags:
        assert "Example: " + action.option_strings[0] in (action.help or ""), action.option_strings
    args = _serve_args()
    assert (args.host, args.program, args.func) == ("127.0.0.1", None, serve_cli.run)  # None: the model's own


def test_every_limit_flag_reaches_create_app_under_its_parameter(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EDGEWISE_API_TOKEN", raising=False)
    passed: dict[str, Any] = {}

    def recording_create_app(program: Any, lm: Any, **kwargs: Any) -> Any:
        passed.update(kwargs)
        return create_app(program, lm, **kwargs)

    monkeypatch.setattr(serve_cli, "create_app", recording_create_app)
    with MockOpenAIServer(content=EDGES_REPLY) as server:
        _run_serve(
            monkeypatch,
            "--model", "openai/mock", "--api-base", server.api_base, "--no-cache",
            "--workers", "3", "--max-queue", "7", "--max-body-bytes", "5000", "--max-entities", "9",
            "--max-batch", "4", "--request-timeout", "11", "--read-timeout", "2",
        )  # fmt: skip
    assert (
        passed["workers"], passed["max_queue"], passed["max_body_bytes"], passed["max_entities"],
        passed["max_batch"], passed["request_timeout_s"], passed["read_timeout_s"],
    ) == (3, 7, 5000, 9, 4, 11.0, 2.0)  # fmt: skip
    assert "max_connections" not in passed and "shutdown_timeout" not in passed


def _run_serve(monkeypatch: pytest.MonkeyPatch, *argv: str) -> tuple[Any, dict[str, Any]]:
    captured: dict[str, Any] = {}

    def fake_uvicorn_run(app: Any, **kwargs: Any) -> None:
        captured["app"] = app
        captured.update(kwargs)

    import uvicorn

    monkeypatch.setattr(uvicorn, "run", fake_uvicorn_run)
    assert serve_cli.run(_serve_args(*argv)) == 0
    return captured.pop("app"), captured


def test_serve_runs_the_real_extractor_against_an_openai_compatible_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("EDGEWISE_API_TOKEN", raising=False)
    with MockOpenAIServer(content=EDGES_REPLY, faults=[None, "429"], retry_after=3) as server:
        app, settings = _run_serve(
            monkeypatch,
            "--model", "openai/mock", "--api-base", server.api_base, "--api-key", SECRET_KEY,
            "--max-retries", "0", "--no-cache", "--port", "9123", "--workers", "2",
        )  # fmt: skip
        with TestClient(app) as client:
            ok = client.post("/v1/extract", json=SEED_CONTEXT)
            limited = client.post("/v1/extract", json=SEED_CONTEXT)
        prompts = [json.dumps(body) for body in server.requests]
    assert (settings["host"], settings["port"]) == ("127.0.0.1", 9123)
    assert ok.status_code == 200, ok.text
    body = ok.json()
    assert [(e["sourceEntityName"], e["targetEntityName"], e["validAt"]) for e in body["edges"]] == [
        ("Alice", "Acme", "2024-03-01T00:00:00Z")
    ]
    assert body["usage"]["extract"]["calls"] == 1
    assert body["usage"]["extract"]["promptTokens"] > 0
    assert "Alice joined Acme as CTO" in prompts[0]
    assert limited.status_code == 503
    assert _error(limited)["reason"] == "rate_limited"
    assert limited.headers["retry-after"] == "3"
    assert SECRET_KEY not in limited.text


@pytest.mark.parametrize("keep", [None, "2"])
def test_serve_keeps_no_record_of_its_calls_unless_told_how_many(
    monkeypatch: pytest.MonkeyPatch, keep: str | None
) -> None:
    """A service runs for weeks: DSPy's history and trace stay empty, or hold `--keep-history` calls."""
    from dspy.clients import base_lm

    monkeypatch.delenv("EDGEWISE_API_TOKEN", raising=False)
    built: dict[str, Any] = {}

    def recording_create_app(program: Any, lm: Any, **kwargs: Any) -> Any:
        built.update(program=program, lm=lm)
        return create_app(program, lm, **kwargs)

    monkeypatch.setattr(serve_cli, "create_app", recording_create_app)
    trace = dspy.settings.trace
    traced_before, recorded_before = len(trace), len(base_lm.GLOBAL_HISTORY)
    with MockOpenAIServer(content=EDGES_REPLY) as server:
        app, _ = _run_serve(
            monkeypatch, "--model", "openai/mock", "--api-base", server.api_base, "--no-cache",
            *(["--keep-history", keep] if keep else []),
        )  # fmt: skip
        with TestClient(app) as client:
            statuses = [client.post("/v1/extract", json=SEED_CONTEXT).status_code for _ in range(3)]
    assert statuses == [200, 200, 200]
    program, lm = built["program"], built["lm"]
    kept = int(keep or 0)
    assert len(lm.history) == len(program.history) == len(program.extract.history) == kept
    assert len(trace) == traced_before
    assert len(base_lm.GLOBAL_HISTORY) == (kept if keep else recorded_before)


@pytest.mark.parametrize(
    ("flags", "bounded"),
    [((), False), (("--shared-cache",), True), (("--shared-cache", "--no-cache"), False)],
)
def test_serve_caches_replies_only_when_the_cache_is_shared_on_purpose(
    monkeypatch: pytest.MonkeyPatch, flags: tuple[str, ...], bounded: bool
) -> None:
    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr(serve_cli, "use_reply_cache", lambda *given: calls.append(given))
    monkeypatch.delenv("EDGEWISE_API_TOKEN", raising=False)
    _run_serve(monkeypatch, "--model", "openai/mock", "--api-base", "http://127.0.0.1:9/v1", *flags)
    assert calls == ([()] if bounded else [])


def test_serve_reads_the_token_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EDGEWISE_API_TOKEN", PLAIN_SECRET)
    with MockOpenAIServer(content=EDGES_REPLY) as server:
        app, _ = _run_serve(
            monkeypatch, "--model", "openai/mock", "--api-base", server.api_base, "--no-cache"
        )
        with TestClient(app) as client:
            assert client.post("/v1/extract", json=SEED_CONTEXT).status_code == 401
            authorized = client.post(
                "/v1/extract", json=SEED_CONTEXT, headers={"Authorization": f"Bearer {PLAIN_SECRET}"}
            )
    assert authorized.status_code == 200, authorized.text


def test_serve_warns_when_exposed_without_a_token(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("EDGEWISE_API_TOKEN", raising=False)
    with MockOpenAIServer() as server:
        _run_serve(monkeypatch, "--host", "0.0.0.0", "--model", "openai/mock", "--api-base", server.api_base)
    assert "without EDGEWISE_API_TOKEN" in capsys.readouterr().err
    with pytest.raises(SystemExit) as refused:
        _serve_args("--workers", "0")
    assert "argument --workers: must be >= 1, got 0" in capsys.readouterr().err
    assert refused.value.code == 2  # a bare argparse parser here; `edgewise serve` itself exits 1 (tested)


def test_without_the_serve_extra_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    from edgewise.service import app as service

    monkeypatch.setattr(service, "_SERVE_EXTRA_MISSING", ModuleNotFoundError("No module named 'fastapi'"))
    with pytest.raises(RuntimeError, match=r"pip install 'edgewise\[serve\]'"):
        create_app(FakeProgram(), None)


def test_a_program_with_an_entity_step_takes_text_alone_over_http() -> None:
    from fakes import ScriptedLM, edge, edges_reply

    from edgewise.modules.extractor import EdgeExtractor
    from edgewise.modules.options import ProgramOptions

    text_only = {key: value for key, value in SEED_CONTEXT.items() if key != "nodes"}
    found = json.dumps({"entities": [{"name": "Alice", "type": None}, {"name": "Acme Corp", "type": None}]})
    lm = ScriptedLM(
        lambda messages, kwargs: (
            found
            if "`entities`" in messages[-1]["content"][-300:]
            else edges_reply(edge("Alice", "WORKS_AT", "Acme Corp", "Alice works at Acme Corp."))
        )
    )
    with _client(EdgeExtractor(options=ProgramOptions(entity_step=True)), lm) as client:
        one = client.post("/v1/extract", json=text_only)
        batch = client.post("/v1/extract/batch", json={"episodes": [text_only]})
        schema = client.get("/openapi.json").json()
    assert one.status_code == 200, one.text
    assert [e["name"] for e in one.json()["entities"]] == ["Alice", "Acme Corp"]
    assert one.json()["edges"][0]["targetEntityName"] == "Acme Corp"
    assert batch.json()["results"][0]["ok"] is True
    assert "TextEpisode" in json.dumps(schema)
    with _client(EdgeExtractor(), lm) as client:
        refused = client.post("/v1/extract", json=text_only)
    assert refused.status_code == 422 and "entity step" in _error(refused)["fields"][0]["message"]
