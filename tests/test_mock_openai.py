"""The mock OpenAI-compatible server: real HTTP replies, and each injected fault reaching DSPy as the
error class that retry logic keys on (both DSPy engines: native lm15 and the LiteLLM compatibility one).
"""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.request
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "true")  # no network fetch of the cost map

import dspy
import litellm
import pytest
from dspy.utils.exceptions import (
    AdapterParseError,
    LMError,
    LMProviderError,
    LMRateLimitError,
    LMServerError,
    LMTimeoutError,
    LMTransportError,
    is_retryable_lm_error,
)
from mock_openai import (
    FAULT_KINDS,
    SCHEMA_BREAK_CONTENT,
    UNKNOWN_ENTITY,
    UNPARSEABLE_CONTENT,
    FaultRate,
    MockOpenAIServer,
    estimate_tokens,
    with_unknown_entity,
)
from pydantic import BaseModel, ValidationError

from edgewise.signatures import ExtractedEdge

EDGES_REPLY = json.dumps(
    {
        "edges": [
            {
                "relationshipType": "WORKS_AT",
                "sourceEntityName": "Alice",
                "targetEntityName": "Acme",
                "fact": "Alice works at Acme.",
                "validAt": None,
                "invalidAt": None,
            }
        ]
    }
)
TIMEOUT_S = 0.3


class _EdgesReply(BaseModel):
    edges: list[ExtractedEdge]


def _lm(server: MockOpenAIServer, engine: str = "auto", **kwargs: Any) -> dspy.LM:
    settings: dict[str, Any] = {"cache": False, "num_retries": 0, "timeout": TIMEOUT_S, "engine": engine}
    settings.update(kwargs)
    return dspy.LM("openai/mock", api_base=server.api_base, api_key="sk-test", **settings)


def _causes(error: BaseException) -> list[type[BaseException]]:
    chain: list[type[BaseException]] = []
    current: BaseException | None = error
    while current is not None:
        chain.append(type(current))
        current = current.__cause__ or current.__context__
    return chain


def test_plain_call_returns_content_records_request_and_reports_usage() -> None:
    with MockOpenAIServer(content=EDGES_REPLY) as server:
        lm = _lm(server)
        assert lm("Who works where?") == [EDGES_REPLY]
        (body,) = server.requests
    assert body["model"] == "mock"
    assert body["messages"][-1]["content"] == "Who works where?"
    usage = lm.history[-1]["usage"]
    assert usage["prompt_tokens"] == estimate_tokens("Who works where?")
    assert usage["completion_tokens"] == estimate_tokens(EDGES_REPLY)
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]


def test_responder_sees_each_request_body() -> None:
    def echo(body: dict[str, Any]) -> str:
        return "echo: " + body["messages"][-1]["content"]

    with MockOpenAIServer(content=echo) as server:
        lm = _lm(server)
        assert lm("one") == ["echo: one"]
        assert lm("two") == ["echo: two"]
        assert [body["messages"][-1]["content"] for body in server.requests] == ["one", "two"]


def test_models_endpoint_lists_the_model() -> None:
    with (
        MockOpenAIServer(model="mock-7b") as server,
        urllib.request.urlopen(server.api_base + "/models", timeout=5) as reply,
    ):
        listing = json.load(reply)
    assert [model["id"] for model in listing["data"]] == ["mock-7b"]


# What each fault becomes in DSPy 3.4.1, per engine: (DSPy error class, status, retryable?).
# The native engine reads a reply that is not JSON as a provider error that is NOT retryable;
# the LiteLLM engine calls it a server error. Retry policy must be written with this in mind.
EXPECTED = {
    ("auto", "500"): (LMServerError, 500, True),
    ("auto", "429"): (LMRateLimitError, 429, True),
    ("auto", "drop"): (LMTransportError, None, True),
    ("auto", "slow"): (LMTransportError, None, True),
    ("auto", "invalid_json"): (LMProviderError, 200, False),
    ("litellm", "500"): (LMServerError, 500, True),
    ("litellm", "429"): (LMRateLimitError, 429, True),
    ("litellm", "drop"): (LMServerError, 500, True),
    ("litellm", "slow"): (LMTimeoutError, 408, True),
    ("litellm", "invalid_json"): (LMServerError, 500, True),
}
LITELLM_CAUSE = {
    "500": litellm.InternalServerError,
    "429": litellm.RateLimitError,
    "drop": litellm.InternalServerError,
    "slow": litellm.Timeout,
    "invalid_json": litellm.InternalServerError,
}


