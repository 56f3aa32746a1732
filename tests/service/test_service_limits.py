"""`edgewise serve` under hostile and careless clients: connections that never finish a request head,
bodies that stop halfway, requests past their deadline, a full queue, clients that hang up, a stop
with requests in flight, an empty token, JSON the parser cannot read, and a `referenceTime` outside
years 1-9999 in UTC. Each test runs the app on 127.0.0.1 (uvicorn, as `edgewise serve` runs it, or
Starlette's test client) with a fake program or the real extractor against the mock model.
"""

from __future__ import annotations

import json
import logging
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import dspy
import httpx
import pytest
from fastapi.testclient import TestClient
from mock_openai import MockOpenAIServer

from edgewise.cli import main as edgewise_main
from edgewise.cli import serve as serve_cli
from edgewise.domain.episode import Episode
from edgewise.domain.types import ExtractionResult
from edgewise.modules.extractor import EdgeExtractor
from edgewise.runtime.lm import LMConfig, build_lm
from edgewise.service.app import create_app
from edgewise.service.connections import RESERVED_FILES, ConnectionLimits, connection_limits
from edgewise.service.lifecycle import Lifecycle

HOST = "127.0.0.1"
EPISODE: dict[str, Any] = {
    "episodeContent": "Alice joined Acme in 2021.",
    "nodes": ["Alice", "Acme"],
    "referenceTime": "2025-01-01T00:00:00Z",
}
HALF_HEAD = b"GET /healthz HTTP/1.1\r\nHost: test\r\nX-Slow: "
WAIT_S = 10.0  # a generous bound on anything that should happen at once


class GatedProgram(dspy.Module):
    """Answers no edges; the first `hold` calls wait until `release` is set."""

    def __init__(self, hold: int = 1_000_000) -> None:
        super().__init__()
        self.hold = hold
        self.calls = 0
        self.started = threading.Event()
        self.release = threading.Event()
        self._lock = threading.Lock()

    def forward(self, episode: Episode) -> dspy.Prediction:
        with self._lock:
            self.calls += 1
            held = self.calls <= self.hold
        self.started.set()
        if held:
            self.release.wait(WAIT_S * 3)
        return dspy.Prediction(result=ExtractionResult())


