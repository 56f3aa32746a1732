"""A mock OpenAI-compatible chat-completions server that can misbehave on purpose.

Real HTTP on 127.0.0.1 (a free port, a background thread), so tests and benchmarks exercise the same
client stack (DSPy, LiteLLM, httpx) that talks to a real provider. Each request either gets a normal
completion from a configurable responder or an injected fault: a 500, a 429 with `Retry-After`, a
reply slower than the client's timeout, a dropped connection, a body that is not JSON, content that
breaks the expected schema, content that is not JSON at all (prose), a reply cut at the token limit
(half its content, finish reason `length`), or edges that name an entity outside ENTITIES.

    with MockOpenAIServer(content='{"edges": []}', faults=["429", None]) as server:
        lm = dspy.LM("openai/mock", api_base=server.api_base, api_key="x", cache=False)
"""

from __future__ import annotations

import json
import random
import re
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final, Literal, Self, get_args

FaultKind = Literal[
    "500", "429", "slow", "drop", "invalid_json", "schema_break", "unparseable", "length", "unknown_entity"
]
FAULT_KINDS: Final[tuple[FaultKind, ...]] = get_args(FaultKind)

# The name that "unknown_entity" puts into an edge; no test episode should list it.
UNKNOWN_ENTITY: Final = "Zebulon Unlisted"
# The assistant content "schema_break" sends: valid JSON, wrong shape for every edgewise step.
SCHEMA_BREAK_CONTENT: Final = '{"edges": "none", "relationships": [{"from": 1, "to": 2}]}'
# The assistant content "unparseable" sends: prose that no adapter reads as fields.
UNPARSEABLE_CONTENT: Final = "Sure! Here are the edges: none"
INVALID_JSON_BODY: Final = b'{"id": "chatcmpl-broken", "choices": [{"message": '
DEFAULT_CONTENT: Final = '{"edges": []}'
_CHARS_PER_TOKEN: Final = 4
_LISTEN_BACKLOG: Final = 256

Responder = Callable[[dict[str, Any]], str]
FaultPolicy = Callable[[int, dict[str, Any]], "FaultKind | None"]


@dataclass(frozen=True)
class FaultRate:
    """Injects a fault into each request with probability `p`, choosing uniformly among `kinds`.

    The draw depends only on (seed, arrival index), so a run is reproducible whatever the thread
    timing, and a retried request is a new arrival with a fresh draw, as with a flaky provider.
    """

    p: float
    kinds: tuple[FaultKind, ...] = ("500", "429", "slow", "drop", "invalid_json")
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.p <= 1.0:
            raise ValueError(f"FaultRate.p must be in [0, 1], got {self.p}")
        unknown = [kind for kind in self.kinds if kind not in FAULT_KINDS]
        if unknown or not self.kinds:
            raise ValueError(f"FaultRate.kinds must be a non-empty subset of {FAULT_KINDS}, got {self.kinds}")

    def __call__(self, index: int, body: dict[str, Any]) -> FaultKind | None:
        rng = random.Random(f"{self.seed}:{index}")
        if rng.random() >= self.p:
            return None
        return rng.choice(self.kinds)


@dataclass(frozen=True)
class ServedRequest:
    """One request the server received: its arrival index, path, parsed body and what it did."""

    index: int
    path: str
    body: dict[str, Any]
    fault: FaultKind | None