@pytest.mark.parametrize(("engine", "fault"), sorted(EXPECTED))
def test_transport_faults_surface_as_typed_lm_errors(engine: str, fault: str) -> None:
    with MockOpenAIServer(
        content=EDGES_REPLY, faults=[fault, None], retry_after=0.25, slow_seconds=3
    ) as server:
        lm = _lm(server, engine)
        started = time.monotonic()
        with pytest.raises(LMError) as caught:
            lm("hi")
        elapsed = time.monotonic() - started
        error_class, status, retryable = EXPECTED[(engine, fault)]
        assert type(caught.value) is error_class
        assert caught.value.status == status
        assert is_retryable_lm_error(caught.value) is retryable
        if fault == "429":
            assert caught.value.retry_after == pytest.approx(0.25)
        if fault == "slow":
            assert TIMEOUT_S * 0.9 <= elapsed < 2.0  # the client's timeout, not the server's 3 s
        if engine == "litellm":
            assert LITELLM_CAUSE[fault] in _causes(caught.value)
        assert lm("hi") == [EDGES_REPLY]  # the next request is served normally
        assert [served.fault for served in server.served] == [fault, None]


def test_dspy_retry_honours_retry_after_then_succeeds() -> None:
    with MockOpenAIServer(content=EDGES_REPLY, faults=["429"], retry_after=0.2) as server:
        lm = _lm(server, num_retries=2)
        started = time.monotonic()
        assert lm("hi") == [EDGES_REPLY]
        elapsed = time.monotonic() - started
        assert server.fault_counts() == {"429": 1, "none": 1}
    assert 0.2 <= elapsed < 1.5  # DSPy's own backoff without the hint would wait 2 s


def test_schema_break_is_valid_json_that_fails_the_edges_schema() -> None:
    with MockOpenAIServer(content=EDGES_REPLY, faults=["schema_break"]) as server:
        (content,) = _lm(server)("hi")
    assert content == SCHEMA_BREAK_CONTENT
    json.loads(content)
    with pytest.raises(ValidationError):
        _EdgesReply.model_validate_json(content)
    _EdgesReply.model_validate_json(EDGES_REPLY)  # the normal reply passes the same check


def test_schema_break_makes_a_dspy_predictor_fail_to_parse() -> None:
    class Extract(dspy.Signature):
        """Extract edges."""

        text: str = dspy.InputField()
        edges: list[ExtractedEdge] = dspy.OutputField()

    with (
        MockOpenAIServer(faults=lambda index, body: "schema_break") as server,
        dspy.context(lm=_lm(server), adapter=dspy.JSONAdapter()),
        pytest.raises(AdapterParseError),
    ):
        dspy.Predict(Extract)(text="Alice works at Acme.")