@contextmanager
def served(app: Any, **settings: Any) -> Iterator[int]:
    """`app` on uvicorn with the service's settings (`serve_cli.server_settings`); yields its port."""
    import uvicorn

    sock = socket.socket()
    sock.bind((HOST, 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(app, **serve_cli.server_settings(HOST, port, "critical", **settings))
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    until(lambda: server.started)
    try:
        yield port
    finally:
        server.should_exit = server.force_exit = True
        thread.join(timeout=WAIT_S)


def until(condition: Callable[[], bool], limit_s: float = WAIT_S) -> None:
    give_up = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < give_up, "gave up waiting"
        time.sleep(0.02)


def closed_by_peer(connection: socket.socket) -> bool:
    connection.setblocking(False)
    try:
        return connection.recv(65536) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def raw_request(port: int, head: bytes, body: bytes = b"") -> socket.socket:
    connection = socket.create_connection((HOST, port), timeout=WAIT_S)
    connection.sendall(head + body)
    return connection


def post_head(length: int) -> bytes:
    return (
        b"POST /v1/extract HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {length}\r\n\r\n".encode()
    )


def read_answer(connection: socket.socket) -> tuple[int, dict[str, Any]]:
    reply = b""
    while b"\r\n\r\n" not in reply or len(reply.partition(b"\r\n\r\n")[2]) < _length(reply):
        chunk = connection.recv(65536)
        if not chunk:
            break
        reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(body)


def _length(reply: bytes) -> int:
    found = re.search(rb"content-length: (\d+)", reply.partition(b"\r\n\r\n")[0], re.IGNORECASE)
    return int(found.group(1)) if found else 0


def post(port: int, timeout: float = WAIT_S) -> httpx.Response:
    return httpx.post(f"http://{HOST}:{port}/v1/extract", json=EPISODE, timeout=timeout)


def reason(response: httpx.Response) -> str:
    return response.json()["error"]["reason"]


# Slow clients ------------------------------------------------------------------------------------------


def test_a_connection_that_never_finishes_its_head_is_closed_after_the_read_timeout() -> None:
    with served(create_app(GatedProgram(hold=0), None), read_timeout_s=0.3) as port:
        half_sent = [raw_request(port, HALF_HEAD) for _ in range(3)]
        kept_alive = raw_request(port, b"GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
        status, _ = read_answer(kept_alive)
        kept_alive.sendall(HALF_HEAD)  # the next request on the same connection, half sent
        until(lambda: all(closed_by_peer(connection) for connection in [*half_sent, kept_alive]))
    assert status == 200


def test_at_the_connection_cap_the_oldest_waiting_connection_makes_room() -> None:
    limits = ConnectionLimits(max_connections=5, backlog=16)
    with served(create_app(GatedProgram(hold=0), None), read_timeout_s=60, limits=limits) as port:
        half_sent = []
        for _ in range(12):
            half_sent.append(raw_request(port, HALF_HEAD))
            time.sleep(0.01)
        health = httpx.get(f"http://{HOST}:{port}/healthz", timeout=WAIT_S)
        until(lambda: sum(closed_by_peer(connection) for connection in half_sent) >= 7)
        closed = [closed_by_peer(connection) for connection in half_sent]
    assert health.status_code == 200
    assert all(closed[:7]) and not any(closed[-4:]), closed  # the oldest made room, the newest stayed


def test_a_new_connection_is_refused_with_json_503_when_every_connection_is_in_a_request() -> None:
    program = GatedProgram()
    limits = ConnectionLimits(max_connections=1, backlog=16)
    with served(create_app(program, None), limits=limits) as port, ThreadPoolExecutor(1) as pool:
        running = pool.submit(post, port)
        assert program.started.wait(WAIT_S)
        refused = socket.create_connection((HOST, port), timeout=WAIT_S)
        status, body = read_answer(refused)
        program.release.set()
        assert running.result().status_code == 200
    assert (status, body["error"]["reason"]) == (503, "overloaded")


def test_a_body_that_stops_halfway_is_answered_408() -> None:
    with served(create_app(GatedProgram(hold=0), None, read_timeout_s=0.3)) as port:
        connection = raw_request(port, post_head(100), b'{"episodeContent": ')
        status, body = read_answer(connection)
    assert (status, body["error"]["reason"]) == (408, "read_timeout")
    assert "--read-timeout" in body["error"]["message"]


# Deadline, queue and cancellation ----------------------------------------------------------------------


def test_a_request_past_its_deadline_gets_503_and_frees_its_worker() -> None:
    program = GatedProgram(hold=1)
    try:
        with TestClient(create_app(program, None, workers=1, request_timeout_s=0.5)) as client:
            late = client.post("/v1/extract", json=EPISODE)
            after = client.post("/v1/extract", json=EPISODE)
    finally:
        program.release.set()
    assert (late.status_code, reason(late)) == (503, "request_timeout")
    assert "--request-timeout" in late.json()["error"]["message"]
    assert after.status_code == 200, after.text  # the worker was given back although the first still hangs


def test_a_full_queue_answers_503_overloaded_with_retry_after() -> None:
    program = GatedProgram()
    with served(create_app(program, None, workers=1, max_queue=1)) as port, ThreadPoolExecutor(3) as pool:
        running = pool.submit(post, port)
        assert program.started.wait(WAIT_S)
        others = [pool.submit(post, port) for _ in range(2)]  # one waits in the queue, one finds it full
        until(lambda: any(future.done() for future in others))
        full = next(future for future in others if future.done()).result()
        program.release.set()
        answers = [running.result(), *(future.result() for future in others)]
    assert (full.status_code, reason(full)) == (503, "overloaded")
    assert int(full.headers["retry-after"]) >= 1
    assert sorted(answer.status_code for answer in answers) == [200, 200, 503]


def _extractor_app(model: MockOpenAIServer, **settings: Any) -> Any:
    config = LMConfig(
        model="openai/mock",
        api_base=model.api_base,
        api_key="sk-test",
        cache=False,
        num_retries=2,
        retry_base_s=0.01,
        retry_cap_s=0.05,
        timeout_s=settings.pop("timeout_s", 30),
    )
    return create_app(EdgeExtractor(), build_lm(config), workers=1, **settings)


def test_the_work_of_clients_that_hung_up_never_holds_up_the_next_request() -> None:
    """`--workers 1`; the model never answers the first request. Three clients send a request and hang
    up; the fourth is answered at once, not after the abandoned ones."""
    body = json.dumps(EPISODE).encode()
    with MockOpenAIServer(faults=["slow"], slow_seconds=60) as model:
        with served(_extractor_app(model)) as port:
            for _ in range(3):
                connection = raw_request(port, post_head(len(body)), body)
                time.sleep(0.3)
                connection.close()
            fourth = post(port)
        slow = model.fault_counts().get("slow", 0)
    assert fourth.status_code == 200, fourth.text
    assert slow <= 1  # only a running request reached the model; the queued ones that left never ran


def test_the_work_of_a_client_that_hung_up_sends_no_further_model_request() -> None:
    """The thread cannot be stopped inside its model request, but once that request ends (here by the
    model's 1 s timeout) it makes no retry and no next step: its client is gone."""
    body = json.dumps(EPISODE).encode()
    with (
        MockOpenAIServer(faults=["slow"] * 10, slow_seconds=60) as model,
        served(_extractor_app(model, timeout_s=1)) as port,
    ):
        connection = raw_request(port, post_head(len(body)), body)
        until(lambda: len(model.served) == 1)
        connection.close()
        time.sleep(2.5)  # the model request times out after 1 s; a retry would follow at once
        asked = len(model.served)
    assert asked == 1


# Stopping ----------------------------------------------------------------------------------------------


def test_a_stop_answers_json_503_to_running_and_queued_requests_without_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """uvicorn's stop (what SIGTERM starts) drains: queued requests get 503 `shutting_down` at once, the
    running one when `--shutdown-timeout` ends, every task ends before uvicorn would cancel it."""
    import uvicorn

    program = GatedProgram()
    lifecycle = Lifecycle(shutdown_timeout_s=0.5)
    app = create_app(program, None, workers=1, lifecycle=lifecycle)
    sock = socket.socket()
    sock.bind((HOST, 0))
    port = sock.getsockname()[1]
    settings = serve_cli.server_settings(HOST, port, "info", lifecycle=lifecycle)
    server = uvicorn.Server(uvicorn.Config(app, **settings))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    caplog.set_level(logging.INFO)
    thread.start()
    until(lambda: server.started)
    try:
        with ThreadPoolExecutor(3) as pool:
            answers = [pool.submit(post, port)]
            assert program.started.wait(WAIT_S)
            answers += [pool.submit(post, port) for _ in range(2)]
            time.sleep(0.3)  # the two wait in the queue
            stopped = time.monotonic()
            server.should_exit = True
            thread.join(timeout=WAIT_S)
            took = time.monotonic() - stopped
            responses = [future.result() for future in answers]
    finally:
        program.release.set()
    assert not thread.is_alive() and took < WAIT_S
    assert [(response.status_code, reason(response)) for response in responses] == [
        (503, "shutting_down")
    ] * 3
    assert all(response.headers["content-type"] == "application/json" for response in responses)
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert not [record for record in caplog.records if record.exc_info], logged
    assert "Cancel" not in logged and "Exception in ASGI application" not in logged, logged


# Start-up, bodies and the document ---------------------------------------------------------------------


@pytest.mark.parametrize(("token", "said"), [("", "is set but empty"), ("   ", "is set but empty"),
                                             ("short-token", "has 11 characters; use at least 16")])  # fmt: skip
def test_an_empty_or_short_token_is_refused_at_start(
    token: str, said: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import uvicorn

    served_apps: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **_settings: served_apps.append(app))
    monkeypatch.setenv("EDGEWISE_API_TOKEN", token)
    status = edgewise_main(["serve", "--model", "openai/mock", "--api-base", "http://127.0.0.1:9/v1"])
    assert status == 1 and not served_apps
    assert f"EDGEWISE_API_TOKEN {said}" in capsys.readouterr().err
    with pytest.raises(ValueError, match=said):
        create_app(GatedProgram(hold=0), None, api_token=token)


@pytest.mark.parametrize(
    ("value", "named"),
    [("[" * 990 + "]" * 990, "nested too deeply"), ("9" * 4301, "an integer over 4300 digits")],
)
@pytest.mark.parametrize("route", ["/v1/extract", "/v1/extract/batch"])
def test_json_too_deep_or_with_a_huge_integer_is_422(value: str, named: str, route: str) -> None:
    episode = json.dumps(EPISODE)[:-1] + f', "extra": {value}}}'
    body = episode if route == "/v1/extract" else f'{{"episodes": [{episode}]}}'
    with TestClient(create_app(GatedProgram(hold=0), None)) as client:
        response = client.post(route, content=body, headers={"content-type": "application/json"})
    assert (response.status_code, reason(response)) == (422, "invalid_request")
    assert named in response.json()["error"]["message"]


@pytest.mark.parametrize(
    "value",
    [
        "0001-01-01T00:00:00+22:29",  # year 0 in UTC
        "9999-12-31T23:59:59-05:00",  # year 10000 in UTC
        "0001-01-01T23:00:00+01:00",  # in range, on a day the document refuses
        "0001-01-02T00:00:00+22:29",
        "9999-12-30T23:59:59-05:00",
        "2025-04-30T10:00:00+02:00",
    ],
)
def test_the_document_and_the_server_agree_on_reference_time(value: str) -> None:
    with TestClient(create_app(GatedProgram(hold=0), None)) as client:
        schema = client.get("/openapi.json").json()["components"]["schemas"]["Episode"]
        one = client.post("/v1/extract", json={**EPISODE, "referenceTime": value})
        batch = client.post("/v1/extract/batch", json={"episodes": [{**EPISODE, "referenceTime": value}]})
    field = schema["properties"]["referenceTime"]
    accepted_by_document = field["format"] == "date-time" and re.match(field["pattern"], value) is not None
    assert (one.status_code == 200) == accepted_by_document, one.text
    assert batch.json()["results"][0]["ok"] == accepted_by_document
    if not accepted_by_document:
        assert [problem["field"] for problem in one.json()["error"]["fields"]] == ["referenceTime"]


def test_the_connection_cap_and_backlog_fit_the_open_file_limit() -> None:
    tight = connection_limits(1024, model_connections=20, limit=256)
    assert tight.max_connections + 3 * tight.backlog + RESERVED_FILES + 20 <= 256
    assert tight.max_connections >= 64
    assert connection_limits(1024, model_connections=20, limit=None) == ConnectionLimits(1024, 2048)
    assert connection_limits(100, model_connections=20, limit=100_000).max_connections == 100
    with pytest.raises(ValueError, match="ulimit -n"):
        connection_limits(1024, model_connections=200, limit=256)