def estimate_tokens(text: str) -> int:
    """A deterministic token count (4 characters a token) so usage totals can be asserted exactly."""
    return max(1, (len(text) + _CHARS_PER_TOKEN - 1) // _CHARS_PER_TOKEN)


def prompt_text(body: dict[str, Any]) -> str:
    """All message text of a chat request, joined; what responders and usage counting read."""
    parts: list[str] = []
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return "\n".join(parts)


def with_unknown_entity(content: str) -> str:
    """Rewrites the first edge's source entity in `content` to `UNKNOWN_ENTITY`.

    Works on a whole-JSON reply (`{"edges": [...]}`) and on DSPy's `[[ ## field ## ]]` sections whose
    value is JSON; if no edge is found, returns a one-edge reply naming the unknown entity.
    """
    replaced, done = _replace_first_source(content)
    if done:
        return replaced
    return json.dumps(
        {
            "edges": [
                {
                    "relationshipType": "WORKS_AT",
                    "sourceEntityName": UNKNOWN_ENTITY,
                    "targetEntityName": UNKNOWN_ENTITY + " Corp",
                    "fact": f"{UNKNOWN_ENTITY} works at {UNKNOWN_ENTITY} Corp.",
                    "validAt": None,
                    "invalidAt": None,
                }
            ]
        }
    )


def _replace_first_source(content: str) -> tuple[str, bool]:
    try:
        value = json.loads(content)
    except ValueError:
        value = None
    if value is not None:
        if _mutate_first_edge(value):
            return json.dumps(value), True
        return content, False
    # DSPy ChatAdapter replies: "[[ ## edges ## ]]\n[...]\n\n[[ ## completed ## ]]"
    sections = re.split(r"(\[\[ ## \w+ ## \]\])", content)
    for position, section in enumerate(sections):
        try:
            value = json.loads(section)
        except ValueError:
            continue
        if _mutate_first_edge(value):
            sections[position] = "\n" + json.dumps(value) + "\n\n"
            return "".join(sections), True
    return content, False


def _mutate_first_edge(value: Any) -> bool:
    if isinstance(value, dict):
        if "sourceEntityName" in value:
            value["sourceEntityName"] = UNKNOWN_ENTITY
            return True
        return any(_mutate_first_edge(item) for item in value.values())
    if isinstance(value, list):
        return any(_mutate_first_edge(item) for item in value)
    return False


class _Server(ThreadingHTTPServer):
    """Tracks open connections so that stop() can close kept-alive ones instead of leaking threads."""

    daemon_threads = True
    request_queue_size = _LISTEN_BACKLOG
    owner: MockOpenAIServer

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]) -> None:
        super().__init__(address, handler)
        self._open: set[socket.socket] = set()
        self._open_lock = threading.Lock()

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            self._open.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._open_lock:
            self._open.discard(request)
        super().shutdown_request(request)

    def close_open_connections(self) -> None:
        with self._open_lock:
            open_now = list(self._open)
        for sock in open_now:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: a benchmark sends thousands of requests."""

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            model = {"id": self.server.owner.model, "object": "model", "created": 0, "owned_by": "mock"}
            self._send_json(200, {"object": "list", "data": [model]})
        else:
            self._send_json(404, {"error": {"message": f"no route GET {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if self.path.rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._send_json(404, {"error": {"message": f"no route POST {self.path}", "type": "not_found"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send_json(
                400, {"error": {"message": "request body is not JSON", "type": "invalid_request"}}
            )
            return
        if not isinstance(body, dict):
            body = {"_raw": body}
        self.server.owner._serve_completion(self, body)

    def _send_json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        self._send_bytes(status, json.dumps(payload).encode(), headers)

    def _send_bytes(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


class MockOpenAIServer:
    """An OpenAI-compatible `/v1/chat/completions` and `/v1/models` endpoint on 127.0.0.1.

    `content` is a fixed assistant reply, or `responder(request_body) -> str` computes it. `faults`
    decides per request: a sequence (the i-th request gets `faults[i]`, later ones none), a callable
    `(index, body) -> kind | None` such as `FaultRate`, or None. `retry_after` is what a 429 sends in
    its `Retry-After` header (seconds); `slow_seconds` is how long a "slow" reply waits before
    answering normally (set it past the client's timeout).
    """

    def __init__(
        self,
        content: str | Responder = DEFAULT_CONTENT,
        *,
        faults: Sequence[FaultKind | None] | FaultPolicy | None = None,
        retry_after: float = 1.0,
        slow_seconds: float = 5.0,
        model: str = "mock",
        latency: float = 0.0,
    ) -> None:
        if isinstance(faults, Sequence) and not isinstance(faults, str):
            unknown = [kind for kind in faults if kind is not None and kind not in FAULT_KINDS]
            if unknown:
                raise ValueError(f"unknown fault kinds {unknown}; expected some of {FAULT_KINDS}")
        elif faults is not None and not callable(faults):
            raise TypeError(
                "faults must be a sequence of fault kinds, a callable (index, body) -> kind, or None"
            )
        self._responder: Responder = content if callable(content) else (lambda _body, text=content: text)
        self._faults = faults
        self.retry_after = retry_after
        self.slow_seconds = slow_seconds
        self.model = model
        self.latency = latency
        self._lock = threading.Lock()
        self._served: list[ServedRequest] = []
        self._arrivals = 0
        self._stopping = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None

    # lifecycle -------------------------------------------------------------------------------------
    def start(self) -> Self:
        """Binds a free port and serves in a daemon thread; returns self."""
        if self._httpd is not None:
            return self
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._stopping.clear()
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="mock-openai", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stops serving and releases the port; sleeping "slow" handlers wake up at once."""
        if self._httpd is None:
            return
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._httpd.close_open_connections()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # what tests read ---------------------------------------------------------------------------------
    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("MockOpenAIServer is not started; use it as a context manager or call start()")
        return int(self._httpd.server_address[1])

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Bodies of the chat-completion requests received so far, in arrival order (a copy)."""
        with self._lock:
            return [served.body for served in self._served]

    @property
    def served(self) -> list[ServedRequest]:
        """Every chat-completion request with its arrival index and the fault it got (a copy)."""
        with self._lock:
            return list(self._served)

    def fault_counts(self) -> dict[str, int]:
        """How many requests got each fault kind ("none" for normal replies)."""
        counts: dict[str, int] = {}
        for served in self.served:
            key = served.fault or "none"
            counts[key] = counts.get(key, 0) + 1
        return counts

    def reset(self) -> None:
        """Forgets received requests and restarts the arrival count (and so the fault schedule)."""
        with self._lock:
            self._served.clear()
            self._arrivals = 0

    # serving ----------------------------------------------------------------------------------------
    def _choose_fault(self, index: int, body: dict[str, Any]) -> FaultKind | None:
        faults = self._faults
        if faults is None:
            return None
        if callable(faults):
            kind = faults(index, body)
            if kind is not None and kind not in FAULT_KINDS:
                raise ValueError(f"fault policy returned {kind!r}; expected one of {FAULT_KINDS} or None")
            return kind
        return faults[index] if index < len(faults) else None

    def _serve_completion(self, handler: _Handler, body: dict[str, Any]) -> None:
        with self._lock:
            index = self._arrivals
            self._arrivals += 1
        fault = self._choose_fault(index, body)
        with self._lock:
            self._served.append(ServedRequest(index=index, path=handler.path, body=body, fault=fault))
        if self.latency:
            self._stopping.wait(self.latency)

        if fault == "500":
            handler._send_json(500, {"error": {"message": "injected server error", "type": "server_error"}})
            return
        if fault == "429":
            retry = f"{self.retry_after:g}"
            payload = {"error": {"message": "injected rate limit", "type": "rate_limit_exceeded"}}
            handler._send_json(429, payload, {"Retry-After": retry})
            return
        if fault == "drop":
            handler.close_connection = True
            return
        if fault == "invalid_json":
            handler._send_bytes(200, INVALID_JSON_BODY)
            return
        if fault == "slow":
            self._stopping.wait(self.slow_seconds)
            if self._stopping.is_set():
                handler.close_connection = True
                return

        content = self._responder(body)
        if fault == "schema_break":
            content = SCHEMA_BREAK_CONTENT
        elif fault == "unparseable":
            content = UNPARSEABLE_CONTENT
        elif fault == "length":
            content = content[: len(content) // 2]
        elif fault == "unknown_entity":
            content = with_unknown_entity(content)
        completion = self._completion(body, content)
        if fault == "length":  # as a server stops at max_tokens
            for choice in completion["choices"]:
                choice["finish_reason"] = "length"
        try:
            handler._send_json(200, completion)
        except (BrokenPipeError, ConnectionResetError):
            handler.close_connection = True  # the client gave up (a "slow" reply past its timeout)

    def _completion(self, body: dict[str, Any], content: str) -> dict[str, Any]:
        prompt_tokens = estimate_tokens(prompt_text(body))
        completion_tokens = estimate_tokens(content)
        choices = int(body.get("n") or 1)
        return {
            "id": f"chatcmpl-mock-{time.monotonic_ns()}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model") or self.model),
            "choices": [
                {
                    "index": number,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                    "logprobs": None,
                }
                for number in range(choices)
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens * choices,
                "total_tokens": prompt_tokens + completion_tokens * choices,
            },
        }