def test_unparseable_is_prose_and_length_is_half_the_reply_stopped_at_the_token_limit() -> None:
    with MockOpenAIServer(content=EDGES_REPLY, faults=["unparseable", "length", None]) as server:
        choices = []
        for _ in range(3):
            request = urllib.request.Request(
                server.api_base + "/chat/completions",
                data=json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode(),
                headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(request, timeout=5) as reply:
                choices.append(json.load(reply)["choices"][0])
    found = [(choice["message"]["content"], choice["finish_reason"]) for choice in choices]
    assert found == [
        (UNPARSEABLE_CONTENT, "stop"),
        (EDGES_REPLY[: len(EDGES_REPLY) // 2], "length"),
        (EDGES_REPLY, "stop"),
    ]
    with pytest.raises(ValueError):
        json.loads(UNPARSEABLE_CONTENT)


def test_unknown_entity_rewrites_the_responders_edges() -> None:
    with MockOpenAIServer(content=EDGES_REPLY, faults=["unknown_entity"]) as server:
        (content,) = _lm(server)("hi")
    edges = _EdgesReply.model_validate_json(content).edges
    assert [(edge.sourceEntityName, edge.targetEntityName) for edge in edges] == [(UNKNOWN_ENTITY, "Acme")]


def test_unknown_entity_in_chat_adapter_sections_and_without_edges() -> None:
    chat_reply = (
        "[[ ## edges ## ]]\n" + json.dumps(json.loads(EDGES_REPLY)["edges"]) + "\n\n[[ ## completed ## ]]"
    )
    rewritten = with_unknown_entity(chat_reply)
    assert "[[ ## completed ## ]]" in rewritten
    section = rewritten.split("[[ ## edges ## ]]")[1].split("[[ ## completed ## ]]")[0]
    assert json.loads(section)[0]["sourceEntityName"] == UNKNOWN_ENTITY
    fallback = _EdgesReply.model_validate_json(with_unknown_entity("no edges here")).edges
    assert fallback[0].sourceEntityName == UNKNOWN_ENTITY


def test_fault_rate_is_seeded_and_close_to_p() -> None:
    policy = FaultRate(p=0.2, kinds=("500", "429", "drop"), seed=7)
    draws = [policy(index, {}) for index in range(2000)]
    assert draws == [
        FaultRate(p=0.2, kinds=("500", "429", "drop"), seed=7)(index, {}) for index in range(2000)
    ]
    assert draws != [
        FaultRate(p=0.2, kinds=("500", "429", "drop"), seed=8)(index, {}) for index in range(2000)
    ]
    faulted = [kind for kind in draws if kind is not None]
    assert 0.17 < len(faulted) / len(draws) < 0.23
    assert set(faulted) == {"500", "429", "drop"}
    assert all(FaultRate(p=0.0)(index, {}) is None for index in range(100))


def test_fault_rate_through_the_server_counts_what_it_injected() -> None:
    policy = FaultRate(p=0.5, kinds=("500",), seed=1)
    expected = sum(policy(index, {}) == "500" for index in range(20))
    with MockOpenAIServer(faults=policy) as server:
        lm = _lm(server)
        failures = 0
        for _ in range(20):
            try:
                lm("hi")
            except LMServerError:
                failures += 1
    assert failures == expected == server.fault_counts()["500"]


def test_bad_fault_policies_are_refused() -> None:
    MockOpenAIServer(faults=lambda index, body: None)  # any callable is a policy
    with pytest.raises(ValueError, match="explode"):
        MockOpenAIServer(faults=["explode"])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        MockOpenAIServer(faults=42)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        FaultRate(p=1.5)
    with pytest.raises(ValueError):
        FaultRate(p=0.1, kinds=("teapot",))  # type: ignore[arg-type]
    assert set(FAULT_KINDS) == {
        "500",
        "429",
        "slow",
        "drop",
        "invalid_json",
        "schema_break",
        "unparseable",
        "length",
        "unknown_entity",
    }


def test_concurrent_requests_are_all_recorded_once() -> None:
    with MockOpenAIServer(content="ok") as server:
        lm = _lm(server)

        def worker(number: int) -> None:
            for repeat in range(5):
                assert lm(f"{number}-{repeat}") == ["ok"]

        threads = [threading.Thread(target=worker, args=(number,)) for number in range(10)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        served = server.served
    assert sorted(item.index for item in served) == list(range(50))
    assert len({item.body["messages"][-1]["content"] for item in served}) == 50


def test_stop_does_not_wait_for_a_slow_reply() -> None:
    server = MockOpenAIServer(faults=["slow"], slow_seconds=30).start()
    lm = _lm(server, timeout=5)
    caller = threading.Thread(target=lambda: pytest.raises(LMError, lm, "hi"), daemon=True)
    caller.start()
    while not server.served:
        time.sleep(0.01)
    started = time.monotonic()
    server.stop()
    caller.join(timeout=5)
    assert time.monotonic() - started < 2
    assert not caller.is_alive()
    with pytest.raises(RuntimeError, match="not started"):
        _ = server.api_base
